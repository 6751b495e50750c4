"""Policy and value heads on top of a model body, for RL agents.

`body` and `normalizer` are functions `mode -> layer` (None means no layer),
so the same architecture can be built for training and for collection.
"""

# Layer constructors are CamelCase, as in Trax.
# pylint: disable=invalid-name

from tfnp_trax import layers as tl

__all__ = ['Policy', 'Value', 'PolicyAndValue']


def _maybe(layer_fn, mode):
  return [] if layer_fn is None else layer_fn(mode=mode)


def _part(layer_fn, mode, batch_axes):
  """The layer `layer_fn(mode)` (or none), folding leading axes if asked."""
  layer = _maybe(layer_fn, mode)
  if batch_axes is None or layer_fn is None:
    return layer
  return tl.BatchLeadingAxes(tl.Serial(layer), n_last_axes_to_keep=batch_axes)


def _head_kwargs(head_init_range):
  if head_init_range is None:
    return {}
  return {'kernel_initializer': tl.RandomUniformInitializer(
      lim=head_init_range)}


def Policy(policy_distribution, body=None, normalizer=None,
           head_init_range=None, batch_axes=None, mode='train'):
  """`normalizer -> body -> Dense(policy_distribution.n_inputs)`.

  Example:
    >>> from tfnp_trax.rl import distributions
    >>> model = Policy(distributions.Categorical(2),
    ...                body=lambda mode: tl.Serial(tl.Dense(8), tl.Tanh()))
  """
  return tl.Serial(
      _part(normalizer, mode, batch_axes),
      _part(body, mode, batch_axes),
      tl.Dense(policy_distribution.n_inputs,
               **_head_kwargs(head_init_range)))


def Value(body=None, normalizer=None, inject_actions=False,
          inject_actions_n_layers=1, inject_actions_dim=64, batch_axes=None,
          mode='train', is_discrete=False, vocab_size=2):
  """`normalizer -> body [-> action injection] -> Dense(1)`.

  With `inject_actions` the model takes `(observations, actions)` and
  scores the action (a Q-value): both are embedded to `inject_actions_dim`,
  added, and passed through `inject_actions_n_layers` Dense+Relu layers.
  """
  layers = [_part(normalizer, mode, batch_axes),
            _part(body, mode, batch_axes)]
  if inject_actions:
    action_encoder = (tl.Embedding(vocab_size, inject_actions_dim)
                      if is_discrete else tl.Dense(inject_actions_dim))
    mlp = []
    for _ in range(inject_actions_n_layers):
      mlp += [tl.Dense(inject_actions_dim), tl.Relu()]
    layers.append(tl.Serial(
        tl.Parallel(tl.Dense(inject_actions_dim), action_encoder),
        tl.Add(), *mlp))
  return tl.Serial(*layers, tl.Dense(1))


def PolicyAndValue(policy_distribution, body=None, policy_top=Policy,
                   value_top=Value, normalizer=None, head_init_range=None,
                   mode='train'):
  """A shared `normalizer -> body` branching into policy and value tops.

  Outputs `(dist_inputs, values)`. `policy_top` and `value_top` build the
  two heads; pass tops with their own bodies for separate towers.
  """
  del head_init_range  # The heads' own builders take it, as in Trax.
  return tl.Serial(
      _maybe(normalizer, mode),
      _maybe(body, mode),
      tl.Branch(
          policy_top(policy_distribution=policy_distribution, mode=mode),
          value_top(mode=mode)))
