"""Callbacks that Loop runs around training steps.

Loop creates each callback as `callback_class(loop)`. For each training
step `step` (1-based: the number of the step being run), and only where
`call_at(step)` is True, it calls `on_step_begin(step)` before the batch is
drawn and `on_step_end(step)` right after the weight update, before that
step's checkpoints and evals, as Trax's Loop does.
"""

__all__ = ['TrainingStepCallback']


class TrainingStepCallback:
  """Base class of callbacks run before and after training steps.

  Subclasses override `call_at`, `on_step_begin` and `on_step_end`.

  Example:
    >>> class PrintStep(TrainingStepCallback):
    ...   def call_at(self, step):
    ...     return step % 100 == 0
    ...   def on_step_begin(self, step):
    ...     pass
    ...   def on_step_end(self, step):
    ...     print(step, self._loop.history.last('train', 'training/loss'))

  Args:
    loop: the `Loop` running the callback.
  """

  def __init__(self, loop):
    self._loop = loop

  def call_at(self, step):
    """Whether to run the callback at training step `step`."""
    raise NotImplementedError(
        f'{type(self).__name__}.call_at: TrainingStepCallback subclasses '
        f'must override call_at(step), on_step_begin(step) and '
        f'on_step_end(step).')

  def on_step_begin(self, step):
    """Runs before training step `step`, where `call_at(step)` is True."""
    raise NotImplementedError(
        f'{type(self).__name__}.on_step_begin: not overridden.')

  def on_step_end(self, step):
    """Runs after training step `step`, where `call_at(step)` is True."""
    raise NotImplementedError(
        f'{type(self).__name__}.on_step_end: not overridden.')
