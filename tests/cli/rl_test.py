"""The `tfnp-trax rl` command: runs, resumes, rejects bad flags."""

import os

from tests import _subprocess
from tfnp_trax import cli
from tfnp_trax.cli import rl


def test_trains_checkpoints_and_resumes(tmp_path, capsys):
  out = str(tmp_path / 'run')
  args = ['tfnp-trax rl', '--steps', '512', '--output_dir', out,
          '--eval_episodes', '2', '--nojit_compile', '--log_every', '1']
  assert rl.main(args) == 0
  text = capsys.readouterr().out
  assert 'Training PPO on CartPole-v1 for 512 env steps' in text
  assert 'Env steps     512' in text and 'Evaluation: average return' in text
  assert sorted(os.listdir(os.path.join(out, 'checkpoints'))) == [
      'ckpt-1', 'ckpt-2']
  assert rl.main(args[:2] + ['768'] + args[3:]) == 0
  text = capsys.readouterr().out
  assert 'Resumed at epoch 2, 512 env steps.' in text
  assert 'Env steps     768' in text and 'Env steps     512' not in text
  assert rl.main(args + ['--noresume']) == 2
  assert '--noresume was given' in capsys.readouterr().err


def test_bad_flags_and_dispatch(capsys):
  assert cli.run(['tfnp-trax', 'rl', '--algo', 'dqn']) == 2
  err = capsys.readouterr().err
  assert 'tfnp-trax rl:' in err and 'dqn' in err and '--helpfull' in err
  assert rl.main(['tfnp-trax rl', '--env', 'MountainCar-v0']) == 2


def test_mirrored_strategy_on_two_cpus(tmp_path):
  """Training steps run replicated over two logical CPU devices."""
  out = _subprocess.run_python(f'''
      from distribute import devices
      devices.split_cpu(2)
      from tfnp_trax.cli import rl
      code = rl.main(['tfnp-trax rl', '--algo', 'a2c', '--joint',
                      '--strategy', 'mirrored', '--steps', '512',
                      '--output_dir', {str(tmp_path)!r},
                      '--eval_episodes', '1', '--nojit_compile'])
      assert code == 0, code
      ''', timeout=240)
  assert 'A2CJoint' in out and 'strategy MirroredStrategy' in out
  assert 'Evaluation: average return' in out
