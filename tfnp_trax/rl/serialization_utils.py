"""Serializing trajectories into symbol sequences for sequence models.

Observations and actions are turned into symbols by `space_serializer`
serializers, interleaved into one sequence (obs_1, act_1, obs_2, act_2, ...,
obs_L+1) and fed to an autoregressive model. `SerializedModel` wraps a world
model that way for training; `RawPolicy` and `SerializedPolicy` (chosen by
`wrap_policy`) put action-logit and value heads on a sequence model.
"""

import functools

import numpy as onp

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.rl import _spaces
from tfnp_trax.rl import space_serializer

__all__ = ['Serialize', 'Interleave', 'Deinterleave', 'RepresentationMask',
           'SignificanceWeights', 'SerializedModel', 'TimeSeriesModel',
           'RawPolicy', 'substitute_inner_policy_raw', 'SerializedPolicy',
           'substitute_inner_policy_serialized', 'analyze_action_space',
           'wrap_policy', 'substitute_inner_policy', 'SerializationError']


class SerializationError(ValueError, AssertionError):
  """Inputs of a serialization layer that do not fit together.

  Also an AssertionError: Trax asserts these conditions.
  """


def _shape(x):
  return tuple(x.shape)


# pylint: disable=invalid-name
def Serialize(serializer):
  """Layer: (batch, length, *element_shape) -> (batch, length, repr_length).

  Args:
    serializer: a `space_serializer.SpaceSerializer`.
  """
  def serialize(x):
    (batch_size, length) = _shape(x)[:2]
    flat = jnp.reshape(x, (-1,) + _shape(x)[2:])
    symbols = serializer.serialize(flat)
    # One of the two leading sizes must be static to rebuild them.
    leading = (batch_size, -1) if batch_size is not None else (-1, length)
    return jnp.reshape(symbols,
                       leading + (serializer.representation_length,))
  return tl.Fn('Serialize', serialize)


def Interleave():
  """Layer: interleaves two serialized sequences into one flat sequence.

  Inputs (batch, L1, R1) and (batch, L2, R2) with L1 == L2 or L2 + 1 (an
  extra final observation) give (batch, L1 * R1 + L2 * R2):
  x_1, y_1, x_2, y_2, ..., x_L2, y_L2[, x_L1], each x_i R1 symbols and each
  y_i R2 symbols.

  Example:
    >>> x = jnp.array([[[1, 1], [2, 2], [3, 3]]])
    >>> y = jnp.array([[[7], [8]]])
    >>> Interleave()((x, y)).tolist()
    [[1, 1, 7, 2, 2, 8, 3, 3]]
  """
  def interleave(x, y):
    (_, x_length, x_repr) = _shape(x)
    (_, length, y_repr) = _shape(y)
    if x_length not in (length, length + 1):
      raise SerializationError(
          f'Interleave: the first sequence must be as long as the second or '
          f'one longer (the final observation), got shapes {_shape(x)} and '
          f'{_shape(y)}.')
    pairs = jnp.concatenate((x[:, :length], y), axis=2)
    pairs = jnp.reshape(pairs, (-1, length * (x_repr + y_repr)))
    if x_length == length:
      return pairs  # (A reshape of the empty rest to (-1, 0) is ambiguous.)
    rest = jnp.reshape(x[:, length:], (-1, x_repr))
    return jnp.concatenate((pairs, rest), axis=1)
  return tl.Fn('Interleave', interleave)


def Deinterleave(x_size, y_size):
  """Layer: the inverse of `Interleave`, for elements of sizes x/y_size.

  Input (batch, length, *suffix), with length = n * (x_size + y_size) or
  that plus x_size; outputs (batch, n[+1], x_size, *suffix) and
  (batch, n, y_size, *suffix).
  """
  def deinterleave(inputs):
    length = _shape(inputs)[1]
    suffix = _shape(inputs)[2:]
    group = x_size + y_size
    remainder = length % group
    if remainder not in (0, x_size):
      raise SerializationError(
          f'Deinterleave: a sequence of length {length} is not n * '
          f'(x_size + y_size) = n * {group} symbols, or that plus x_size = '
          f'{x_size}; got {remainder} symbols left over (input shape '
          f'{_shape(inputs)}).')
    pairs = inputs[:, :length - remainder]
    pairs = jnp.reshape(pairs, (-1, length // group, group) + suffix)
    x_reprs = pairs[:, :, :x_size]
    y_reprs = pairs[:, :, x_size:]
    if remainder:
      last = inputs[:, None, length - remainder:]
      x_reprs = jnp.concatenate((x_reprs, last), axis=1)
    return (x_reprs, y_reprs)
  return tl.Fn('Deinterleave', deinterleave, n_out=2)


def RepresentationMask(serializer):
  """Layer: a (batch, length, ...) mask -> (batch, length, repr_length).

  Axes after the second are reduced with max, then each step's value is
  repeated over its `serializer.representation_length` symbols.
  """
  def representation_mask(mask):
    if mask.ndim > 2:
      mask = jnp.amax(mask, axis=tuple(range(2, mask.ndim)))
    return jnp.repeat(mask[..., None],
                      repeats=serializer.representation_length, axis=2)
  return tl.Fn('RepresentationMask', representation_mask)


def SignificanceWeights(serializer, decay):
  """Layer: mask (batch, length, R) -> mask * decay ** significance (float32).

  `significance` is `serializer.significance_map` (0 for the most
  significant symbol of a value), so less significant digits weigh less.
  """
  significance = onp.asarray(serializer.significance_map)
  def significance_weights(mask):
    if mask.ndim != 3 or _shape(mask)[2] != significance.shape[0]:
      raise SerializationError(
          f'SignificanceWeights: expected a mask of shape (batch, length, '
          f'{significance.shape[0]}) (the representation length), got '
          f'{_shape(mask)}; put RepresentationMask before it.')
    weights = jnp.asarray(float(decay) ** significance.astype(onp.float64),
                          jnp.float32)
    return jnp.asarray(mask).astype(jnp.float32) * weights
  return tl.Fn('SignificanceWeights', significance_weights)


class SerializedModel(tl.Serial):
  """A sequence model trained on serialized, interleaved trajectories.

  Signature (obs, act, obs, mask) -> (obs_logits, obs_repr, weights): the
  observations and actions are serialized and interleaved, fed to the
  sequence model, and its logits are split back; the observation logits
  come out with the serialized target observations and their weights (the
  mask, repeated over each observation's symbols and decayed by symbol
  significance).

  Args:
    seq_model: a function `mode -> layer`, the autoregressive model (tokens
      in, logits out), e.g. `functools.partial(models.TransformerLM,
      vocab_size=...)`.
    observation_serializer: the serializer of observations.
    action_serializer: the serializer of actions.
    significance_decay: in (0, 1), the weight factor per digit position.
    mode: 'train' or 'eval'.
  """

  def __init__(self, seq_model, observation_serializer, action_serializer,
               significance_decay, mode='train'):
    if mode not in ('train', 'eval'):
      raise SerializationError(
          f"SerializedModel: mode must be 'train' or 'eval', got {mode!r}; "
          f'for sampling use make_predict_model().')
    weigh_by_significance = [
        RepresentationMask(serializer=observation_serializer),
        SignificanceWeights(serializer=observation_serializer,
                            decay=significance_decay),
    ]
    super().__init__(
        # (obs, act, obs, mask)
        tl.Parallel(Serialize(serializer=observation_serializer),
                    Serialize(serializer=action_serializer),
                    Serialize(serializer=observation_serializer)),
        # (obs_repr, act_repr, obs_repr, mask)
        Interleave(),
        # (obs_act_repr, obs_repr, mask)
        seq_model(mode=mode),
        # (obs_act_logits, obs_repr, mask)
        Deinterleave(x_size=observation_serializer.representation_length,
                     y_size=action_serializer.representation_length),
        # (obs_logits, act_logits, obs_repr, mask)
        tl.Parallel(None, tl.Drop(), None, weigh_by_significance),
        # (obs_logits, obs_repr, weights)
    )
    self._seq_model = seq_model
    self._observation_serializer = observation_serializer
    self._action_serializer = action_serializer

  @property
  def observation_serializer(self):
    return self._observation_serializer

  @property
  def action_serializer(self):
    return self._action_serializer

  def make_predict_model(self):
    """A new 'predict'-mode sequence model, to sample with these weights."""
    return self._seq_model(mode='predict')

  @property
  def seq_model_weights(self):
    """The weights of the sequence model (the third sublayer)."""
    return self.weights[2]

  @property
  def seq_model_state(self):
    """The state of the sequence model (the third sublayer)."""
    return self.state[2]


def TimeSeriesModel(seq_model, low=0.0, high=1.0, precision=2, vocab_size=64,
                    significance_decay=0.7, mode='train'):
  """A SerializedModel for a scalar time series in [low, high].

  Args:
    seq_model: a function `(mode, vocab_size) -> layer`.
    low, high: the series' bounds.
    precision: digits per value.
    vocab_size: symbols per digit.
    significance_decay: see SerializedModel.
    mode: 'train' or 'eval'.
  """
  import gymnasium  # pylint: disable=g-import-not-at-top  # The rl extra.
  obs_srl = space_serializer.BoxSpaceSerializer(
      space=gymnasium.spaces.Box(shape=(), low=low, high=high),
      vocab_size=vocab_size, precision=precision)
  # SerializedModel needs actions; a one-symbol dummy space supplies them.
  act_srl = space_serializer.DiscreteSpaceSerializer(
      space=gymnasium.spaces.Discrete(n=1), vocab_size=1)
  seq_model = functools.partial(seq_model, vocab_size=vocab_size)
  return SerializedModel(seq_model, obs_srl, act_srl, significance_decay, mode)


def RawPolicy(seq_model, n_controls, n_actions):
  """A policy on a sequence model of continuous observation vectors.

  Signature (obs, act) -> (act_logits, values); only obs is used:
  obs (batch, length, depth) -> act_logits (batch, length, n_controls,
  n_actions) (log-probabilities) and values (batch, length).

  Args:
    seq_model: a layer, (batch, length, depth) -> (batch, length, d).
    n_controls: the number of controls.
    n_actions: the number of actions of each control.
  """
  def SplitControls():
    def split(x):
      return jnp.reshape(x, (-1,) + _shape(x)[1:2] + (n_controls, n_actions))
    return tl.Fn('SplitControls', split)

  action_head = [tl.Dense(n_controls * n_actions), SplitControls(),
                 tl.LogSoftmax()]
  return tl.Serial(                             # (obs, act)
      tl.Select([0], n_in=2),                   # (obs,)
      seq_model,                                # (obs_hidden,)
      tl.Dup(),                                 # (obs_hidden, obs_hidden)
      tl.Parallel(action_head, [tl.Dense(1),
                                tl.Flatten()]),  # (act_logits, values)
  )


def substitute_inner_policy_raw(raw_policy, inner_policy):
  """RawPolicy weights/state with the sequence model's part replaced."""
  return raw_policy[:1] + [inner_policy] + raw_policy[2:]


def SerializedPolicy(seq_model, n_controls, n_actions, observation_serializer,
                     action_serializer):
  """A policy on a sequence model of serialized, interleaved trajectories.

  Signature (obs, act) -> (act_logits, values), as RawPolicy. The symbol
  sequence gets one dummy action at the end and is shifted right, so the
  output at each action symbol predicts that symbol from the ones before;
  the output at an action's first symbol also predicts the value.

  Args:
    seq_model: a layer, symbols (batch, length) -> (batch, length, d).
    n_controls: the number of controls; must equal the action
      serializer's representation length.
    n_actions: the number of actions of each control.
    observation_serializer: the serializer of observations.
    action_serializer: the serializer of actions.

  Raises:
    ValueError: if n_controls is not the action representation length.
  """
  if action_serializer.representation_length != n_controls:
    raise ValueError(
        f'SerializedPolicy: action symbols should correspond 1-1 to '
        f'controls, but got {n_controls} controls and '
        f'{action_serializer.representation_length} symbols.')

  def FirstSymbol():
    return tl.Fn('FirstSymbol', lambda x: x[:, :, 0])

  def PadRight(n_to_pad):
    def pad_right(x):
      widths = [(0, 0), (0, n_to_pad)] + [(0, 0)] * (x.ndim - 2)
      return jnp.pad(x, widths, mode='constant', constant_values=0)
    return tl.Fn(f'PadRight({n_to_pad})', pad_right)

  action_head = [tl.Dense(n_actions), tl.LogSoftmax()]
  value_head = [FirstSymbol(), tl.Dense(1), tl.Flatten()]
  return tl.Serial(
      # (obs, act)
      tl.Parallel(Serialize(observation_serializer),
                  Serialize(action_serializer)),
      # (obs_repr, act_repr)
      Interleave(),
      # (obs_act_repr,)
      PadRight(action_serializer.representation_length),
      tl.ShiftRight(),
      seq_model,
      # (obs_act_hidden,)
      Deinterleave(observation_serializer.representation_length,
                   action_serializer.representation_length),
      # (obs_hidden, act_hidden)
      tl.Select([1, 1]),
      # (act_hidden, act_hidden)
      tl.Parallel(action_head, value_head),
      # (act_logits, values)
  )
# pylint: enable=invalid-name


def substitute_inner_policy_serialized(serialized_policy, inner_policy):
  """SerializedPolicy weights/state with the sequence model's part replaced."""
  return serialized_policy[:4] + [inner_policy] + serialized_policy[5:]


def analyze_action_space(action_space):
  """(n_controls, n_actions) of a Discrete or MultiDiscrete action space.

  Raises:
    SpaceSerializerError (an AssertionError, as Trax raises): for another
      space, or a MultiDiscrete one whose controls differ in size.
  """
  found = _spaces.kind(action_space)
  if found == _spaces.DISCRETE:
    return (1, int(action_space.n))
  if found != _spaces.MULTI_DISCRETE:
    raise space_serializer.SpaceSerializerError(
        f'analyze_action_space: the action space must be Discrete or '
        f'MultiDiscrete, got {action_space!r} of type '
        f'{_spaces.type_name(action_space)}.')
  nvec = onp.asarray(action_space.nvec)
  if nvec.ndim != 1 or nvec.size == 0:
    raise space_serializer.SpaceSerializerError(
        f'analyze_action_space: a MultiDiscrete action space needs a 1-D, '
        f'non-empty nvec, got nvec of shape {nvec.shape}.')
  if nvec.min() != nvec.max():
    raise space_serializer.SpaceSerializerError(
        f'analyze_action_space: every control must have the same number of '
        f'actions, got nvec={nvec.tolist()}.')
  return (int(nvec.shape[0]), int(nvec[0]))


def wrap_policy(seq_model, observation_space, action_space, vocab_size):
  """RawPolicy (vocab_size None) or SerializedPolicy around `seq_model`.

  Args:
    seq_model: a sequence model layer.
    observation_space: the observation space (gym or gymnasium).
    action_space: a Discrete or MultiDiscrete action space.
    vocab_size: the number of symbols of a serialized policy, or None.
  """
  (n_controls, n_actions) = analyze_action_space(action_space)
  if vocab_size is None:
    return RawPolicy(seq_model, n_controls, n_actions)
  return SerializedPolicy(
      seq_model, n_controls, n_actions,
      observation_serializer=space_serializer.create(observation_space,
                                                     vocab_size),
      action_serializer=space_serializer.create(action_space, vocab_size))


def substitute_inner_policy(wrapped_policy, inner_policy, vocab_size):
  """Copies the inner model's weights/state into a wrapped policy's.

  Args:
    wrapped_policy: weights or state of a RawPolicy/SerializedPolicy.
    inner_policy: weights or state of the inner sequence model.
    vocab_size: as given to `wrap_policy` (None: a RawPolicy).
  """
  if vocab_size is None:
    return substitute_inner_policy_raw(wrapped_policy, inner_policy)
  return substitute_inner_policy_serialized(wrapped_policy, inner_policy)
