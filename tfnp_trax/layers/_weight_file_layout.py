"""Checks that an unpickled weight file has the layout Trax writes.

Trax writes three kinds of dict (read from its source, the specification):

* `Layer.save_to_file`: `flat_weights` (a list of arrays), `flat_state`
  (unless weights_only) and `input_signature` (if given);
* `training.Loop.save_checkpoint`: `flat_weights` and `slots_per_task` are
  the gzip level (an int; the arrays sit in `.npy.gz` files beside it), plus
  `step`, `flat_state`, `flat_eval_state`, `history`, `input_signature`
  (the batch signature's first `n_in` entries) and `version_timestamp`;
* `trainer_lib.Trainer`: `step`, `flat_weights`, `flat_state`, `slots` (a
  tree), `opt_params`, `history`, `input_signature`, `version_timestamp`.

The flat lists hold what `tree_flatten` leaves: NumPy arrays (JAX arrays
are read as NumPy ones), NumPy or Python numbers and None. A file whose
known entries hold anything else was not written by Trax (or tfnp_trax),
and reading it on would fail later with a bare KeyError or TypeError, or
load a string as a weight; `check_contents` refuses it up front with a
WeightFileError naming the entry. Keys it does not know are left alone, as
Trax leaves them.
"""

import numpy as onp

from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _safe_pickle

__all__ = ['check_contents', 'check_leaves', 'check_compress_level',
           'leaf_kind', 'fit_leaf']

WeightFileError = _safe_pickle.WeightFileError

_BFLOAT16 = onp.dtype(jnp.bfloat16)
_NOT_TRAX = ('The file was not written by Trax\'s save_to_file or Loop (or '
             'tfnp_trax\'s); load only Trax weight files.')


def leaf_kind(dtype):
  """'float', 'complex', 'int' or 'bool' for a dtype a weight may have."""
  dtype = onp.dtype(dtype)
  if dtype == _BFLOAT16 or dtype.kind == 'f':
    return 'float'
  return {'c': 'complex', 'i': 'int', 'u': 'int', 'b': 'bool'}.get(
      dtype.kind)


def _describe(x):
  if isinstance(x, (onp.ndarray, onp.generic)):
    return f'an array of dtype {x.dtype}'
  name = type(x).__name__
  return f'{"an" if name[0] in "aeiou" else "a"} {name} ({x!r:.40})'


def _leaf_problem(x):
  """None for a leaf Trax writes, else what it is."""
  if x is None or isinstance(x, (bool, int, float, complex)):
    return None
  if isinstance(x, (onp.ndarray, onp.generic)) and leaf_kind(x.dtype):
    return None
  return _describe(x)


def check_leaves(leaves, what, source):
  """Refuses a flat list that holds anything besides arrays and numbers.

  Args:
    leaves: the list read from the file.
    what: its name in errors (for example `'flat_weights'`).
    source: the file, for errors.

  Raises:
    WeightFileError: if `leaves` is not a list or tuple, or one of its
      entries is not an array of numbers (or bfloat16), a number or None.
  """
  if not isinstance(leaves, (list, tuple)):
    raise WeightFileError(
        f'{source}: {what} is {_describe(leaves)}, expected a list of '
        f'arrays. {_NOT_TRAX}')
  for i, x in enumerate(leaves):
    problem = _leaf_problem(x)
    if problem:
      raise WeightFileError(
          f'{source}: {what}[{i}] is {problem}, expected a NumPy array of '
          f'numbers (or a number). {_NOT_TRAX}')


def check_compress_level(level, what, source):
  """Refuses a stand-in for separately stored arrays that is no gzip level."""
  if isinstance(level, bool) or not 0 <= level <= 9:
    raise WeightFileError(
        f'{source}: {what} is {level!r}; where Trax stores arrays in a '
        f'separate .npy.gz file it writes the gzip level (0 to 9) there. '
        f'{_NOT_TRAX}')


def _is_int(x):
  return isinstance(x, (int, onp.integer)) and not isinstance(x, bool)


def _is_signature(sig):
  if sig is None or isinstance(sig, shapes.ShapeDtype):
    return True
  return isinstance(sig, (list, tuple)) and all(_is_signature(s)
                                                for s in sig)


def check_contents(contents, source):
  """Refuses an unpickled file that does not have Trax's weight layout.

  Args:
    contents: what the file unpickled to.
    source: the file, for errors.

  Raises:
    WeightFileError: naming the first entry that Trax would not write.
  """
  if not isinstance(contents, dict) or 'flat_weights' not in contents:
    found = (f'a dict with keys {sorted(map(repr, contents))}'
             if isinstance(contents, dict) else _describe(contents))
    raise WeightFileError(
        f'{source}: expected a dict with \'flat_weights\' (a Trax weight '
        f'file), found {found}. {_NOT_TRAX}')
  if _is_int(contents['flat_weights']):
    check_compress_level(contents['flat_weights'], 'flat_weights', source)
  else:
    check_leaves(contents['flat_weights'], 'flat_weights', source)
  for key in ('flat_state', 'flat_eval_state'):
    if key in contents:
      check_leaves(contents[key], key, source)
  if 'step' in contents and not _is_int(contents['step']):
    raise WeightFileError(
        f'{source}: step is {_describe(contents["step"])}, expected the '
        f'training step (an int). {_NOT_TRAX}')
  if not _is_signature(contents.get('input_signature')):
    raise WeightFileError(
        f'{source}: input_signature is '
        f'{_describe(contents["input_signature"])}, expected a ShapeDtype, '
        f'a tuple of them or None. {_NOT_TRAX}')


def fit_leaf(value, sig, what):
  """`value` if it can stand for the model's leaf `sig` (a number as an array).

  Trax assigns whatever the file holds; here a leaf of the wrong kind (a
  number or None where the model has an array, integers where it has
  floats) is refused, since no Trax file of this model holds one.
  """
  want_shape = getattr(sig, 'shape', None)
  want_shape = None if want_shape is None else tuple(want_shape)
  if want_shape is None:  # The model's own leaf is no array (None, a number).
    return value
  if value is None or (not isinstance(value, (onp.ndarray, onp.generic)) and
                       want_shape != ()):
    raise WeightFileError(
        f'{what} is {value!r:.40} in the file but the model expects an '
        f'array of shape {want_shape}. The file was saved from a different '
        f'model.')
  want = getattr(sig, 'dtype', None)
  try:  # A NumPy dtype, or a tf.DType (which names its NumPy one).
    want = want and onp.dtype(getattr(want, 'as_numpy_dtype', want))
  except TypeError:
    want = None
  python_number = not isinstance(value, (onp.ndarray, onp.generic))
  value = onp.asarray(value)
  if want is None or (value.dtype == onp.uint16 and want == _BFLOAT16):
    return value  # bfloat16 stored as its bits (Trax's Loop).
  got_kind, want_kind = leaf_kind(value.dtype), leaf_kind(want)
  if got_kind != want_kind:
    raise WeightFileError(
        f'{what} has dtype {value.dtype} in the file but the model expects '
        f'{want} ({want_kind} values, not {got_kind}). The file was saved '
        f'from a different model.')
  return value.astype(want) if python_number else value
