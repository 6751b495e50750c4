"""Checkpoints in the files of Trax 1.4's `training.Loop` (and `Trainer`).

Reads the ones Trax wrote, and writes them as Trax does (`save`), so a
Loop's output_dir holds the `model.pkl.gz` that Trax scripts load with
`init_from_file`, and that Trax itself can resume from.

A Trax Loop checkpoint named `model` is three kinds of file in one directory:

  model.pkl.gz              gzipped pickle: step, flat_state,
                            flat_eval_state, history, input_signature, ...
  model.weights.npy.gz      the weight leaves, a gzipped `.npy` stream
  model.opt_slots<i>.npy.gz the optimizer slots of train task i, likewise

and bfloat16 leaves are stored as their uint16 bits. Older files (Trax's
`trainer_lib.Trainer`) keep the weights and a tree of slots inside the
pickle. Both are read with the restricted unpickler of
`tfnp_trax.layers.weight_files`, so nothing in the files runs.
"""

import glob
import os
from typing import Any, List, NamedTuple

from tfnp_trax.fastmath import trees
from tfnp_trax.layers import weight_files
from tfnp_trax.supervised import history as history_lib

__all__ = ['TraxCheckpoint', 'flat_slots',
           'load_trax_checkpoint', 'remove_partial_writes', 'save',
           'trax_checkpoint_file', 'weights_and_state_for']



class TraxCheckpoint(NamedTuple):
  """What a Trax checkpoint holds, as tfnp_trax objects.

  Attributes:
    step: the training step it was saved at.
    flat_weights: the model's weight leaves (NumPy arrays, bfloat16 where
      Trax had bfloat16), in `flatten_weights_and_state` order.
    flat_state: the train model's state leaves, likewise.
    flat_eval_state: the eval model's state leaves (Trax saves them apart
      since Loop checkpoints of March 2021; older files repeat flat_state).
    slots_per_task: for each train task, its optimizer's slot leaves in
      flatten order, empty entries left out.
    history: a `tfnp_trax.supervised.history.History`.
    input_signature: the model's input ShapeDtype(s), or None.
  """
  step: int
  flat_weights: List[Any]
  flat_state: List[Any]
  flat_eval_state: List[Any]
  slots_per_task: List[List[Any]]
  history: history_lib.History
  input_signature: Any


def trax_checkpoint_file(path_or_dir, filename='model', existing=False):
  """The `.pkl.gz` file meant by a checkpoint directory or file path.

  Args:
    path_or_dir: a directory holding checkpoint `filename`, or the path of
      the checkpoint itself (the `.pkl.gz` suffix may be left off).
    filename: the checkpoint's name within a directory (None: 'model').
    existing: if True, return None unless the file exists.
  """
  if os.path.isdir(path_or_dir):
    path_or_dir = os.path.join(path_or_dir, filename or 'model')
  if not path_or_dir.endswith('.pkl.gz'):
    path_or_dir += '.pkl.gz'
  if existing and not os.path.exists(path_or_dir):
    return None
  return path_or_dir


def save(directory, basename, checkpoint, compresslevel=2):
  """Writes `checkpoint` as Trax's `Loop.save_checkpoint(basename)` does.

  The files are `<basename>.opt_slots<i>.npy.gz` (one per task),
  `<basename>.weights.npy.gz` and last `<basename>.pkl.gz`, each replaced
  atomically; bfloat16 leaves go in as their uint16 bits, as in Trax.

  Args:
    directory: the Loop's output_dir.
    basename: the checkpoint's name ('model', 'model_<step>', ...).
    checkpoint: a `TraxCheckpoint`.
    compresslevel: the gzip level of the `.npy.gz` files (Trax: 2, or 0 for
      the memory-efficient trainer).

  Returns:
    The `.pkl.gz` path.
  """
  base = os.path.join(directory, basename)
  digests = {}
  for i, slots in enumerate(checkpoint.slots_per_task):
    path = f'{base}.opt_slots{i}.npy.gz'
    weight_files.np_to_file(list(slots), path, compresslevel=compresslevel)
    digests[f'opt_slots{i}.npy.gz'] = weight_files.file_sha256(path)
  path = f'{base}.weights.npy.gz'
  weight_files.np_to_file(list(checkpoint.flat_weights), path,
                          compresslevel=compresslevel)
  digests['weights.npy.gz'] = weight_files.file_sha256(path)
  # A leftover slots file of a task this run does not have would be read
  # as one by a loader that counts the files.
  i = len(checkpoint.slots_per_task)
  while os.path.exists(f'{base}.opt_slots{i}.npy.gz'):
    os.remove(f'{base}.opt_slots{i}.npy.gz')
    i += 1
  contents = {
      'step': int(checkpoint.step),
      'flat_weights': compresslevel,  # Trax's mark: weights in their file.
      'flat_state': [_to_numpy(x) for x in checkpoint.flat_state],
      'flat_eval_state': [_to_numpy(x) for x in checkpoint.flat_eval_state],
      'history': checkpoint.history.to_dict(),
      'slots_per_task': compresslevel,
      'input_signature': checkpoint.input_signature,
      'version_timestamp': 'Mar-10-2021',  # Trax's layout of that date.
      weight_files.FILES_SHA256: digests,
  }
  pkl_path = f'{base}.pkl.gz'
  weight_files.pickle_to_file(contents, pkl_path, gzip=True)
  return pkl_path


def _to_numpy(x):
  return weight_files.to_bits([x])[0] if hasattr(x, 'dtype') else x


def remove_partial_writes(directory):
  """Deletes the half-written files a killed `save` left in `directory`."""
  for path in glob.glob(os.path.join(glob.escape(directory),
                                     '*.gz' + weight_files.PARTIAL_SUFFIX)):
    os.remove(path)


def load_trax_checkpoint(path_or_dir, filename='model'):
  """Reads a Trax Loop or Trainer checkpoint.

  Example:
    >>> ckpt = load_trax_checkpoint('/tmp/trax_run')  # doctest: +SKIP
    >>> ckpt.step, len(ckpt.flat_weights)  # doctest: +SKIP
    (1000, 12)

  Args:
    path_or_dir: the checkpoint's directory, or its `.pkl.gz` file (the
      suffix may be left off).
    filename: the checkpoint's name within a directory (Trax's default).

  Returns:
    A `TraxCheckpoint`.

  Raises:
    FileNotFoundError: if the `.pkl.gz` file or a file it refers to is
      missing.
    weight_files.WeightFileError: if a file is truncated, corrupt or not
      Trax's (each file is checked whole before anything is returned).
    UnsafePickleError: if the pickle asks to run anything (a
      WeightFileError too).
  """
  pkl_path = trax_checkpoint_file(path_or_dir, filename)
  if not os.path.exists(pkl_path):
    raise FileNotFoundError(
        f'load_trax_checkpoint: no Trax checkpoint at {pkl_path} (expected '
        f'{filename}.pkl.gz in the directory, as Trax Loop writes it).')
  contents = weight_files.read_weights_file(pkl_path)
  flat_state = list(contents.get('flat_state') or [])
  flat_eval_state = contents.get('flat_eval_state')
  if flat_eval_state is None:
    flat_eval_state = flat_state
  return TraxCheckpoint(
      step=int(contents.get('step', 0)),
      flat_weights=weight_files.from_bits(contents['flat_weights']),
      flat_state=weight_files.from_bits(flat_state),
      flat_eval_state=weight_files.from_bits(list(flat_eval_state)),
      slots_per_task=[weight_files.from_bits(s)
                      for s in _slots_per_task(contents, pkl_path)],
      history=_history(contents.get('history'), pkl_path),
      input_signature=contents.get('input_signature'))


def _slots_per_task(contents, pkl_path):
  """Each task's flat slots, from the pickle or the `.opt_slots<i>` files."""
  if 'slots' in contents:  # Trainer (and early Loop): one task, a tree.
    return [_checked(flat_slots(contents['slots']), 'slots (flattened)',
                     pkl_path)]
  slots = contents.get('slots_per_task')
  if slots is None:
    return []
  if not isinstance(slots, int):
    if not isinstance(slots, (list, tuple)):
      weight_files.check_leaves(slots, 'slots_per_task', pkl_path)
    return [_checked(flat_slots(s), f'slots_per_task[{i}] (flattened)',
                     pkl_path) for i, s in enumerate(slots)]
  weight_files.check_compress_level(slots, 'slots_per_task', pkl_path)
  # An int is the compress level; the slots sit in one file per task. Trax
  # reads as many as the Loop has tasks; without the Loop, read all there.
  base_path = pkl_path[:-len('.pkl.gz')]
  per_task = []
  while os.path.exists(f'{base_path}.opt_slots{len(per_task)}.npy.gz'):
    path = f'{base_path}.opt_slots{len(per_task)}.npy.gz'
    weight_files.check_written_together(contents, pkl_path, path)
    per_task.append(_checked(
        weight_files.np_from_file(path, compresslevel=slots), 'records',
        path))
  return per_task


def _checked(leaves, what, source):
  weight_files.check_leaves(leaves, what, source)
  return leaves


def flat_slots(tree):
  """An optimizer slot tree's leaves as Trax stores them.

  Trax leaves out the None and () entries (weightless layers).
  """
  return [x for x in trees.tree_flatten(tree) if x is not None]


def _history(saved, pkl_path):
  """Trax's `History.to_dict()` (or a History record) as our History."""
  if saved is None:
    return history_lib.History()
  if not isinstance(saved, dict) or '_values' not in saved:
    raise weight_files.WeightFileError(
        f'{pkl_path}: the history is not a Trax History dict '
        f'({{"_values": ...}}); got {type(saved).__name__}.')
  try:
    return history_lib.History.from_dict(saved)
  except (AttributeError, TypeError, ValueError) as e:
    raise weight_files.WeightFileError(
        f'{pkl_path}: the history is not a Trax History dict ({{"_values": '
        f'{{mode: {{metric: [(step, value), ...]}}}}}}): {type(e).__name__}: '
        f'{e}. The file was not written by a Trax Loop or Trainer.') from e


def weights_and_state_for(model, checkpoint, input_signature=None,
                          eval_state=False):
  """A checkpoint's weight and state trees, fitted to `model`.

  Leaves are checked against the model's own signature (count and shapes);
  the model itself is not changed, so the caller decides what to assign.

  Args:
    model: the layer to fit (the Loop's model without its loss).
    checkpoint: a `TraxCheckpoint`.
    input_signature: the model's input signature; the checkpoint's by
      default.
    eval_state: if True, fit the eval model's state instead of the train
      model's.

  Returns:
    `(weights, state)` trees shaped like the model's.

  Raises:
    weight_files.WeightFileError: naming the first leaf that does not fit.
  """
  signature = (checkpoint.input_signature if input_signature is None else
               input_signature)
  if isinstance(signature, (list, tuple)) and len(signature) == 1:
    signature = signature[0]  # Trax saves the batch's first n_in entries.
  sig = model.weights_and_state_signature(signature)
  flat_state = (checkpoint.flat_eval_state if eval_state else
                checkpoint.flat_state)
  return weight_files.unflatten_weights_and_state(
      checkpoint.flat_weights, flat_state, sig)
