"""Synthetic tasks of `trax.data.inputs`: copy, addition, sines, random.

Each returns an `Inputs` of endless batches drawn from NumPy's global
random stream (and Python's `random` for the copy tasks' lengths), so
`np.random.seed` / `random.seed` make them repeatable, as in Trax.
"""

import math
import random

import numpy as np

from tfnp_trax.data._batcher import Inputs
from tfnp_trax.data._padding import pad_to_max_dims

__all__ = ['lower_endian_to_number', 'number_to_lower_endian',
           'random_number_lower_endian', 'addition_input_stream',
           'random_inputs', 'sequence_copy_inputs',
           'simple_sequence_copy_inputs', 'addition_inputs', 'sine_inputs']


def _required(where, **values):
  missing = [k for k, v in values.items() if v is None]
  if missing:
    raise ValueError(f'{where}: {", ".join(missing)} required (in Trax these '
                     f'are gin-required parameters).')


def lower_endian_to_number(l, base):
  """The number whose digits in `base`, least significant first, are `l`."""
  return sum(d * base**i for i, d in enumerate(l))


def number_to_lower_endian(n, base):
  """The digits of `n` in `base`, least significant first."""
  digits = [n % base]
  while n >= base:
    n //= base
    digits.append(n % base)
  return digits


def random_number_lower_endian(length, base):
  """Random `length` digits, least significant first; the top one nonzero."""
  if length == 1:  # A one-digit number may be 0.
    return [np.random.randint(base)]
  prefix = [np.random.randint(base) for _ in range(length - 1)]
  return prefix + [np.random.randint(base - 1) + 1]


def _pad_to_multiple_of(x, y, axis):
  """Zero-pads `x` along `axis` to a multiple of `y`."""
  widths = [(0, 0)] * x.ndim
  widths[axis] = (0, int(math.ceil(x.shape[axis] / y) * y) - x.shape[axis])
  return np.pad(x, widths, mode='constant', constant_values=x.dtype.type(0))


def addition_input_stream(vocab_size=None, batch_size=None, min_length=None,
                          max_length=None, pad_to_multiple=32, encdec=False):
  """Endless batches of `<S>x+y<S>(x+y)` with numbers as lower-endian digits.

  Digits are ids 1..base (`base = vocab_size - 3`); `base + 1` is '+' and
  `base + 2` is `<S>`; 0 pads. Lengths are padded up to multiples of
  `pad_to_multiple`.

  Args:
    vocab_size: symbols in use.
    batch_size: examples per batch.
    min_length: the shortest `x+y` (at least 3).
    max_length: the longest `x+y` (at least 3).
    pad_to_multiple: pad lengths to multiples of this.
    encdec: if True, yield `(x+y, sum, weights)` for an encoder-decoder;
      otherwise `(seq, seq, weights)` with weights on the sum only.

  Returns:
    A generator of batches.
  """
  _required('addition_input_stream', vocab_size=vocab_size,
            batch_size=batch_size, min_length=min_length,
            max_length=max_length)
  base = vocab_size - 3

  def single_example():
    add_len = (min_length - 1) // 2
    l1 = np.random.randint((max_length - add_len + 1) // 2) + add_len
    l2 = np.random.randint(max_length - l1 - 1) + 1
    n1 = random_number_lower_endian(l1, base)
    n2 = random_number_lower_endian(l2, base)
    total = lower_endian_to_number(n1, base) + lower_endian_to_number(n2, base)
    inp = n1 + [base] + n2
    tgt = number_to_lower_endian(total, base)
    if encdec:
      x = np.array([i + 1 for i in inp])
      y = np.array([i + 1 for i in tgt])
      if len(x) > max_length or len(y) > max_length:
        return single_example()  # Too long: draw again, as Trax does.
      return (x, y, np.array([1] * len(tgt)))
    x = [base + 2] + [i + 1 for i in inp] + [base + 2] + [i + 1 for i in tgt]
    weights = [0] * (len(inp) + 2) + [1] * len(tgt)
    return (np.array(x), np.array(x), np.array(weights))

  def batches():
    if max_length < 3 or min_length < 3:
      raise ValueError('Maximum/minimum length must be at least 3.')
    while True:
      examples = [single_example() for _ in range(batch_size)]
      yield tuple(pad_to_max_dims(column, boundary=pad_to_multiple,
                                  strict_pad_on_len=True)
                  for column in zip(*examples))
  return batches()


def random_inputs(input_shape=None, input_dtype=np.int32, input_range=(0, 255),
                  output_shape=None, output_dtype=np.int32,
                  output_range=(0, 9)):
  """Inputs of uniform random batches (shapes include the batch dimension).

  Floating dtypes draw uniformly in the range; integer ones draw integers in
  it, both ends included.
  """
  _required('random_inputs', input_shape=input_shape,
            output_shape=output_shape)

  def draw(low, high, shape, dtype):
    if np.issubdtype(np.dtype(dtype), np.floating):
      return np.random.uniform(low, high, shape).astype(dtype)
    return np.random.randint(low, high + 1, shape).astype(dtype)

  def random_minibatches(n_devices):
    if input_range[0] % n_devices:
      raise ValueError(f'random_inputs: input_range[0] ({input_range[0]}) '
                       f'must divide by n_devices ({n_devices}).')
    while True:
      yield (draw(*input_range, input_shape, input_dtype),
             draw(*output_range, output_shape, output_dtype))
  return Inputs(random_minibatches)


def sequence_copy_inputs(vocab_size=None, batch_size=None, train_length=None,
                         eval_min_length=None, eval_max_length=None,
                         reverse=False, pad_to_multiple=32):
  """Copy task `0 w 0 w` (or `0 w 0 reversed(w)`), `w` in [1, vocab_size-1).

  Training lengths are 4, 6, ..., 2 * train_length; eval lengths are
  `2 * (L + 1)` for L in [eval_min_length, eval_max_length). Weights are 1
  on the copy only; batches are `(x, x, weights)`, padded to multiples of
  `pad_to_multiple`.
  """
  _required('sequence_copy_inputs', vocab_size=vocab_size,
            batch_size=batch_size, train_length=train_length,
            eval_min_length=eval_min_length, eval_max_length=eval_max_length)

  def random_minibatches(lengths):
    while True:
      length = random.choice(lengths)
      w_length = length // 2 - 1
      w = np.random.randint(low=1, high=vocab_size - 1,
                            size=(batch_size, w_length))
      zero = np.zeros([batch_size, 1], np.int32)
      copy = np.flip(w, axis=1) if reverse else w
      x = np.concatenate([zero, w, zero, copy], axis=1)
      weights = np.concatenate([np.zeros((batch_size, w_length + 2)),
                                np.ones((batch_size, w_length))], axis=1)
      x = _pad_to_multiple_of(x, pad_to_multiple, 1)
      weights = _pad_to_multiple_of(weights, pad_to_multiple, 1)
      yield (x, x, weights)

  train_lengths = [2 * (i + 2) for i in range(train_length - 1)]
  eval_lengths = [2 * (i + 1) for i in range(eval_min_length, eval_max_length)]
  return Inputs(train_stream=lambda _: random_minibatches(train_lengths),
                eval_stream=lambda _: random_minibatches(eval_lengths))


def simple_sequence_copy_inputs(vocab_size=None, batch_size=None,
                                train_length=None, eval_min_length=None,
                                eval_max_length=None, pad_to_multiple=32):
  """Copy task `w -> w`, `w` in [1, vocab_size-1), all weights 1.

  Training lengths are 1..train_length; eval lengths eval_min_length..
  eval_max_length (inclusive).
  """
  _required('simple_sequence_copy_inputs', vocab_size=vocab_size,
            batch_size=batch_size, train_length=train_length,
            eval_min_length=eval_min_length, eval_max_length=eval_max_length)

  def random_minibatches(lengths):
    while True:
      length = random.choice(lengths)
      x = np.random.randint(low=1, high=vocab_size - 1,
                            size=(batch_size, length))
      weights = np.ones((batch_size, length))
      yield (_pad_to_multiple_of(x, pad_to_multiple, 1),
             _pad_to_multiple_of(x, pad_to_multiple, 1),
             _pad_to_multiple_of(weights, pad_to_multiple, 1))

  train_lengths = list(range(1, train_length + 1))
  eval_lengths = list(range(eval_min_length, eval_max_length + 1))
  return Inputs(train_stream=lambda _: random_minibatches(train_lengths),
                eval_stream=lambda _: random_minibatches(eval_lengths))


def addition_inputs(vocab_size=None, batch_size=None, train_length=None,
                    eval_min_length=None, eval_max_length=None,
                    pad_to_multiple=32, encdec=False):
  """Addition task `<S>x+y<S>(x+y)` (see `addition_input_stream`).

  Training lengths go from 3 to `train_length`; eval ones from
  `eval_min_length` to `eval_max_length`.
  """
  _required('addition_inputs', vocab_size=vocab_size, batch_size=batch_size,
            train_length=train_length, eval_min_length=eval_min_length,
            eval_max_length=eval_max_length)
  train = addition_input_stream(vocab_size, batch_size, 3, train_length,
                                pad_to_multiple, encdec)
  evals = addition_input_stream(vocab_size, batch_size, eval_min_length,
                                eval_max_length, pad_to_multiple, encdec)
  return Inputs(train_stream=lambda _: train, eval_stream=lambda _: evals)


def sine_inputs(batch_size=None, length=None, max_phase=(2 * math.pi),
                min_period=0.1, max_period=10.0):
  """Sines of random phase and log-uniform period: `(obs, act, obs, mask)`.

  `act` is int32 zeros and `mask` ones, both shaped like `obs`.
  """
  _required('sine_inputs', batch_size=batch_size, length=length)

  def random_series():
    while True:
      phase = np.random.uniform(0, max_phase)
      period = np.exp(np.random.uniform(np.log(min_period),
                                        np.log(max_period)))
      yield np.sin((np.arange(length) - phase) / period)

  def random_minibatches(_):
    series = []
    for s in random_series():
      series.append(s)
      if len(series) == batch_size:
        obs = np.stack(series)
        series = []
        yield (obs, np.zeros_like(obs, dtype=np.int32), obs,
               np.ones_like(obs))
  return Inputs(train_stream=random_minibatches,
                eval_stream=random_minibatches)
