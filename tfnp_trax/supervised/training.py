"""Trax's training API: TrainTask, EvalTask and Loop.

Loop trains a model on one or more TrainTasks (sharing the model body),
runs EvalTasks, writes TensorBoard summaries, keeps a History, and writes
atomic checkpoints it resumes from exactly. The step counter, History,
summaries, checkpoints, the chief-only rule and preemption handling live in
`bookkeeping.RunBookkeeping`, which the RL trainers share.
"""

import contextlib
import math
import random
import time

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax.layers import weight_files
from tfnp_trax.supervised import _precision
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import trax_checkpoints
from tfnp_trax.supervised.loop import bookkeeping
from tfnp_trax.supervised.loop import checkpointing as ckpt_lib
from tfnp_trax.supervised.loop import evals as evals_lib
from tfnp_trax.supervised.loop import inputs as inputs_lib
from tfnp_trax.supervised.loop import logs
from tfnp_trax.supervised.loop import progress as progress_lib
from tfnp_trax.supervised.loop import resume as resume_lib
from tfnp_trax.supervised.loop import stopping as stopping_lib
from tfnp_trax.supervised.loop import task_trainers as trainers_lib
from tfnp_trax.supervised.loop import tasks as tasks_lib

__all__ = ['TrainTask', 'EvalTask', 'Loop', 'LossIsNotFiniteError',
           'Preempted', 'pickle_to_file', 'unpickle_from_file']

# Trax's pickling helpers; reading refuses anything but arrays, containers
# and Trax's records (weight_files' restricted unpickler).
pickle_to_file = weight_files.pickle_to_file
unpickle_from_file = weight_files.unpickle_from_file

TrainTask = tasks_lib.TrainTask
EvalTask = tasks_lib.EvalTask
Preempted = bookkeeping.Preempted


class LossIsNotFiniteError(FloatingPointError):
  """Training stopped because the loss became NaN or infinite."""


def _never(step):
  del step
  return False


def _at_step_1_and_every_nth_step(period):
  if not period:
    return _never
  return lambda step: step == 1 or (step > 0 and step % period == 0)


class Loop:
  """Trains a model on TrainTasks, with evals, summaries and checkpoints.

  Arguments, defaults and behaviour follow Trax's `Loop`: the step number
  passed to `which_task`, `checkpoint_at`, `eval_at`, callbacks, learning
  rate schedules and the optimizer is the 1-based number of the step being
  run; checkpoints of a step are written before its evals; training values
  are logged (as their mean since the last log) at eval steps.

  Example:
    >>> import contextlib, io, itertools
    >>> import numpy as np
    >>> from tfnp_trax import optimizers
    >>> import tfnp_trax.layers as tl
    >>> batch = (np.ones((4, 3), np.float32), np.array([0, 1, 0, 1]),
    ...          np.ones(4, np.float32))
    >>> data = itertools.repeat(batch)
    >>> loop = Loop(tl.Serial(tl.Dense(2), tl.LogSoftmax()),
    ...             TrainTask(data, tl.CrossEntropyLoss(),
    ...                       optimizers.Adam(0.01)),
    ...             eval_tasks=[EvalTask(data, [tl.Accuracy()])])
    >>> with contextlib.redirect_stdout(io.StringIO()):  # progress lines
    ...   loop.run(2)
    >>> loop.step
    2

  Preemption: while `run` is active, SIGTERM or SIGINT (in the main thread)
  lets the current step finish, writes a checkpoint, flushes the summaries
  and raises `Preempted` (a SystemExit) naming the checkpoint; running the
  same script again resumes from it. Under several workers all of them
  agree to stop after the same step (an all-reduce of a stop flag each
  step), so a signal to any one worker stops them all there.

  Kills: a run killed outright (SIGKILL, a lost machine) resumes from its
  newest checkpoint exactly as well. As in Trax, a step's checkpoints are
  written before its evals and logs, so a restored Loop's `history` ends
  before them. Checkpoints also hold the running sums of the training
  values and the eval data positions, so the next `run` of a restored Loop
  first runs that step's evals and logs (see `_finish_step`), reading the
  batches an uninterrupted run would: its History ends up equal to an
  uninterrupted run's. A restored Loop also rewrites a permanent
  checkpoint of a step whose rotating one exists but whose permanent copy
  the kill prevented.

  Stopping early: `request_stop(reason)` (from a callback, e.g.
  `callbacks.EarlyStopping`, or user code in `on_step_end`) ends the run
  after the current step: its checkpoint is (re)written with the stop
  recorded (the rotating one, and the permanent one where that step has
  one), History gets `('train', 'loop/stopped_at')` = the step, one line
  says why and where, and `run` returns the step. `stopped` then holds the
  reason, also in a Loop restored from that checkpoint, whose `run` trains
  nothing until `clear_stop()`. After each step's evals, every callback
  with an `on_evals_end(step, values)` method gets the `run_evals` values
  (after the best-metric checkpoints of the step); callbacks with
  `state_dict()` / `load_state_dict(d)` have their state saved in every
  checkpoint and restored on resume (see `loop/stopping.py`).

  Args:
    model: the model body; each task puts its loss layer after it.
    tasks: a TrainTask or a list of them.
    eval_model: the model to evaluate (default: `model`); it gets the
      trained weights.
    eval_tasks: an EvalTask, a list of them, or None (no evals).
    output_dir: where summaries and checkpoints go; None writes nothing.
    checkpoint_at: step -> bool; default step 1 and every
      `tasks[0].n_steps_per_checkpoint` steps.
    checkpoint_low_metric: an eval metric name; at checkpoint steps, when
      its newest value is the lowest so far, the checkpoint
      `lowest_<metric>` is written.
    checkpoint_high_metric: likewise `highest_<metric>` for the highest.
    permanent_checkpoint_at: step -> bool; default step 1 and every
      `tasks[0].n_steps_per_permanent_checkpoint` steps (never if None).
    eval_at: step -> bool; default as checkpoint_at (never without
      eval_tasks).
    which_task: step -> task index; default `step % len(tasks)`.
    n_devices: how many local devices to replicate over (default: all of
      the strategy's replicas).
    random_seed: the seed of the initialization and of every step's rng;
      None picks one (it is saved in checkpoints, so a resumed run goes on
      with the same one).
    loss_chunk_size: used by the memory-efficient trainer, as in Trax.
    use_memory_efficient_trainer: train with ReversibleSerialTrainer.
    adasum: Trax's adaptive gradient summation across devices; only the
      single-replica case (where it changes nothing) is supported.
    callbacks: TrainingStepCallback subclasses, each built as `cls(loop)`
      (an instance whose `__call__(loop)` binds and returns itself, as
      `EarlyStopping`'s does, may stand in for a class). Before a
      callback's `on_step_end` the Loop copies the step's weights into
      the model; a callback with `reads_weights = False` (a progress
      display, say) spares it at steps where no callback that reads the
      weights is called.
    strategy: a tf.distribute strategy (default: the current one).
    keep_checkpoints: how many rotating `ckpt-<step>` checkpoints to keep.
    jit_compile: passed to the Trainer (XLA compilation of the step).
    checkpoint_errors: what a failed checkpoint write (disk full, I/O
      error, read-only folder) does: 'raise' stops the run with a
      CheckpointWriteError naming the folder and the OS error; 'warn' logs
      a warning, keeps training and tries again at the next checkpoint.
      Either way no partial checkpoint appears and earlier ones are kept.
    precision: None or 'float32' trains in float32; 'bf16' (also
      'bfloat16', 'mixed_bfloat16') trains and evaluates with mixed
      bfloat16 precision (float32 weights and slots, bfloat16 compute; see
      `Trainer`). Checkpoints hold float32 weights either way.
    trax_checkpoint_files: also write each checkpoint as Trax's Loop does,
      `<output_dir>/<basename>.pkl.gz` with its `.weights.npy.gz` and
      `.opt_slots<i>.npy.gz` (`model`, `model_<step>`, `lowest_<metric>`,
      ...), which `Layer.init_from_file` and Trax itself read. A run
      resumes from its own checkpoints either way; False saves the disk
      and time of the second copy.
    ema_decay: None, or a decay d in [0, 1) (e.g. 0.999): keep an
      exponential moving average of the model's weights, updated inside
      every training step and starting from the initial weights. After n
      averaged updates the next one uses `min(d, (1 + n) / (10 + n))` (the
      warm-up of `tf.train.ExponentialMovingAverage`), or d itself with
      `ema_warmup=False` (Keras's `ema_momentum`). Checkpoints hold the
      average and a resumed run goes on with it; `ema_weights` gives it.
      Setting weights (`update_weights_and_state`, restoring Trax's weight
      files) restarts it from them.
    ema_warmup: see `ema_decay`.
    eval_with_ema: with `ema_decay`, evals run on the averaged weights (and
      `eval_model`, when it is not `model`, holds them); False evaluates
      the trained weights themselves.
    async_checkpoints: write checkpoints without stopping training: a save
      copies the variables on device and a background thread writes that
      copy (atomically and checksummed, as always; Trax's files too) while
      training goes on. One write is in flight at a time: the next save
      waits for it, as do `run`'s end, a preemption stop, loading and
      listing checkpoints, `wait_for_checkpoints` and the program's normal
      exit. A failed write is handled as checkpoint_errors says, by the
      call that waits for it. False writes within `save_checkpoint`.
  """

  def __init__(self, model, tasks, eval_model=None, eval_tasks=None,
               output_dir=None, checkpoint_at=None,
               checkpoint_low_metric=None, checkpoint_high_metric=None,
               permanent_checkpoint_at=None, eval_at=None, which_task=None,
               n_devices=None, random_seed=None, loss_chunk_size=0,
               use_memory_efficient_trainer=False, adasum=False,
               callbacks=None, *, strategy=None, keep_checkpoints=3,
               jit_compile=None, checkpoint_errors='raise', precision=None,
               trax_checkpoint_files=True, ema_decay=None, ema_warmup=True,
               eval_with_ema=True, async_checkpoints=True):
    tasks = list(tasks) if isinstance(tasks, (list, tuple)) else [tasks]
    if not tasks:
      raise ValueError('Loop: tasks is empty; give at least one TrainTask.')
    if eval_tasks is None:
      eval_tasks, eval_at = [], _never
    elif not isinstance(eval_tasks, (list, tuple)):
      eval_tasks = [eval_tasks]
    for arg, value in (('checkpoint_at', checkpoint_at),
                       ('permanent_checkpoint_at', permanent_checkpoint_at),
                       ('eval_at', eval_at), ('which_task', which_task)):
      # False means the default, as in Trax (`checkpoint_at or ...`).
      if value is not None and value is not False and not callable(value):
        raise TypeError(f'Loop: {arg} must be a function of the step number '
                        f'(e.g. lambda step: step % 100 == 0), got '
                        f'{type(value).__name__} {value!r}.')
    self._tasks = tasks
    self._eval_tasks = list(eval_tasks)
    self._model = model
    self._eval_model = eval_model or model
    self._strategy = resume_lib.resolve_strategy(strategy, n_devices)
    if adasum and self._strategy.num_replicas_in_sync > 1:
      raise NotImplementedError(
          f'Loop: adasum=True (adaptive summation) is not supported with '
          f'{self._strategy.num_replicas_in_sync} replicas; gradients are '
          f'averaged. Pass adasum=False.')
    self._books = bookkeeping.RunBookkeeping(
        'Loop', output_dir, self._strategy, keep_checkpoints,
        checkpoint_errors, async_checkpoints=async_checkpoints)
    self._seed = _init_random_number_generators(random_seed)
    self._rng = fastmath.random.get_prng(self._seed)
    self._use_memory_efficient_trainer = use_memory_efficient_trainer
    self._loss_chunk_size = loss_chunk_size

    default_at = _at_step_1_and_every_nth_step(tasks[0].n_steps_per_checkpoint)
    self._checkpoint_at = checkpoint_at or default_at
    self._permanent_checkpoint_at = (
        permanent_checkpoint_at or _at_step_1_and_every_nth_step(
            tasks[0].n_steps_per_permanent_checkpoint))
    self._eval_at = eval_at or default_at
    self._which_task = which_task or (lambda step: step % len(tasks))
    metric_names = [n for t in self._eval_tasks for n in t.metric_names]
    for arg, name in (('checkpoint_low_metric', checkpoint_low_metric),
                      ('checkpoint_high_metric', checkpoint_high_metric)):
      if name is not None and name not in metric_names:
        raise ValueError(f'Loop: {arg}={name!r} is not a metric of the '
                         f'eval_tasks; their metric_names are '
                         f'{metric_names}.')
    self._checkpoint_low_metric = checkpoint_low_metric
    self._checkpoint_high_metric = checkpoint_high_metric
    self._rjust_len = max(map(len, [t.loss_name for t in tasks] +
                              metric_names))

    # Checked here so a bad value fails before any model is built.
    if (_precision.resolve(precision, 'Loop') is not None and
        use_memory_efficient_trainer):
      raise NotImplementedError(
          f'Loop: precision={precision!r} is not supported with '
          f'use_memory_efficient_trainer=True (the reversible trainer runs '
          f'in float32); pass precision=None or use the standard trainer.')
    if use_memory_efficient_trainer:
      self._trainers = trainers_lib.ReversibleTaskTrainers(
          model, tasks, self._strategy, self._rng,
          loss_chunk_size=loss_chunk_size, adasum=adasum,
          jit_compile=jit_compile, ema_decay=ema_decay,
          ema_warmup=ema_warmup)
    else:
      if loss_chunk_size:
        logs.log(f'Loop: loss_chunk_size={loss_chunk_size} only applies '
                 f'with use_memory_efficient_trainer, as in Trax; ignored.',
                 stdout=False)
      self._trainers = trainers_lib.TaskTrainers(
          model, tasks, self._strategy, self._rng, jit_compile=jit_compile,
          precision=precision, ema_decay=ema_decay, ema_warmup=ema_warmup)
    self._eval_with_ema = bool(eval_with_ema) and ema_decay is not None
    self._streams = [inputs_lib.InputStream(
        t.labeled_data, self._strategy,
        group=t.gradient_accumulation_steps) for t in tasks]
    self._evaluators = [evals_lib.Evaluator(self._eval_model, t,
                                              precision=precision)
                        for t in self._eval_tasks]
    self._train_writers = [self._books.summary_writer(d) for d in
                           logs.task_dirs(self._books.output_dir, tasks, 'train')]
    self._eval_writers = [self._books.summary_writer(d) for d in
                          logs.task_dirs(self._books.output_dir, self._eval_tasks,
                                         'eval')]
    self._loop_vars = ckpt_lib.LoopVariables(self._strategy, len(tasks),
                                             self._seed)
    self._variables, self._shapes = ckpt_lib.variable_groups(
        self._trainers, self._loop_vars)
    self._keep_checkpoints = keep_checkpoints
    self._progress = progress_lib.Progress()
    self._trax_checkpoint_files = trax_checkpoint_files
    self._stop = None  # A stopping_lib.Stop once a run stopped early.
    self._stop_request = None
    self._callbacks, self._callback_states = [], None
    if self._books.output_dir is not None:
      if self._books.is_chief and trax_checkpoint_files:
        trax_checkpoints.remove_partial_writes(self._books.output_dir)
      self._books.track(self._variables, self._shapes)
      self.load_checkpoint()
    else:
      logs.log('Will not write evaluation metrics, because output_dir is '
               'None.', stdout=False)
    self._last_loss = None
    self._callbacks = [cls(self) for cls in (callbacks or [])]
    stopping_lib.load_callback_states(self._callbacks, self._callback_states)

  # -- Properties (Trax's) ----------------------------------------------------
  def _set_step(self, step):
    self._books.step = step

  # Trax's attribute, which subclasses read and write (`self._step += 1` in
  # the `run` of Trax's early-stopping example); the count lives in the
  # run's bookkeeping.
  _step = property(lambda self: self._books.step, _set_step)
  step = property(lambda self: self._books.step,
                  doc='The number of training steps done so far.')
  history = property(lambda self: self._books.history,
                     doc='The History of logged training and eval values.')
  # Trax's attribute, read by subclasses (e.g. `tl.mean_or_pmean(
  # self._n_devices, loss)` in Trax's early-stopping example).
  _n_devices = property(lambda self: self._strategy.num_replicas_in_sync)
  n_devices = property(lambda self: self._strategy.num_replicas_in_sync,
                       doc='How many replicas train the model.')
  is_chief = property(lambda self: self._books.is_chief,
                      doc='Whether this worker writes checkpoints.')
  model = property(lambda self: self._model)
  eval_model = property(lambda self: self._eval_model)
  tasks = property(lambda self: self._tasks)
  eval_tasks = property(lambda self: self._eval_tasks)
  output_dir = property(lambda self: self._books.output_dir,
                        doc='Where summaries and checkpoints go (or None).')

  @property
  def input_signature(self):
    """Per-replica signature of the first task's training batch."""
    return trainers_lib.local_signature(self._tasks[0].sample_batch,
                                          self._strategy)

  @property
  def trainer(self):
    """The Trainer of the first task."""
    return self._trainers.trainers[0]

  last_loss = property(
      lambda self: self._last_loss,
      doc='The training loss of the newest step (a float; None before '
          'the first step this Loop ran).')

  eval_with_ema = property(
      lambda self: self._eval_with_ema,
      doc='Whether evals run on the moving average of the weights.')

  @property
  def ema_weights(self):
    """The moving average of the model's weights (a tree like
    `model.weights`, NumPy arrays), or None without `ema_decay`."""
    leaves = self._trainers.model_ema_weights()
    if leaves is None:
      return None
    return fastmath.tree_unflatten(leaves, self._model.weights)[0]

  def _eval_weights(self, weights):
    """The weights evals run on: the average, or `weights` themselves."""
    return self.ema_weights if self._eval_with_ema else weights

  def eval_weights_and_state(self):
    """`(weights, state)` that evals run on now, as NumPy trees: the
    moving average with `eval_with_ema`, else the trained weights."""
    weights, state = self._trainers.model_weights_and_state()
    to_numpy = lambda tree: fastmath.nested_map(onp.asarray, tree)
    return to_numpy(self._eval_weights(weights)), to_numpy(state)

  def new_rng(self):
    """A new single-use random key (steps use their own, see `run`)."""
    self._rng, rng = fastmath.random.split(self._rng)
    return rng

  # -- Training ---------------------------------------------------------------
  def _step_rng(self, step):
    # A pure function of (seed, step), so a resumed run draws the same keys.
    return fastmath.random.fold_in(fastmath.random.get_prng(self._seed),
                                   step)

  def run(self, n_steps=1):
    """Runs `n_steps` training steps, with checkpoints and evals.

    A run that stopped early (see `request_stop`; also one restored from
    such a run's checkpoint) trains nothing until `clear_stop()`.

    Returns:
      The step reached (`loop.step`; Trax returns None).

    Raises:
      Preempted: SIGTERM or SIGINT arrived (see the class docstring); the
        checkpoint of the last finished step was written first.
    """
    if self._stop is not None:
      logs.log(f'Loop: not training; the run stopped after step '
               f'{self._stop.step}: {self._stop.reason}. Call '
               f'loop.clear_stop() to train on.')
      return self._books.step
    with self._books.watch_signals(), self._open_summary_writers():
      try:
        self._run(n_steps)
      except BaseException as e:
        # Whatever stops the run, the write in flight completes first.
        self._books.wait_for_checkpoints_after(e)
        raise
    return self._books.step

  def request_stop(self, reason):
    """Asks the run to stop after the current step (see the class
    docstring); `reason` (a string) is logged and kept in `stopped`."""
    self._stop_request = str(reason)

  @property
  def stopped(self):
    """None, or why the run stopped early (kept in checkpoints)."""
    return None if self._stop is None else self._stop.reason

  def clear_stop(self):
    """Forgets an early stop, so the next `run` trains again."""
    self._stop = self._stop_request = None

  def _finish_stop(self):
    """Records the requested stop, checkpoints the step, says so."""
    step = self._books.step
    self._stop = stopping_lib.Stop(self._stop_request, step)
    self._stop_request = None
    self._books.history.append('train', stopping_lib.HISTORY_NAME, step,
                               step)
    self._sync_model()
    path = self.save_checkpoint('model')
    if self._permanent_checkpoint_at(step):
      self.save_checkpoint(f'model_{step}')
    where = f'; checkpoint {path}' if path else ''
    logs.log(f'Loop: stopped after step {step}: {self._stop.reason}'
             f'{where}.')

  @contextlib.contextmanager
  def _open_summary_writers(self):
    """Opens this run's summary writers, and closes them when it ends.

    Follows trax/supervised/training.py `Loop._open_summary_writers`: each
    `run` writes new event files (one per task folder), and a subclass that
    overrides `run` (as Trax's early-stopping example does) opens the
    writers the same way. On leaving without an error the model layers get
    the newest trained weights, so code after the block can read them.

    Yields:
      (train_writers, eval_writers): one writer per TrainTask and EvalTask,
      the ones `run` logs to; lists of None without an output_dir, as in
      Trax.
    """
    if self._books.output_dir is None:
      yield [None] * len(self._tasks), [None] * len(self._eval_tasks)
      self._sync_model()
      return
    self._train_writers = [
        self._books.summary_writer(d)
        for d in logs.task_dirs(self._books.output_dir, self._tasks, 'train')]
    self._eval_writers = [
        self._books.summary_writer(d)
        for d in logs.task_dirs(self._books.output_dir, self._eval_tasks, 'eval')]
    writers = self._train_writers + self._eval_writers
    try:
      yield list(self._train_writers), list(self._eval_writers)
      self._sync_model()
    finally:
      for writer in writers:
        writer.close()

  def _run(self, n_steps):
    progress = self._progress
    if progress.pending:
      # Restored from a checkpoint written before its step's evals and
      # logs, as Trax writes them: those run now, from the saved sums and
      # on the eval batches an uninterrupted run would read.
      logs.log(f'Running the evals and logs of step {self._books.step}, which '
               f'its checkpoint was written before.', stdout=False)
      self._finish_step(self._books.step, self._which_task(self._books.step))
      if self._stop_request is not None:
        self._finish_stop()
        self._books.wait_for_checkpoints()  # As at the end below.
        return
    if not progress.keep:  # Trax's run starts new sums; a resumed one not.
      progress.reset()
    progress.keep = False
    progress.start_time = time.time()
    for _ in range(n_steps):
      prev_task_index = self._which_task(self._books.step)
      self._books.step += 1
      step = self._books.step
      task_index = self._which_task(step)
      if task_index != prev_task_index:
        progress.reset_loss()
      loss, stats = self._run_one_step(task_index,
                                       task_index != prev_task_index)
      progress.add(loss, stats)
      progress.pending = True  # Saved so a resumed run finishes this step.
      if self._checkpoint_at(step):
        self.save_checkpoint('model')
      if self._permanent_checkpoint_at(step):
        self.save_checkpoint(f'model_{step}')
      self._finish_step(step, task_index)
      if self._stop_request is not None:
        self._finish_stop()
        break
      if self._books.stop_requested():
        self._sync_model()
        self._books.stop(self.save_checkpoint)
    self._sync_model()
    self._books.wait_for_checkpoints()  # run() returns with them written.
    for writer in self._train_writers + self._eval_writers:
      writer.flush()

  def _finish_step(self, step, task_index):
    """A step's phase after its checkpoints: logs, evals, best checkpoints.

    The step's checkpoints are written before it, as Trax writes them, and
    say that it is pending; the first `run` of a Loop restored from them
    runs it (from the saved sums, on the same eval batches), so no step's
    entries are lost to a kill or a restart.
    """
    progress = self._progress
    logged = self._eval_at(step)
    if logged:
      self._log_training_progress(
          self._tasks[task_index], progress.loss, progress.n_steps,
          time.time() - progress.start_time, progress.metrics,
          self._train_writers[task_index])
      values = self.run_evals(self._eval_writers)
      progress.reset()
    progress.pending = False
    if self._checkpoint_at(step):
      if self._checkpoint_low_metric is not None and self._at_lowest():
        self.save_checkpoint(f'lowest_{self._checkpoint_low_metric}')
      if self._checkpoint_high_metric is not None and self._at_highest():
        self.save_checkpoint(f'highest_{self._checkpoint_high_metric}')
    if logged:
      for callback in self._callbacks:
        if callable(getattr(callback, 'on_evals_end', None)):
          callback.on_evals_end(step, values)

  def _run_one_step(self, task_index, task_changed=False):
    """Trains one step of task `task_index`; returns (loss, stats).

    Trax's signature (trax/supervised/training.py `Loop._run_one_step`), so
    subclasses written for Trax call and override it unchanged. Trax uses
    `task_changed` to copy the shared weights between per-task replicas;
    here the tasks' trainers share the model's variables, so there is
    nothing to copy and it is accepted only for that signature.
    """
    del task_changed  # The trainers share one set of model variables.
    step = self._books.step
    for callback in self._callbacks:
      if callback.call_at(step):
        callback.on_step_begin(step)
    task = self._tasks[task_index]
    learning_rate = task.learning_rate(step)
    if getattr(task, 'reads_model_weights', False):
      # The task's batches are computed from the model being trained (a
      # value task's target network copies it): bring the model up to date.
      self._sync_model()
    try:
      batch = next(self._streams[task_index])
    except StopIteration as e:
      raise RuntimeError(
          f'Loop: the training data of task {task_index} ran out at step '
          f'{step}; make labeled_data repeat (e.g. dataset.repeat()).') from e
    loss, stats = self._trainers.one_step(task_index, batch,
                                          self._step_rng(step), step,
                                          learning_rate)
    loss = float(loss)
    if not math.isfinite(loss):
      self._sync_model()
      good = self._books.newest_checkpoint()
      raise LossIsNotFiniteError(
          f'Loop: the training loss became {loss} at step {step}; training '
          f'stopped. The last good checkpoint is kept '
          f'({good or "none written"}). Lower the learning rate or set '
          f'clip_grad_norm on the optimizer.')
    self._last_loss = loss
    stats = {k: float(v) for k, v in stats.items()}
    stats['loss'] = loss
    ending = [cb for cb in self._callbacks if cb.call_at(step)]
    # Callbacks see the weights this step produced, unless none of them
    # reads them (`reads_weights = False`, e.g. a progress bar called at
    # every step, where the copy cost about 12% of a small model's step).
    if any(getattr(cb, 'reads_weights', True) for cb in ending):
      self._sync_model()
    for callback in ending:
      callback.on_step_end(step)
    return loss, stats

  def _at_lowest(self):
    """Whether `checkpoint_low_metric`'s newest eval value is its lowest."""
    return self._at_best(self._checkpoint_low_metric, min)

  def _at_highest(self):
    """Whether `checkpoint_high_metric`'s newest eval value is its highest."""
    return self._at_best(self._checkpoint_high_metric, max)

  def _at_best(self, metric, best):
    values = [float(v) for _, v in self._books.history.get('eval',
                                                     f'metrics/{metric}')]
    return bool(values) and values[-1] == best(values)

  def update_weights_and_state(self, weights=None, state=None):
    """Sets the model's weights and/or state, in the model and trainers."""
    if weights is not None:
      self._model.weights = weights
    if state is not None:
      self._model.state = state
    self._trainers.set_model(weights, state)

  def _sync_model(self):
    """Copies the newest trained weights and state into the model layers."""
    weights, state = self._trainers.model_weights_and_state()
    to_tensors = lambda tree: fastmath.nested_map(tf.convert_to_tensor, tree)
    self._model.weights, self._model.state = (to_tensors(weights),
                                              to_tensors(state))
    if self._eval_model is not self._model:
      self._eval_model.weights = (to_tensors(self._eval_weights(weights))
                                  if self._eval_with_ema else
                                  self._model.weights)

  # -- Evaluation and logging -------------------------------------------------
  def run_evals(self, summary_writers=None):
    """Runs every EvalTask on the newest weights and logs the values.

    Returns:
      {metric name: value} over all eval tasks (Trax returns None).
    """
    summary_writers = summary_writers or [None] * len(self._eval_tasks)
    self._sync_model()
    self._eval_model.state = self._model.state
    weights, state = self._trainers.model_weights_and_state()
    weights = self._eval_weights(weights)
    results = {}
    for evaluator, writer in zip(self._evaluators, summary_writers):
      values = evaluator.evaluate(weights, state)
      self.log_summary(values, writer, 'metrics/', 'eval')
      results.update(values)
    return results

  def _log_training_progress(self, task, total_loss, n_steps, elapsed_time,
                             optimizer_metrics, summary_writer):
    n_steps = max(1, n_steps)
    logs.log('')
    if self._books.step == 1:
      n_weights = sum(int(onp.size(w)) for w in
                      fastmath.tree_leaves(self._model.weights))
      self._log_step(f'Total number of trainable weights: {n_weights}')
    self._log_step(f'Ran {n_steps} train steps in {elapsed_time:0.2f} secs')
    self.log_summary({task.loss_name: total_loss / n_steps}, summary_writer,
                     'metrics/', 'train')
    values = {'learning_rate': task.learning_rate(self._books.step),
              'steps per second': n_steps / max(elapsed_time, 1e-9)}
    values.update({k: v / n_steps for k, v in optimizer_metrics.items()})
    self.log_summary(values, summary_writer, 'training/', 'train',
                     stdout=False)

  def log_summary(self, values, summary_writer, value_prefix, log_prefix,
                  stdout=True):
    """Logs `values` to the history, the summary writer and the console.

    Args:
      values: {name: value}; each is recorded as `value_prefix + name`.
      summary_writer: a summary writer (or None).
      value_prefix: e.g. 'metrics/'.
      log_prefix: the history mode, e.g. 'train' or 'eval'.
      stdout: also print scalar values.
    """
    write = self._books.is_chief and summary_writer is not None
    for name, value in values.items():
      full_name = value_prefix + name
      if onp.ndim(value) == 0:
        self._log_step(f'{log_prefix.ljust(5)} {name.rjust(self._rjust_len)}'
                       f' | {float(value): .8f}', stdout=stdout)
        if write:
          summary_writer.scalar(full_name, value, self._books.step)
      self._books.history.append(log_prefix, full_name, self._books.step, value)
    if write:
      summary_writer.flush()

  def _log_step(self, message, stdout=True):
    logs.log(f'Step {self._books.step:6d}: {message}', stdout=stdout)

  # -- Checkpoints ------------------------------------------------------------
  def save_checkpoint(self, basename='model'):
    """Writes an atomic checkpoint of the current step.

    Args:
      basename: Trax's checkpoint name: 'model' (the rotating checkpoint),
        'model_<step>' (permanent) or any other name (a named checkpoint,
        replaced by the next save of that name).

    Returns:
      The checkpoint folder, or None where nothing is written (no
      output_dir, not the chief, or a failed write with
      checkpoint_errors='warn').

    Raises:
      CheckpointWriteError: the write failed (checkpoint_errors='raise').
    """
    if self._books.manager is None:
      logs.log('Did not save checkpoint as output_dir is None',
               stdout=False)
      return None
    if not self._books.is_chief:
      return None
    if not self._trainers.all_finite():
      # The loss is computed before the update, so it can still look fine
      # at the step whose update overflowed; never checkpoint such weights.
      self._sync_model()
      raise LossIsNotFiniteError(
          f'Loop: the weights became NaN or infinite at step {self._books.step}; '
          f'training stopped before checkpointing them. The last good '
          f'checkpoint is kept. Lower the learning rate or set '
          f'clip_grad_norm on the optimizer.')
    self._trainers.broadcast()
    self._loop_vars.step.assign(self._books.step)
    for var, stream in zip(self._loop_vars.positions, self._streams):
      var.assign(stream.position)
    self._loop_vars.seed.assign(self._seed)
    permanent, name = ckpt_lib.checkpoint_name(basename, self._books.step)
    write_trax_files, reads = self._trax_files_writer(basename)
    path = self._books.save(extra=self._checkpoint_extra(),
                            permanent=permanent, name=name,
                            then=write_trax_files, then_reads=reads)
    if path is not None:
      logs.log(f'Checkpoint saved in {path}', stdout=False)
    return path

  def wait_for_checkpoints(self):
    """Waits until the checkpoint being written (async_checkpoints) is.

    Raises:
      CheckpointWriteError: that write failed (checkpoint_errors='raise';
        'warn' warns instead).
    """
    self._books.wait_for_checkpoints()

  def _save_trax_files(self, basename):
    """Writes `basename`'s checkpoint in Trax's files now (see __init__)."""
    write, _ = self._trax_files_writer(basename)
    if write is None:
      return
    try:
      write(lambda v: v.numpy())
    except checkpoints.CheckpointWriteError as e:
      self._books.write_failed(e)

  def _trax_files_writer(self, basename):
    """`(write, reads)` for Trax's files of `basename` (see __init__ and
    `checkpointing.trax_files_writer`); `(None, [])` without them."""
    if not self._trax_checkpoint_files:
      return None, []
    return ckpt_lib.trax_files_writer(
        self._trainers, self._model, self._eval_model, self._books,
        tuple(self._tasks[0].sample_batch)[:self._model.n_in], basename,
        compresslevel=0 if self._use_memory_efficient_trainer else 2)

  def _checkpoint_extra(self):
    """The manifest's Loop entries: the running sums and eval positions,
    the early stop and the callbacks' states."""
    positions = [e.stream.position for e in self._evaluators]
    return {progress_lib.KEY: self._progress.to_dict(positions),
            stopping_lib.KEY: stopping_lib.stop_to_dict(self._stop),
            stopping_lib.CALLBACKS_KEY: stopping_lib.callback_states(
                self._callbacks)}

  def load_checkpoint(self, directory=None, filename=None):
    """Restores weights, slots, state, step, history and data positions.

    Args:
      directory: a Loop output_dir (default: this Loop's), or a folder
        holding a Trax checkpoint.
      filename: Trax's checkpoint name: 'model' (default: the newest good
        rotating checkpoint), 'model_<step>', 'lowest_<metric>', ...; or a
        Trax `<name>.pkl.gz` file in `directory`.

    Returns:
      The restored step, or None if there was nothing to load.
    """
    self._books.wait_for_checkpoints()
    restored = resume_lib.load_checkpoint(self._resume_parts(), directory,
                                          filename)
    if restored is None:
      return None
    if restored.seed is not None:
      self._seed = restored.seed
    if restored.progress is not None:
      self._progress = restored.progress
    self._stop, self._stop_request = restored.stop, None
    self._callback_states = restored.callback_states
    stopping_lib.load_callback_states(self._callbacks, self._callback_states)
    return restored.step

  def checkpoint_weights_and_state(self, basename, ema=False):
    """The model's weights and state in a checkpoint, without restoring it.

    Args:
      basename: a checkpoint name of this Loop's output_dir ('model_<step>',
        'lowest_<metric>', 'early_stopping_best', ...).
      ema: read the moving average of the weights instead (needs
        `ema_decay`).

    Returns:
      `(weights, state)` NumPy trees like `model.weights` and `model.state`,
      or None where there is no such checkpoint.
    """
    return resume_lib.read_model(self._resume_parts(), basename, ema,
                                 self._model)

  def _resume_parts(self):
    return resume_lib.ResumeParts(
        books=self._books, loop_vars=self._loop_vars, trainers=self._trainers,
        train_streams=self._streams,
        eval_streams=[e.stream for e in self._evaluators],
        variables=self._variables, shapes=self._shapes,
        keep_checkpoints=self._keep_checkpoints,
        permanent_checkpoint_at=self._permanent_checkpoint_at,
        sync_model=self._sync_model, save_trax_files=self._save_trax_files,
        update_weights_and_state=self.update_weights_and_state)


def _init_random_number_generators(seed=None):
  """Seeds Python, NumPy and TensorFlow as Trax does; returns the seed."""
  random.seed(seed)
  if seed is None:
    seed = random.randint(0, 2**31 - 1)
  onp.random.seed(seed)
  tf.random.set_seed(seed)
  return int(seed)
