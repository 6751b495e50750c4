"""EarlyStopping: stop a Loop's run when an eval metric stops improving.

Trax has no early-stopping callback (its `earlystopping.ipynb` subclasses
Loop); this one follows `keras.callbacks.EarlyStopping`. The decision is a
pure function of the eval values (`update`, over an `EarlyStoppingState`),
so a resumed run, whose callback state comes back from the checkpoint,
decides exactly as an uninterrupted one, and every worker decides alike
(eval values are the same on all of them).

Gin name `trax.supervised.callbacks.EarlyStopping`, registered by
`tfnp_trax.gin_config` as the Trax names are.
"""

import math
import numbers
from typing import NamedTuple, Optional

import numpy as onp

from tfnp_trax import fastmath
from tfnp_trax.supervised import callbacks
from tfnp_trax.supervised.loop import logs

__all__ = ['EarlyStopping', 'EarlyStoppingState', 'update', 'MODES']

MODES = ('min', 'max', 'auto')
# Metric names (lowercased) that 'auto' treats as higher-is-better.
_HIGHER_IS_BETTER = ('accuracy', 'auc', 'fscore', 'f1')
BEST_CHECKPOINT = 'early_stopping_best'


class EarlyStoppingState(NamedTuple):
  """What the stopping decision has seen so far (JSON-able numbers).

  Attributes:
    best: the best value so far (the `baseline` before any improvement),
      or None.
    best_step: the step of the eval that gave `best`, or None.
    wait: how many evals in a row did not improve on `best`.
    stopped_step: the step of the eval that stopped the run, or None.
  """
  best: Optional[float] = None
  best_step: Optional[int] = None
  wait: int = 0
  stopped_step: Optional[int] = None


def improves(value, best, mode, min_delta):
  """Whether `value` beats `best` by more than `min_delta` in `mode`.

  A NaN never improves; anything but NaN improves on no best (None).
  """
  if math.isnan(value):
    return False
  if best is None:
    return True
  if mode == 'min':
    return value < best - min_delta
  return value > best + min_delta


def update(state, value, step, mode, min_delta, patience):
  """One eval's step of the decision; returns `(new_state, improved)`.

  Keras's rule: an improvement is `value < best - min_delta` ('min') or
  `value > best + min_delta` ('max') and resets the count; any other value
  (a tie, a worse one, a NaN) adds one, and once `patience` evals in a row
  have not improved the run stops (`stopped_step` is set). The first eval
  that does not improve stops it for `patience` 0 and 1 alike, as in
  Keras.

  Args:
    state: an `EarlyStoppingState`.
    value: the eval value (a Python number).
    step: the step of the eval.
    mode: 'min' or 'max'.
    min_delta: the margin an improvement must exceed (>= 0).
    patience: stop at this many non-improving evals in a row.
  """
  value = float(value)
  if improves(value, state.best, mode, min_delta):
    return state._replace(best=value, best_step=int(step), wait=0), True
  wait = state.wait + 1
  stopped = int(step) if wait >= patience else state.stopped_step
  return state._replace(wait=wait, stopped_step=stopped), False


def _is_loop(x):
  return hasattr(x, 'eval_tasks') and hasattr(x, 'request_stop')


def _is_number(x):
  return isinstance(x, numbers.Real) and not isinstance(x, bool)


class EarlyStopping(callbacks.TrainingStepCallback):
  """Stops `Loop.run` when an eval metric has stopped improving.

  After each eval (the Loop's `on_evals_end` hook) it reads `monitor` and
  applies `update`: at the `patience`-th eval in a row without improvement
  it asks the Loop to stop (`loop.request_stop`). The Loop then writes the
  checkpoint of that step with the stop recorded, appends
  `('train', 'loop/stopped_at')` to its History and returns the step from
  `run`; a Loop restored from that checkpoint has `loop.stopped` set and
  trains no further until `loop.clear_stop()`.

  With `restore_best`, each improving eval keeps the weights and state the
  evals ran on (the moving average with `Loop(eval_with_ema=True)`) as
  NumPy copies and, with an output_dir, in the named checkpoint
  `early_stopping_best` (which holds the moving average too). At the stop
  they are set with `loop.update_weights_and_state`: the model, the eval
  model and the trainers hold them (a moving average restarts from them),
  so the stop's checkpoint, `loop.model(x)` and `export.export_loop` use
  the best eval's weights, and a run continued after `clear_stop()` trains
  on from them (with the last step's optimizer slots). If no eval ever
  improved (see `baseline`), the last weights stay.

  After `clear_stop()` the callback keeps its best value and counts its
  patience anew. A NaN value counts as an eval that did not improve.
  The state (best, its step, the count) goes into every Loop checkpoint
  (`state_dict`) and comes back on resume.

  Example:
    >>> import contextlib, io, itertools
    >>> import numpy as np
    >>> from tfnp_trax import optimizers
    >>> import tfnp_trax.layers as tl
    >>> from tfnp_trax.supervised import training
    >>> batch = (np.ones((4, 3), np.float32), np.array([0, 1, 0, 1]),
    ...          np.ones(4, np.float32))
    >>> data = itertools.repeat(batch)
    >>> loop = training.Loop(
    ...     tl.Serial(tl.Dense(2), tl.LogSoftmax()),
    ...     training.TrainTask(data, tl.CrossEntropyLoss(),
    ...                        optimizers.SGD(0.0)),
    ...     eval_tasks=[training.EvalTask(data, [tl.CrossEntropyLoss()])],
    ...     eval_at=lambda step: True,
    ...     callbacks=[EarlyStopping('metrics/CrossEntropyLoss', patience=1)])
    >>> with contextlib.redirect_stdout(io.StringIO()):  # progress lines
    ...   step = loop.run(10)
    >>> step  # SGD(0.0): the loss at step 2 ties step 1's, so no improvement.
    2
    >>> loop.stopped is not None
    True

  Construction: pass an instance in `Loop(callbacks=[...])` (the Loop calls
  it with itself, which binds it), or a class / `functools.partial` /
  gin-configured class that the Loop builds as `EarlyStopping(loop, ...)`,
  as Trax builds its callbacks. A gin config writes
  `train.callbacks = [@EarlyStopping]` and `EarlyStopping.monitor = ...`.
  An instance serves one Loop: binding it to a second one raises.

  Args:
    loop: the Loop (when the Loop builds the callback); a string here is
      taken as `monitor`, so `EarlyStopping('metrics/Accuracy')` works.
    monitor: the History name of an eval metric, `'metrics/<name>'`; a bare
      metric name (`'Accuracy'`) means `'metrics/Accuracy'`.
    mode: 'min' (lower is better), 'max', or 'auto' ('max' for names with
      accuracy, auc, fscore or f1 in them, else 'min').
    patience: after how many evals in a row without improvement to stop
      (an int >= 0; 0 and 1 both stop at the first one, as in Keras).
    min_delta: how much a value must beat the best by to improve (>= 0).
    restore_best: leave the best eval's weights in the model at the stop.
    baseline: None, or a value the metric must beat to improve at all (the
      best before the first eval).

  Raises:
    TypeError, ValueError: for bad arguments, naming them; ValueError when
      bound to a Loop without eval tasks or whose eval tasks have no such
      metric (the message lists their metric names).
  """

  def __init__(self, loop=None, monitor=None, *, mode='min', patience=0,
               min_delta=0.0, restore_best=True, baseline=None):
    if isinstance(loop, str):
      if monitor is not None:
        raise TypeError(
            f'EarlyStopping: monitor given twice ({loop!r} and '
            f'monitor={monitor!r}); pass it once.')
      loop, monitor = None, loop
    if loop is not None and not _is_loop(loop):
      raise TypeError(
          f'EarlyStopping: the first argument must be the monitored metric '
          f'name or the Loop, got {type(loop).__name__} {loop!r}. Write '
          f"EarlyStopping('metrics/<name>', patience=...).")
    if not isinstance(monitor, str) or not monitor:
      raise TypeError(
          f'EarlyStopping: monitor must be the name of an eval metric, e.g. '
          f"'metrics/CrossEntropyLoss', got {monitor!r}.")
    self.monitor = monitor if monitor.startswith('metrics/') else (
        f'metrics/{monitor}')
    if mode not in MODES:
      raise ValueError(f'EarlyStopping: mode must be one of {MODES}, got '
                       f'{mode!r}.')
    if mode == 'auto':
      name = self.monitor.lower()
      mode = 'max' if any(w in name for w in _HIGHER_IS_BETTER) else 'min'
    self.mode = mode
    if (not isinstance(patience, numbers.Integral) or
        isinstance(patience, bool) or patience < 0):
      raise ValueError(
          f'EarlyStopping: patience must be an integer >= 0 (after how many '
          f'evals without improvement to stop), got {patience!r}.')
    self.patience = int(patience)
    if (not _is_number(min_delta) or not math.isfinite(min_delta) or
        min_delta < 0):
      raise ValueError(
          f'EarlyStopping: min_delta must be a finite number >= 0, got '
          f'{min_delta!r}; it is the margin an improvement must exceed (use '
          f'mode to say which direction is better).')
    self.min_delta = float(min_delta)
    if not isinstance(restore_best, bool):
      raise TypeError(f'EarlyStopping: restore_best must be True or False, '
                      f'got {restore_best!r}.')
    self.restore_best = restore_best
    if baseline is not None and (not _is_number(baseline) or
                                 math.isnan(baseline)):
      raise ValueError(f'EarlyStopping: baseline must be None or a number, '
                       f'got {baseline!r}.')
    self.baseline = None if baseline is None else float(baseline)
    self.state = EarlyStoppingState(best=self.baseline)
    self._best = None  # (weights, state) NumPy trees of the best eval.
    self._loop = None
    if loop is not None:
      self._bind(loop)

  def __call__(self, loop):
    """Binds this instance to `loop` (how the Loop builds callbacks)."""
    self._bind(loop)
    return self

  def _bind(self, loop):
    if self._loop is not None and self._loop is not loop:
      raise ValueError(
          'EarlyStopping: this instance is already bound to another Loop; '
          'give each Loop its own EarlyStopping(...), or pass the class '
          '(functools.partial(EarlyStopping, monitor=...)) so each Loop '
          'builds one.')
    names = [f'metrics/{n}' for t in loop.eval_tasks for n in t.metric_names]
    if not names:
      raise ValueError(
          f'EarlyStopping: monitor={self.monitor!r} needs evals, but the '
          f'Loop has no eval_tasks; pass Loop(eval_tasks=[...]).')
    if self.monitor not in names:
      raise ValueError(
          f'EarlyStopping: monitor={self.monitor!r} is not a metric of the '
          f"Loop's eval tasks; their History names are {names}.")
    self._loop = loop

  @property
  def best(self):
    """The best value so far (None before any improvement)."""
    return None if self.state.best_step is None else self.state.best

  @property
  def best_step(self):
    """The step of the best eval so far, or None."""
    return self.state.best_step

  # -- Loop hooks --------------------------------------------------------------
  def call_at(self, step):
    del step
    return False  # Only the eval hook matters.

  def on_step_begin(self, step):
    pass

  def on_step_end(self, step):
    pass

  def on_evals_end(self, step, values):
    """Applies the decision to this eval's value of `monitor`."""
    loop = self._loop
    if self.state.stopped_step is not None and loop.stopped is None:
      # The user cleared the stop: count patience anew from here.
      self.state = self.state._replace(wait=0, stopped_step=None)
    name = self.monitor[len('metrics/'):]
    if name not in values:
      return
    self.state, improved = update(self.state, values[name], step,
                                  self.mode, self.min_delta, self.patience)
    if improved and self.restore_best:
      self._keep_best()
    if self.state.stopped_step is not None:
      if self.restore_best and not self.restore() and self.best_step:
        logs.log(f'EarlyStopping: the weights of the best eval (step '
                 f'{self.best_step}) are neither in memory nor in the '
                 f'checkpoint {BEST_CHECKPOINT}; the last weights stay.')
      best = ('no eval improved' if self.best_step is None else
              f'best {self.best:.6g} at step {self.best_step}')
      loop.request_stop(
          f'EarlyStopping: {self.monitor} did not improve for '
          f'{self.state.wait} evals ({best}, mode {self.mode}, '
          f'min_delta {self.min_delta:g}, patience {self.patience})')

  def _keep_best(self):
    weights, state = self._loop.eval_weights_and_state()
    copy = lambda tree: fastmath.nested_map(
        lambda x: onp.array(x, copy=True), tree)
    self._best = (copy(weights), copy(state))
    if self._loop.output_dir is not None:
      self._loop.save_checkpoint(BEST_CHECKPOINT)

  def restore(self):
    """Sets the best eval's weights and state in the Loop's model.

    Reads them from memory, or (after a resume) from the checkpoint
    `early_stopping_best`. Returns whether there were any to set.
    """
    best = self._best
    if best is None and self.best_step is not None:
      best = self._loop.checkpoint_weights_and_state(
          BEST_CHECKPOINT, ema=self._loop.eval_with_ema)
    if best is None:
      return False
    self._loop.update_weights_and_state(*best)
    return True

  # -- Checkpointed state ------------------------------------------------------
  def state_dict(self):
    """The decision's state, JSON-able, for the Loop's checkpoints."""
    return dict(self.state._asdict())

  def load_state_dict(self, saved):
    """Takes back a `state_dict()` (a resumed run's)."""
    self.state = EarlyStoppingState(**saved)
    self._best = None  # Now in the `early_stopping_best` checkpoint.

