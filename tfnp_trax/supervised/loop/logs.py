"""Loop's output: TensorBoard writers in Trax's folder layout, and printing.

Trax writes a training task's scalars to `<output_dir>/train` and an eval
task's to `<output_dir>/eval`; with several tasks of a kind each gets
`<output_dir>/<export_prefix or index>/train` (or `/eval`). Tags are the
full metric names (`metrics/<name>`, `training/learning_rate`).
"""

import os
import sys

from absl import logging

from tfnp_trax.supervised import summaries

__all__ = ['SummaryWriter', 'task_dirs', 'log']

SummaryWriter = summaries.SummaryWriter


def task_dirs(output_dir, tasks, mode):
  """The summary folder of each task, laid out as Trax lays them out."""
  if output_dir is None:
    return [None] * len(tasks)
  if len(tasks) < 2:
    return [os.path.join(output_dir, mode)]
  return [os.path.join(output_dir, t.export_prefix or str(i), mode)
          for i, t in enumerate(tasks)]


def log(message, stdout=True):
  """Logs `message`, and prints it unless `stdout` is False."""
  logging.info(message)
  if stdout:
    print(message)
    sys.stdout.flush()
