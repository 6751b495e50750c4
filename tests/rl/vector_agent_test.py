"""rl.vector_agent.VectorAgent's bookkeeping: chief-only checkpoints, resume, signals.

The two-worker run goes through `python -m distribute.launch` in a
subprocess with a hard timeout.
"""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from tests import _subprocess
from tfnp_trax.rl import presets
from tfnp_trax.supervised.loop import bookkeeping


def _agent(out, **kwargs):
  return presets.make_agent(
      'ppo', 'CartPole-v1', n_envs=2, output_dir=out, jit_compile=False,
      n_interactions_per_epoch=32, policy_batch_size=16, value_batch_size=16,
      policy_train_steps_per_epoch=2, value_train_steps_per_epoch=2,
      **kwargs)


def test_manifest_names_leaves_with_the_shared_scheme(tmp_path):
  agent = _agent(str(tmp_path), checkpoint_every=1)
  agent.run(1)
  with open(tmp_path / 'checkpoints' / 'ckpt-1' / 'manifest.json') as f:
    shapes = json.load(f)['shapes']
  names = [n for n, _ in shapes['policy_weights']]
  # The network's name path, as export and the Loop's manifests name it.
  assert names[0].startswith('policy/0_'), names
  assert all(n.startswith('policy/') for n in names)
  assert len(set(names)) == len(names)
  assert all(n.startswith('value/') for n, _ in shapes['value_weights'])


def test_sigterm_finishes_the_epoch_saves_and_raises_preempted(tmp_path):
  agent = _agent(str(tmp_path), checkpoint_every=10)
  real = agent.train_epoch

  def train_epoch(batch):  # SIGTERM arrives in the middle of epoch 2.
    if agent.epoch == 1:
      os.kill(os.getpid(), signal.SIGTERM)
    return real(batch)
  agent.train_epoch = train_epoch
  before = signal.getsignal(signal.SIGTERM)
  with pytest.raises(bookkeeping.Preempted,
                     match=r'PPO: received SIGTERM; stopped after step 2 and '
                     r'saved checkpoint \S+/checkpoints/ckpt-2\.') as info:
    agent.run(5)
  assert info.value.code == 128 + signal.SIGTERM
  assert signal.getsignal(signal.SIGTERM) is before
  assert agent.epoch == 2
  resumed = _agent(str(tmp_path))
  assert (resumed.epoch, resumed.env_steps) == (2, 64)
  # pylint: disable=protected-access
  for x, y in zip(agent._policy_trainer.variables()['weights'],
                  resumed._policy_trainer.variables()['weights']):
    np.testing.assert_array_equal(x.numpy(), y.numpy())


_LAUNCH = [sys.executable, '-m', 'distribute.launch', '--workers', '2',
           '--timeout', '150', '--collective_timeout', '60', '--',
           sys.executable, '-m', 'tests.rl._agent_script']


def _launch(out, n_epochs, *extra):
  proc = subprocess.run(
      _LAUNCH + [str(out), str(n_epochs), '--multiworker', *extra],
      cwd=_subprocess.REPO, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'),
      capture_output=True, text=True, timeout=180, check=False)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  return proc.stdout


def test_two_worker_run_checkpoints_from_the_chief_and_resumes(tmp_path):
  out = tmp_path / 'run'
  # Two epochs, then (in the same launch) a fresh agent on the same folder.
  stdout = _launch(out, 2, '--resume_to', '3')
  ckpt = out / 'checkpoints'
  assert f'[worker 0] worker 0 chief=True epoch=2 saved={ckpt}/ckpt-2' in stdout
  assert '[worker 1] worker 1 chief=False epoch=2 saved=None' in stdout
  assert '[worker 0] worker 0 resumed at epoch 2' in stdout
  assert '[worker 1] worker 1 resumed at epoch 2' in stdout
  assert f'[worker 0] worker 0 chief=True epoch=3 saved={ckpt}/ckpt-3' in stdout
  assert '[worker 1] worker 1 chief=False epoch=3 saved=None' in stdout
  assert sorted(os.listdir(ckpt)) == ['ckpt-1', 'ckpt-2', 'ckpt-3']
  # Summaries too come from the chief alone (one writer, then the resumed
  # agent's): no event file of worker 1.
  assert len(os.listdir(out / 'rl')) == 2
