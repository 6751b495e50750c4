"""History: the values a training run logged, by mode and metric."""

import collections

__all__ = ['History']


class History:
  """Holds `(step, value)` pairs per mode ('train', 'eval') and metric.

  Example:
    >>> h = History()
    >>> h.append('train', 'loss', 1, 0.5)
    >>> h.get('train', 'loss')
    [(1, 0.5)]
  """

  def __init__(self):
    self._values = collections.defaultdict(
        lambda: collections.defaultdict(list))

  def append(self, mode, metric, step, value):
    self._values[mode][metric].append((int(step), float(value)))

  def get(self, mode, metric):
    """All `(step, value)` pairs of `metric` in `mode`, in logging order."""
    return list(self._values[mode][metric])

  def last(self, mode, metric):
    """The latest value of `metric`, or None."""
    values = self._values[mode][metric]
    return values[-1][1] if values else None

  @property
  def modes(self):
    return sorted(self._values)

  def metrics_for_mode(self, mode):
    return sorted(self._values[mode])

  def to_dict(self):
    return {m: {k: list(v) for k, v in d.items()}
            for m, d in self._values.items()}

  @classmethod
  def from_dict(cls, values):
    history = cls()
    for mode, metrics in values.items():
      for metric, pairs in metrics.items():
        for step, value in pairs:
          history.append(mode, metric, step, value)
    return history
