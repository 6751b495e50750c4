"""Loop set-up and restore: the strategy, and loading checkpoints.

`load_checkpoint` is given what it restores (`ResumeParts`) instead of
reading a Loop's attributes: the run's bookkeeping (step, History and
checkpoint manager, `bookkeeping.RunBookkeeping`), the Loop's counters, its
trainers and data streams, and the Loop actions it calls back. It returns
what it restored (`Restored`), which the Loop keeps.
"""

import dataclasses
import os
from typing import Any, Callable, List, Optional
import warnings

import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import history as history_lib
from tfnp_trax.supervised import trax_checkpoints
from tfnp_trax.supervised.loop import checkpointing as ckpt_lib
from tfnp_trax.supervised.loop import logs
from tfnp_trax.supervised.loop import progress as progress_lib
from tfnp_trax.supervised.loop import stopping as stopping_lib

__all__ = ['ResumeParts', 'Restored', 'resolve_strategy', 'load_checkpoint',
           'read_model']


def resolve_strategy(strategy, n_devices):
  """The strategy to train under, checked against `n_devices`."""
  if strategy is None:
    strategy = tf.distribute.get_strategy()
    if n_devices and n_devices != strategy.num_replicas_in_sync:
      gpus = tf.config.list_logical_devices('GPU')
      devices = gpus or tf.config.list_logical_devices('CPU')
      if n_devices > len(devices):
        raise ValueError(
            f'Loop: n_devices={n_devices} but only {len(devices)} local '
            f'devices exist ({[d.name for d in devices]}).')
      strategy = tf.distribute.MirroredStrategy(
          [d.name for d in devices[:n_devices]])
  elif n_devices and n_devices != strategy.num_replicas_in_sync:
    raise ValueError(
        f'Loop: n_devices={n_devices} but the strategy '
        f'{type(strategy).__name__} has {strategy.num_replicas_in_sync} '
        f'replicas; pass one or the other.')
  return strategy


@dataclasses.dataclass
class ResumeParts:
  """What `load_checkpoint` reads and restores, and whom it calls back.

  Attributes:
    books: the run's `RunBookkeeping` (step, History, checkpoint manager).
    loop_vars: the Loop's `checkpointing.LoopVariables`.
    trainers: the Loop's task trainers (`task_trainers`).
    train_streams: one `InputStream` per TrainTask.
    eval_streams: one `InputStream` per EvalTask.
    variables: the checkpointed variable groups (`variable_groups`).
    shapes: their manifest of names and shapes.
    keep_checkpoints: how many rotating checkpoints a manager keeps.
    permanent_checkpoint_at: step -> bool, the Loop's permanent rule.
    sync_model: copies the trained weights into the model layers.
    save_trax_files: basename -> None, writes Trax's checkpoint files.
    update_weights_and_state: (weights, state) -> None, sets the model's.
  """
  books: Any
  loop_vars: Any
  trainers: Any
  train_streams: List[Any]
  eval_streams: List[Any]
  variables: Any
  shapes: Any
  keep_checkpoints: int
  permanent_checkpoint_at: Callable[[int], bool]
  sync_model: Callable[[], None]
  save_trax_files: Callable[[str], None]
  update_weights_and_state: Callable[..., None]


@dataclasses.dataclass
class Restored:
  """What a load restored, beyond what it wrote into the parts.

  Attributes:
    step: the restored step.
    seed: the run's random seed (None from a Trax checkpoint).
    progress: the running sums of the restored step (None from a Trax
      checkpoint).
    stop: the `stopping.Stop` of a run that stopped early, or None.
    callback_states: the callbacks' saved states (see `stopping`), or None.
  """
  step: int
  seed: Optional[int] = None
  progress: Any = None
  stop: Any = None
  callback_states: Any = None


def _fast_forward(streams, positions):
  for stream, position in zip(streams, positions):
    try:
      stream.fast_forward(position)
    except ValueError:
      msg = (f'Loop.load_checkpoint: the training data is already past '
             f'batch {position} of the checkpoint and an iterator cannot go '
             f'back; training continues from batch {stream.position}.')
      logs.log(msg, stdout=False)
      warnings.warn(msg, RuntimeWarning, stacklevel=4)


def _manager(parts, directory):
  """The CheckpointManager reading `directory` (a Loop output_dir)."""
  books = parts.books
  if books.manager is not None and os.path.abspath(
      directory) == os.path.abspath(books.output_dir):
    return books.manager
  found = ckpt_lib.find_checkpoint_dir(directory)
  if found is None:
    return None
  # A reader: that folder's writer may be running, so it is left alone.
  return checkpoints.CheckpointManager(found, parts.variables, parts.shapes,
                                       keep=parts.keep_checkpoints,
                                       writer=False)


def load_checkpoint(parts, directory, filename):
  """Loop.load_checkpoint (see there); returns a `Restored` or None."""
  books = parts.books
  directory = directory or books.output_dir
  if directory is None:
    logs.log('Not loading as both directory and output_dir are None.',
             stdout=False)
    return None
  manager = _manager(parts, directory)
  name = filename or 'model'
  found = _own_checkpoints(manager, name)
  # A Loop writes Trax's files beside its own checkpoints; its own ones
  # come first (they hold the data positions and running sums), Trax's
  # files are read where they are all there is (a run of Trax itself).
  trax_path = trax_checkpoints.trax_checkpoint_file(
      os.path.join(directory, filename or 'model'), existing=True)
  if trax_path is not None and not found:
    return _load_trax_checkpoint(parts, trax_path)
  if manager is None:
    logs.log(f'Not loading: no checkpoints in {directory}.', stdout=False)
    return None
  if name == 'model':
    manifest = manager.restore_latest()
  else:
    if not found:
      logs.log(f'Not loading as checkpoint {name} does not exist in '
               f'{directory}.', stdout=False)
      return None
    try:
      manifest = manager.restore(found[0])
    except (IOError, OSError) as e:
      raise checkpoints.NoValidCheckpointError(
          f'Loop.load_checkpoint: checkpoint {found[0]} is unusable: {e}'
      ) from e
  if manifest is None:
    return None
  variables = parts.loop_vars
  books.restore(manifest)
  books.step = int(variables.step.numpy())
  restored = Restored(step=books.step, seed=int(variables.seed.numpy()))
  _fast_forward(parts.train_streams,
                [int(v.numpy()) for v in variables.positions])
  restored.progress, eval_positions = progress_lib.Progress.from_dict(
      manifest['extra'].get(progress_lib.KEY))
  _fast_forward_evals(parts.eval_streams, eval_positions)
  restored.stop = stopping_lib.stop_from_dict(
      manifest['extra'].get(stopping_lib.KEY))
  restored.callback_states = manifest['extra'].get(stopping_lib.CALLBACKS_KEY)
  parts.trainers.active = 0  # Checkpoints hold the same body in every task.
  parts.sync_model()
  logs.log(f'Resumed from {manifest["path"]} at step {books.step}.')
  if manager is books.manager:
    books.recover_permanent(parts.permanent_checkpoint_at)
    if books.is_chief:
      # A kill may have come between the checkpoint and its Trax files.
      parts.save_trax_files('model')
      if parts.permanent_checkpoint_at(books.step):
        parts.save_trax_files(f'model_{books.step}')
  return restored


def read_model(parts, name, ema, model):
  """Loop.checkpoint_weights_and_state (see there)."""
  books = parts.books
  found = _own_checkpoints(books.manager, name)
  if not found:
    return None
  kind = 'ema' if ema else 'weights'
  groups = books.manager.read(found[0], [kind, 'state'])
  n_weights = len(fastmath.tree_leaves(model.weights))
  n_state = len(fastmath.tree_leaves(model.state))
  # The model's leaves lead its trainer's groups (see task_trainers).
  weights = fastmath.tree_unflatten(groups[kind][:n_weights],
                                    model.weights)[0]
  state = fastmath.tree_unflatten(groups['state'][:n_state], model.state)[0]
  return weights, state


def _own_checkpoints(manager, name):
  """The folders of `manager` that hold checkpoint `name`, best first.

  'model' is any numbered checkpoint (the newest is restored).
  """
  if manager is None:
    return []
  if name == 'model':
    return [info.path for info in reversed(manager.list())]
  _, named = ckpt_lib.checkpoint_name(name, -1)
  candidates = [manager.path(named)] if named else []
  if named is None or ckpt_lib._PERMANENT.match(name):  # pylint: disable=protected-access
    step = int(name.split('_')[1])
    candidates = [manager.path(f'ckpt-{step}-permanent'),
                  manager.path(f'ckpt-{step}')]
  return [p for p in candidates if os.path.isdir(p)]


def _fast_forward_evals(streams, positions):
  """Moves the eval streams to where the checkpointed run had read them."""
  for stream, position in zip(streams, positions):
    if position < stream.position:
      logs.log(f'Loop.load_checkpoint: the eval data is already past batch '
               f'{position}; evals go on from batch {stream.position}.',
               stdout=False)
      continue
    stream.fast_forward(position)


def _load_trax_checkpoint(parts, path):
  """Starts from a Trax Loop checkpoint (model.pkl.gz and its .npy.gz)."""
  loader = trax_checkpoints.load_trax_checkpoint
  d = loader(path)
  weights, state = parts.trainers.model_weights_and_state()
  flat_w = ckpt_lib.match_by_shape(fastmath.tree_leaves(weights),
                                   list(d.flat_weights), 'weight')
  weights = fastmath.tree_unflatten(flat_w, weights)[0]
  flat_s = fastmath.tree_leaves(state)
  try:
    flat_s = ckpt_lib.match_by_shape(flat_s, list(d.flat_state),
                                     'state')
  except ValueError:
    logs.log('Failed loading model state from checkpoint, loading weights '
             'only.')
  state = fastmath.tree_unflatten(flat_s, state)[0]
  parts.update_weights_and_state(weights, state)
  for trainer, slots in zip(parts.trainers.trainers,
                            d.slots_per_task or []):
    current = trainer.slots
    ours = trax_checkpoints.flat_slots(current)
    try:
      matched = ckpt_lib.match_by_shape(ours, list(slots), 'slot')
    except ValueError as e:
      logs.log(f'Optimizer slots not loaded (the optimizer differs): {e}')
      continue
    it = iter(matched)
    trainer.slots = fastmath.nested_map(lambda _: next(it), current)
  parts.books.step = int(d.step)
  parts.books.history = d.history or history_lib.History()
  parts.sync_model()
  logs.log(f'Loaded the Trax checkpoint {path} at step {parts.books.step}.')
  return Restored(step=parts.books.step)
