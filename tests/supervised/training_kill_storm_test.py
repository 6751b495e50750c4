"""A Loop SIGKILLed at random moments, 22 times, then resumed to the end.

The run (tests/supervised/_kill_storm_script.py) is an MLP with dropout on
synthetic data: checkpoints every 2 steps (2 kept), permanent ones at step
1 and every 5, evals every 3 steps on changing eval batches, a best-metric
checkpoint. Most kills strike inside a checkpoint write (the script slows
the write protocol down in its children only). The resumed run must end
exactly as an uninterrupted one: same weights bit for bit, the same
checkpoints (each verifies and loads, none missing, nothing else left in
the folder) and every step's train and eval entries.

One subprocess with a hard timeout; it imports TensorFlow once and forks
each run, so the 24 runs cost one TensorFlow start-up.
"""

import hashlib
import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from tests import _subprocess
from tests.supervised import _kill_storm_script as script

# Required in CI: a hard limit, above the subprocess's own.
pytestmark = pytest.mark.timeout(480)

N_KILLS = 22
_TIMING = 'training/steps per second'  # A wall-clock rate: never equal.


@pytest.fixture(scope='module')
def storm(tmp_path_factory):
  work = tmp_path_factory.mktemp('kill_storm') / 'w'
  out = _subprocess.run_python(
      'import runpy, sys\n'
      f'sys.argv = ["_kill_storm_script", {str(work)!r}, "7", '
      f'"{N_KILLS}"]\n'
      'runpy.run_module("tests.supervised._kill_storm_script", '
      'run_name="__main__")\n', timeout=420)
  summary = json.loads(out.strip().splitlines()[-1])
  print('kill storm:', summary)  # Shown with -s: what the kills hit, times.
  return str(work / 'reference'), str(work / 'killed'), summary


def _history(directory):
  with open(os.path.join(directory, 'history.json')) as f:
    return json.load(f)['_values']


def _without_timing(values):
  """The history with the timing metric's values replaced by its steps."""
  out = {}
  for mode, metrics in values.items():
    out[mode] = {m: ([p[0] for p in pairs] if m == _TIMING else pairs)
                 for m, pairs in metrics.items()}
  return out


def _manifest(path):
  """Reads and verifies a checkpoint's manifest, independently of the library.

  Every file it lists must match its SHA-256, and the manifest its own
  (the SHA-256 of its canonical JSON without that field).
  """
  with open(os.path.join(path, 'manifest.json')) as f:
    manifest = json.load(f)
  body = {k: v for k, v in manifest.items() if k != 'manifest_sha256'}
  digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode())
  assert manifest['manifest_sha256'] == digest.hexdigest(), path
  for name, sha in manifest['sha256'].items():
    with open(os.path.join(path, name), 'rb') as f:
      assert hashlib.sha256(f.read()).hexdigest() == sha, (path, name)
  return body


def _tensors(path):
  reader = tf.train.load_checkpoint(os.path.join(path, 'state'))
  return {k: reader.get_tensor(k)
          for k in reader.get_variable_to_shape_map()}


def test_the_storm_killed_often_and_inside_writes(storm):
  _, _, summary = storm
  assert summary['kills'] == N_KILLS and not summary['finished_early']
  assert 0 < summary['reached'] < script.N_STEPS, summary
  # A kill inside a write leaves a temp folder: most kills must land there.
  assert summary['seen']['tmp'] >= 3, summary


def test_final_weights_are_bitwise_those_of_the_uninterrupted_run(storm):
  reference, killed, _ = storm
  want = np.load(os.path.join(reference, 'result.npz'))
  got = np.load(os.path.join(killed, 'result.npz'))
  assert len(want.files) == len(got.files) == 4
  for name in want.files:
    assert want[name].dtype == got[name].dtype
    assert want[name].tobytes() == got[name].tobytes(), name


def test_history_has_every_step_of_the_uninterrupted_run(storm):
  reference, killed, _ = storm
  want, got = _history(reference), _history(killed)
  assert _without_timing(got) == _without_timing(want)
  eval_steps = [s for s in range(1, script.N_STEPS + 1) if script.eval_at(s)]
  for mode, metric in (('train', 'metrics/WeightedCategoryCrossEntropy'),
                       ('eval', 'metrics/loss'), ('eval', 'metrics/accuracy'),
                       ('train', _TIMING)):
    assert [p[0] for p in got[mode][metric]] == eval_steps, (mode, metric)


def test_the_same_checkpoints_exist_and_nothing_else(storm):
  reference, killed, _ = storm
  assert sorted(os.listdir(killed)) == sorted(os.listdir(reference))
  inner = os.path.join(killed, 'checkpoints')
  names = sorted(os.listdir(inner))
  assert names == sorted(os.listdir(os.path.join(reference, 'checkpoints')))
  n = script.N_STEPS
  permanent = [f'ckpt-{s}-permanent' for s in range(1, n + 1)
               if s == 1 or s % script.PERMANENT_EVERY == 0]
  rotating = [f'ckpt-{s}' for s in range(n - 2 * (script.KEEP - 1), n + 1, 2)]
  assert names == sorted(permanent + rotating + ['lowest_loss'])
  for name in names:
    files = set(os.listdir(os.path.join(inner, name)))
    listed = set(_manifest(os.path.join(inner, name))['sha256'])
    assert files == listed | {'manifest.json'}, name


def test_every_checkpoint_loads_and_equals_the_uninterrupted_one(storm):
  reference, killed, _ = storm
  for name in sorted(os.listdir(os.path.join(reference, 'checkpoints'))):
    want_path = os.path.join(reference, 'checkpoints', name)
    got_path = os.path.join(killed, 'checkpoints', name)
    want, got = _manifest(want_path), _manifest(got_path)
    assert got['step'] == want['step'], name
    assert got['extra']['loop_progress'] == want['extra']['loop_progress']
    assert (_without_timing(got['extra']['history']['_values']) ==
            _without_timing(want['extra']['history']['_values'])), name
    want_t, got_t = _tensors(want_path), _tensors(got_path)
    assert sorted(got_t) == sorted(want_t), name
    for key, value in want_t.items():
      assert np.asarray(got_t[key]).tobytes() == np.asarray(
          value).tobytes(), (name, key)


def test_a_kill_left_no_temp_or_probe_file_anywhere(storm):
  _, killed, _ = storm
  for root, dirs, files in os.walk(killed):
    for entry in dirs + files:
      assert not re.match(r'^\.(tmp|old|write-probe|manifest)', entry), (
          os.path.join(root, entry))
