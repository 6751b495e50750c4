"""Policy and value heads on top of a model body, for RL agents.

`body` and `normalizer` are functions `mode -> layer` (None means no layer),
so the same architecture can be built for training and for collection.
`Quality` (a Q-network head) lives in `quality.py` and is re-exported here,
where Trax defines it.
"""

# Layer constructors are CamelCase, as in Trax.
# pylint: disable=invalid-name

import numbers

from tfnp_trax import layers as tl
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models.quality import Quality

__all__ = ['Policy', 'Value', 'PolicyAndValue', 'Quality']


def _maybe(layer_fn, mode):
  return [] if layer_fn is None else layer_fn(mode=mode)


def _part(layer_fn, mode, batch_axes):
  """The layer `layer_fn(mode)` (or none), folding leading axes if asked."""
  layer = _maybe(layer_fn, mode)
  # Nothing to fold for an empty part; it stays empty, as in Trax.
  if batch_axes is None or (isinstance(layer, list) and not layer):
    return layer
  if isinstance(layer, (list, tuple)):
    layer = tl.Serial(layer)
  return tl.BatchLeadingAxes(layer, n_last_axes_to_keep=batch_axes)


def _head_kwargs(layer_name, head_init_range):
  """Dense kwargs drawing the head's kernel from [-range, range]."""
  if head_init_range is None:
    return {}
  if (not isinstance(head_init_range, numbers.Real) or
      isinstance(head_init_range, bool) or not head_init_range > 0):
    raise ValueError(f'{layer_name}: head_init_range must be a positive '
                     f'number or None, got {head_init_range!r}.')
  return {'kernel_initializer': tl.RandomUniformInitializer(
      lim=head_init_range)}


def Policy(policy_distribution, body=None, normalizer=None,
           head_init_range=None, batch_axes=None, mode='train'):
  """`normalizer -> body -> Dense(policy_distribution.n_inputs)`.

  Example:
    >>> from tfnp_trax.rl import distributions
    >>> model = Policy(distributions.Categorical(2),
    ...                body=lambda mode: tl.Serial(tl.Dense(8), tl.Tanh()))

  Args:
    policy_distribution: the distribution whose inputs the head outputs.
    body: function `mode -> layer` for the network body, or None.
    normalizer: function `mode -> layer` run before the body, or None.
    head_init_range: if set, the head's kernel is initialized uniformly in
      [-head_init_range, head_init_range] (small values start the policy
      near uniform).
    batch_axes: if set, the normalizer and body see inputs whose leading
      axes are folded into one, keeping the last `batch_axes` axes.
    mode: 'train', 'eval', 'predict' or 'collect', passed to the builders.

  Returns:
    A layer mapping observations to distribution inputs.
  """
  return tl.Serial(
      _part(normalizer, mode, batch_axes),
      _part(body, mode, batch_axes),
      tl.Dense(policy_distribution.n_inputs,
               **_head_kwargs('Policy', head_init_range)))


def _tanh_mul_gate(x, a):
  # tanh of a bfloat16 tensor comes back wider; cast so bfloat16 stays so.
  return x * jnp.tanh(a).astype(x.dtype)


def _ActionInjector(inject_actions_n_layers, inject_actions_dim, is_discrete,
                    vocab_size, multiplicative_action_injection):
  """`(body_out, actions) -> features`: both encoded, merged, then an MLP."""
  action_encoder = (tl.Embedding(vocab_size, inject_actions_dim)
                    if is_discrete else tl.Dense(inject_actions_dim))
  if multiplicative_action_injection:
    # The action gates the observation features; the product of two
    # roughly unit-variance terms (one squashed by tanh) has a smaller
    # variance, which the LayerNorm restores.
    merge = tl.Serial(
        tl.Fn('TanhMulGate', _tanh_mul_gate),
        tl.LayerNorm())
  else:
    merge = tl.Add()
  mlp = []
  for _ in range(inject_actions_n_layers):
    mlp += [tl.Dense(inject_actions_dim), tl.Relu()]
  return tl.Serial(
      tl.Parallel(tl.Dense(inject_actions_dim), action_encoder),
      merge,
      tl.Serial(mlp))  # Trax's MLP(..., out_activation=True, flatten=False).


def Value(body=None, normalizer=None, inject_actions=False,
          inject_actions_n_layers=1, inject_actions_dim=64, batch_axes=None,
          mode='train', is_discrete=False, vocab_size=2,
          multiplicative_action_injection=False, head_init_range=None):
  """`normalizer -> body [-> action injection] -> Dense(1)`.

  With `inject_actions` the model takes `(observations, actions)` and
  scores the action (a Q-value): the body output and the actions are each
  encoded to `inject_actions_dim` (a Dense, or an Embedding for discrete
  actions), merged, and passed through `inject_actions_n_layers` Dense+Relu
  layers. The merge is a sum, or with `multiplicative_action_injection`
  `LayerNorm(x * tanh(a))` for encoded observations x and actions a.

  Example:
    >>> from tfnp_trax import shapes
    >>> model = Value(body=lambda mode: tl.Serial(tl.Dense(8), tl.Relu()),
    ...               inject_actions=True, inject_actions_dim=4,
    ...               multiplicative_action_injection=True)
    >>> obs = jnp.ones((2, 3), dtype=jnp.float32)
    >>> actions = jnp.ones((2, 1), dtype=jnp.float32)
    >>> _ = model.init(shapes.signature((obs, actions)))
    >>> tuple(model((obs, actions)).shape)
    (2, 1)

  Args:
    body: function `mode -> layer` for the network body, or None.
    normalizer: function `mode -> layer` run before the body, or None.
    inject_actions: if True, take `(observations, actions)` and score the
      actions.
    inject_actions_n_layers: number of Dense+Relu layers after the merge.
    inject_actions_dim: width of the action encoding and of those layers.
    batch_axes: if set, the normalizer and body see inputs whose leading
      axes are folded into one, keeping the last `batch_axes` axes.
    mode: 'train', 'eval', 'predict' or 'collect', passed to the builders.
    is_discrete: if True, actions are integer ids, embedded.
    vocab_size: number of discrete actions (with `is_discrete`).
    multiplicative_action_injection: merge by gating instead of adding.
    head_init_range: if set, the head's kernel is initialized uniformly in
      [-head_init_range, head_init_range].

  Returns:
    A layer mapping observations (and actions) to values of shape [..., 1].
  """
  if not isinstance(inject_actions_n_layers, int) or (
      inject_actions_n_layers < 0):
    raise ValueError(f'Value: inject_actions_n_layers must be an int >= 0, '
                     f'got {inject_actions_n_layers!r}.')
  head_kwargs = _head_kwargs('Value', head_init_range)
  layers = [_part(normalizer, mode, batch_axes),
            _part(body, mode, batch_axes)]
  if inject_actions:
    layers.append(_ActionInjector(
        inject_actions_n_layers, inject_actions_dim, is_discrete, vocab_size,
        multiplicative_action_injection))
  return tl.Serial(*layers, tl.Dense(1, **head_kwargs))


def PolicyAndValue(policy_distribution, body=None, policy_top=Policy,
                   value_top=Value, normalizer=None, joint=True,
                   mode='train'):
  """Policy and value heads on one body, or on two copies of it.

  Outputs `(dist_inputs, values)`. With `joint=True` one body feeds both
  tops, so both losses train it; with `joint=False` each top gets its own
  body (same architecture, separate weights). The normalizer is always
  shared. The tops are built as `policy_top(policy_distribution=...,
  body=None, normalizer=None, mode=mode)` and `value_top(body=None,
  normalizer=None, mode=mode)`.

  Example:
    >>> from tfnp_trax import shapes
    >>> from tfnp_trax.rl import distributions
    >>> model = PolicyAndValue(
    ...     distributions.Categorical(3),
    ...     body=lambda mode: tl.Serial(tl.Dense(8), tl.Tanh()), joint=False)
    >>> _ = model.init(shapes.ShapeDtype((2, 4)))
    >>> logits, values = model(jnp.ones((2, 4), dtype=jnp.float32))
    >>> tuple(logits.shape), tuple(values.shape)
    ((2, 3), (2, 1))

  Args:
    policy_distribution: the distribution whose inputs the policy outputs.
    body: function `mode -> layer` for the network body, or None.
    policy_top: builder of the policy head, like `Policy`.
    value_top: builder of the value head, like `Value`.
    normalizer: function `mode -> layer` run first, or None.
    joint: if True, share the body between the heads; else give each head
      its own.
    mode: 'train', 'eval', 'predict' or 'collect', passed to the builders.

  Returns:
    A layer with n_in=1, n_out=2.
  """
  top_kwargs = {'body': None, 'normalizer': None, 'mode': mode}
  policy_head = policy_top(policy_distribution=policy_distribution,
                           **top_kwargs)
  value_head = value_top(**top_kwargs)
  if joint:
    return tl.Serial(
        _maybe(normalizer, mode),
        _maybe(body, mode),
        tl.Branch(policy_head, value_head))
  # body(mode) is called once per tower, so the towers have their own weights.
  return tl.Serial(
      _maybe(normalizer, mode),
      tl.Branch(tl.Serial(_maybe(body, mode), policy_head),
                tl.Serial(_maybe(body, mode), value_head)))
