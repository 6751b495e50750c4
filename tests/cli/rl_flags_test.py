"""`tfnp-trax rl` flag checks: the limits match the agents' presets."""

import itertools

from tfnp_trax.cli import _rl_flags
from tfnp_trax.cli import _usage
from tfnp_trax.rl import presets


def _check(*argv):
  return _usage.parse(_rl_flags.FLAGS, ['prog', *argv], _rl_flags.validate)


def test_rl_epoch_sizes_are_the_presets():
  for algo, env, joint in itertools.product(presets.ALGOS, presets.ENVS,
                                            (False, True)):
    settings = presets._algo_settings(algo, env, joint)  # pylint: disable=protected-access
    assert settings['n_interactions_per_epoch'] == (
        _rl_flags.INTERACTIONS_PER_EPOCH[env]), (algo, env, joint)


def test_rl_n_envs_divides_an_epoch(tmp_path):
  out = ['--output_dir', str(tmp_path)]
  for n_envs in (1, 8, 16, 256):
    assert _check('--n_envs', str(n_envs), *out) is None
  assert _check('--n_envs', '512', '--env', 'Pendulum-v1',
                *out) is None
  assert _check('--n_envs', '12', *out) == (
      '--n_envs must divide the 256 env steps an epoch of CartPole-v1 '
      'collects, got 12. Try --n_envs 8.')
  assert 'Try --n_envs 256' in _check('--n_envs', '512', *out)
