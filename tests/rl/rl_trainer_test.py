"""Trax's RL configs, unchanged, through `python -m tfnp_trax.rl_trainer`."""

import os
import pathlib
import subprocess
import sys

import gin
import pytest

from tests import _subprocess
from tfnp_trax import gin_config
from tfnp_trax.layers import weight_files

CONFIGS = pathlib.Path(__file__).parent.parent / 'testdata' / 'trax_rl_configs'

# Configs that use a Trax name tfnp_trax does not have yet, and that name.
NEEDS = {
    'light_atari.gin': 'trax.rl.SamplingAWR',
    'light_lunarlander.gin': 'trax.rl.SamplingAWR',
    'light_mujoco.gin': 'trax.rl.SamplingAWR',
    'light_mujoco_regression_test.gin': 'trax.rl.SamplingAWR',
}


def _all_configs():
  return sorted(p.name for p in CONFIGS.glob('*.gin'))


def test_all_eighteen_configs_are_here():
  assert len(_all_configs()) == 18


@pytest.mark.parametrize('name', _all_configs())
def test_config_parses_with_trax_names(name):
  gin.clear_config()
  try:
    if name in NEEDS:
      with pytest.raises(gin_config.GinConfigError, match=NEEDS[name]):
        gin_config.parse_config_files_and_bindings([str(CONFIGS / name)], [])
    else:
      gin_config.parse_config_files_and_bindings([str(CONFIGS / name)], [])
      if name == 'transformer_srl_sine.gin':
        # A supervised config (RL as sequence modelling) for the trainer.
        assert gin.query_parameter('TimeSeriesModel.vocab_size') == 16
      else:
        assert gin.query_parameter('train_rl.light_rl_trainer') is not None
  finally:
    gin.clear_config()


def _run(config, bindings, output_dir, timeout=300):
  args = [sys.executable, '-m', 'tfnp_trax.rl_trainer',
          f'--config_file={CONFIGS / config}', f'--output_dir={output_dir}']
  args += [f'--config={b}' for b in bindings]
  env = dict(os.environ, PYTHONPATH=_subprocess.REPO,
             TF_CPP_MIN_LOG_LEVEL='2')
  return subprocess.run(args, capture_output=True, text=True, env=env,
                        timeout=timeout, cwd=_subprocess.REPO, check=False)


def _run_in_process(config, bindings, output_dir):
  from tfnp_trax import rl_trainer  # pylint: disable=g-import-not-at-top
  args = ['rl_trainer', f'--config_file={CONFIGS / config}',
          f'--output_dir={output_dir}'] + [f'--config={b}' for b in bindings]
  gin.clear_config()
  try:
    return rl_trainer.main(args)
  finally:
    gin.clear_config()


@pytest.mark.parametrize('config,bindings', [
    # PolicyGradient on CartPole-v0 (the config's own agent).
    ('light_cartpole.gin', ['RLTask.initial_trajectories = 5']),
    # Double DQN on n-step returns.
    ('dqn_cartpole_regression.gin', ['DQN.value_train_steps_per_epoch = 5',
                                     'DQN.n_interactions_per_epoch = 50']),
    # ExpertIteration (the config's own agent) with a TransformerDecoder
    # policy on the copy task's SequenceDataEnv.
    ('light_copy.gin', ['RLTask.initial_trajectories = 10',
                        'ExpertIteration.n_trajectories_per_epoch = 4',
                        'ExpertIteration.n_train_steps_per_epoch = 2',
                        'ExpertIteration.n_eval_episodes = 1',
                        'batch_size = 8']),
])
def test_config_trains_and_resumes(tmp_path, config, bindings):
  out = str(tmp_path / 'run')
  assert _run_in_process(config, bindings + ['train_rl.n_epochs = 2'],
                         out) == 0
  record = weight_files.unpickle_from_file(os.path.join(out, 'rl.pkl'))
  assert record['epoch'] == 2 and len(record['avg_returns']) == 2
  assert os.path.exists(os.path.join(out, 'config.gin'))
  # n_epochs counts all epochs: a rerun to 3 runs one more.
  assert _run_in_process(config, bindings + ['train_rl.n_epochs = 3'],
                         out) == 0
  record = weight_files.unpickle_from_file(os.path.join(out, 'rl.pkl'))
  assert record['epoch'] == 3 and len(record['avg_returns']) == 3


# light_copy.gin's LoopAWR settings, cut short: 2 epochs of 3 value and 3
# policy steps on batches of 8, 10 initial episodes, 20 steps collected.
_SHORT_LOOP_AWR = [
    'train_rl.light_rl_trainer = @trax.rl.LoopAWR', 'train_rl.n_epochs = 2',
    'RLTask.initial_trajectories = 10', 'train_steps = 3', 'batch_size = 8',
    'LoopAWR.n_interactions_per_epoch = 20', 'LoopAWR.n_eval_episodes = 1',
]


def test_light_copy_trains_loop_awr(tmp_path):
  # Its TransformerDecoder body is built in mode 'collect' for collection.
  out = str(tmp_path / 'run')
  assert _run_in_process('light_copy.gin', _SHORT_LOOP_AWR, out) == 0
  record = weight_files.unpickle_from_file(os.path.join(out, 'rl.pkl'))
  assert record['epoch'] == 2 and len(record['avg_returns']) == 2
  assert os.path.isdir(os.path.join(out, 'model'))


def test_collect_mode_acts_as_eval():
  """RL agents build collection models in mode 'collect', as in Trax."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from tfnp_trax import models  # pylint: disable=g-import-not-at-top
  from tfnp_trax import shapes  # pylint: disable=g-import-not-at-top
  kwargs = dict(vocab_size=8, d_model=8, d_ff=8, n_layers=1, n_heads=1,
                dropout=0.5)
  evaluated = models.TransformerDecoder(mode='eval', **kwargs)
  collecting = models.TransformerDecoder(mode='collect', **kwargs)
  x = np.arange(6, dtype=np.int32).reshape(2, 3) + 1
  evaluated.init(shapes.signature(x))
  collecting.init(shapes.signature(x))
  collecting.weights = evaluated.weights
  # Dropout is off in both: the outputs agree.
  np.testing.assert_allclose(np.asarray(collecting(x)),
                             np.asarray(evaluated(x)), rtol=1e-6)


def test_the_module_runs_and_bad_configs_are_usage_errors(tmp_path):
  bad = _run('light_cartpole.gin', ['RLTask.gamaa = 0.9'],
             str(tmp_path / 'x'))
  assert bad.returncode == 2
  assert 'gamaa' in bad.stderr and 'gamma' in bad.stderr
  missing = _run('no_such.gin', [], str(tmp_path / 'y'))
  assert missing.returncode == 2 and 'no_such.gin' in missing.stderr
