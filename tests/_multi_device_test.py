"""Tests for the multi-device subprocess helper and its failure messages."""

import pytest

from tests import _multi_device
from tests import _subprocess


def test_the_child_has_the_logical_cpus_and_reports_once():
  result = _multi_device.run('''
      import numpy as np
      strategy = tf.distribute.MirroredStrategy(
          [d.name for d in tf.config.list_logical_devices('CPU')])
      report({'cpus': len(tf.config.list_logical_devices('CPU')),
              'replicas': strategy.num_replicas_in_sync,
              'noise': [1.5, 'x']})
      print('other output is ignored')
      ''', n_devices=3, timeout=120)
  assert result == {'cpus': 3, 'replicas': 3, 'noise': [1.5, 'x']}


def test_a_failing_child_shows_its_stderr():
  with pytest.raises(AssertionError, match=r'(?s)subprocess failed \(1\).*'
                     r'STDERR:.*ValueError: broken on purpose'):
    _multi_device.run('raise ValueError("broken on purpose")', n_devices=2,
                      timeout=120)


@pytest.mark.parametrize('calls', [0, 2])
def test_a_child_must_report_exactly_once(calls):
  with pytest.raises(AssertionError, match=rf'(?s)called report\(\) {calls} '
                     r'times instead of once.*STDOUT:.*STDERR:.*to stderr'):
    _multi_device.run(f'''
        import sys
        print('to stderr', file=sys.stderr)
        for _ in range({calls}):
          report(None)
        ''', n_devices=2, timeout=120)


def test_a_child_past_its_timeout_is_killed_with_its_output_shown():
  with pytest.raises(AssertionError, match=r'(?s)ran past its 3s timeout.*'
                     r'STDOUT:.*started'):
    _subprocess.run_python('''
        import time
        print('started', flush=True)
        time.sleep(60)
        ''', timeout=3)
