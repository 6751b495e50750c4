"""A tf.Module holding a layer's weights and state, and its serving function.

The module is what gets saved: its variables hold the weights and state, and
its tf.functions run the layer's `pure_fn` on them. Nothing of tfnp_trax is
needed to load it; only TensorFlow ops end up in the graph.
"""

import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.export import _args
from tfnp_trax.export import _trees
from tfnp_trax.layers import forward_only

__all__ = ['LayerModule', 'input_specs', 'relaxed_spec', 'checked_input',
           'run_layer']


def _template(tree):
  # Leaves replaced by 0: the module must not keep (and save) the arrays.
  return fastmath.nested_map(lambda _: 0, tree)


class LayerModule(tf.Module):
  """Variables for a layer's weights and state, readable as trees.

  Attributes:
    weight_variables: flat list of tf.Variables, in `tree_flatten` order.
    state_variables: flat list of tf.Variables, in `tree_flatten` order.
  """

  def __init__(self, layer, weights, state):
    # tf.Module names must be Python identifiers.
    name = ''.join(c if c.isalnum() else '_' for c in layer.name)
    super().__init__(name=name if name[:1].isalpha() else f'layer_{name}')
    self._held = _trees.Held(templates=(_template(weights),
                                        _template(state)))
    self.weight_variables = _variables(layer, weights, 'weights')
    self.state_variables = _variables(layer, state, 'state')

  def read_weights(self):
    """The weights as a tree of tensors (call inside a tf.function)."""
    return _trees.unflatten(self.weight_variables, self._held.templates[0])

  def read_state(self):
    """The state as a tree of tensors (call inside a tf.function)."""
    return _trees.unflatten(self.state_variables, self._held.templates[1])


def _variables(layer, tree, kind):
  leaves = fastmath.tree_flatten(tree)
  names = _trees.leaf_names(layer, tree)
  return [tf.Variable(leaf, trainable=False, name=f'{kind}/{name}')
          for leaf, name in zip(leaves, names)]


def input_specs(layer, input_signature, input_names, caller):
  """Normalizes the signature to ShapeDtypes and names one per input.

  Returns:
    `(sigs, names)`: tuples of equal length `layer.n_in` (at least 1).
  """
  sigs = input_signature
  if isinstance(sigs, (list, tuple)) and sigs and all(
      isinstance(d, int) or d is None for d in sigs):
    raise TypeError(
        f'{caller}: input_signature must be a ShapeDtype (or a tuple of '
        f'them, one per input), got the plain shape {tuple(sigs)}. Did you '
        f'mean shapes.ShapeDtype({tuple(sigs)}, dtype)?')
  if not isinstance(sigs, (list, tuple)):
    sigs = (sigs,)
  _args.check_signature_entries(sigs, caller)
  sigs = tuple(shapes.signature(s) if not isinstance(s, shapes.ShapeDtype)
               else s for s in sigs)
  n_in = max(layer.n_in, 1)
  if len(sigs) != n_in:
    raise ValueError(
        f'{caller}: layer {layer.name} takes {n_in} input(s) but the '
        f'input_signature describes {len(sigs)}: {sigs}. Pass one ShapeDtype '
        f'per input (a tuple for several).')
  if input_names is None:
    input_names = ('inputs',) if n_in == 1 else tuple(
        f'inputs_{i}' for i in range(n_in))
  input_names = (input_names,) if isinstance(input_names, str) else tuple(
      input_names)
  if len(input_names) != n_in:
    raise ValueError(f'{caller}: got {len(input_names)} input_names for the '
                     f'{n_in} input(s) of layer {layer.name}.')
  _args.check_names(input_names, 'input_names', caller)
  return sigs, input_names


def relaxed_spec(sig, name):
  """A TensorSpec of the same rank and dtype with every size unknown.

  Serving signatures take inputs of any size and check them in the graph:
  a placeholder with fully known sizes would let graph optimizations fold
  the check away, so a wrong shape would run and fail deep in the model.
  """
  return tf.TensorSpec([None] * len(sig.shape), sig.dtype, name=name)


def checked_input(x, sig, name, where):
  """`x` with its static shape set to `sig`, after a clear runtime check.

  The check sits on the data path (a `check_numerics` whose result feeds a
  no-op reshape): graph optimizations may run a plain `Assert` after the
  ops it guards, so TensorFlow's own shape error could win. The `Assert`
  is kept because its message also shows the shape that was given.
  """
  # The rank is fixed by the placeholder (a session feed checks it, and
  # graph optimizations trust it, so it cannot be re-checked here); a
  # tensor of another rank passed to the loaded function directly is caught
  # by `ensure_shape`. The padding keeps the gather in range for it.
  rank = len(sig.shape)
  known = [(i, d) for i, d in enumerate(sig.shape) if d is not None]
  if known:
    shape = tf.shape(x)
    padded = tf.concat([shape, tf.zeros([rank], tf.int32)], 0)[:rank]
    ok = tf.reduce_all(tf.equal(tf.gather(padded, [i for i, _ in known]),
                                [d for _, d in known]))
    expected = tuple('None' if d is None else d for d in sig.shape)
    message = (f'{where}: input `{name}` must have shape '
               f'{expected} (None: any size) and dtype '
               f'{tf.as_dtype(sig.dtype).name}')
    tf.debugging.Assert(ok, [message + '; got shape', shape])
    gate = tf.debugging.check_numerics(
        tf.where(ok, 0.0, float('nan')), message + '; got another shape')
    x = tf.reshape(x, shape + tf.cast(gate, tf.int32))
  return tf.ensure_shape(x, sig.shape)


def run_layer(layer, xs, weights, state, output_names=None, where=''):
  """Runs `layer` on a list of inputs; returns a dict of named outputs."""
  x = xs[0] if len(xs) == 1 else tuple(xs)
  # Served graphs run forward only: no custom gradients are traced or saved.
  with forward_only.forward_only():
    y, _ = layer.pure_fn(x, weights, state, fastmath.random.get_prng(0))
  ys = tuple(y) if isinstance(y, (list, tuple)) else (y,)
  if output_names is None:
    output_names = ('outputs',) if len(ys) == 1 else tuple(
        f'outputs_{i}' for i in range(len(ys)))
  output_names = (output_names,) if isinstance(output_names, str) else tuple(
      output_names)
  if len(output_names) != len(ys):
    raise ValueError(f'{where}: layer {layer.name} returns {len(ys)} '
                     f'output(s) but {len(output_names)} output_names were '
                     f'given: {output_names}.')
  return {n: tf.convert_to_tensor(v) for n, v in zip(output_names, ys)}
