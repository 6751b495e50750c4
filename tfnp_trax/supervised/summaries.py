"""TensorBoard scalars: one event-file writer per mode, made on first use."""

import os

import tensorflow as tf

__all__ = ['SummaryWriters']


class SummaryWriters:
  """Writes `{mode}/{name}` scalars under `output_dir/mode`.

  Args:
    output_dir: the run's folder; None (or `enabled=False`, e.g. on a
      non-chief worker) makes every call a no-op.
  """

  def __init__(self, output_dir, enabled=True):
    self._dir = output_dir if enabled else None
    self._writers = {}

  def write(self, mode, step, values):
    """Writes a dict of scalar `values` for `mode` at `step`."""
    if not self._dir:
      return
    if mode not in self._writers:
      self._writers[mode] = tf.summary.create_file_writer(
          os.path.join(self._dir, mode))
    with self._writers[mode].as_default(step=step):
      for name, value in values.items():
        tf.summary.scalar(f'{mode}/{name}', value)

  def flush(self):
    for writer in self._writers.values():
      writer.flush()
