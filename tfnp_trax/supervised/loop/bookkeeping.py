"""What a training run keeps besides its weights, for Loop and RL alike.

The supervised `Loop` and the RL trainers (`rl.vector_agent.VectorAgent`) both count
steps, keep a `History`, write TensorBoard summaries, write and restore
checkpoints with a manifest, obey the chief-only rule under several
workers, stop cleanly when preempted, and decide what a failed checkpoint
write does. `RunBookkeeping` is that one shared piece; each trainer keeps
only what is its own (which variables, what a step is, how data resumes).

Example:
  >>> books = RunBookkeeping('MyTrainer', output_dir=None)
  >>> books.step += 1
  >>> books.history.append('train', 'metrics/loss', books.step, 0.5)
  >>> books.history.last('train', 'metrics/loss')
  0.5
"""

import json
import numbers
import os
import signal
import uuid
import warnings

from absl import logging
import tensorflow as tf

import distribute
from tfnp_trax.supervised import async_checkpoints
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import history as history_lib
from tfnp_trax.supervised import summaries
from tfnp_trax.supervised.loop import preemption

__all__ = ['RunBookkeeping', 'Preempted', 'CHECKPOINT_ERRORS']

Preempted = preemption.Preempted
CHECKPOINT_ERRORS = ('raise', 'warn')
_PROBE = '.write-probe-'  # The file that shows output_dir is writable.


def _say(message):
  logging.info(message)
  print(message, flush=True)


class RunBookkeeping:
  """Step counter, History, summaries, checkpoints and the chief-only rule.

  Args:
    owner: the trainer's name, used in messages (e.g. 'Loop', 'PPO').
    output_dir: the run's folder; None writes nothing.
    strategy: the tf.distribute strategy (default: the current one).
    keep_checkpoints: how many rotating `ckpt-<step>` checkpoints to keep.
    checkpoint_errors: 'raise' (a failed checkpoint write stops the run
      with a CheckpointWriteError naming the folder and the OS error) or
      'warn' (log a warning, keep training, try again at the next
      checkpoint).
    async_checkpoints: write checkpoints on a background thread: `save`
      copies the variables on device and returns while the copy is written
      (see `async_checkpoints.AsyncCheckpointWriter`). One write is in
      flight at a time; `save`, `wait_for_checkpoints`, `stop` and
      everything that reads the checkpoint folder wait for it first, and a
      failed write is handled as checkpoint_errors says there.
  """

  def __init__(self, owner, output_dir=None, strategy=None,
               keep_checkpoints=3, checkpoint_errors='raise',
               async_checkpoints=False):
    if checkpoint_errors not in CHECKPOINT_ERRORS:
      raise ValueError(f'{owner}: checkpoint_errors must be one of '
                       f'{CHECKPOINT_ERRORS}, got {checkpoint_errors!r}.')
    if (not isinstance(keep_checkpoints, numbers.Integral) or
        isinstance(keep_checkpoints, bool) or keep_checkpoints < 0):
      raise ValueError(
          f'{owner}: keep_checkpoints must be an integer >= 0 (how many '
          f'rotating checkpoints to keep; 0 keeps all), got '
          f'{keep_checkpoints!r}.')
    self.owner = owner
    self.output_dir = (os.path.expanduser(output_dir)
                       if output_dir is not None else None)
    self.strategy = strategy or tf.distribute.get_strategy()
    self.is_chief = distribute.is_chief(self.strategy)
    if self.output_dir is not None and self.is_chief:
      _check_writable(owner, self.output_dir)
    self.keep_checkpoints = keep_checkpoints
    self.checkpoint_errors = checkpoint_errors
    self.async_checkpoints = bool(async_checkpoints)
    self._async = None  # The background writer (the chief's, when async).
    self._async_ckpt = (None, None)  # (shadows, their tf.train.Checkpoint).
    self._pending = None  # (step, path, [folder written]) of the write.
    self.step = 0
    self.history = history_lib.History()
    self.manager = None
    self._writers = []
    self._written = (None, [])  # (step, paths) saved at the newest step.
    self._watch = preemption.SignalWatch()
    self._watching = False

  # -- Summaries ---------------------------------------------------------------
  def summary_writer(self, log_dir):
    """A SummaryWriter for `log_dir`, a no-op off the chief or without it."""
    writer = summaries.SummaryWriter(log_dir if self.is_chief else None)
    self._writers.append(writer)
    return writer

  def summary_writers(self):
    """RL's per-mode SummaryWriters under output_dir (chief only)."""
    writers = summaries.SummaryWriters(self.output_dir,
                                       enabled=self.is_chief)
    self._writers.append(writers)
    return writers

  def flush(self):
    """Flushes every summary writer made here."""
    for writer in self._writers:
      writer.flush()

  # -- Checkpoints -----------------------------------------------------------
  def track(self, variables, shapes_manifest):
    """Names what checkpoints hold; needs output_dir (else a no-op).

    Args:
      variables: dict group name -> list of tf.Variables.
      shapes_manifest: dict group name -> list of (leaf name, shape),
        checked on restore (see CheckpointManager).
    """
    if self.output_dir is None:
      return
    tf.io.gfile.makedirs(self.output_dir)
    # Only the chief writes checkpoints, so only it may clean up after an
    # interrupted write: another worker would race the chief's own temps.
    self.manager = checkpoints.CheckpointManager(
        self.checkpoint_dir, variables, shapes_manifest,
        keep=self.keep_checkpoints, writer=self.is_chief)
    if self.async_checkpoints and self.is_chief and self._async is None:
      self._async = async_checkpoints.AsyncCheckpointWriter(self.owner)

  @property
  def checkpoint_dir(self):
    if self.output_dir is None:
      return None
    return os.path.join(self.output_dir, 'checkpoints')

  def list_checkpoints(self):
    """`CheckpointInfo`s of the finished numbered checkpoints, oldest first.

    A write in flight is waited for first.
    """
    self.wait_for_checkpoints()
    return self.manager.list() if self.manager else []

  def newest_checkpoint(self):
    """The folder of the newest numbered checkpoint, or None."""
    found = self.list_checkpoints()
    return found[-1].path if found else None

  def saved_at(self, step):
    """The numbered checkpoint folders written at `step` by this process."""
    saved_step, paths = self._written
    return list(paths) if saved_step == step else []

  def save(self, extra=None, permanent=False, name=None, then=None,
           then_reads=()):
    """Writes a checkpoint of the current step, on the chief only.

    With async_checkpoints the previous write is waited for (its failure
    handled as checkpoint_errors says), the variables are copied on device
    and the write (and `then`) runs on the background thread.

    Args:
      extra: a JSON-able dict for the manifest; the History is added.
      permanent: keep this numbered checkpoint when pruning.
      name: a named checkpoint instead of `ckpt-<step>`.
      then: None, or `then(read)` run after the folder is written, where
        `read(variable)` gives a variable's value (NumPy) at this save;
        e.g. the owner's other checkpoint files. It may raise a
        CheckpointWriteError, handled as a failed write.
      then_reads: the variables `then` reads that checkpoints do not hold.

    Returns:
      The checkpoint folder (with async_checkpoints: where it will be
      once written); None where nothing was written (no output_dir, not
      the chief, or a failed write under 'warn').

    Raises:
      CheckpointWriteError: the write (or, with async_checkpoints, the
        previous one) failed and checkpoint_errors is 'raise'.
    """
    if self.manager is None or not self.is_chief:
      return None
    step, manifest_extra = self.step, self._extra(extra)
    if self._async is None:
      try:
        path = self.manager.save(step, extra=manifest_extra,
                                 permanent=permanent, name=name)
      except checkpoints.CheckpointWriteError as e:
        self._failed(e)
        return None
      self._record(step, path, name)
      if then is not None:
        try:
          then(lambda v: v.numpy())
        except checkpoints.CheckpointWriteError as e:
          self._failed(e)
      return path
    return self._save_in_background(step, manifest_extra, permanent, name,
                                    then, then_reads)

  def _save_in_background(self, step, manifest_extra, permanent, name, then,
                          then_reads):
    """`save` with async_checkpoints: wait, copy on device, submit."""
    self.wait_for_checkpoints()
    path = self.manager.path(self.manager.name_for(step, permanent, name))
    tracked = self.manager.tracked_variables
    known = {id(v) for vs in tracked.values() for v in vs}
    extra_reads = [v for v in then_reads if id(v) not in known]
    shadows = self._async.snapshot(dict(tracked, **(
        {'_then_reads': extra_reads} if extra_reads else {})))
    if self._async_ckpt[0] is not shadows:  # Made anew with the shadows.
      self._async_ckpt = (shadows, checkpoints.CheckpointManager.checkpoint_of(
          {k: shadows[k] for k in tracked}))
    source, manager, writer = self._async_ckpt[1], self.manager, self._async
    written = []

    def write():
      manager.save(step, extra=manifest_extra, permanent=permanent,
                   name=name, checkpoint=source)
      written.append(True)
      logging.info('%s: checkpoint written in %s', self.owner, path)
      if then is not None:
        then(lambda v: writer.shadow_of(v).numpy())

    self._record(step, path, name)
    self._pending = (step, path, written)
    writer.submit(write, path)
    return path

  def _record(self, step, path, name=None):
    if name is None:  # Named checkpoints are not the step's checkpoint.
      saved_step, paths = self._written
      self._written = (step, (paths if saved_step == step else []) + [path])
    logging.info('%s: checkpoint saved in %s', self.owner, path)

  def wait_for_checkpoints(self):
    """Waits for the checkpoint write in flight (async_checkpoints).

    A failed write is handled as checkpoint_errors says: 'raise' raises
    its CheckpointWriteError here, 'warn' warns. Any other error raised in
    the writer's thread is raised here as it is.
    """
    if self._async is None:
      return
    pending, self._pending = self._pending, None
    try:
      self._async.wait()
    except BaseException as e:
      if pending is not None and not pending[2]:  # No folder was written.
        step, paths = self._written
        self._written = (step, [p for p in paths if p != pending[1]])
      if isinstance(e, checkpoints.CheckpointWriteError):
        self._failed(e)
      else:
        raise

  def wait_for_checkpoints_after(self, error):
    """Waits for the write in flight while `error` stops the run.

    A failure of that write is not raised over `error`: it is logged and
    added to `error` as a note.
    """
    try:
      self.wait_for_checkpoints()
    except Exception as e:  # pylint: disable=broad-except
      message = (f'{self.owner}: the checkpoint write in flight failed too: '
                 f'{type(e).__name__}: {e}')
      logging.error(message)
      error.add_note(message)

  def _extra(self, extra):
    # A copy made now (through JSON): the owner's values may change while
    # a background write is in flight.
    out = json.loads(json.dumps(dict(extra or {})))
    out['history'] = _json_safe(self.history.to_dict())
    return out

  def write_failed(self, error):
    """Handles a failed checkpoint write (a CheckpointWriteError) as
    `checkpoint_errors` says: raises it, or warns and goes on."""
    self._failed(error)

  def _failed(self, error):
    if self.checkpoint_errors == 'raise':
      raise checkpoints.CheckpointWriteError(
          f'{self.owner}: {error} Free space in (or fix) that folder, or '
          f"pass checkpoint_errors='warn' to keep training and retry at the "
          f'next checkpoint.', error.directory, error.name, error.cause,
          error.errno) from error
    message = (f'{self.owner}: {error} Training goes on; the next '
               f'checkpoint tries again.')
    logging.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=4)

  def restore(self, manifest):
    """Takes the step and History from a restored checkpoint's manifest.

    The numbered checkpoints of that step count as written at it (so a
    `stop` at this step uses them).
    """
    self.step = int(manifest['step'])
    self.history = history_lib.History.from_dict(
        manifest['extra'].get('history', {}))
    where = manifest.get('path')
    own = (self.manager is not None and where is not None and
           os.path.abspath(os.path.dirname(where)) ==
           os.path.abspath(self.manager.directory))
    if own and self.is_chief:
      paths = [c.path for c in self.manager.list() if c.step == self.step]
      self._written = (self.step, paths)

  def recover_permanent(self, is_permanent):
    """Writes the permanent checkpoints a kill prevented; returns them.

    A permanent checkpoint is written right after the rotating one of its
    step, so a kill in between leaves `ckpt-<step>` without
    `ckpt-<step>-permanent`. Its content is exactly the rotating one's, so
    the copy is what the lost write would have produced. Steps whose
    rotating checkpoint is gone cannot be recovered (a kill cannot cause
    that: the rotating one is pruned only after later checkpoints).

    Args:
      is_permanent: step -> bool, the owner's `permanent_checkpoint_at`.
    """
    if self.manager is None or not self.is_chief:
      return []
    self.wait_for_checkpoints()
    found = self.manager.list()
    have = {c.step for c in found if c.permanent}
    made = []
    for c in found:
      if c.permanent or c.step in have or c.step > self.step:
        continue
      if not is_permanent(c.step):
        continue
      try:
        path = self.manager.copy(c.path, permanent=True)
      except checkpoints.CheckpointWriteError as e:
        self._failed(e)
        continue
      except IOError as e:  # A corrupt rotating one: nothing to copy.
        _say(f'{self.owner}: permanent checkpoint of step {c.step} is '
             f'missing and {c.path} is unusable ({e}); not recovered.')
        continue
      _say(f'{self.owner}: wrote the missing permanent checkpoint {path} '
           f'from {c.path}.')
      if c.step == self.step == self._written[0]:
        self._written[1].append(path)
      made.append(path)
    return made

  # -- Preemption ----------------------------------------------------------------
  def watch_signals(self):
    """Context manager for run(): SIGTERM/SIGINT become a stop request.

    Nested use (a run calling another run) keeps the outer handlers.
    """
    return _Watching(self)

  def stop_requested(self):
    """Whether to stop after this step; the same answer on every worker.

    Under several workers this is a collective (an all-reduce of each
    worker's flag), so every worker calls it once per step.
    """
    if not self._watching:
      return False
    return distribute.any_worker(self._watch.requested, self.strategy)

  def stop(self, save_checkpoint):
    """Saves, flushes, waits for all workers, then raises Preempted.

    Args:
      save_checkpoint: () -> path or None; the owner's checkpoint writer
        (it may add its own counters before calling `save`).
    """
    signum = self._watch.signum or signal.SIGTERM
    self.wait_for_checkpoints()  # A failed write at this step is not saved.
    paths = self.saved_at(self.step)
    path = paths[0] if paths else save_checkpoint()
    # The chief's write is complete before the barrier and the message.
    self.wait_for_checkpoints()
    if path is not None and path not in self.saved_at(self.step):
      path = None
    self.flush()
    # Non-chief workers wait here until the chief's checkpoint is complete.
    distribute.barrier(self.strategy)
    if path is None and self.manager is not None and not self.is_chief:
      path = self.manager.path(f'ckpt-{self.step}')
    name = signal.Signals(signum).name
    heard = 'received' if self._watch.requested else 'another worker received'
    where = (f'checkpoint {path}' if path else
             'no checkpoint (no output_dir, or the write failed)')
    message = (f'{self.owner}: {heard} {name}; stopped after step '
               f'{self.step} and saved {where}. Run again with the same '
               f'output_dir to resume.')
    _say(message)
    raise Preempted(message, signum, self.step, path)


class _Watching:
  """Installs the signal handlers while a run is active."""

  def __init__(self, books):
    self._books = books
    self._outer = False

  def __enter__(self):
    books = self._books
    self._outer = not books._watching  # pylint: disable=protected-access
    if self._outer:
      books._watch.__enter__()  # pylint: disable=protected-access
      books._watching = True  # pylint: disable=protected-access
    return books

  def __exit__(self, *exc_info):
    books = self._books
    if self._outer:
      books._watching = False  # pylint: disable=protected-access
      books._watch.__exit__(*exc_info)  # pylint: disable=protected-access
    return False


def _check_writable(owner, output_dir):
  """Raises CheckpointWriteError unless `output_dir` is a writable folder.

  Checked when the run is set up, so a wrong path fails before a model is
  built or a step is run, not at the first checkpoint.
  """
  if '://' in output_dir:  # A remote filesystem: its own client checks.
    return
  probe = os.path.join(output_dir, f'{_PROBE}{uuid.uuid4().hex[:8]}')
  try:
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
      raise NotADirectoryError(20, 'Not a directory (it is a file)',
                               output_dir)
    os.makedirs(output_dir, exist_ok=True)
    for stale in os.listdir(output_dir):  # From a process killed right here.
      if stale.startswith(_PROBE):
        try:
          os.remove(os.path.join(output_dir, stale))
        except FileNotFoundError:
          pass
    with open(probe, 'w'):
      pass
    os.remove(probe)
  except OSError as e:
    raise checkpoints.CheckpointWriteError(
        f'{owner}: output_dir {output_dir!r} must be a writable folder, but '
        f'{e.strerror or e} ({type(e).__name__}). Pass a folder this '
        f'process may create and write in, or output_dir=None to write '
        f'nothing.', output_dir, None, str(e), e.errno) from e


def _json_safe(tree):
  """Arrays become lists and tuples lists, so `tree` can go to JSON."""
  if isinstance(tree, dict):
    return {k: _json_safe(v) for k, v in tree.items()}
  if isinstance(tree, (list, tuple)):
    return [_json_safe(v) for v in tree]
  if hasattr(tree, 'tolist'):
    return tree.tolist()
  return tree
