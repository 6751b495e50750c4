"""Loop set-up and restore: strategy, trainers, checkpoint loading.

The chief-only rule lives in `distribute.is_chief`; the step, History and
checkpoint manager in `run_bookkeeping.RunBookkeeping` (`loop._books`).
"""

import os
import warnings

import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax.supervised import _loop_checkpointing as ckpt_lib
from tfnp_trax.supervised import _loop_logging as logs
from tfnp_trax.supervised import _loop_progress
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import history as history_lib
from tfnp_trax.supervised import trax_checkpoints

__all__ = ['resolve_strategy', 'load_checkpoint']


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


def _fast_forward(loop, positions):
  for stream, position in zip(loop._streams, positions):  # pylint: disable=protected-access
    try:
      stream.fast_forward(position)
    except ValueError:
      msg = (f'Loop.load_checkpoint: the training data is already past '
             f'batch {position} of the checkpoint and an iterator cannot go '
             f'back; training continues from batch {stream.position}.')
      logs.log(msg, stdout=False)
      warnings.warn(msg, RuntimeWarning, stacklevel=4)


def _manager(loop, directory):
  """The CheckpointManager reading `directory` (a Loop output_dir)."""
  # pylint: disable=protected-access
  if loop._ckpt is not None and os.path.abspath(directory) == os.path.abspath(
      loop._output_dir):
    return loop._ckpt
  found = ckpt_lib.find_checkpoint_dir(directory)
  if found is None:
    return None
  # A reader: that folder's writer may be running, so it is left alone.
  return checkpoints.CheckpointManager(found, loop._variables, loop._shapes,
                                       keep=loop._keep_checkpoints,
                                       writer=False)


def load_checkpoint(loop, directory, filename):
  """Loop.load_checkpoint (see there)."""
  # pylint: disable=protected-access
  directory = directory or loop._output_dir
  if directory is None:
    logs.log('Not loading as both directory and output_dir are None.',
             stdout=False)
    return None
  manager = _manager(loop, directory)
  name = filename or 'model'
  found = _own_checkpoints(manager, name)
  # A Loop writes Trax's files beside its own checkpoints; its own ones
  # come first (they hold the data positions and running sums), Trax's
  # files are read where they are all there is (a run of Trax itself).
  trax_path = trax_checkpoints.existing_checkpoint_file(directory, filename)
  if trax_path is not None and not found:
    return _load_trax_checkpoint(loop, trax_path)
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
  variables = loop._loop_vars
  loop._books.restore(manifest)
  loop._step = int(variables.step.numpy())
  loop._seed = int(variables.seed.numpy())
  _fast_forward(loop, [int(v.numpy()) for v in variables.positions])
  loop._progress, eval_positions = _loop_progress.Progress.from_dict(
      manifest['extra'].get(_loop_progress.KEY))
  _fast_forward_evals(loop, eval_positions)
  loop._trainers.active = 0  # Checkpoints hold the same body in every task.
  loop._sync_model()
  logs.log(f'Resumed from {manifest["path"]} at step {loop._step}.')
  if manager is loop._ckpt:
    loop._books.recover_permanent(loop._permanent_checkpoint_at)
    if loop._is_chief:
      # A kill may have come between the checkpoint and its Trax files.
      loop._save_trax_files('model')
      if loop._permanent_checkpoint_at(loop._step):
        loop._save_trax_files(f'model_{loop._step}')
  return loop._step


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


def _fast_forward_evals(loop, positions):
  """Moves the eval streams to where the checkpointed run had read them."""
  # pylint: disable=protected-access
  for evaluator, position in zip(loop._evaluators, positions):
    stream = evaluator._stream
    if position < stream.position:
      logs.log(f'Loop.load_checkpoint: the eval data is already past batch '
               f'{position}; evals go on from batch {stream.position}.',
               stdout=False)
      continue
    stream.fast_forward(position)


def _load_trax_checkpoint(loop, path):
  """Starts from a Trax Loop checkpoint (model.pkl.gz and its .npy.gz)."""
  # pylint: disable=protected-access
  loader = trax_checkpoints.load_trax_checkpoint
  d = loader(path)
  weights, state = loop._trainers.model_weights_and_state()
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
  loop.update_weights_and_state(weights, state)
  for trainer, slots in zip(loop._trainers.trainers,
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
  loop._step = int(d.step)
  loop._history = d.history or history_lib.History()
  loop._sync_model()
  logs.log(f'Loaded the Trax checkpoint {path} at step {loop._step}.')
  return loop._step
