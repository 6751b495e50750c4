"""The tf.data path of tfnp_trax.data.inputs gives the Python path's batches.

Each step is run on a `tf.data.Dataset` and read back with `to_stream`; the
result must equal what real Trax 1.4.1 recorded for the Python path (shapes,
dtypes, values, order).
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.data import _recorded
from tests.data import inputs_test
from tfnp_trax import data
from tfnp_trax import layers as tl
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax.data import inputs
from tfnp_trax.supervised import training

EX = inputs_test.EX
TOKENS = inputs_test.TOKENS


def _on_dataset(step, examples):
  ds = step(inputs.to_dataset(lambda: iter(examples)))
  assert isinstance(ds, tf.data.Dataset), f'{step} left the tf.data path'
  return list(inputs.to_stream(ds))


@pytest.mark.parametrize('case', sorted(inputs_test.RECORDED_STEPS))
def test_steps_on_a_dataset_match_trax(case):
  examples = inputs_test.RECORDED_INPUTS.get(case, EX)
  got = _on_dataset(inputs_test.RECORDED_STEPS[case](), examples)
  _recorded.assert_same(_recorded.load(case), got)


def test_token_steps_on_a_dataset_match_trax():
  short = [(a, b) for a, b in EX if len(a) <= 20]
  _recorded.assert_same(_recorded.load('pad_to_length'), _on_dataset(
      inputs.PadToLength(len_map={0: 20, 1: 25}, pad_value={0: 0, 1: -1}),
      short))
  _recorded.assert_same(_recorded.load('dup'), _on_dataset(
      inputs.Dup(), [(a,) for a in TOKENS[:5]]))
  _recorded.assert_same(_recorded.load('prefix_lm'),
                        _on_dataset(inputs.PrefixLM(4, 6), TOKENS))
  _recorded.assert_same(_recorded.load('sequential_chunks'), _on_dataset(
      inputs.generate_sequential_chunks(5), TOKENS))
  toks = [np.arange(1, 16, dtype=np.int32) + 10 * i for i in range(3)]
  masks = [inputs.random_spans_noise_mask(15, 0.3, 2.0, seed1=i, seed2=i + 7)
           for i in range(3)]
  _recorded.assert_same(_recorded.load('consume_noise_mask'), _on_dataset(
      inputs.consume_noise_mask(vocab_size=100), list(zip(toks, masks))))


def test_parallel_mixes_datasets_in_trax_order():
  sources = [lambda k=k: tf.data.Dataset.from_tensor_slices(
      (np.array([[k, i] for i in range(100)]),)) for k in range(3)]
  mixed = inputs.Parallel(sources, counters=(2, 5, 11),
                          gradually_reweight=True, use_remainders=True)()
  assert isinstance(mixed, tf.data.Dataset)
  _recorded.assert_same(_recorded.load('parallel_remainders'),
                        list(inputs.to_stream(mixed.take(30))))


def test_lm_pipeline_gives_identical_batches_on_both_paths():
  rng = np.random.RandomState(1)
  texts = [bytes(rng.randint(97, 123, size=rng.randint(1, 70)).astype(
      np.uint8)) for _ in range(300)]
  tokenize = inputs.Step(
      'BytesTokenize',
      lambda g: (np.frombuffer(t, np.uint8).astype(np.int32) for t in g),
      lambda ds: ds.map(lambda t: tf.cast(tf.io.decode_raw(t, tf.uint8),
                                          tf.int32)))
  steps = [tokenize, data.Dup(), data.FilterByLength(60, min_length=2),
           data.BucketByLength([8, 16, 32], [16, 8, 4, 2]),
           data.AddLossWeights(id_to_mask=0), data.Prefetch()]
  python = list(data.Serial(lambda _: iter(texts), *steps)())
  dataset = data.Serial(lambda _: tf.data.Dataset.from_tensor_slices(texts),
                        *steps)()
  assert isinstance(dataset, tf.data.Dataset)
  assert len(python) > 10
  _recorded.assert_same([tuple(b) for b in python],
                        list(inputs.to_stream(dataset)))


def test_shuffle_on_a_dataset_is_seeded_and_keeps_every_example():
  ds = tf.data.Dataset.range(50)
  np.random.seed(4)
  first = list(inputs.to_stream(inputs.Shuffle(8)(ds)))
  np.random.seed(4)
  again = list(inputs.to_stream(inputs.Shuffle(8)(ds)))
  assert first == again and sorted(first) == list(range(50))
  assert first != list(range(50))


def test_user_function_on_a_dataset_gets_numpy_and_the_chain_goes_on():
  seen = []

  def my_step(generator):
    for x, y in generator:
      seen.append(type(x))
      yield (x + 1, y)
  source = lambda _: tf.data.Dataset.from_tensor_slices(
      (np.arange(4, dtype=np.int32)[:, None],) * 2)
  out = list(data.Serial(source, my_step, data.Batch(2))())
  assert seen[0] is np.ndarray
  np.testing.assert_array_equal(out[0][0], [[1], [2]])


def test_to_dataset_checks_the_signature_and_round_trips():
  sig = (data.inputs.Step,)  # Not a signature.
  with pytest.raises(TypeError, match='to_dataset: signature position 0'):
    inputs.to_dataset(lambda: iter([]), sig)
  with pytest.raises(ValueError, match='to_dataset: the stream is empty'):
    inputs.to_dataset(iter([]))
  ds = inputs.to_dataset(
      lambda: iter([(np.ones(3, np.int32),), (np.ones(4, np.int32),)]),
      (shapes.ShapeDtype((None,), np.int32),))
  assert [x.shape for (x,) in inputs.to_stream(ds)] == [(3,), (4,)]
  bad = inputs.to_dataset(lambda: iter([(np.ones(3),), (np.ones(3),) * 2]))
  with pytest.raises(Exception, match=r'to_dataset: example 1 has 2 values, '
                     r'but the signature has 1 positions'):
    list(inputs.to_stream(bad))
  ragged = inputs.to_dataset(lambda: iter([(np.ones(3),), (np.ones((2, 2)),)]))
  with pytest.raises(Exception, match=r'to_dataset: example 1 position 0 has '
                     r'shape \(2, 2\), but the signature says \(None,\)'):
    list(inputs.to_stream(ragged))


def test_dataset_errors_come_when_the_pipeline_is_built():
  pairs = inputs.to_dataset(lambda: iter(EX))
  with pytest.raises(ValueError, match=r'FilterByLength: length_keys names '
                     r'position 2, but examples have 2 value'):
    inputs.FilterByLength(5, length_keys=[2])(pairs)
  texts = tf.data.Dataset.from_tensor_slices((['a b'], ['c']))
  with pytest.raises(ValueError, match=r'AddLossWeights: position 1 holds '
                     r'string values where numbers \(token ids\)'):
    inputs.AddLossWeights()(texts)
  with pytest.raises(ValueError, match=r'ConcatenateToLMInput: expected '
                     r'\(inputs, targets\), \(x,\) or an array, got tuples '
                     r'of 3'):
    inputs.ConcatenateToLMInput()(inputs.AddLossWeights()(pairs))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='BucketByLength: an example is longer'):
    list(inputs.BucketByLength([4], [2])(pairs))


def test_loop_trains_from_a_dataset_pipeline(tmp_path):
  x = np.random.RandomState(0).randn(64, 3).astype(np.float32)
  y = (x.sum(axis=1) > 0).astype(np.int32)
  pipeline = data.Serial(
      lambda _: tf.data.Dataset.from_tensor_slices((x, y)).repeat(),
      data.Batch(16), data.AddLossWeights())
  task = training.TrainTask(pipeline(), tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(0.01))
  loop = training.Loop(tl.Serial(tl.Dense(2)), task,
                       output_dir=str(tmp_path))
  loop.run(3)
  assert loop.step == 3
