"""What a Loop step has logged so far, saved with its checkpoints.

Trax logs training values as their mean since the last log, at eval steps,
and writes a step's checkpoints before its evals, so a restored Trax Loop's
History ends before that step's entries, and they are never written. Here
the checkpoints keep what is needed to write them later: `Progress` holds
the running sums of the steps since the last log and a flag saying that
the step's logging phase (evals, best-metric checkpoints) is still to come.
Checkpoints store it as JSON (floats keep their exact value there), and the
first `run` of a restored Loop completes the pending phase, so its History
gets every step's entries, equal to an uninterrupted run's. The eval data
positions go with it, so the evals read the batches an uninterrupted run
would."""

import collections
import time

__all__ = ['Progress']

KEY = 'loop_progress'


class Progress:
  """Running sums of the training values since the last log.

  Attributes:
    loss: the sum of the losses of the current task since the last log.
    n_steps: how many steps `loss` sums.
    metrics: name -> sum of the optimizer's statistics since the last log.
    pending: the step's checkpoints are written but its logging phase is
      not finished.
    keep: the next `Loop.run` keeps these sums (they were restored)
      instead of starting afresh as Trax's `run` does.
  """

  def __init__(self):
    self.reset()
    self.pending = False
    self.keep = False

  def reset(self):
    """Starts new sums (after a log) and a new timer."""
    self.loss, self.n_steps = 0.0, 0
    self.metrics = collections.defaultdict(float)
    self.start_time = time.time()

  def reset_loss(self):
    """Starts a new loss sum (the task changed), keeping the statistics."""
    self.loss, self.n_steps = 0.0, 0

  def add(self, loss, stats):
    """Adds one step's loss and statistics."""
    self.loss += loss
    self.n_steps += 1
    for name, value in stats.items():
      self.metrics[name] += value

  def to_dict(self, eval_positions):
    """A JSON-able dict, with the eval data positions."""
    return {'pending': self.pending, 'loss': self.loss,
            'n_steps': self.n_steps, 'metrics': dict(self.metrics),
            'eval_positions': list(eval_positions)}

  @classmethod
  def from_dict(cls, saved):
    """Rebuilds the sums; returns `(progress, eval_positions)`.

    `saved` is None for checkpoints written before these were saved: the
    sums start at zero and nothing is pending, as before.
    """
    progress = cls()
    if not saved:
      return progress, []
    progress.pending = bool(saved['pending'])
    progress.loss = float(saved['loss'])
    progress.n_steps = int(saved['n_steps'])
    progress.metrics.update(
        {k: float(v) for k, v in saved['metrics'].items()})
    progress.keep = True
    return progress, [int(p) for p in saved['eval_positions']]
