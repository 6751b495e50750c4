"""Trax's weight files: flat weight lists, `.npy.gz` streams, pickled dicts.

Trax 1.4 saves a layer as a gzipped pickle of a dict,
`{'flat_weights': [...], 'flat_state': [...], 'input_signature': sig}`, the
lists holding the weight and state leaves in `tree_flatten` order. Newer
checkpoints (those `training.Loop` writes) store the weights apart, in
`<name>.weights.npy.gz` beside `<name>.pkl.gz`, as a gzipped stream of `.npy`
arrays, and put the gzip compress level in `flat_weights` instead. In those
streams bfloat16 arrays are stored as their raw uint16 bits.

`shard`/`unshard` split weights across devices and join them back, as
Trax's Loop does before writing a checkpoint of sharded weights.

Reading checks a file whole before using any of it: the gzip stream to its
end, every member's CRC32 and length (`_gzip_whole`), then the pickle, read
by the restricted unpickler of `_safe_pickle` (so a file that asks to run
code is refused before any of it runs) and required to fill the file, then
Trax's layout (`_weight_file_layout`), and last each leaf against the layer.
Only then is any weight or state assigned. Every way a file can be
damaged, cut short or foreign ends in a WeightFileError naming the file.
Paths are local paths (Trax's `tf.io.gfile` URLs such as gs:// are not read
here: layers do not import TensorFlow).
"""

import gzip as gzip_lib
import hashlib
import io
import os

import numpy as onp

from tfnp_trax import atomic_files
from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.fastmath import trees
from tfnp_trax.layers import _fit_leaves
from tfnp_trax.layers import _markers
from tfnp_trax.layers import _safe_pickle
from tfnp_trax.layers import _weight_file_layout as layout
from tfnp_trax.layers import _whole_file

__all__ = ['WeightFileError', 'flatten_weights_and_state',
           'unflatten_weights_and_state', 'fit_leaves', 'check_leaves',
           'check_compress_level', 'np_to_file', 'np_from_file',
           'to_bits', 'from_bits', 'pickle_to_file', 'unpickle_from_file',
           'read_weights_file', 'FILES_SHA256', 'PARTIAL_SUFFIX',
           'file_sha256',
           'check_written_together',
           'weights_and_state_signature', 'save_to_file', 'init_from_file',
           'N_WEIGHTS_SHARDS', 'shard', 'unshard']

# The pickle key of the digests `check_written_together` compares.
FILES_SHA256 = 'tfnp_trax_files_sha256'

# A file's bytes sit under its name plus this while it is written.
PARTIAL_SUFFIX = '._tmp_'

# How many shards Trax splits each weight into across devices (Trax's
# default; Loop unshards weights before writing a checkpoint).
N_WEIGHTS_SHARDS = 1

_BFLOAT16 = onp.dtype(jnp.bfloat16)

# Defined beside the unpickler, so that its refusals are WeightFileErrors.
WeightFileError = _safe_pickle.WeightFileError

# The one routine that fits stored leaves to a model's tree (strict, or by
# Trax's lenient shape match); see _fit_leaves.
fit_leaves = _fit_leaves.fit_leaves

# Checks of what a file holds, for readers of Trax's other stored lists
# (a Loop checkpoint's optimizer slots); see _weight_file_layout.
check_leaves = layout.check_leaves
check_compress_level = layout.check_compress_level


def flatten_weights_and_state(weights, state):
  """Lists the leaves of `weights` and `state`, as Trax stores them.

  Example:
    >>> flatten_weights_and_state(((1, 2), (), (3,)), ((), (4,)))
    ([1, 2, 3], [4])

  Args:
    weights: a layer's weight tree.
    state: a layer's state tree.

  Returns:
    `(flat_weights, flat_state)`: the leaves in `tree_flatten` order, empty
    weights and cache markers left out (they hold no values).
  """
  def leaves(tree, markers):
    return [x for x in trees.tree_flatten(tree)
            if not any(x is m for m in markers)]
  return (leaves(weights, (_markers.EMPTY_WEIGHTS,)),
          leaves(state, (_markers.EMPTY_STATE,)))


def unflatten_weights_and_state(flat_weights, flat_state,
                                weights_and_state_signature,
                                weights_only=False):
  """Rebuilds weight and state trees from flat lists and their signatures.

  Each leaf's shape is checked against the signature when both have one.

  Args:
    flat_weights: weight leaves, as `flatten_weights_and_state` lists them.
    flat_state: state leaves, likewise (ignored if `weights_only`).
    weights_and_state_signature: `(weights_tree, state_tree)`, for example
      from `Layer.weights_and_state_signature`, whose leaves are ShapeDtypes
      (or arrays) and whose empty entries and cache markers are kept.
    weights_only: if True, only the weights are rebuilt and state is None.

  Returns:
    `(weights, state)`.

  Raises:
    WeightFileError: if a leaf's shape differs from its signature's, or
      there are too few or too many leaves; the message names the first such
      leaf by its path in the tree.
  """
  weights_tree, state_tree = weights_and_state_signature
  weights = fit_leaves(flat_weights, weights_tree, 'weights')
  state = None
  if not weights_only:
    state = fit_leaves(flat_state, state_tree, 'state')
  return weights, state


def to_bits(arrays):
  """bfloat16 arrays as their uint16 bits, others unchanged (Trax's Loop).

  `.npy` files cannot describe bfloat16, so Trax stores its bits instead.
  """
  out = []
  for x in arrays:
    x = _to_numpy(x)
    out.append(x.view(onp.uint16) if x.dtype == _BFLOAT16 else x)
  return out


def from_bits(arrays):
  """uint16 arrays read back as bfloat16, as Trax's Loop does.

  Trax treats every uint16 array in a checkpoint as bfloat16 bits.
  """
  return [x.view(_BFLOAT16) if getattr(x, 'dtype', None) == onp.uint16
          else x for x in arrays]


def _to_numpy(x):
  return x if isinstance(x, onp.ndarray) else onp.asarray(x)


def np_to_file(list_of_nparrays, file_path, compresslevel):
  """Writes arrays to `file_path` as a gzipped stream of `.npy` records.

  bfloat16 arrays are written as their uint16 bits (see `to_bits`), which
  is what Trax's Loop writes; `np_from_file` returns them as uint16.

  Args:
    list_of_nparrays: arrays (NumPy or tensors).
    file_path: the file to write (replaced atomically).
    compresslevel: the gzip level, 0 to 9.
  """
  def write(f):
    with gzip_lib.GzipFile(fileobj=f, mode='wb',
                       compresslevel=compresslevel) as gzipf:
      for x in to_bits(list_of_nparrays):
        onp.save(gzipf, x, allow_pickle=False)
  atomic_files.write_atomically(file_path, write,
                                partial_suffix=PARTIAL_SUFFIX)


def np_from_file(file_path, compresslevel):
  """Reads every array of a file `np_to_file` wrote, in order.

  Unlike Trax's version, which stops quietly at the first unreadable
  record, the whole file is checked first (gzip CRC and length, nothing
  after the last record), so a damaged checkpoint cannot load as a model
  with its last weights missing or changed.

  Args:
    file_path: the `.npy.gz` file.
    compresslevel: unused when reading (gzip records it); kept for Trax's
      signature.

  Returns:
    A list of NumPy arrays (bfloat16 ones as uint16 bits).

  Raises:
    FileNotFoundError: if the file does not exist.
    WeightFileError: if it is not gzip, is truncated or corrupt, or holds a
      record that is not a plain `.npy` array.
  """
  del compresslevel
  kind = '.npy.gz weight file'
  if not os.path.exists(file_path):
    raise FileNotFoundError(file_path)
  data = _whole_file.data(file_path, True, kind)
  buffer = io.BytesIO(data)
  arrays = []
  while buffer.tell() < len(data):
    try:
      # read_array, not load: load would also open a zip or a pickle.
      arrays.append(onp.lib.format.read_array(buffer, allow_pickle=False))
    except Exception as e:  # pylint: disable=broad-except
      # The bytes passed gzip's CRC, so whatever fails here is the layout.
      raise WeightFileError(
          f'{file_path}: cannot read array {len(arrays)} of this {kind} '
          f'({type(e).__name__}: {e}). The file is not one np_to_file or a '
          f'Trax Loop wrote; re-save it.') from e
  return arrays


def pickle_to_file(obj, file_path, gzip=False):
  """Pickles `obj` to `file_path` (gzipped if asked) as Trax does."""

  def write(f):
    if not gzip:
      _safe_pickle.dump(obj, f)
      return
    with gzip_lib.GzipFile(fileobj=f, mode='wb', compresslevel=2) as gzipf:
      _safe_pickle.dump(obj, gzipf)
  atomic_files.write_atomically(file_path, write,
                                partial_suffix=PARTIAL_SUFFIX)


def unpickle_from_file(file_path, gzip=False):
  """Unpickles `file_path` with the restricted unpickler (see _safe_pickle).

  The whole file is read and checked before the pickle is: for gzip, every
  member's CRC32 and length and nothing after the last; then the pickle
  must fill the (decompressed) file exactly.

  Args:
    file_path: the pickle file.
    gzip: whether it is gzipped.

  Returns:
    The object, Trax's ShapeDtype and History records converted to ours.

  Raises:
    FileNotFoundError: if the file does not exist.
    _safe_pickle.UnsafePickleError: if the file names anything besides
      arrays, containers and Trax records (a WeightFileError too).
    WeightFileError: if the file is a directory, empty, truncated, corrupt
      or not gzip/pickle data.
  """
  if not os.path.exists(file_path):
    raise FileNotFoundError(
        f'{file_path}: no such file; expected a {"gzipped " if gzip else ""}'
        f'pickle written by save_to_file or a Trax Loop.')
  kind = 'gzipped pickle' if gzip else 'pickle'
  data = _whole_file.data(file_path, gzip, kind)
  if not data:
    empty = 'it holds no data once decompressed' if gzip else 'it is empty'
    raise WeightFileError(
        f'{file_path}: cannot read this {kind} ({empty}). The file is '
        f'truncated, corrupt or not a Trax weight file: an interrupted '
        f'write? Save or copy it again.')
  return _whole_file.unpickle(data, file_path, kind)


def weights_and_state_signature(layer, input_signature):
  """ShapeDtype trees of the weights and state `layer` has for its input.

  The layer is initialized on `input_signature` and then given back its
  weights, state and rng, as Trax does; only the signatures are kept.
  """
  saved = layer.snapshot()
  try:
    new_weights, new_state = layer.init(input_signature)
  finally:
    layer.restore(saved)
  return _signature_tree(new_weights), _signature_tree(new_state)


def _signature_tree(tree):
  def sig(x):
    if _markers.is_cache_marker(x) or getattr(x, 'shape', None) is None:
      return x
    return shapes.ShapeDtype(tuple(x.shape), x.dtype)
  if _markers.is_cache_marker(tree):
    return tree
  return trees.nested_map(sig, tree)


def save_to_file(layer, file_name, weights_only=False, input_signature=None):
  """Writes `layer`'s weights (and state) as Trax 1.4's `save_to_file` does.

  See `Layer.save_to_file`.
  """
  flat_weights, flat_state = flatten_weights_and_state(layer.weights,
                                                        layer.state)
  contents = {'flat_weights': [_leaf_to_numpy(w) for w in flat_weights]}
  if not weights_only:
    contents['flat_state'] = [_leaf_to_numpy(s) for s in flat_state]
  if input_signature is not None:
    contents['input_signature'] = input_signature
  pickle_to_file(contents, file_name, gzip=True)


def _leaf_to_numpy(x):
  return x if x is None or isinstance(x, (int, float)) else _to_numpy(x)


def _weights_path(file_name):
  """Where Trax's newer layout keeps the weights of `file_name`."""
  candidates = [file_name + '.npy']  # Trax's older name for it.
  if file_name.endswith('.pkl.gz'):
    candidates.insert(0, file_name[:-len('pkl.gz')] + 'weights.npy.gz')
  for path in candidates:
    if os.path.exists(path):
      return path
  raise FileNotFoundError(
      f'{file_name} keeps its weights in a separate file (its flat_weights '
      f'is a gzip level), but {" and ".join(candidates)} do not exist; copy '
      f'the whole checkpoint, not only the .pkl.gz.')


def file_sha256(path):
  """The SHA-256 of a file's bytes, as hex."""
  with open(path, 'rb') as f:
    return hashlib.sha256(f.read()).hexdigest()


def check_written_together(contents, pkl_path, path):
  """Raises unless `path` is the file `pkl_path` was saved with.

  A checkpoint this library writes names, beside Trax's keys, the SHA-256 of
  each `.npy.gz` file saved with its pickle (Trax ignores keys it does not
  know), so a pair from two different saves, as a kill between the writes
  leaves, is refused. Files from Trax carry no digests and are taken as
  they are.

  Raises:
    WeightFileError: the digests differ.
  """
  digests = contents.get(FILES_SHA256)
  if not isinstance(digests, dict) or not pkl_path.endswith('.pkl.gz'):
    return
  suffix = path[len(pkl_path) - len('pkl.gz'):]
  if suffix in digests and digests[suffix] != file_sha256(path):
    raise WeightFileError(
        f'{path} is not the file {os.path.basename(pkl_path)} was saved '
        f'with (its SHA-256 differs): the two come from different saves, '
        f'as when a run is killed between them. Resume the run (it rewrites '
        f'both), or load an older checkpoint.')


def read_weights_file(file_name):
  """The dict of a Trax weight file, with separately stored weights read in.

  Args:
    file_name: a `.pkl.gz` file from `save_to_file` or a Trax Loop.

  Returns:
    The unpickled dict; `flat_weights` is a list of arrays (uint16 bits
    where Trax stored bfloat16) in both layouts.

  Raises:
    FileNotFoundError: if the file, or the weights file it refers to, is
      missing.
    WeightFileError: unreadable file, or not a Trax weight dict (checked
      whole, see `_weight_file_layout`).
  """
  contents = unpickle_from_file(file_name, gzip=True)
  layout.check_contents(contents, file_name)
  if not isinstance(contents['flat_weights'], (list, tuple)):
    weights_path = _weights_path(file_name)
    check_written_together(contents, file_name, weights_path)
    contents['flat_weights'] = np_from_file(
        weights_path, compresslevel=contents['flat_weights'])
    layout.check_leaves(contents['flat_weights'], 'records', weights_path)
  return contents


def init_from_file(layer, file_name, weights_only=False,
                   input_signature=None):
  """Sets `layer`'s weights (and state) from a Trax weight file.

  See `Layer.init_from_file`. Nothing on the layer changes unless the whole
  file reads and fits: every leaf is checked and converted first, and the
  layer is put back as it was if assigning fails part way.
  """
  contents = read_weights_file(file_name)
  if input_signature is None:
    input_signature = contents.get('input_signature')
  if not weights_only and 'flat_state' not in contents:
    raise WeightFileError(
        f'{file_name}: the file has no \'flat_state\' (it was saved with '
        f'weights_only=True); load it with init_from_file(..., '
        f'weights_only=True).')
  saved = layer.snapshot()
  fresh = weights_only and input_signature is not None
  try:
    weights, state = _fit_file(layer, contents, file_name, weights_only,
                               input_signature)
  except BaseException:
    if fresh:
      layer.restore(saved)  # Undo the fresh init: the file does not fit.
    raise
  # Everything is read and checked; only now are the file's values set.
  _assign(layer, weights, state, saved)
  return layer.weights, layer.state


def _fit_file(layer, contents, file_name, weights_only, input_signature):
  """The file's weights (and state) fitted to `layer`, leaf by leaf.

  A weights-only load with a signature gets the fresh state of an init on
  that signature, as in Trax; that one init also gives the shapes the file
  must fit. Otherwise the layer is left as it was.
  """
  if weights_only and input_signature is not None:
    weights_sig, state_sig = (_signature_tree(tree) for tree in
                              layer.init(input_signature))
  elif input_signature is not None:
    weights_sig, state_sig = weights_and_state_signature(layer,
                                                         input_signature)
  elif layer.initialized:
    weights_sig, state_sig = layer.weights, layer.state
  else:
    raise WeightFileError(
        f'{file_name}: the file has no input_signature and {layer.name} is '
        f'not initialized; pass init_from_file(..., input_signature=...) or '
        f'call layer.init(...) first.')
  weights = fit_leaves(contents['flat_weights'], weights_sig, 'weights',
                       source=file_name, layer=layer, check_values=True)
  state = None
  if not weights_only:
    state = fit_leaves(contents['flat_state'], state_sig, 'state',
                       source=file_name, layer=layer, check_values=True)
  return weights, state


def _assign(layer, weights, state, saved):
  """Sets weights (and state), or puts back `saved` if that fails part way."""
  try:
    if state is not None:
      layer.state = state
    layer.weights = weights
  except BaseException:
    layer.restore(saved)
    raise


def _shard_axis(shape):
  # Trax's heuristic: the first axis of vectors and matrices, the last one
  # of higher-rank weights.
  return 0 if len(shape) < 3 else -1


def shard(tensors, n_shards=None):
  """Splits each array into `n_shards` pieces, one per local device.

  Device `i` gets piece `i % n_shards`; the pieces are stacked on a new
  leading axis of size `fastmath.local_device_count()`, as Trax lays out
  sharded weights.

  Example:
    >>> shard(onp.arange(4.), n_shards=2).shape[1:]
    (2,)

  Args:
    tensors: an array or a tree of arrays.
    n_shards: the number of pieces (`N_WEIGHTS_SHARDS` by default).

  Returns:
    NumPy arrays of shape `(n_devices,) + piece_shape`, in the same tree.

  Raises:
    ValueError: if an array's size on the split axis is not divisible.
  """
  n_shards = N_WEIGHTS_SHARDS if n_shards is None else n_shards
  n_devices = fastmath.local_device_count()

  def shard_one(x):
    x = _to_numpy(x)
    axis = _shard_axis(x.shape)
    if x.shape[axis] % n_shards:
      raise ValueError(
          f'shard: cannot split an array of shape {x.shape} into {n_shards} '
          f'equal pieces along axis {axis}.')
    pieces = onp.split(x, n_shards, axis=axis)
    return onp.stack([pieces[i % n_shards] for i in range(n_devices)])
  return fastmath.nested_map(shard_one, tensors)


def unshard(tensors, n_shards=None):
  """Joins arrays `shard` split: the inverse for `n_shards` devices.

  Example:
    >>> unshard(onp.array([[0., 1.], [2., 3.]]), n_shards=2)
    array([0., 1., 2., 3.])

  Args:
    tensors: arrays (or a tree) whose leading axis holds `n_shards` pieces.
    n_shards: the number of pieces (`N_WEIGHTS_SHARDS` by default).

  Returns:
    The whole arrays, as NumPy arrays (on the host, as Trax keeps them).

  Raises:
    ValueError: if an array's leading axis is not `n_shards` long.
  """
  n_shards = N_WEIGHTS_SHARDS if n_shards is None else n_shards

  def unshard_one(x):
    x = _to_numpy(x)
    if not x.ndim or x.shape[0] != n_shards:
      raise ValueError(
          f'unshard: expected a leading axis of {n_shards} shards, got an '
          f'array of shape {x.shape}.')
    pieces = list(x)
    return onp.concatenate(pieces, axis=_shard_axis(pieces[0].shape))
  return fastmath.nested_map(unshard_one, tensors)
