"""Fitting a flat list of stored leaves to a model's weight or state tree.

Weight files and checkpoints store leaves in `tree_flatten` order, without
the tree. `fit_leaves` puts them back into the model's tree, and is the one
routine that does it: `unflatten_weights_and_state`, `init_from_file`, the
Trax checkpoint reader and the Loop's restore of a Trax checkpoint all call
it. It has two rules:

* strict (the default): the file holds exactly the model's leaves, in
  order, each of the model's shape; the first one that does not fit is a
  WeightFileError naming it by its path in the tree, with both shapes;
* `by_shape=True`: Trax's lenient rule for restoring a Loop checkpoint
  into a model (`_match_by_shape` in trax/supervised/training.py). Walk the
  model's leaves; where the next stored leaf has the same shape, take it,
  else keep the model's own value. Every stored leaf must find a place.
"""

import numpy as onp

from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _markers
from tfnp_trax.layers import _safe_pickle
from tfnp_trax.layers import _weight_file_layout as layout

__all__ = ['fit_leaves']

WeightFileError = _safe_pickle.WeightFileError

_BFLOAT16 = onp.dtype(jnp.bfloat16)


def fit_leaves(flat, tree, kind='weights', by_shape=False, source='',
               layer=None, check_values=False):
  """`tree` with its leaves replaced, in order, by the leaves in `flat`.

  Example:
    >>> from tfnp_trax import shapes
    >>> sig = (shapes.ShapeDtype((2,)), (), (shapes.ShapeDtype((3,)),))
    >>> w = fit_leaves([onp.zeros(2), onp.ones(3)], sig)
    >>> [x.shape for x in (w[0], w[2][0])], w[1]
    ([(2,), (3,)], ())
    >>> fit_leaves([onp.ones(3)], [onp.zeros(2), onp.zeros(3)],
    ...            by_shape=True)
    [array([0., 0.]), array([1., 1., 1.])]

  Args:
    flat: the stored leaves (NumPy arrays, numbers or None).
    tree: the model's tree: ShapeDtypes or arrays at its leaves, with its
      empty entries `()` and cache markers kept as they are. With
      `by_shape` its leaves are values, kept where nothing stored fits.
    kind: what the leaves are, for errors ('weights', 'state', 'slot'...).
    by_shape: use Trax's lenient shape match instead of the strict rule.
    source: the file (or the caller) that `flat` comes from; it starts
      every error message.
    layer: the layer `tree` belongs to. Errors then name the sublayer a
      leaf belongs to, and a weight of another shape is taken where that
      sublayer's `accepts_weight_file_shape` says it reads it.
    check_values: also refuse a stored leaf of the wrong kind (a number or
      None for an array, integers for floats) or holding NaN or Inf, as a
      file loaded into a layer must not.

  Returns:
    A tree shaped like `tree`. Integer leaves take the model's integer
    dtype, and uint16 leaves where the model has bfloat16 are read as the
    bfloat16 bits Trax's Loop stores.

  Raises:
    WeightFileError: strict: a leaf's shape differs from the model's, or
      `flat` has too few or too many leaves; `by_shape`: a stored leaf
      matches no remaining leaf of the model. The message names the first
      such leaf.
  """
  flat = list(flat)
  where = f'{source}: ' if source else ''
  position = [0]

  def fill(sig, path):
    if _markers.is_cache_marker(sig) or (isinstance(sig, tuple) and not sig):
      return sig
    if isinstance(sig, tuple) and hasattr(sig, '_fields'):
      return type(sig)(*[fill(s, path + (i,)) for i, s in enumerate(sig)])
    if isinstance(sig, (list, tuple)):
      return type(sig)(fill(s, path + (i,)) for i, s in enumerate(sig))
    if isinstance(sig, dict):
      filled = {k: fill(sig[k], path + (k,)) for k in sorted(sig)}
      return {k: filled[k] for k in sig}
    if by_shape:
      return take_by_shape(sig)
    return take_strictly(sig, path)

  def take_by_shape(leaf):
    if position[0] >= len(flat) or leaf is None or (
        _any_shape(leaf) != _any_shape(flat[position[0]])):
      return leaf
    position[0] += 1
    return _as_model_dtype(flat[position[0] - 1], leaf)

  def take_strictly(sig, path):
    name = _path_name(kind, path) + _describe(layer, path)
    if position[0] >= len(flat):
      raise WeightFileError(
          f'{where}the file has {len(flat)} {kind} leaves but the model '
          f'needs more; the first missing one is {name} of shape '
          f'{_shape(sig)}. The file was saved from a different model.')
    value = flat[position[0]]
    position[0] += 1
    want, got = _shape(sig), _shape(value)
    if want is not None and got is not None and want != got and not (
        _accepts_shape(layer, kind, path, want, got)):
      raise WeightFileError(
          f'{where}{name} has shape {got} in the file but the model expects '
          f'{want}. The file was saved from a different model (or with a '
          f'different input signature).')
    if not check_values:
      return _as_model_dtype(value, sig)
    value = _as_model_dtype(layout.fit_leaf(value, sig, f'{where}{name}'),
                            sig)
    _check_finite(value, f'{where}{name}')
    return value

  result = fill(tree, ())
  if position[0] != len(flat):
    extra = flat[position[0]]
    if by_shape:
      raise WeightFileError(
          f'{where}{kind} array {position[0]} of the checkpoint (shape '
          f'{_any_shape(extra)}) matches no remaining {kind} of the model '
          f'(shapes {[_any_shape(w) for w in _leaves(tree)]}); the '
          f'checkpoint was written for a different model.')
    raise WeightFileError(
        f'{where}the file has {len(flat)} {kind} leaves but the model only '
        f'{position[0]}; the first extra one has shape {_shape(extra)}. The '
        f'file was saved from a different (larger) model.')
  return result


def _leaves(tree):
  if _markers.is_cache_marker(tree):
    return []
  if isinstance(tree, (list, tuple)):
    return [x for t in tree for x in _leaves(t)]
  if isinstance(tree, dict):
    return [x for k in sorted(tree) for x in _leaves(tree[k])]
  return [tree]


def _sublayers_on(layer, path):
  """The layers a tree path leads through, outermost first, with indices."""
  found = [(None, layer)]
  for index in path:
    if not isinstance(index, int) or index >= len(layer.sublayers):
      break
    layer = layer.sublayers[index]
    found.append((index, layer))
  return found


def _describe(layer, path):
  """' (in Serial/1:Dense_3)': the sublayer a tree path leads into."""
  if layer is None:
    return ''
  names = [f'{sub.name}' if i is None else f'{i}:{sub.name}'
           for i, sub in _sublayers_on(layer, path)]
  return f' (in {"/".join(names)})'


def _accepts_shape(layer, kind, path, want, got):
  """Whether the innermost layer on `path` reads a weight shaped `got`.

  A layer whose `forward` reads its weights in another stored shape as
  well says so with `accepts_weight_file_shape` (PositionalEncoding takes
  the [1, max_len, d] table of older Trax files). It speaks for weights
  only; state leaves always need the model's shape.
  """
  if layer is None or kind != 'weights':
    return False
  inner = _sublayers_on(layer, path)[-1][1]
  return inner.accepts_weight_file_shape(want, got)


def _check_finite(value, what):
  """A stored NaN or Inf is corruption, not a model: refuse to load it."""
  if not isinstance(value, onp.ndarray) or (
      value.dtype.kind not in 'fc' and value.dtype != _BFLOAT16):
    return
  bad = ~onp.isfinite(value)
  if bad.any():
    raise WeightFileError(
        f'{what} holds {int(bad.sum())} NaN or Inf of {value.size} values '
        f'(shape {value.shape}); expected finite weights. The file is '
        f'corrupt or was saved after training diverged.')


def _path_name(kind, path):
  return kind + ''.join(f'[{p!r}]' for p in path)


def _shape(x):
  shape = getattr(x, 'shape', None)
  return None if shape is None else tuple(shape)


def _any_shape(x):
  """The shape of an array, tensor or number (a number's is ())."""
  shape = _shape(x)
  return tuple(onp.shape(x)) if shape is None else shape


def _as_model_dtype(value, sig):
  """Undoes Trax's storage conventions where the model says how."""
  want = getattr(sig, 'dtype', None)
  if want is None or not isinstance(value, onp.ndarray):
    return value
  try:
    want = onp.dtype(getattr(want, 'as_numpy_dtype', want))
  except TypeError:
    return value
  if value.dtype == onp.uint16 and want == _BFLOAT16:
    return value.view(_BFLOAT16)  # Trax's Loop stores bfloat16 as bits.
  # Trax runs JAX with 64-bit types off, so its integer state (counters)
  # is int32 where ours may be int64; the model's integer type is kept.
  if value.dtype.kind in 'iu' and want.kind in 'iu' and value.dtype != want:
    return value.astype(want)
  return value
