"""History: the values a training run logged, by mode and metric.

Trax's `History` API. Loop records training values under mode 'train'
(`metrics/<loss name>`, `training/learning_rate`, `training/steps per
second` and the optimizer's `training/...` statistics) and eval values under
mode 'eval' (`metrics/<metric name>`).
"""

import collections
import copy

from absl import logging
import numpy as onp

__all__ = ['History']


def _plain(value):
  """Scalars become Python numbers (JSON-able); arrays stay NumPy arrays."""
  if isinstance(value, (bool, int, float)):
    return value
  if hasattr(value, 'numpy'):  # A TensorFlow tensor.
    value = value.numpy()
  array = onp.asarray(value)
  if array.ndim == 0:
    return array.item()
  return array


class History:
  """Holds `(step, value)` pairs per mode ('train', 'eval') and metric.

  Example:
    >>> h = History()
    >>> h.append('train', 'metrics/accuracy', 1, 0.04)
    >>> h.append('train', 'metrics/accuracy', 1000, 0.31)
    >>> h.get('train', 'metrics/accuracy')
    [(1, 0.04), (1000, 0.31)]
  """

  def __init__(self):
    # {mode: {metric: [(step, value), ...]}}, as in Trax.
    self._values = {}

  @classmethod
  def from_dict(cls, json_object):
    """Rebuilds a History from `to_dict()` output.

    Accepts Trax's layout `{'_values': {mode: {metric: pairs}}}` (what Trax
    checkpoints hold) and the plain `{mode: {metric: pairs}}` layout that
    older tfnp_trax checkpoints hold; pairs may be lists (e.g. after JSON).
    """
    values = json_object.get('_values', json_object) if json_object else {}
    history = cls()
    for mode, metrics in values.items():
      history._values[mode] = collections.defaultdict(list)
      for metric, pairs in metrics.items():
        history._values[mode][metric] = [
            (int(step), _plain(value)) for step, value in pairs]
    return history

  def to_dict(self):
    """A deep copy of the recorded values, in Trax's `{'_values': ...}`."""
    return {'_values': {mode: {metric: copy.deepcopy(pairs)
                               for metric, pairs in metrics.items()}
                        for mode, metrics in self._values.items()}}

  def append(self, mode, metric, step, value):
    """Appends `(step, value)` to the history of `metric` in `mode`."""
    if mode not in self._values:
      self._values[mode] = collections.defaultdict(list)
    self._values[mode][metric].append((int(step), _plain(value)))

  def get(self, mode, metric):
    """All `(step, value)` pairs of `metric` in `mode`, in logging order."""
    if mode not in self._values:
      logging.info('Metric %s not found for mode %s', metric, mode)
      return []
    return list(self._values[mode].get(metric, []))

  def last(self, mode, metric):
    """The latest value of `metric` in `mode`, or None (not in Trax)."""
    values = self.get(mode, metric)
    return values[-1][1] if values else None

  @property
  def modes(self):
    """The recorded modes, sorted."""
    return sorted(self._values)

  def metrics_for_mode(self, mode):
    """The metrics recorded in `mode`, sorted ([] for an unknown mode)."""
    if mode not in self._values:
      logging.info('Mode %s not found', mode)
      return []
    return sorted(self._values[mode])

  def __str__(self):
    return str({mode: dict(metrics) for mode, metrics in self._values.items()})
