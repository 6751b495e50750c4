"""TensorBoard scalars, written by the chief only, files made on first use.

`SummaryWriter` writes one folder (Loop gives each task its `train` or
`eval` folder, tags being full metric names). `SummaryWriters` keeps one
writer per mode under a run folder with tags `<mode>/<name>` (the RL
trainers' layout). Both are no-ops when given no folder, which is how a
non-chief worker gets them.
"""

import os

import numpy as onp
import tensorflow as tf

__all__ = ['SummaryWriter', 'SummaryWriters']


class SummaryWriter:
  """Writes scalars to one TensorBoard folder; the file appears on first use.

  Args:
    log_dir: the folder; None makes every call a no-op.
  """

  def __init__(self, log_dir):
    self._dir = log_dir
    self._writer = None

  @property
  def log_dir(self):
    return self._dir

  def scalar(self, tag, value, step):
    """Writes scalar `value` under `tag` at `step`."""
    if self._dir is None:
      return
    if self._writer is None:
      self._writer = tf.summary.create_file_writer(self._dir)
    with self._writer.as_default(step=int(step)):
      tf.summary.scalar(tag, onp.asarray(value, onp.float64).item())

  def flush(self):
    if self._writer is not None:
      self._writer.flush()

  def close(self):
    if self._writer is not None:
      self._writer.close()
      self._writer = None


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
      self._writers[mode] = SummaryWriter(os.path.join(self._dir, mode))
    for name, value in values.items():
      self._writers[mode].scalar(f'{mode}/{name}', value, step)

  def flush(self):
    for writer in self._writers.values():
      writer.flush()
