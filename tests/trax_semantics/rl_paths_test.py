"""Trax's `trax.rl.<module>` import paths, checked against tfnp_trax.rl.

TRAX_RL below is the public names of each module of Trax's trax/rl/ (Trax
1.4.1: the package and its modules, read from google/trax), split into
the names tfnp_trax implements, which must import from
`tfnp_trax.rl.<same module>`, and the ones it does not, each with the
reason. Private helpers (leading underscore) and tests are left out.
"""

import importlib

import pytest

_ONLINE_TUNE = 'online hyperparameter tuning envs are not implemented'

# module (relative to trax.rl; '' is the package) -> implemented names and
# {missing name: reason}.
TRAX_RL = {
    '': {
        'implemented': ['A2C', 'AWR', 'PPO', 'A2CJoint', 'AWRJoint',
                        'PPOJoint', 'TimeSeriesModel', 'PolicyGradient',
                        'ExpertIteration', 'DQN', 'configure_rl', 'LoopAWR'],
        'missing': {
            'SamplingAWR': 'the Q-value (sampled actions) AWR agent is not '
                           'implemented; its loss SamplingAWRLoss is',
        },
    },
    'actor_critic': {
        'implemented': ['ActorCriticAgent', 'A2C', 'PPO', 'AWR', 'AWRLoss',
                        'SamplingAWRLoss', 'awr_weights', 'awr_metrics',
                        'awr_weight_stat', 'LoopActorCriticAgent', 'LoopAWR',
                        'every'],
        'missing': {
            'AdvantageBasedActorCriticAgent': 'ActorCriticAgent computes '
                                              'advantages itself; no '
                                              'separate base class',
            'SamplingAWR': 'the Q-value (sampled actions) AWR agent is not '
                           'implemented',
        },
    },
    'actor_critic_joint': {
        'implemented': ['ActorCriticJointAgent', 'PPOJoint', 'A2CJoint',
                        'AWRJoint'],
        'missing': {},
    },
    'advantages': {
        'implemented': ['common_args', 'mask_discount', 'discounted_returns',
                        'monte_carlo', 'td_k', 'td_lambda', 'gae'],
        'missing': {},
    },
    'distributions': {
        'implemented': ['Distribution', 'Categorical', 'Gaussian',
                        'create_distribution', 'LogLoss'],
        'missing': {},
    },
    'rl_layers': {
        'implemented': ['ValueLoss', 'ExplainedVariance', 'PreferredMove',
                        'NewLogProbs', 'EntropyLoss', 'ProbsRatio',
                        'ApproximateKLDivergence', 'UnclippedObjective',
                        'ClippedObjective', 'PPOObjective', 'A2CObjective'],
        'missing': {},
    },
    'task': {
        'implemented': ['RLTask', 'TimeStepBatch', 'EnvInfo', 'Trajectory',
                        'play'],
        'missing': {},
    },
    'training': {
        'implemented': ['Agent', 'PolicyAgent', 'remaining_evals',
                        'LoopPolicyAgent', 'PolicyGradient',
                        'sharpened_network_policy', 'ExpertIteration',
                        'network_policy', 'ValueAgent', 'DQN'],
        'missing': {},
    },
    'policy_tasks': {
        'implemented': ['PolicyTrainTask', 'PolicyEvalTask'],
        'missing': {},
    },
    'value_tasks': {
        'implemented': ['ValueTrainTask', 'ValueEvalTask'],
        'missing': {},
    },
    'normalization': {
        'implemented': [
            'running_mean_init', 'running_mean_update',
            'running_mean_get_mean', 'running_mean_get_count',
            'running_mean_and_variance_init',
            'running_mean_and_variance_update',
            'running_mean_and_variance_get_mean',
            'running_mean_and_variance_get_count',
            'running_mean_and_variance_get_variance', 'Normalize',
            'LayerNormSquash'],
        'missing': {},
    },
    'space_serializer': {
        'implemented': ['SpaceSerializer', 'create', 'BoxSpaceSerializer',
                        'DiscreteSpaceSerializer',
                        'MultiDiscreteSpaceSerializer'],
        'missing': {},
    },
    'serialization_utils': {
        'implemented': [
            'Serialize', 'Interleave', 'Deinterleave', 'RepresentationMask',
            'SignificanceWeights', 'SerializedModel', 'RawPolicy',
            'substitute_inner_policy_raw', 'SerializedPolicy',
            'substitute_inner_policy_serialized', 'analyze_action_space',
            'wrap_policy', 'substitute_inner_policy', 'TimeSeriesModel'],
        'missing': {'extract_inner_model': 'not in Trax 1.4.1 (a later '
                                           'Trax name)'},
    },
    'envs': {
        'implemented': ['SequenceDataEnv', 'copy_stream', 'configure_rl_env'],
        'missing': {},
    },
    'envs.data_envs': {
        'implemented': ['SequenceDataEnv', 'copy_stream'],
        'missing': {},
    },
    'envs.online_tune': {
        'implemented': [],
        'missing': {name: _ONLINE_TUNE for name in [
            'LEARNING_RATE_METRIC', 'historical_metric_values',
            'history_to_observations', 'new_learning_rate']},
    },
    'envs.online_tune_env': {
        'implemented': [],
        'missing': {'OnlineTuneEnv': _ONLINE_TUNE},
    },
}

# Where each re-exported name is defined: the path must give that object.
DEFINED_IN = {
    ('', 'PolicyGradient'): 'training',
    ('', 'ExpertIteration'): 'training',
    ('', 'DQN'): 'training',
    ('envs', 'SequenceDataEnv'): 'envs.data_envs',
    ('envs', 'copy_stream'): 'envs.data_envs',
    ('actor_critic', 'AWRLoss'): 'awr',
    ('actor_critic', 'SamplingAWRLoss'): 'awr',
    ('actor_critic', 'awr_weights'): 'awr',
    ('actor_critic', 'awr_metrics'): 'awr',
    ('actor_critic', 'awr_weight_stat'): 'awr',
    ('', 'LoopAWR'): 'actor_critic',
    ('', 'A2C'): 'actor_critic',
    ('', 'AWR'): 'actor_critic',
    ('', 'PPO'): 'actor_critic',
    ('', 'A2CJoint'): 'actor_critic_joint',
    ('', 'AWRJoint'): 'actor_critic_joint',
    ('', 'PPOJoint'): 'actor_critic_joint',
}


def our_module_name(module):
  return 'tfnp_trax.rl' + ('.' + module if module else '')


def module_or_none(module):
  try:
    return importlib.import_module(our_module_name(module))
  except ModuleNotFoundError:
    return None


IMPLEMENTED = [(m, n) for m, e in TRAX_RL.items() for n in e['implemented']]
MISSING = [(m, n) for m, e in TRAX_RL.items() for n in e['missing']]


@pytest.mark.parametrize('module,name', IMPLEMENTED)
def test_implemented_name_imports_from_trax_path(module, name):
  ours = importlib.import_module(our_module_name(module))
  assert hasattr(ours, name), f'{our_module_name(module)}.{name} is missing'
  assert name in ours.__all__, f'{name} not in {ours.__name__}.__all__'
  home = DEFINED_IN.get((module, name))
  if home is not None:
    # A re-export, not a copy.
    defining = importlib.import_module(our_module_name(home))
    assert getattr(ours, name) is getattr(defining, name)


@pytest.mark.parametrize('module,name', MISSING)
def test_missing_names_are_really_missing(module, name):
  # Keeps the table honest: implementing a name means moving it above.
  ours = module_or_none(module)
  assert ours is None or not hasattr(ours, name), (
      f'{our_module_name(module)}.{name} exists now; list it as implemented')
  assert TRAX_RL[module]['missing'][name]


def test_table_has_no_duplicates_or_overlaps():
  for module, entry in TRAX_RL.items():
    implemented = entry['implemented']
    assert len(set(implemented)) == len(implemented), module
    assert not set(implemented) & set(entry['missing']), module


def test_modules_without_implemented_names_are_absent():
  # No empty stand-in modules: a Trax module appears here only once some of
  # its names are implemented.
  for module, entry in TRAX_RL.items():
    if not entry['implemented']:
      assert module_or_none(module) is None, module
