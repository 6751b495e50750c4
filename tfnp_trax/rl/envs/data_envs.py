"""RL environments that replay supervised sequence data, token by token.

An example of supervised sequence data is a list of integer sequences
`(input_1, output_1, input_2, output_2, ...)`. `SequenceDataEnv` plays one
example per episode. It first shows an input as observations, one token per
step, ignoring the actions; after its last token it shows EOS, and the policy
answers one token per step, each answer echoed back as the next observation,
until it acts EOS (or the answer grows past `max_length`). That step's reward
is `metric(answer, output)`; every other step's is 0. Then the next input is
shown, and so on; the episode ends after the example's last sequence.

With EOS = 1 and the example `([2, 3], [4, 5])`:

  step             observation  reward                  done  control  discount
  env.reset()      2
  env.step(any)    3            0.0                     F     0        0
  env.step(any)    1 (EOS)      0.0                     F     0        0
  env.step(4)      4            0.0                     F     1        0
  env.step(6)      6            0.0                     F     1        0
  env.step(1)      1 (EOS)      metric([4, 6], [4, 5])  T     1        1

The last two columns are the step's `info`: `control_mask` is 1 where the
step's action was the policy's to choose (the answer and its EOS) and
`discount_mask` is 1 on the step that ends an answer (the rewarded one), so
an agent can learn on, and discount over, the answer tokens alone.

`copy_stream` makes the data of the copy task: each output repeats its input.
"""

import numbers
import operator

import numpy as np

__all__ = ['SequenceDataEnv', 'copy_stream']

_NAME = 'SequenceDataEnv'


class SequenceDataEnv:
  """An RL environment that shows inputs and scores the policy's outputs.

  It has the gym step API: `reset()` returns the first observation and
  `step(action)` returns `(observation, reward, done, info)`, with `info` a
  dict of `control_mask` and `discount_mask` (see the module docstring);
  once the episode is over, `step` returns `(EOS, 0.0, True, None)`.
  Observations are int32 scalars; both spaces are
  `gymnasium.spaces.Discrete(vocab_size)`.

  The constructor already draws an example, so the environment can be
  stepped at once; each `reset` draws the next one. The data stream alone
  decides the episodes: seed it (`copy_stream` uses `np.random`) for
  reproducible ones.

  Example:
    >>> env = SequenceDataEnv(iter([[[2, 3], [2, 3]]] * 2), vocab_size=4)
    >>> int(env.reset()), int(env.step(0)[0]), int(env.step(0)[0])
    (2, 3, 1)
    >>> env.step(2)[1:3], env.step(3)[1:3], env.step(1)[1:3]
    ((0.0, False), (0.0, False), (1.0, True))

  Args:
    data_stream: an iterator (or iterable) of examples, each a list or
      tuple of 1-D integer sequences (lists, tuples or arrays), inputs at
      even positions and outputs at odd ones.
    vocab_size: the number of token ids; every token and action is in
      `[0, vocab_size)`.
    metric: a function `metric(answer, output)` of the policy's answer (a
      list of ints, without EOS) and the expected output (as the data gave
      it), returning the reward. The default is per-token accuracy: the
      number of positions where both agree, over the longer length (1.0
      when both are empty).
    eos_id: the EOS token id.
    max_length: the longest answer; the action after it ends the answer
      like EOS would (and is left out of it). None means no limit.
  """

  # What gymnasium code reads from an environment.
  metadata = {'render_modes': []}
  render_mode = None
  spec = None

  def __init__(self, data_stream, vocab_size, metric=None,
               eos_id=1, max_length=1000):
    try:
      self._data = iter(data_stream)
    except TypeError:
      raise TypeError(
          f'{_NAME}: data_stream must be an iterator or iterable of '
          f'examples, got {type(data_stream).__name__}.') from None
    self._vocab_size = _index(vocab_size, 'vocab_size')
    if self._vocab_size < 1:
      raise ValueError(
          f'{_NAME}: vocab_size must be at least 1, got {vocab_size}.')
    if metric is not None and not callable(metric):
      raise TypeError(
          f'{_NAME}: metric must be a function metric(answer, output) or '
          f'None (per-token accuracy), got {type(metric).__name__}.')
    self._metric = _accuracy if metric is None else metric
    self._eos = _index(eos_id, 'eos_id')
    if not 0 <= self._eos < self._vocab_size:
      raise ValueError(
          f'{_NAME}: eos_id must be in [0, vocab_size) = '
          f'[0, {self._vocab_size}), got {eos_id}.')
    if max_length is not None and not isinstance(max_length, numbers.Real):
      raise TypeError(
          f'{_NAME}: max_length must be a number of tokens or None (no '
          f'limit), got {max_length!r}.')
    self._max_length = max_length
    self._action_space = None
    self._observation_space = None
    self.reset()

  @property
  def action_space(self):
    if self._action_space is None:
      self._action_space = _discrete(self._vocab_size)
    return self._action_space

  @property
  def observation_space(self):
    if self._observation_space is None:
      self._observation_space = _discrete(self._vocab_size)
    return self._observation_space

  @property
  def unwrapped(self):
    return self

  @property
  def observation(self):
    """The current observation, an int32 scalar array."""
    if self._done:
      token = self._eos
    elif self._on_input:
      token = self._tokens[self._seq][self._pos]
    else:
      token = self._answer[-1] if self._answer else self._eos
    return np.array(token, dtype=np.int32)

  @property
  def _on_input(self):
    return self._seq % 2 == 0

  @property
  def _done(self):
    return self._seq >= len(self._tokens)

  def reset(self, seed=None, options=None):
    """Draws the next example; returns the first observation.

    Args:
      seed: accepted for gymnasium's signature; unused (see the class
        docstring).
      options: accepted for gymnasium's signature; unused.

    Returns:
      The observation (not gymnasium's `(observation, info)` pair).
    """
    del seed, options
    try:
      example = next(self._data)
    except StopIteration:
      raise StopIteration(f'{_NAME}: the data stream has no more '
                          'examples.') from None
    self._example, self._tokens = self._checked(example)
    self._seq, self._pos = 0, 0
    self._answer = []
    return self.observation

  def step(self, action):
    """Takes `action`; returns `(observation, reward, done, info)`."""
    if self._done:
      return np.array(self._eos, dtype=np.int32), 0.0, True, None
    control_mask = int(not self._on_input)
    discount_mask = 0
    reward = 0.0
    if self._on_input:  # The action is ignored.
      self._pos += 1
      if self._pos == len(self._tokens[self._seq]):
        self._next_sequence()
    else:
      token = self._checked_action(action)
      self._answer.append(token)
      too_long = (self._max_length is not None and
                  len(self._answer) > self._max_length)
      if token == self._eos or too_long:
        reward = self._metric(self._answer[:-1], self._example[self._seq])
        discount_mask = 1
        self._next_sequence()
    info = {'control_mask': control_mask, 'discount_mask': discount_mask}
    return self.observation, reward, self._done, info

  def close(self):
    """Nothing to release; here for gymnasium's API."""

  def _next_sequence(self):
    self._seq, self._pos = self._seq + 1, 0
    self._answer = []

  def _checked(self, example):
    """The example's sequences as given, and as checked int arrays."""
    try:
      sequences = list(example)
    except TypeError:
      raise TypeError(
          f'{_NAME}: each example from data_stream must be a list or tuple '
          f'of token sequences (input_1, output_1, ...), got '
          f'{type(example).__name__}.') from None
    tokens = []
    for i, sequence in enumerate(sequences):
      what = f'sequence {i} ({"input" if i % 2 == 0 else "output"})'
      try:
        array = np.asarray(sequence)
      except ValueError:  # Ragged, e.g. [[2, 3], [4]].
        array = np.asarray(sequence, dtype=object)
      if array.ndim != 1:
        hint = (' An example is a list of sequences, not one sequence.'
                if array.ndim == 0 else '')
        raise ValueError(
            f'{_NAME}: {what} of an example must be a 1-D sequence of '
            f'token ids, got shape {array.shape}: {sequence!r}.{hint}')
      if i % 2 == 0 and not array.size:
        raise ValueError(
            f'{_NAME}: {what} of an example is empty; inputs need at least '
            'one token to show (outputs may be empty).')
      tokens.append(self._checked_tokens(array, what))
    return sequences, tokens

  def _checked_tokens(self, array, what):
    if not array.size:
      return np.zeros((0,), np.int64)
    if array.dtype.kind == 'f':
      integral = np.isfinite(array) & (array == np.round(array))
      if not integral.all():
        raise ValueError(
            f'{_NAME}: {what} of an example must hold integer token ids, got '
            f'{array[~integral][0].item()} in {array.tolist()}.')
    elif array.dtype.kind not in 'biu':
      raise TypeError(
          f'{_NAME}: {what} of an example must hold integer token ids, got '
          f'dtype {array.dtype} in {array.tolist()}.')
    outside = (array < 0) | (array >= self._vocab_size)
    if outside.any():
      raise ValueError(
          f'{_NAME}: {what} of an example has token '
          f'{array[outside][0].item()} outside the vocabulary [0, '
          f'vocab_size) = [0, {self._vocab_size}): {array.tolist()}.')
    return array.astype(np.int64)

  def _checked_action(self, action):
    array = np.asarray(action)
    expected = (f'an integer in [0, {self._vocab_size}) (the action space '
                f'Discrete({self._vocab_size}))')
    if array.size != 1 or array.dtype.kind not in 'biuf':
      raise TypeError(f'{_NAME}: the action must be {expected}, got '
                      f'{action!r}.')
    value = array.reshape(()).item()
    integral = array.dtype.kind != 'f' or (np.isfinite(value) and
                                           value == int(value))
    if not integral or not 0 <= value < self._vocab_size:
      raise ValueError(f'{_NAME}: the action must be {expected}, got '
                       f'{action!r}.')
    return int(value)


def copy_stream(length, low=2, high=15, n=1):
  """Endless examples of the copy task, drawn with `np.random`.

  Example:
    >>> example = next(copy_stream(3, n=2))
    >>> len(example), example[0].shape, bool((example[0] == example[1]).all())
    (4, (3,), True)

  Args:
    length: tokens per sequence.
    low: the smallest token id.
    high: one past the largest token id.
    n: input/output pairs per example.

  Returns:
    An infinite iterator of examples `[x_1, x_1, ..., x_n, x_n]`, each `x_i`
    an int32 array of `length` ids drawn uniformly from `[low, high)` (its
    output is the same array).
  """
  length = _index(length, 'length', 'copy_stream')
  n = _index(n, 'n', 'copy_stream')
  if length < 0 or n < 0:
    raise ValueError(f'copy_stream: length and n must be >= 0, got '
                     f'length={length}, n={n}.')
  if not low < high:
    raise ValueError(f'copy_stream: ids are drawn from [low, high), so low '
                     f'must be < high; got low={low}, high={high}.')
  return _copy_examples(length, low, high, n)


def _copy_examples(length, low, high, n):
  while True:
    example = []
    for _ in range(n):
      sequence = np.random.randint(low, high, size=(length,), dtype=np.int32)
      example.extend([sequence, sequence])
    yield example


def _accuracy(answer, output):
  """Positions where both agree, over the longer length (1.0 if both empty)."""
  answer, output = np.asarray(answer), np.asarray(output)
  longest = max(answer.shape[-1], output.shape[-1])
  if not longest:
    return 1.0
  shortest = min(answer.shape[-1], output.shape[-1])
  agree = np.sum(answer[..., :shortest] == output[..., :shortest])
  return float(agree / longest)


def _index(value, arg, owner=_NAME):
  try:
    return operator.index(value)
  except TypeError:
    raise TypeError(f'{owner}: {arg} must be an integer, got '
                    f'{value!r}.') from None


def _discrete(n):
  import gymnasium  # pylint: disable=g-import-not-at-top
  return gymnasium.spaces.Discrete(n)
