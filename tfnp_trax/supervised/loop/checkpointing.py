"""Loop checkpoints: which variables they hold and how Trax names map on.

Trax's Loop writes `<output_dir>/<basename>.pkl.gz`: `model` (overwritten
at every checkpoint step), `model_<step>` (permanent) and
`lowest_<metric>` / `highest_<metric>` (best eval values). Here they map
onto the atomic CheckpointManager under `<output_dir>/checkpoints`:
`model` is the rotating `ckpt-<step>` (the newest good one is restored, an
older one if it is corrupt), `model_<step>` is `ckpt-<step>-permanent`, and
any other basename is a named checkpoint folder of that name.
"""

import os
import re

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.layers import naming
from tfnp_trax.layers import weight_files
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import history as history_lib
from tfnp_trax.supervised import trax_checkpoints

__all__ = ['LoopVariables', 'checkpoint_name', 'find_checkpoint_dir',
           'match_by_shape', 'trax_files_writer', 'variable_groups']

_PERMANENT = re.compile(r'^model_(\d+)$')


class LoopVariables:
  """The Loop's own counters, as variables a checkpoint saves with weights.

  Args:
    strategy: the strategy the variables live under.
    n_tasks: how many training tasks (each has its own data position).
    seed: the random seed of the run.
  """

  def __init__(self, strategy, n_tasks, seed):
    with strategy.scope():
      self.step = tf.Variable(0, dtype=tf.int64, trainable=False)
      self.positions = [tf.Variable(0, dtype=tf.int64, trainable=False)
                        for _ in range(n_tasks)]
      self.seed = tf.Variable(seed, dtype=tf.int64, trainable=False)

  def as_list(self):
    # Ordered so a one-task checkpoint keeps the earlier [step, position,
    # seed] layout.
    return [self.step, self.positions[0], self.seed] + self.positions[1:]


def variable_groups(task_trainers, loop_variables):
  """Returns `(variables, manifest)` for a CheckpointManager."""
  variables, manifest = {}, {}
  for i, (trainer, with_loss) in enumerate(zip(
      task_trainers.trainers, task_trainers.models_with_loss)):
    suffix = '' if i == 0 else str(i)
    group = trainer.variables()
    names = naming.leaf_names(with_loss, with_loss.weights)
    for kind in ('weights', 'slots', 'state'):
      variables[kind + suffix] = group[kind]
    manifest['weights' + suffix] = [
        (n, list(v.shape)) for n, v in zip(names, group['weights'])]
    manifest['state' + suffix] = [
        (f'state_{j}', list(v.shape)) for j, v in enumerate(group['state'])]
    if 'ema' in group:  # The weights' moving average, then its count.
      variables['ema' + suffix] = group['ema']
      manifest['ema' + suffix] = [
          (f'ema/{n}', list(v.shape))
          for n, v in zip(names + ['count'], group['ema'])]
  variables['loop'] = loop_variables.as_list()
  return variables, manifest


def checkpoint_name(basename, step):
  """Maps a Trax basename to `(permanent, name)` for CheckpointManager.save.

  `name` is None for the rotating `ckpt-<step>` checkpoints.
  """
  if basename == 'model':
    return False, None
  m = _PERMANENT.match(basename)
  if m and int(m.group(1)) == step:
    return True, None
  return False, basename


def find_checkpoint_dir(directory):
  """The folder holding `ckpt-*` checkpoints of a Loop output_dir, or None."""
  inner = os.path.join(directory, 'checkpoints')
  if tf.io.gfile.isdir(inner):
    return inner
  if tf.io.gfile.isdir(directory) and any(
      n.startswith('ckpt-') for n in tf.io.gfile.listdir(directory)):
    return directory
  return None


def match_by_shape(full, partial, what):
  """Puts the arrays of `partial` into `full` in order, matching shapes.

  Trax's lenient rule (`weight_files.fit_leaves(..., by_shape=True)`): walk
  `full`; where the next array of `partial` has the same shape, take it,
  else keep `full`'s. Every array of `partial` must be used.

  Raises:
    weight_files.WeightFileError: a ValueError naming the first checkpoint
      array that found no place.
  """
  return weight_files.fit_leaves(partial, list(full), what, by_shape=True,
                                 source='Loop.load_checkpoint')


def trax_files_writer(trainers, model, eval_model, books, inputs, basename,
                      compresslevel=2):
  """`(write, reads)`: Trax's checkpoint files of `basename`, in two parts.

  What the files hold besides the arrays (the step, the History, the eval
  model's state, the input signature) is taken now. `write(read)` reads
  the arrays of the variables `reads` with `read(variable)` (their values
  at the save: the live ones, or the asynchronous writer's copies on its
  thread) and writes the files, raising a CheckpointWriteError if it
  cannot.

  Args:
    trainers: the Loop's task trainers.
    model: the model body (its weight and state trees place the values).
    eval_model: the eval model (its state is saved as the eval state).
    books: the run's RunBookkeeping (step, History, output_dir).
    inputs: the model's inputs of a sample batch (for the signature).
    basename: Trax's checkpoint name ('model', 'model_<step>', ...).
    compresslevel: the gzip level of the `.npy.gz` files.
  """
  weight_vars, state_vars = trainers.model_variables()
  slot_vars = [list(t.variables()['slots']) for t in trainers.trainers]
  # The trees' structures place the values; None leaves have no variable.
  weight_leaves = fastmath.tree_flatten(model.weights)
  state_leaves = fastmath.tree_flatten(model.state)
  _, flat_eval_state = weight_files.flatten_weights_and_state(
      (), eval_model.state)
  step, output_dir = books.step, books.output_dir
  history = history_lib.History.from_dict(books.history.to_dict())
  signature = shapes.signature(inputs)

  def write(read):
    checkpoint = trax_checkpoints.TraxCheckpoint(
        step=step, flat_weights=_fill(weight_leaves, weight_vars, read),
        flat_state=_fill(state_leaves, state_vars, read),
        flat_eval_state=[onp.asarray(x) for x in flat_eval_state],
        slots_per_task=[[read(v) for v in vs] for vs in slot_vars],
        history=history, input_signature=signature)
    try:
      trax_checkpoints.save(output_dir, basename, checkpoint,
                            compresslevel=compresslevel)
    except OSError as e:  # Disk full, read-only: checkpoint_errors says.
      raise checkpoints.CheckpointWriteError(
          f'could not write the Trax checkpoint files {basename}.* in '
          f'{output_dir} ({e}).', output_dir, basename, str(e),
          e.errno) from e

  return write, weight_vars + state_vars + [v for vs in slot_vars
                                            for v in vs]


def _fill(leaves, variables, read):
  """A tree's flat leaves: None where `leaves` has None, else the next
  variable's value (`read(variable)`), as the trainers' trees hold them."""
  values = iter(variables)
  return [None if x is None else read(next(values)) for x in leaves]
