"""Input-pipeline throughput: the generator path against the tf.data path.

  python bench/data_bench.py [--rounds 3] [--max-bytes 3000000] [--no-step]

The LM pipeline of `trax.data.inputs`' docstring, on text from the Python
standard library (`tfnp_trax.data.pylm`), split into paragraphs:

  paragraphs -> Tokenize (bytes) -> Dup -> Shuffle(1024)
    -> FilterByLength(512) -> BucketByLength -> AddLossWeights(id_to_mask=0)

runs once over the corpus on each path, interleaved over several rounds, and
the median tokens/s (real, unpadded tokens: the sum of the loss weights) is
printed. Two tokenizers are measured: an in-graph bytes tokenizer
(`tf.io.decode_raw`), and `data.Tokenize(vocab_type='char')`, which tokenizes
in Python on both paths. The reference TransformerLM training step
(BENCHMARKS.md, batch 16 x 128 tokens) is timed in the same run through
`step_one.py`, for the tokens/s the pipeline has to feed.

This is a benchmark, not a test.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# pylint: disable=g-import-not-at-top
import numpy as np
import tensorflow as tf

from bench import _common
from tfnp_trax import data
from tfnp_trax.data import pylm
from tfnp_trax.data._tf_path import Step

_STEP_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'step_one.py')
_STEP_TOKENS = 16 * 128  # The reference LM's batch.
_BOUNDARIES = [32, 64, 128, 256, 512]
_BATCH_SIZES = [128, 64, 32, 16, 8, 4]


def paragraphs(max_bytes):
  train, _ = pylm.load_corpus(max_bytes=max_bytes)
  return [p for p in train.tobytes().split(b'\n\n') if p.strip()]


def bytes_tokenize():
  """UTF-8 bytes as int64 ids: NumPy on one path, in-graph on the other."""
  return Step(
      'BytesTokenize',
      lambda g: (np.frombuffer(t, np.uint8).astype(np.int64) for t in g),
      lambda ds: ds.map(lambda t: tf.cast(tf.io.decode_raw(t, tf.uint8),
                                          tf.int64),
                        num_parallel_calls=tf.data.AUTOTUNE,
                        deterministic=True))


def pipeline(texts, on_dataset, tokenizer):
  if on_dataset:
    source = lambda _: tf.data.Dataset.from_tensor_slices(texts)
  else:
    source = lambda _: iter(texts)
  tokenize = (bytes_tokenize() if tokenizer == 'bytes'
              else data.Tokenize(vocab_type='char'))
  return data.Serial(
      source, tokenize, data.Dup(), data.Shuffle(1024),
      data.FilterByLength(max_length=512),
      data.BucketByLength(_BOUNDARIES, _BATCH_SIZES),
      data.AddLossWeights(id_to_mask=0),
      data.Prefetch(2))()


def tokens_per_second(texts, on_dataset, tokenizer):
  """One pass over `texts`: (real tokens/s, padded tokens/s, first batch s).

  The rate is taken from the first batch on, so it leaves out building the
  pipeline (tracing, on the tf.data path) and the shuffle queue's filling;
  the time to the first batch is returned apart.
  """
  np.random.seed(0)
  start = time.perf_counter()
  stream = iter(pipeline(texts, on_dataset, tokenizer))
  next(stream)
  first = time.perf_counter()
  real = padded = 0
  for batch in stream:
    weights = batch[2]
    if on_dataset:
      # As Loop consumes a Dataset: tensors, read back only for counting.
      weights = weights.numpy()
    real += int(weights.sum())
    padded += weights.size
  elapsed = time.perf_counter() - first
  return real / elapsed, padded / elapsed, first - start


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--max-bytes', type=int, default=3_000_000)
  parser.add_argument('--no-step', action='store_true')
  args = parser.parse_args()

  texts = paragraphs(args.max_bytes)
  print(f'{len(texts)} paragraphs, {sum(map(len, texts))} bytes')
  configs = [(tok, path) for tok in ('bytes', 'char') for path in
             ('generator', 'tf.data')]
  results = {c: [] for c in configs}
  steps = []
  for rnd in range(args.rounds):
    for tok, path in configs:
      real, padded, first = tokens_per_second(texts, path == 'tf.data', tok)
      results[(tok, path)].append((real, padded))
      print(f'round {rnd}: {path:9s} tokenizer={tok:5s} {real:12,.0f} '
            f'tokens/s ({padded:12,.0f} padded), first batch after '
            f'{first:.2f}s', flush=True)
    if not args.no_step:
      r = _common.run_config(_STEP_SCRIPT,
                             ['--model', 'lm', '--impl', 'ours'])
      steps.append(r['steps_per_s'] * _STEP_TOKENS)
      print(f'round {rnd}: TransformerLM step {steps[-1]:12,.0f} tokens/s',
            flush=True)

  print()
  median = {c: _common.median([r[0] for r in v]) for c, v in results.items()}
  step = _common.median(steps) if steps else None
  for (tok, path), value in median.items():
    line = f'{path:9s} tokenizer={tok:5s} {value:12,.0f} tokens/s'
    if step:
      line += f'  {value / step:6.1f}x the LM step'
    print(line)
  for tok in ('bytes', 'char'):
    ratio = median[(tok, 'tf.data')] / median[(tok, 'generator')]
    print(f'tokenizer={tok}: tf.data / generator = {ratio:.2f}x')
  if step:
    print(f'TransformerLM step: {step:,.0f} tokens/s '
          f'({step / _STEP_TOKENS:.2f} steps/s)')


if __name__ == '__main__':
  main()
