"""SequenceDataEnv and copy_stream: episodes, rewards, masks, spaces, errors."""

import ast
import os

import gin
import gymnasium
import numpy as np
import pytest

from tfnp_trax import gin_config
from tfnp_trax.rl import envs
from tfnp_trax.rl.envs import data_envs

EOS = 1


def stream(*examples):
  """A stream that gives `examples` in order, then repeats the last one.

  The constructor draws the first example, so `reset` starts the second.
  """
  examples = list(examples)

  def generate():
    yield from examples
    while True:
      yield examples[-1]
  return generate()


def env_for(example, **kwargs):
  """An env whose next `reset` plays `example`."""
  return data_envs.SequenceDataEnv(stream(example, example), 16, **kwargs)


def masks(control, discount):
  return {'control_mask': control, 'discount_mask': discount}


def play_answer(env, n_input_tokens, answer):
  """Steps through the input, then acts `answer`; returns the last step."""
  for _ in range(n_input_tokens):
    env.step(0)
  for token in answer:
    result = env.step(token)
  return result


# -- Episodes -----------------------------------------------------------------
def test_copy_of_two_tokens_answered_right_step_by_step():
  env = data_envs.SequenceDataEnv(data_envs.copy_stream(2, n=1), 16)
  x1 = env.reset()
  assert x1.dtype == np.int32 and x1.shape == ()
  x2, reward, done, info = env.step(0)  # Input: the action is ignored.
  assert (reward, done, info) == (0.0, False, masks(0, 0))
  obs, reward, done, info = env.step(0)
  assert (obs, reward, done, info) == (EOS, 0.0, False, masks(0, 0))
  obs, reward, done, info = env.step(x1)  # The answer is echoed back.
  assert (obs, reward, done, info) == (x1, 0.0, False, masks(1, 0))
  obs, reward, done, info = env.step(x2)
  assert (obs, reward, done, info) == (x2, 0.0, False, masks(1, 0))
  obs, reward, done, info = env.step(EOS)
  assert (obs, reward, done, info) == (EOS, 1.0, True, masks(1, 1))


def test_two_copies_in_one_episode_reward_each_answer():
  env = data_envs.SequenceDataEnv(data_envs.copy_stream(2, n=2), 16)
  x1 = env.reset()
  x2, _, _, _ = env.step(0)
  env.step(0)
  env.step(x1)
  env.step(x2 + 1)  # Wrong.
  y1, reward, done, info = env.step(EOS)  # The next input starts at once.
  assert (reward, done, info) == (0.5, False, masks(1, 1))
  y2, _, _, _ = env.step(0)
  obs, _, _, _ = env.step(0)
  assert obs == EOS
  env.step(y1 + 1)  # Wrong.
  env.step(y2 + 1)  # Wrong.
  obs, reward, done, info = env.step(EOS)
  assert (obs, reward, done, info) == (EOS, 0.0, True, masks(1, 1))


def test_masks_of_every_step_of_an_episode():
  # Inputs (2, 3) and (4,), outputs (5,) and (6, 7).
  env = env_for([[2, 3], [5], [4], [6, 7]])
  assert env.reset() == 2
  steps = [env.step(a) for a in (0, 0, 5, EOS, 0, 6, 8, EOS)]
  assert [int(s[0]) for s in steps] == [3, EOS, 5, 4, EOS, 6, 8, EOS]
  assert [s[1] for s in steps] == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.5]
  assert [s[2] for s in steps] == [False] * 7 + [True]
  assert [s[3]['control_mask'] for s in steps] == [0, 0, 1, 1, 0, 1, 1, 1]
  assert [s[3]['discount_mask'] for s in steps] == [0, 0, 0, 1, 0, 0, 0, 1]


def test_number_of_masks_with_float_tokens_and_a_final_input():
  n_inputs, n_outputs, input_len, output_len = 3, 2, 4, 5

  def data():
    i, o = 2 * np.ones(input_len), np.zeros(output_len)  # Floats, as Trax.
    while True:
      yield (i, o, i, o, i)

  env = data_envs.SequenceDataEnv(data(), 16, max_length=output_len)
  env.reset()
  n_steps = n_control = n_discount = 0
  done = False
  while not done:
    _, _, done, info = env.step(action=0)  # 0 is never EOS.
    n_steps += 1
    n_control += info['control_mask']
    n_discount += info['discount_mask']
  assert n_discount == n_outputs
  # Each answer is max_length tokens plus the one that cuts it.
  assert n_control == (output_len + 1) * n_outputs
  # No step for an input's EOS: the policy acts on it at once.
  assert n_steps - n_control == input_len * n_inputs


def test_max_length_cuts_the_answer_and_drops_the_cutting_action():
  env = data_envs.SequenceDataEnv(data_envs.copy_stream(10, n=1), 16,
                                  max_length=2)
  env.reset()
  for _ in range(10):
    obs, reward, done, _ = env.step(0)
    assert (reward, done) == (0.0, False)
  assert obs == EOS
  assert env.step(7)[:3] == (7, 0.0, False)
  assert env.step(8)[:3] == (8, 0.0, False)
  obs, reward, done, info = env.step(9)
  assert (obs, done, info) == (EOS, True, masks(1, 1))
  # Steps after the end keep giving EOS and done.
  assert env.step(10) == (EOS, 0.0, True, None)
  assert env.step(None) == (EOS, 0.0, True, None)


def test_max_length_reward_scores_the_kept_answer():
  env = env_for([[2], [7, 8, 9]], max_length=2)
  env.reset()
  _, reward, done, _ = play_answer(env, 1, [7, 3, 9])
  assert done and reward == pytest.approx(1 / 3)  # (7, 3) against (7, 8, 9).


def test_max_length_zero_ends_at_the_first_action():
  seen = []
  env = env_for([[2], [4]], max_length=0,
                metric=lambda a, o: seen.append(a) or 0.25)
  env.reset()
  _, reward, done, _ = play_answer(env, 1, [4])
  assert (reward, done, seen) == (0.25, True, [[]])


def test_max_length_none_lets_the_answer_grow():
  env = env_for([[2], [3]], max_length=None)
  env.reset()
  env.step(0)
  for _ in range(2000):
    assert env.step(3)[2] is False
  _, reward, done, _ = env.step(EOS)
  assert done and reward == pytest.approx(1 / 2000)


def test_example_ending_on_an_input_ends_after_its_last_token():
  env = env_for([[2], [3], [4, 5]])
  env.reset()
  play_answer(env, 1, [3, EOS])
  assert env.step(0)[:3] == (5, 0.0, False)
  assert env.step(0) == (EOS, 0.0, True, masks(0, 0))


def test_empty_example_is_over_at_once_and_empty_output_is_allowed():
  env = env_for([])
  assert env.reset() == EOS
  assert env.step(3) == (EOS, 0.0, True, None)
  env = env_for([[2], []])
  env.reset()
  assert play_answer(env, 1, [EOS])[1:3] == (1.0, True)


def test_constructor_draws_an_example_and_reset_the_next():
  env = data_envs.SequenceDataEnv(stream([[3], []], [[4], []], [[5], []]), 8)
  assert env.observation == 3  # Ready to step before any reset.
  assert env.step(0)[0] == EOS
  assert env.reset() == 4
  assert env.reset() == 5


def test_reset_takes_gymnasium_arguments_and_returns_the_observation():
  env = env_for([[6, 7], [6, 7]])
  obs = env.reset(seed=0, options={'ignored': True})
  assert obs == 6 and obs.dtype == np.int32
  env.step(0)
  assert env.reset() == 6  # Starts over.
  assert env.observation == 6


def test_eos_id_sets_what_ends_inputs_and_answers():
  env = env_for([[1, 0, 1], [1, 2]], eos_id=0)
  # Tokens equal to EOS inside an input are shown like any other.
  assert [int(env.reset())] + [int(env.step(9)[0]) for _ in range(3)] == [
      1, 0, 1, 0]
  assert env.step(1)[:3] == (1, 0.0, False)  # 1 is an ordinary token now.
  assert env.step(2)[:3] == (2, 0.0, False)
  assert env.step(0)[1:3] == (1.0, True)


def test_answer_echo_shows_eos_until_the_first_action():
  env = env_for([[2], [3, 4]])
  env.reset()
  assert env.step(0)[0] == EOS
  assert env.observation == EOS
  env.step(3)
  assert env.observation == 3


def test_actions_are_ignored_while_the_input_is_shown():
  env = env_for([[2, 3, 4, 5], [5]])
  env.reset()
  for action in (None, 'x', 99, [1, 2]):
    assert env.step(action)[3] == masks(0, 0)
  assert env.observation == EOS


@pytest.mark.parametrize('action', [
    5, np.int64(5), np.array(5, np.int32), np.array([5]), 5.0, np.float32(5)])
def test_integer_valued_actions_of_any_numeric_kind(action):
  seen = []
  env = env_for([[2], [5]], metric=lambda a, o: seen.append(a) or 0.0)
  env.reset()
  env.step(0)
  assert env.step(action)[0] == 5
  env.step(EOS)
  assert seen == [[5]] and type(seen[0][0]) is int


# -- Rewards ------------------------------------------------------------------
@pytest.mark.parametrize('output,answer,accuracy', [
    ([4, 5, 6], [4, 5, 6], 1.0),
    ([4, 5, 6], [4, 0, 6], 2 / 3),
    ([4, 5, 6], [4, 5], 2 / 3),         # Shorter: over the output's 3.
    ([4, 5, 6], [4, 5, 6, 7], 3 / 4),   # Longer: over the answer's 4.
    ([4, 5, 6], [5, 6], 0.0),           # Compared by position, not aligned.
    ([4, 5, 6], [], 0.0),
    ([], [3], 0.0),
    ([], [], 1.0),
])
def test_default_reward_is_per_token_accuracy(output, answer, accuracy):
  env = env_for([[2], output])
  env.reset()
  _, reward, done, _ = play_answer(env, 1, answer + [EOS])
  assert done and reward == pytest.approx(accuracy)
  assert isinstance(reward, float)


def test_custom_metric_gets_the_answer_and_the_output_as_given():
  calls = []

  def metric(answer, output):
    calls.append((answer, output))
    return 10.0 * len(answer) - sum(output)

  output = (5, 6)
  env = data_envs.SequenceDataEnv(
      stream([[3], output], [[3], output]), 16, metric=metric)
  env.reset()
  _, reward, _, _ = play_answer(env, 1, [np.int32(7), 8, 9, EOS])
  assert reward == 10.0 * 3 - 11
  ((answer, given),) = calls
  assert answer == [7, 8, 9] and given is output


# -- Spaces -------------------------------------------------------------------
def test_spaces_are_gymnasium_discrete_over_the_vocabulary():
  env = data_envs.SequenceDataEnv(data_envs.copy_stream(2, n=1), 16)
  for space in (env.action_space, env.observation_space):
    assert isinstance(space, gymnasium.spaces.Discrete) and space.n == 16
  # Kept, so seeding a space holds; separate, as each has its own RNG.
  assert env.action_space is env.action_space
  assert env.action_space is not env.observation_space
  assert env.observation_space.contains(env.reset())
  assert env.action_space.contains(env.action_space.sample())


def test_gymnasium_attributes():
  env = env_for([[2], [2]])
  assert env.unwrapped is env
  assert env.spec is None and env.render_mode is None
  assert env.metadata == {'render_modes': []}
  env.close()


def test_modules_import_gymnasium_only_inside_functions():
  # Importing tfnp_trax.rl must work without the `rl` extra.
  folder = os.path.dirname(data_envs.__file__)
  for name in ('__init__.py', 'data_envs.py'):
    with open(os.path.join(folder, name)) as f:
      tree = ast.parse(f.read())
    for node in tree.body:
      if isinstance(node, (ast.Import, ast.ImportFrom)):
        modules = [a.name for a in node.names] + [
            getattr(node, 'module', None) or '']
        assert not any(m.startswith('gymnasium') for m in modules), name


# -- copy_stream ---------------------------------------------------------------
def test_copy_stream_draws_with_np_random_and_repeats_each_sequence():
  np.random.seed(3)
  first, second = [next(s) for s in [data_envs.copy_stream(
      4, low=5, high=9, n=3)] * 2]
  np.random.seed(3)
  drawn = [np.random.randint(5, 9, size=(4,), dtype=np.int32)
           for _ in range(6)]
  assert len(first) == 6
  for i in range(3):
    np.testing.assert_array_equal(first[2 * i], drawn[i])
    np.testing.assert_array_equal(first[2 * i + 1], drawn[i])
    np.testing.assert_array_equal(second[2 * i], drawn[3 + i])
  assert all(x.dtype == np.int32 and x.shape == (4,) for x in first)


def test_copy_stream_defaults():
  example = next(data_envs.copy_stream(500))
  assert len(example) == 2
  assert example[0].min() >= 2 and example[0].max() < 15
  assert set(example[0]) == set(range(2, 15))  # 500 draws hit all 13 ids.
  assert next(data_envs.copy_stream(0))[0].shape == (0,)
  assert next(data_envs.copy_stream(3, n=0)) == []


# -- Errors ---------------------------------------------------------------------
@pytest.mark.parametrize('example,error,match', [
    ([[2, 16], [2]], ValueError,
     r'SequenceDataEnv: sequence 0 \(input\) of an example has token 16 '
     r'outside the vocabulary \[0, vocab_size\) = \[0, 16\): \[2, 16\]'),
    ([[2], [-1]], ValueError,
     r'sequence 1 \(output\) of an example has token -1 outside'),
    ([[2.5], [2]], ValueError,
     r'sequence 0 \(input\) of an example must hold integer token ids, '
     r'got 2.5 in \[2.5\]'),
    ([['a'], [2]], TypeError, r'must hold integer token ids, got dtype <U1'),
    ([2, 3], ValueError,
     r'sequence 0 \(input\) of an example must be a 1-D sequence of token '
     r'ids, got shape \(\): 2. An example is a list of sequences, not one '
     r'sequence.'),
    ([[[2]], [2]], ValueError, r'must be a 1-D sequence .* shape \(1, 1\)'),
    ([[[2, 3], [4]], [2]], TypeError,  # Ragged.
     r'sequence 0 \(input\) of an example must hold integer token ids, '
     r'got dtype object in \[\[2, 3\], \[4\]\]'),
    ([[2], [3], []], ValueError,
     r'sequence 2 \(input\) of an example is empty; inputs need at least '
     r'one token'),
    (7, TypeError,
     r'SequenceDataEnv: each example from data_stream must be a list or '
     r'tuple of token sequences \(input_1, output_1, ...\), got int'),
])
def test_bad_examples_are_named(example, error, match):
  with pytest.raises(error, match=match):
    data_envs.SequenceDataEnv(stream(example), 16)


@pytest.mark.parametrize('action,error', [
    (16, ValueError), (-1, ValueError), (2.5, ValueError),
    (np.nan, ValueError), (None, TypeError), ('3', TypeError),
    ([3, 4], TypeError)])
def test_actions_outside_the_action_space_are_named(action, error):
  env = env_for([[2], [3]])
  env.reset()
  env.step(0)
  with pytest.raises(error, match=(
      r'SequenceDataEnv: the action must be an integer in \[0, 16\) \(the '
      r'action space Discrete\(16\)\), got ')):
    env.step(action)


@pytest.mark.parametrize('kwargs,error,match', [
    (dict(data_stream=3), TypeError,
     r'SequenceDataEnv: data_stream must be an iterator or iterable of '
     r'examples, got int'),
    (dict(vocab_size=16.0), TypeError,
     r'SequenceDataEnv: vocab_size must be an integer, got 16.0'),
    (dict(vocab_size=0), ValueError,
     r'SequenceDataEnv: vocab_size must be at least 1, got 0'),
    (dict(eos_id=16), ValueError,
     r'SequenceDataEnv: eos_id must be in \[0, vocab_size\) = \[0, 16\), '
     r'got 16'),
    (dict(max_length='10'), TypeError,
     r"SequenceDataEnv: max_length must be a number of tokens or None \(no "
     r"limit\), got '10'"),
    (dict(metric='accuracy'), TypeError,
     r'SequenceDataEnv: metric must be a function metric\(answer, output\) '
     r'or None'),
])
def test_bad_arguments_are_named(kwargs, error, match):
  args = dict(data_stream=stream([[2], [2]]), vocab_size=16)
  args.update(kwargs)
  with pytest.raises(error, match=match):
    data_envs.SequenceDataEnv(**args)


def test_exhausted_stream_says_so_and_a_list_is_a_finite_stream():
  env = data_envs.SequenceDataEnv([[[2], [2]], [[3], [3]]], 16)
  assert env.reset() == 3
  with pytest.raises(StopIteration, match=r'SequenceDataEnv: the data '
                     r'stream has no more examples'):
    env.reset()


@pytest.mark.parametrize('kwargs,error,match', [
    (dict(length=-1), ValueError,
     r'copy_stream: length and n must be >= 0, got length=-1, n=1'),
    (dict(length=2.0), TypeError,
     r'copy_stream: length must be an integer, got 2.0'),
    (dict(length=2, n=None), TypeError,
     r'copy_stream: n must be an integer, got None'),
    (dict(length=2, low=5, high=5), ValueError,
     r'copy_stream: ids are drawn from \[low, high\), so low must be < '
     r'high; got low=5, high=5'),
])
def test_bad_copy_stream_arguments_are_named_at_the_call(kwargs, error,
                                                         match):
  with pytest.raises(error, match=match):
    data_envs.copy_stream(**kwargs)


# -- Package and gin --------------------------------------------------------------
def test_package_exports_the_data_envs_objects():
  assert envs.SequenceDataEnv is data_envs.SequenceDataEnv
  assert envs.copy_stream is data_envs.copy_stream
  assert set(envs.__all__) == {'data_envs', 'SequenceDataEnv', 'copy_stream',
                               'configure_rl_env'}


@pytest.fixture
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _take_env(env=None):
  return env


# Registered once per process: gin refuses a name twice.
take_env = envs.configure_rl_env(_take_env, name='data_envs_test_take_env')


def test_gin_config_builds_the_env_under_trax_names(clean_gin):
  del clean_gin
  gin_config.parse_config([
      'import trax.rl.envs',
      'SequenceDataEnv.vocab_size = 32',
      'SequenceDataEnv.max_length = 3',
      'SequenceDataEnv.data_stream = @trax.rl.envs.copy_stream()',
      'copy_stream.low = 30',
      'copy_stream.high = 32',
      'copy_stream.length = 5',
      'trax.rl.envs.data_envs_test_take_env.env = '
      '@trax.rl.envs.SequenceDataEnv()',
  ])
  env = take_env()
  assert isinstance(env, data_envs.SequenceDataEnv)
  assert env.action_space.n == 32
  assert 30 <= env.reset() < 32
  for _ in range(5):
    env.step(0)
  # max_length 3: the fourth answer token ends the episode.
  assert [env.step(30)[2] for _ in range(4)] == [False] * 3 + [True]
