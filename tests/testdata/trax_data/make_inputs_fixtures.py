"""Records real Trax 1.4.1 `trax.data.inputs` outputs for tests/data/.

Run with the side venv that has Trax installed (never in CI):
  JAX_PLATFORMS=cpu /work/trax_venv/bin/python make_inputs_fixtures.py
Writes `inputs.npz`: for each case, the inputs fed and the outputs Trax gave,
as arrays keyed `<case>/<example>/<position>`.
"""

import random

import numpy as np
from trax.data import inputs

OUT = {}


def record(case, examples):
  examples = list(examples)
  OUT[f'{case}/n'] = np.array(len(examples))
  for i, ex in enumerate(examples):
    ex = ex if isinstance(ex, tuple) else (ex,)
    for j, x in enumerate(ex):
      OUT[f'{case}/{i}/{j}'] = np.asarray(x)


def lm_examples(n=40, seed=0):
  rng = np.random.RandomState(seed)
  out = []
  for _ in range(n):
    length = int(rng.randint(1, 24))
    x = rng.randint(0, 9, size=length).astype(np.int32)
    out.append((x, x.copy()))
  return out


def main():
  ex = lm_examples()
  record('lm_examples', ex)
  record('batch', inputs.Batch(3)(iter(ex)))
  record('bucket', inputs.BucketByLength([4, 8, 16], [5, 4, 3, 2])(iter(ex)))
  record('bucket_strict', inputs.BucketByLength(
      [4, 8, 16], [5, 4, 3, 2], strict_pad_on_len=True)(iter(ex)))
  record('bucket_keys0', inputs.BucketByLength(
      [6, 12], [4, 3, 2], length_keys=[0])(iter(ex)))
  record('add_loss_weights', inputs.AddLossWeights()(iter(ex)))
  record('add_loss_weights_mask0', inputs.AddLossWeights(id_to_mask=0)(
      inputs.Batch(4)(iter(ex))))
  record('concat_lm', inputs.ConcatenateToLMInput()(iter(ex)))
  record('concat_lm_pad', inputs.ConcatenateToLMInput(pad_to_length=48)(
      iter(ex)))
  record('filter_by_length', inputs.FilterByLength(12, min_length=3)(iter(ex)))
  record('pad_to_length', inputs.PadToLength(
      len_map={0: 20, 1: 25}, pad_value={0: 0, 1: -1})(
          iter([(a, b) for a, b in ex if len(a) <= 20])))
  record('pad_to_length_multiple', inputs.PadToLength(
      len_map={0: 8}, pad_value={0: 7}, multiple=True)(iter(ex)))
  record('truncate', inputs.TruncateToLength({0: (10,), 1: (5,)})(iter(ex)))
  record('dup', inputs.Dup()(iter([(a,) for a, _ in ex[:5]])))
  record('append_value', inputs.AppendValue({0: [1, 2], 1: [3]})(iter(ex)))
  record('cast_to', inputs.CastTo(np.float32, indices=(1,))(iter(ex)))
  record('prefix_lm', inputs.PrefixLM(4, 6)(iter([a for a, _ in ex])))
  record('sequential_chunks', inputs.generate_sequential_chunks(5)(
      iter([a for a, _ in ex])))
  toks = [np.arange(1, 16, dtype=np.int32) + 10 * i for i in range(3)]
  masks = [inputs.random_spans_noise_mask(15, 0.3, 2.0, seed1=i, seed2=i + 7)
           for i in range(3)]
  record('noise_mask', masks)
  record('consume_noise_mask', inputs.consume_noise_mask(vocab_size=100)(
      iter(zip(toks, masks))))
  np.random.seed(3)
  record('shuffle', inputs.Shuffle(8)(iter(ex)))
  np.random.seed(5)
  record('mlm', inputs.MLM(vocab_size=50, max_length=10)(
      iter([a for a, _ in ex[:6]])))
  record('unbatch', inputs.UnBatch()(inputs.Batch(3)(iter(ex[:9]))))
  gens = [lambda k=k: iter([(np.array([k, i]),) for i in range(100)])
          for k in range(3)]
  for name, kw in [('parallel', {}),
                   ('parallel_counters', {'counters': (2, 1, 3)}),
                   ('parallel_gradual', {'counters': (1, 2, 5),
                                         'gradually_reweight': True}),
                   ('parallel_remainders', {'counters': (2, 5, 11),
                                            'gradually_reweight': True,
                                            'use_remainders': True})]:
    g = inputs.Parallel([lambda k=k: gens[k]() for k in range(3)], **kw)()
    record(name, [next(g) for _ in range(30)])
  record('pad_max_dims', [inputs.pad_to_max_dims(
      [np.ones((2, 10), np.int32), np.ones((3, 9), np.int32)])])
  record('pad_max_dims_boundary', [inputs.pad_to_max_dims(
      [np.ones((8, 10), np.int32), np.ones((8, 9), np.int32)], 12),
      inputs.pad_to_max_dims(
          [np.ones((2, 10), np.int32), np.ones((3, 9), np.int32)], 12),
      inputs.pad_to_max_dims(
          [np.ones((5, 3), np.int32), np.ones((7, 1), np.int32)], 4,
          strict_pad_on_len=True)])
  # Synthetic tasks: seeded, so the same draws give the same batches.
  for name, make in [
      ('sequence_copy', lambda: inputs.sequence_copy_inputs(
          vocab_size=10, batch_size=3, train_length=9, eval_min_length=4,
          eval_max_length=8)),
      ('sequence_copy_reverse', lambda: inputs.sequence_copy_inputs(
          vocab_size=10, batch_size=3, train_length=9, eval_min_length=4,
          eval_max_length=8, reverse=True, pad_to_multiple=8)),
      ('simple_sequence_copy', lambda: inputs.simple_sequence_copy_inputs(
          vocab_size=10, batch_size=3, train_length=9, eval_min_length=4,
          eval_max_length=8, pad_to_multiple=4)),
      ('addition', lambda: inputs.addition_inputs(
          vocab_size=13, batch_size=3, train_length=12, eval_min_length=5,
          eval_max_length=9, pad_to_multiple=8)),
      ('addition_encdec', lambda: inputs.addition_inputs(
          vocab_size=13, batch_size=3, train_length=12, eval_min_length=5,
          eval_max_length=9, pad_to_multiple=8, encdec=True)),
      ('sine', lambda: inputs.sine_inputs(batch_size=2, length=6))]:
    random.seed(1)
    np.random.seed(1)
    task = make()
    train = task.train_stream(1)
    record(name + '_train', [next(train) for _ in range(3)])
    evals = task.eval_stream(1)
    record(name + '_eval', [next(evals) for _ in range(2)])
  np.random.seed(2)
  b = inputs.batcher((lambda: iter(ex * 3), lambda: iter(ex)),
                     batch_size=4, eval_batch_size=2, bucket_length=8,
                     id_to_mask=0)
  train = b.train_stream(1)
  record('batcher_train', [next(train) for _ in range(6)])
  record('batcher_eval', list(b.eval_stream(1)))
  b = inputs.batcher((lambda: iter(ex), lambda: iter(ex)),
                     variable_shapes=False, batch_size=4, eval_batch_size=3)
  record('batcher_fixed', list(b.train_stream(1)))
  np.savez_compressed('inputs.npz', **OUT)


if __name__ == '__main__':
  main()
