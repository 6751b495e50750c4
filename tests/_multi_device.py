"""Runs test code on several logical CPU devices, in a fresh process.

TensorFlow fixes its devices when it initialises, and the test process has
long done so (see tests/conftest.py), so code that needs `n` logical CPUs
(MirroredStrategy replicas, device placement) runs in a new interpreter:

    result = _multi_device.run('''
        strategy = tf.distribute.MirroredStrategy(
            [d.name for d in tf.config.list_logical_devices('CPU')])
        report({'replicas': strategy.num_replicas_in_sync})
        ''', n_devices=2)
    assert result == {'replicas': 2}

`run` splits the CPU before the snippet's first line, gives the snippet
`tf` and a `report(value)` function, and returns the one JSON value the
snippet reported. The child has a hard timeout; a crash, a timeout or a
missing report fails the test with the tail of the child's stdout and
stderr.

Scripts started another way (`python -m tests...`) call `split_cpu` first.
"""

import json
import textwrap

from tests import _subprocess

__all__ = ['MARKER', 'split_cpu', 'report', 'run']

# Starts the one stdout line that carries the snippet's result.
MARKER = '@@multi_device_report '

_PRELUDE = '''\
from tests import _multi_device
_multi_device.split_cpu({n_devices})
from tests._multi_device import report
import tensorflow as tf
'''


def split_cpu(n_devices):
  """Splits the host CPU into `n_devices` logical CPUs (in the child).

  Must run before TensorFlow runs its first op; TensorFlow raises a
  RuntimeError otherwise.

  Args:
    n_devices: a positive int.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cpu = tf.config.list_physical_devices('CPU')[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()
            for _ in range(n_devices)])


def report(value):
  """Sends `value` (anything `json.dumps` takes) back to `run` (in the child).

  Call it once: `run` fails if the child reports twice or never.
  """
  print(MARKER + json.dumps(value), flush=True)


def run(code, n_devices, timeout=300, env=None):
  """Runs `code` on `n_devices` logical CPUs in a new interpreter.

  Args:
    code: Python source (may be indented). It runs after the CPU is split,
      with `tf` imported and `report` defined.
    n_devices: how many logical CPU devices the child has.
    timeout: seconds before the child is killed and the test fails.
    env: extra environment variables for the child.

  Returns:
    The value the child passed to `report`, decoded from JSON.

  Raises:
    AssertionError: the child failed, timed out, or did not report exactly
      once; the message holds the tail of its stdout and stderr.
  """
  source = _PRELUDE.format(n_devices=int(n_devices)) + textwrap.dedent(code)
  proc = _subprocess.run_process(source, timeout=timeout, env=env)
  lines = [l for l in proc.stdout.splitlines() if l.startswith(MARKER)]
  if len(lines) != 1:
    raise AssertionError(
        f'the child on {n_devices} logical CPUs exited cleanly but called '
        f'report() {len(lines)} times instead of once:\n'
        f'STDOUT:\n{_subprocess.tail(proc.stdout)}\n'
        f'STDERR:\n{_subprocess.tail(proc.stderr)}')
  return json.loads(lines[0][len(MARKER):])
