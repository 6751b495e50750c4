"""Serving a decode: one `generate` call against a decode_step per token.

A 2-layer TransformerLM (vocab 256, d_model 128, d_ff 512, 4 heads, no
dropout) is saved once with `export.decode_signatures` (`init_cache` +
`decode_step`) and `export.generate_signature` (XLA, the default, and
`jit_compile=False`), then loaded with `tf.saved_model.load`, as a server
would, and asked for N greedy tokens (default 64) for a batch of one:

* `decode_step x N`: `init_cache`, then N calls of `decode_step` from
  Python, each sending the token and the whole cache and taking the logits
  and the new cache back, with the argmax on the host;
* `generate`: one call of the `generate` signature, the loop in the graph;
* `generate (no XLA)`: the same signature built with `jit_compile=False`.

All three are checked to give the same tokens. After one warm-up call each,
they run interleaved for --rounds rounds; the median tokens/s is printed,
with the machine's fp32 matmul GFLOP/s.

Usage:
  python bench/generate_bench.py [--rounds 5] [--tokens 64]
"""

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from bench import _common  # pylint: disable=g-import-not-at-top
from tfnp_trax import export  # pylint: disable=g-import-not-at-top
from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top
from tfnp_trax import models  # pylint: disable=g-import-not-at-top
from tfnp_trax import shapes  # pylint: disable=g-import-not-at-top

CONFIG = dict(vocab_size=256, d_model=128, d_ff=512, n_heads=4, n_layers=2,
              max_len=128, dropout=0.0)


def save(path, tokens):
  """Saves the model with all three ways of decoding; returns the path."""
  model = models.TransformerLM(mode='eval', **CONFIG)
  model.init(shapes.ShapeDtype((1, 8), np.int32),
             rng=fastmath.random.get_prng(0))

  def predict():
    return models.TransformerLM(mode='predict', **CONFIG)
  signatures = dict(export.decode_signatures(predict(), 1))
  signatures['generate'] = export.generate_signature(
      predict(), tokens, eos_id=-1, input_length=0)
  signatures['generate_no_xla'] = export.generate_signature(
      predict(), tokens, eos_id=-1, input_length=0, jit_compile=False)
  export.save_model(model, path, shapes.ShapeDtype((1, 8), np.int32),
                    signatures=signatures)
  return path


def runs(loaded, tokens):
  """`{name: run}`; each run returns the N tokens as a (1, N) array."""
  sigs = loaded.signatures
  empty = tf.zeros([1, 0], tf.int32)

  def stepwise():
    cache = sigs['init_cache'](batch_size=tf.constant(1))
    token = np.zeros((1, 1), np.int32)
    out = []
    for _ in range(tokens):
      result = sigs['decode_step'](tokens=tf.constant(token), **cache)
      cache = {k: v for k, v in result.items() if k.startswith('cache_')}
      token = np.argmax(result['logits'].numpy()[:, -1], -1).astype(
          np.int32)[:, None]
      out.append(token[:, 0])
    return np.stack(out, axis=1)

  return {
      f'decode_step x {tokens}': stepwise,
      'generate': lambda: sigs['generate'](inputs=empty)['outputs'].numpy(),
      'generate (no XLA)': lambda: sigs['generate_no_xla'](
          inputs=empty)['outputs'].numpy(),
  }


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--rounds', type=int, default=5)
  parser.add_argument('--tokens', type=int, default=64)
  args = parser.parse_args()

  with tempfile.TemporaryDirectory() as root:
    loaded = tf.saved_model.load(save(os.path.join(root, 'lm'), args.tokens))
    variants = runs(loaded, args.tokens)
    first, outputs = {}, {}
    for name, run in variants.items():
      start = time.perf_counter()
      outputs[name] = run()
      first[name] = time.perf_counter() - start
    reference = outputs[f'decode_step x {args.tokens}']
    for name, out in outputs.items():
      assert np.array_equal(out, reference), f'{name} decoded other tokens'
    rates = {name: [] for name in variants}
    for _ in range(args.rounds):
      for name, run in variants.items():
        start = time.perf_counter()
        run()
        rates[name].append(args.tokens / (time.perf_counter() - start))

  print(f'TransformerLM {CONFIG}, loaded SavedModel, batch 1, '
        f'{args.tokens} greedy tokens, {args.rounds} rounds (identical '
        f'tokens in all variants); fp32 matmul '
        f'{_common.matmul_peak_gflops():.0f} GFLOP/s')
  print(f'{"variant":20s} {"tokens/s":>10s} {"ms/call":>9s} '
        f'{"first call (s)":>15s}')
  medians = {n: _common.median(r) for n, r in rates.items()}
  for name in variants:
    print(f'{name:20s} {medians[name]:10.1f} '
          f'{1e3 * args.tokens / medians[name]:9.1f} {first[name]:15.2f}')
  base = medians[f'decode_step x {args.tokens}']
  for name in ('generate', 'generate (no XLA)'):
    print(f'{name} over decode_step x {args.tokens}: '
          f'{medians[name] / base:.1f}x')


if __name__ == '__main__':
  main()
