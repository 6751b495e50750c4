"""The small JSON files that fix a `tfnp-trax train` run's choices.

A budgeted run writes how many steps it takes (`_time_budget`) and which
model size it trains (`_model_size`) into its output folder, so a resumed
run follows the same schedule and rebuilds the same model. Both go through
here: written atomically (a reader sees the old file or the whole new one),
read back with a message naming what the file fixes when it is damaged.
"""

import json
import os

from tfnp_trax import atomic_files

__all__ = ['write_json', 'write_bytes', 'read_json']


def write_json(output_dir, name, value):
  """Writes JSON `value` to `<output_dir>/<name>` atomically; returns it."""
  os.makedirs(output_dir, exist_ok=True)
  return write_bytes(os.path.join(output_dir, name),
                     json.dumps(value, indent=1).encode('utf-8'))


def write_bytes(path, data):
  """Writes `data` to `path` atomically (fsynced, then renamed); returns it."""
  return atomic_files.write_atomically(path, data)


def read_json(output_dir, name, parse, problem, fixes):
  """`parse(contents)` of `<output_dir>/<name>`, or None without the file.

  Args:
    output_dir: the run's folder.
    name: the file's name.
    parse: JSON value -> the record; raises ValueError, TypeError or
      KeyError on contents it cannot use.
    problem: what is wrong with such a file, e.g. 'is not a time-budget
      plan'.
    fixes: what the file fixes, e.g. 'the step count of the run'.

  Raises:
    ValueError: the file is not JSON, or `parse` refused it; the message
      names the file and what it fixes.
  """
  path = os.path.join(output_dir, name)
  if not os.path.isfile(path):
    return None
  try:
    with open(path, encoding='utf-8') as f:
      return parse(json.load(f))
  except (ValueError, TypeError, KeyError) as e:
    raise ValueError(
        f'tfnp-trax train: {path} {problem} ({e}); it fixes {fixes} in that '
        f'folder. Delete it only together with the checkpoints, or choose '
        f'another --output_dir.') from e
