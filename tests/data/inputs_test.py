"""tfnp_trax.data.inputs, Python path: recorded Trax outputs and hand values.

Recorded cases come from tests/testdata/trax_data/inputs.npz (real Trax
1.4.1); hand cases are worked out from Trax's definitions.
"""

import random

import numpy as np
import pytest

from tests.data import _recorded
from tfnp_trax import data
from tfnp_trax.data import inputs

EX = _recorded.load('lm_examples')  # 40 (x, x) int32 pairs, lengths 1..23.
TOKENS = [a for a, _ in EX]

RECORDED_STEPS = {
    'batch': lambda: inputs.Batch(3),
    'bucket': lambda: inputs.BucketByLength([4, 8, 16], [5, 4, 3, 2]),
    'bucket_strict': lambda: inputs.BucketByLength(
        [4, 8, 16], [5, 4, 3, 2], strict_pad_on_len=True),
    'bucket_keys0': lambda: inputs.BucketByLength([6, 12], [4, 3, 2],
                                                  length_keys=[0]),
    'add_loss_weights': inputs.AddLossWeights,
    'add_loss_weights_mask0': lambda: inputs.Serial(
        inputs.Batch(4), inputs.AddLossWeights(id_to_mask=0)),
    'concat_lm': inputs.ConcatenateToLMInput,
    'concat_lm_pad': lambda: inputs.ConcatenateToLMInput(pad_to_length=48),
    'filter_by_length': lambda: inputs.FilterByLength(12, min_length=3),
    'pad_to_length_multiple': lambda: inputs.PadToLength(
        len_map={0: 8}, pad_value={0: 7}, multiple=True),
    'truncate': lambda: inputs.TruncateToLength({0: (10,), 1: (5,)}),
    'append_value': lambda: inputs.AppendValue({0: [1, 2], 1: [3]}),
    'cast_to': lambda: inputs.CastTo(np.float32, indices=(1,)),
    'unbatch': lambda: inputs.Serial(inputs.Batch(3), inputs.UnBatch()),
}
RECORDED_INPUTS = {'unbatch': EX[:9]}


@pytest.mark.parametrize('case', sorted(RECORDED_STEPS))
def test_steps_match_trax(case):
  examples = RECORDED_INPUTS.get(case, EX)
  got = list(RECORDED_STEPS[case]()(iter(examples)))
  _recorded.assert_same(_recorded.load(case), got)


def test_token_steps_match_trax():
  short = [(a, b) for a, b in EX if len(a) <= 20]
  _recorded.assert_same(
      _recorded.load('pad_to_length'),
      inputs.PadToLength(len_map={0: 20, 1: 25}, pad_value={0: 0, 1: -1})(
          iter(short)))
  _recorded.assert_same(_recorded.load('dup'),
                        inputs.Dup()(iter([(a,) for a in TOKENS[:5]])))
  _recorded.assert_same(_recorded.load('prefix_lm'),
                        inputs.PrefixLM(4, 6)(iter(TOKENS)))
  _recorded.assert_same(_recorded.load('sequential_chunks'),
                        inputs.generate_sequential_chunks(5)(iter(TOKENS)))


def test_noise_masks_and_seeded_steps_match_trax():
  toks = [np.arange(1, 16, dtype=np.int32) + 10 * i for i in range(3)]
  masks = [inputs.random_spans_noise_mask(15, 0.3, 2.0, seed1=i, seed2=i + 7)
           for i in range(3)]
  _recorded.assert_same(_recorded.load('noise_mask'), masks)
  _recorded.assert_same(
      _recorded.load('consume_noise_mask'),
      inputs.consume_noise_mask(vocab_size=100)(iter(zip(toks, masks))))
  np.random.seed(3)
  _recorded.assert_same(_recorded.load('shuffle'),
                        inputs.Shuffle(8)(iter(EX)))
  np.random.seed(5)
  _recorded.assert_same(_recorded.load('mlm'), inputs.MLM(
      vocab_size=50, max_length=10)(iter(TOKENS[:6])))


@pytest.mark.parametrize('case,kwargs', [
    ('parallel', {}),
    ('parallel_counters', {'counters': (2, 1, 3)}),
    ('parallel_gradual', {'counters': (1, 2, 5), 'gradually_reweight': True}),
    ('parallel_remainders', {'counters': (2, 5, 11),
                             'gradually_reweight': True,
                             'use_remainders': True}),
])
def test_parallel_order_matches_trax(case, kwargs):
  sources = [lambda k=k: iter([(np.array([k, i]),) for i in range(100)])
             for k in range(3)]
  stream = inputs.Parallel(sources, **kwargs)()
  _recorded.assert_same(_recorded.load(case),
                        [next(stream) for _ in range(30)])


def test_parallel_takes_the_incoming_stream_as_gen():
  # Follows trax/data/inputs.py Parallel: `parallel_generator(gen=None)`;
  # each source is called with `gen` (here ignoring it) and they alternate.
  seen = []
  sources = [lambda g: seen.append(g) or iter(range(10)),
             lambda g: iter(range(10, 20))]
  incoming = object()
  stream = inputs.Parallel(sources)(gen=incoming)
  assert [next(stream) for _ in range(6)] == [0, 10, 1, 11, 2, 12]
  assert seen == [incoming]


@pytest.mark.parametrize('name,make,exact', [
    ('sequence_copy', lambda: inputs.sequence_copy_inputs(
        vocab_size=10, batch_size=3, train_length=9, eval_min_length=4,
        eval_max_length=8), True),
    ('sequence_copy_reverse', lambda: inputs.sequence_copy_inputs(
        vocab_size=10, batch_size=3, train_length=9, eval_min_length=4,
        eval_max_length=8, reverse=True, pad_to_multiple=8), True),
    ('simple_sequence_copy', lambda: inputs.simple_sequence_copy_inputs(
        vocab_size=10, batch_size=3, train_length=9, eval_min_length=4,
        eval_max_length=8, pad_to_multiple=4), True),
    ('addition', lambda: inputs.addition_inputs(
        vocab_size=13, batch_size=3, train_length=12, eval_min_length=5,
        eval_max_length=9, pad_to_multiple=8), True),
    ('addition_encdec', lambda: inputs.addition_inputs(
        vocab_size=13, batch_size=3, train_length=12, eval_min_length=5,
        eval_max_length=9, pad_to_multiple=8, encdec=True), True),
    # sin/exp may differ in the last bit between NumPy versions.
    ('sine', lambda: inputs.sine_inputs(batch_size=2, length=6), False),
])
def test_synthetic_inputs_match_trax(name, make, exact):
  random.seed(1)
  np.random.seed(1)
  task = make()
  train = task.train_stream(1)
  _recorded.assert_same(_recorded.load(name + '_train'),
                        [next(train) for _ in range(3)], exact)
  evals = task.eval_stream(1)
  _recorded.assert_same(_recorded.load(name + '_eval'),
                        [next(evals) for _ in range(2)], exact)


def test_batcher_matches_trax():
  np.random.seed(2)
  b = inputs.batcher((lambda: iter(EX * 3), lambda: iter(EX)), batch_size=4,
                     eval_batch_size=2, bucket_length=8, id_to_mask=0)
  train = b.train_stream(1)
  _recorded.assert_same(_recorded.load('batcher_train'),
                        [next(train) for _ in range(6)])
  _recorded.assert_same(_recorded.load('batcher_eval'),
                        list(b.eval_stream(1)))
  b = inputs.batcher((lambda: iter(EX), lambda: iter(EX)),
                     variable_shapes=False, batch_size=4, eval_batch_size=3)
  _recorded.assert_same(_recorded.load('batcher_fixed'),
                        list(b.train_stream(1)))


# --- Hand-computed values from Trax's definitions. ---


def _ex(*lengths):
  return [(np.arange(1, n + 1, dtype=np.int32),) * 2 for n in lengths]


def test_batch_pads_with_zeros_and_drops_the_remainder():
  out = list(inputs.Batch(2)(iter(_ex(1, 3, 2, 2, 5))))
  assert len(out) == 2  # The fifth example makes no full batch.
  np.testing.assert_array_equal(out[0][0], [[1, 0, 0], [1, 2, 3]])
  np.testing.assert_array_equal(out[1][1], [[1, 2], [1, 2]])
  assert out[0][0].dtype == np.int32


def test_bucket_boundaries_are_inclusive_with_per_bucket_batch_sizes():
  # Lengths 2, 3 -> bucket 0 (<= 3, size 2); 4, 5, 9 -> bucket 1 (<= 8?
  # no: 9 > 8) -> bucket 2 (unbounded, size 1).
  step = inputs.BucketByLength([3, 8], [2, 3, 1])
  out = list(step(iter(_ex(4, 2, 9, 3, 5, 8, 7))))
  shapes = [b[0].shape for b in out]
  # 9 fills bucket 2 at once (no boundary: padded to its own length);
  # bucket 0 fills with (2, 3), padded: max 3 vs boundary 3 -> 3;
  # bucket 1 fills with (4, 5, 8): max 8 == boundary -> 8.
  assert shapes == [(1, 9), (2, 3), (3, 8)]
  np.testing.assert_array_equal(out[1][0], [[1, 2, 0], [1, 2, 3]])


def test_bucket_pads_short_batches_to_a_power_of_two_not_the_boundary():
  out = list(inputs.BucketByLength([16], [2, 1])(iter(_ex(3, 2))))
  # max 3, boundary 16: 2 * 3 < 16, so the next power of two, 4.
  assert out[0][0].shape == (2, 4)
  out = list(inputs.BucketByLength([16], [2, 1])(iter(_ex(9, 2))))
  assert out[0][0].shape == (2, 16)  # 2 * 9 >= 16: the boundary.


def test_add_loss_weights_with_and_without_id_to_mask():
  x = np.array([5, 0, 7, 0], np.int32)
  (_, _, w), = inputs.AddLossWeights()(iter([(x, x)]))
  np.testing.assert_array_equal(w, [1, 1, 1, 1])
  assert w.dtype == np.float32
  (_, _, w), = inputs.AddLossWeights(id_to_mask=0)(iter([(x, x)]))
  np.testing.assert_array_equal(w, [1, 0, 1, 0])
  given = np.array([0.5, 2, 3, 4])
  (_, _, w), = inputs.AddLossWeights(id_to_mask=7)(iter([(x, x, given)]))
  np.testing.assert_array_equal(w, [0.5, 2, 0, 4])
  assert w.dtype == np.float32
  four = (x, x, x, x)
  assert list(inputs.AddLossWeights()(iter([four])))[0] is four


def test_concatenate_to_lm_input():
  x, y = np.array([1, 2]), np.array([3, 4, 5])
  (xy, xy2, w), = inputs.ConcatenateToLMInput(pad_to_length=7)(
      iter([(x, y)]))
  np.testing.assert_array_equal(xy, [1, 2, 3, 4, 5, 0, 0])
  np.testing.assert_array_equal(xy2, xy)
  np.testing.assert_array_equal(w, [0, 0, 1, 1, 1, 0, 0])
  (a, b), = inputs.ConcatenateToLMInput()(iter([x]))
  assert a is x and b is x


def test_prefix_lm_and_sequential_chunks():
  x = np.arange(10)
  pairs = list(inputs.PrefixLM(input_length=3, output_length=2)(iter([x])))
  assert [(p.tolist(), q.tolist()) for p, q in pairs] == [
      ([0, 1, 2], [3, 4]), ([5, 6, 7], [8, 9])]
  chunks = list(inputs.generate_sequential_chunks(4)(iter([x])))
  assert [c.tolist() for c in chunks] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_noise_mask_span_statistics():
  np.random.seed(0)
  length, density, mean_span = 200, 0.15, 3.0
  for _ in range(20):
    mask = inputs.random_spans_noise_mask(length, density, mean_span)
    assert mask.shape == (length,) and mask.dtype == bool
    assert mask.sum() == round(length * density)  # Exactly 30 noise tokens.
    assert not mask[0]  # Non-noise comes first.
    starts = np.flatnonzero(mask & ~np.pad(mask[:-1], (1, 0)))
    assert len(starts) == round(30 / mean_span)  # 10 noise spans.
  # Degenerate lengths still get one noise and one non-noise token.
  np.testing.assert_array_equal(inputs.random_spans_noise_mask(2), [0, 1])


def test_consume_noise_mask_by_hand():
  tokens = np.array([10, 11, 12, 13, 14, 15])
  mask = np.array([0, 1, 1, 0, 1, 0], bool)
  (inp, tgt), = inputs.consume_noise_mask(vocab_size=100)(
      iter([(tokens, mask)]))
  np.testing.assert_array_equal(inp, [10, 99, 13, 98, 15])
  np.testing.assert_array_equal(tgt, [99, 11, 12, 98, 14, 97])


def test_user_functions_compose_inside_serial():
  def my_step(generator):
    for x, y in generator:
      yield (x * 2, y)
  out = list(data.Serial(lambda _: iter(_ex(2, 2)), my_step,
                         data.Batch(2), data.AddLossWeights())())
  np.testing.assert_array_equal(out[0][0], [[2, 4], [2, 4]])
  assert len(out[0]) == 3


def test_prefetch_keeps_order_ends_and_reraises():
  assert [x for (x,) in inputs.Prefetch(2)(iter([(i,) for i in range(20)]))
          ] == list(range(20))

  def broken():
    yield (1,)
    raise KeyError('source failed')
  with pytest.raises(KeyError, match='source failed'):
    list(inputs.Prefetch()(broken()))


def test_count_and_skip_resumes(tmp_path):
  inputs.data_counters.clear()
  stream = inputs.CountAndSkip('c')(iter(range(10)))
  assert [next(stream) for _ in range(3)] == [0, 1, 2]
  inputs.save_data_counters(str(tmp_path), host_id=0)
  inputs.data_counters.clear()
  inputs.load_data_counters(str(tmp_path), host_id=0)
  assert list(inputs.CountAndSkip('c')(iter(range(5)))) == [3, 4]
  skipped = inputs.UniformlySeek('d', host_id=1, n_hosts=2, dataset_size=10)
  assert list(skipped(iter(range(8)))) == [5, 6, 7]


def test_pad_to_max_dims_rules():
  a, b = np.ones((2, 10), np.int32), np.ones((3, 9), np.int32)
  assert inputs.pad_to_max_dims([a, b]).shape == (2, 3, 10)
  # Boundary 12: dim 0 has max 3 and 2 * 3 < 12 -> 4; dim 1 -> 12.
  assert inputs.pad_to_max_dims([a, b], 12).shape == (2, 4, 12)
  c, d = np.ones((5, 3), np.int32), np.ones((7, 1), np.int32)
  assert inputs.pad_to_max_dims([c, d], 4, strict_pad_on_len=True).shape == (
      2, 8, 4)


def test_lower_endian_helpers():
  assert inputs.number_to_lower_endian(123, 10) == [3, 2, 1]
  assert inputs.lower_endian_to_number([3, 2, 1], 10) == 123
  np.random.seed(0)
  digits = inputs.random_number_lower_endian(5, 7)
  assert len(digits) == 5 and digits[-1] != 0


# --- Bad input: the step, the position and what it got. ---


def test_errors_name_the_step_position_and_value():
  with pytest.raises(ValueError, match=r'Batch: position 0 of example 1 has '
                     r'shape \(2, 2\), but example 0 has shape \(3,\)'):
    list(inputs.Batch(2)(iter([(np.ones(3),), (np.ones((2, 2)),)])))
  with pytest.raises(ValueError, match=r'Batch: examples 0..1 have '
                     r'different numbers of values \[1, 2\]'):
    list(inputs.Batch(2)(iter([(np.ones(3),), (np.ones(3), np.ones(3))])))
  with pytest.raises(ValueError, match=r'FilterByLength: length_keys names '
                     r'position 1, but examples have 1 value'):
    list(inputs.FilterByLength(5)(iter([(np.ones(3),)])))
  with pytest.raises(ValueError, match=r'AddLossWeights: example 0 has 4 '
                     r'value\(s\); masking id 0'):
    list(inputs.AddLossWeights(id_to_mask=0)(iter([(np.ones(1),) * 4])))
  with pytest.raises(ValueError, match=r'AddLossWeights: position 1 holds '
                     r'<U5 values where token ids are expected'):
    list(inputs.AddLossWeights()(iter([(np.array(['hello']),) * 2])))
  with pytest.raises(ValueError, match=r'CastTo: position 0 holds \|S2'):
    list(inputs.CastTo()(iter([(np.array([b'12']),)])))
  with pytest.raises(ValueError, match=r'BucketByLength: 2 boundaries '
                     r'\[4, 8\] need 3 batch sizes .* or 2 .* but 5 batch '
                     r'sizes \[4, 2, 1, 1, 1\] were given'):
    inputs.BucketByLength([4, 8], [4, 2, 1, 1, 1])
  with pytest.raises(TypeError, match=r"BucketByLength: batch_sizes\[1\] "
                     r"must be a positive int, got '2' \(str\)"):
    inputs.BucketByLength([4], [4, '2'])
  with pytest.raises(ValueError, match=r'BucketByLength: batch_sizes\[0\] '
                     r'must be positive, got 0'):
    inputs.BucketByLength([4], [0])
  with pytest.raises(ValueError, match=r'BucketByLength: an example of length '
                     r'9 is longer than the last boundary 8'):
    list(inputs.BucketByLength([4, 8], [2, 2])(iter(_ex(9))))
  with pytest.raises(ValueError, match=r'pad_to_max_dims: cannot pad <U3'):
    list(inputs.Batch(2)(iter([(np.array(['abc']),), (np.array(['a', 'b']),)])))
  with pytest.raises(ValueError, match=r'UnBatch: batch 0 has leading sizes '
                     r'\[2, 3\]'):
    list(inputs.UnBatch()(iter([(np.ones(2), np.ones(3))])))
  with pytest.raises(ValueError, match=r'consume_noise_mask: example 0 has 3 '
                     r'values; expected \(tokens, noise_mask\)'):
    list(inputs.consume_noise_mask()(iter([(1, 2, 3)])))
  with pytest.raises(ValueError, match=r'Parallel: got 2 streams but 3'):
    inputs.Parallel([iter, iter], counters=(1, 2, 3))
  with pytest.raises(ValueError, match=r'TruncateToLength: len_map\[0\] is '
                     r'256; give a shape tuple, e.g. \(256,\)'):
    inputs.TruncateToLength({0: 256})


def test_inputs_requires_a_function_and_reads_shapes():
  with pytest.raises(ValueError, match='initialized with a function'):
    inputs.Inputs(iter([]))
  batch = (np.zeros((4, 7), np.int32), np.zeros((4, 5), np.float32))
  bundle = inputs.Inputs(lambda _: iter([batch]))
  assert bundle.input_shape == (7,) and bundle.target_shape == (5,)
  assert bundle.input_dtype == np.int32 and bundle.target_dtype == np.float32
