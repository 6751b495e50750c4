"""Callbacks run by Loop around training steps."""

__all__ = ['TrainingStepCallback']


class TrainingStepCallback:
  """Base class: override `call_at`, `on_step_begin` and `on_step_end`.

  Args:
    loop: the Loop running the callback.
  """

  def __init__(self, loop):
    self._loop = loop

  def call_at(self, step):
    """Whether to run at `step` (default: every step)."""
    del step
    return True

  def on_step_begin(self, step):
    """Runs before training step `step`."""

  def on_step_end(self, step):
    """Runs after training step `step` (after eval and checkpointing)."""
