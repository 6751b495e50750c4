"""Input-pipeline throughput: the generator path against the tf.data path.

  python bench/data_bench.py [--rounds 3] [--max-bytes 3000000] [--no-step]

The LM pipeline of `trax.data.inputs`' docstring, on text from the Python
standard library (`tfnp_trax.data.pylm`), split into paragraphs:

  paragraphs -> Tokenize -> Dup -> Shuffle(1024) -> FilterByLength(512)
    -> BucketByLength -> AddLossWeights(id_to_mask=0) -> Prefetch

runs over the corpus on each path (Python iterators, as Trax; and a
`tf.data.Dataset` source, where the steps run as tf.data ops on blocks of
examples), interleaved over several rounds, and the median tokens/s (real,
unpadded tokens: the sum of the loss weights) is printed, with the fp32
matmul GFLOP/s of the machine at the time. Two tokenizers: `vocab_type='char'`
(UTF-8 bytes) and Trax's `en_8k.subword`; both run in Python on the
generator path and as TensorFlow ops on the tf.data path (no
`tf.py_function`). The reference TransformerLM training step
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
from tfnp_trax.data import _vocab
from tfnp_trax.data import pylm

_STEP_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'step_one.py')
_STEP_TOKENS = 16 * 128  # The reference LM's batch.
_VOCAB_DIR = os.path.join(_common.REPO, 'tests', 'testdata', 'trax_vocab')
_BOUNDARIES = [32, 64, 128, 256, 512]
_BATCH_SIZES = [128, 64, 32, 16, 8, 4]


def paragraphs(max_bytes):
  train, _ = pylm.load_corpus(max_bytes=max_bytes)
  return [p for p in train.tobytes().split(b'\n\n') if p.strip()]


def pipeline(texts, on_dataset, tokenizer):
  if on_dataset:
    source = lambda _: tf.data.Dataset.from_tensor_slices(texts)
  else:
    source = lambda _: iter(texts)
  if tokenizer == 'char':
    tokenize = data.Tokenize(vocab_type='char')
  else:
    tokenize = data.Tokenize(vocab_type='subword', vocab_dir=_VOCAB_DIR,
                             vocab_file='en_8k.subword')
  return data.Serial(
      source, tokenize, data.Dup(), data.Shuffle(1024),
      data.FilterByLength(max_length=512),
      data.BucketByLength(_BOUNDARIES, _BATCH_SIZES),
      data.AddLossWeights(id_to_mask=0),
      data.Prefetch(2))()


def tokens_per_second(texts, on_dataset, tokenizer, epochs):
  """Times `epochs` passes over `texts` through the pipeline.

  The clock starts once the pipeline is built (building traces the tf.data
  functions; its time is returned apart) and runs to the last batch, so the
  time to fill the shuffle queue and the first blocks is counted on both
  paths, and work read ahead before the first batch is not counted twice.

  Returns:
    (real tokens/s, padded tokens/s, build seconds, first batch seconds,
    real tokens/s after the first batch).
  """
  np.random.seed(0)
  if tokenizer == 'subword':
    # The encoder caches words it has split; start each run cold, so that
    # neither path profits from the one run before it.
    encoder = _vocab.get_vocab('subword', 'en_8k.subword', _VOCAB_DIR)
    encoder._cache.clear()  # pylint: disable=protected-access
  start = time.perf_counter()
  source = texts * epochs
  stream = pipeline(source, on_dataset, tokenizer)
  built = time.perf_counter()
  stream = iter(stream)
  batch = next(stream)
  first = time.perf_counter()
  real = padded = first_real = 0
  while batch is not None:
    weights = batch[2]
    if on_dataset:
      # As Loop consumes a Dataset: tensors, read back only for counting.
      weights = weights.numpy()
    real += int(weights.sum())
    padded += weights.size
    if not first_real:
      first_real = real
    batch = next(stream, None)
  end = time.perf_counter()
  elapsed = end - built
  # Once running: the tokens after the first batch over the time after it
  # (the first batch waits for the shuffle buffer and the start-up of the
  # pipeline's threads and functions, once per pipeline on either path).
  steady = (real - first_real) / (end - first)
  return (real / elapsed, padded / elapsed, built - start, first - built,
          steady)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--max-bytes', type=int, default=3_000_000)
  parser.add_argument('--epochs', type=int, default=2,
                      help='Passes over the corpus per measurement.')
  parser.add_argument('--no-step', action='store_true')
  args = parser.parse_args()

  texts = paragraphs(args.max_bytes)
  corpus = {'char': texts, 'subword': texts}
  epochs = {'char': args.epochs, 'subword': args.epochs}
  for tok, texts in corpus.items():
    print(f'{tok}: {len(texts)} paragraphs, {sum(map(len, texts))} bytes, '
          f'{epochs[tok]} pass(es)')
  configs = [(tok, path) for tok in ('char', 'subword') for path in
             ('generator', 'tf.data')]
  results = {c: [] for c in configs}
  running = {c: [] for c in configs}
  firsts = {c: [] for c in configs}
  steps = []
  for rnd in range(args.rounds):
    for tok, path in configs:
      real, padded, build, first, steady = tokens_per_second(
          corpus[tok], path == 'tf.data', tok, epochs[tok])
      results[(tok, path)].append(real)
      running[(tok, path)].append(steady)
      firsts[(tok, path)].append(first)
      print(f'round {rnd}: {path:9s} tokenizer={tok:7s} {real:12,.0f} '
            f'tokens/s ({padded:12,.0f} padded; {steady:12,.0f} after the '
            f'first batch), built in {build:.2f}s, first batch after '
            f'{first:.2f}s', flush=True)
    if not args.no_step:
      r = _common.run_config(_STEP_SCRIPT,
                             ['--model', 'lm', '--impl', 'ours'])
      steps.append(r['steps_per_s'] * _STEP_TOKENS)
      print(f'round {rnd}: TransformerLM step {steps[-1]:12,.0f} tokens/s',
            flush=True)

  peak = _common.matmul_peak_gflops()
  print(f'\nfp32 matmul peak here: {peak:.0f} GFLOP/s\n')
  median = {c: _common.median(v) for c, v in results.items()}
  median_running = {c: _common.median(v) for c, v in running.items()}
  step = _common.median(steps) if steps else None
  for (tok, path), value in median.items():
    line = (f'{path:9s} tokenizer={tok:7s} {value:12,.0f} tokens/s overall, '
            f'{median_running[(tok, path)]:12,.0f} after the first batch '
            f'(first batch after {_common.median(firsts[(tok, path)]):.2f}s)')
    if step:
      line += f'  {value / step:6.1f}x the LM step'
    print(line)
  for tok in ('char', 'subword'):
    ratio = median[(tok, 'tf.data')] / median[(tok, 'generator')]
    ratio_running = (median_running[(tok, 'tf.data')] /
                     median_running[(tok, 'generator')])
    print(f'tokenizer={tok}: tf.data / generator = {ratio:.2f}x overall, '
          f'{ratio_running:.2f}x after the first batch')
  if step:
    print(f'TransformerLM step: {step:,.0f} tokens/s '
          f'({step / _STEP_TOKENS:.2f} steps/s)')


if __name__ == '__main__':
  main()
