"""Greedy decoding throughput: key/value cache versus recomputing the prefix.

A small TransformerLM (vocab 256, d_model 128, d_ff 512, 4 heads, 2 layers,
no dropout) generates N tokens (default 128; --tokens sets N, and max_len is
N too) for a batch of one, greedily, with
`tfnp_trax.supervised.decoding.autoregressive_sample`:

* `cached`: the model in 'predict' mode; each step feeds one token and
  attends against the key/value cache in the layer state.
* `recompute (pow2)`: the same weights in 'eval' mode with `eval_mode=True`;
  each step reruns the whole prefix, padded to the next power of two (one
  compiled step per padded length, as Trax does).
* `recompute (fixed N)`: as above, always padded to N = max_len positions,
  so one compiled step serves every length.
* `recompute (fixed N, XLA)`: the same computation as a hand-written loop
  whose step (forward over N positions plus argmax) is compiled with XLA,
  like the cached step: the strongest recompute baseline.

The cached step is compiled with XLA (`fastmath.jit(jit_compile=True)`), the
`eval_mode` steps with plain `fastmath.jit`, as `autoregressive_sample` does.
All variants are compiled and warmed up first; then they
run interleaved (A B C A B C ...) and the median tokens/s over the rounds is
reported, with the speed-up of the cache. The greedy tokens of all variants
are checked to be identical.

Usage:
  python bench/decoding_bench.py [--rounds 3] [--tokens 128]
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # pylint: disable=g-import-not-at-top

from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top
from tfnp_trax import models  # pylint: disable=g-import-not-at-top
from tfnp_trax import shapes  # pylint: disable=g-import-not-at-top
from tfnp_trax.fastmath import numpy as jnp  # pylint: disable=g-import-not-at-top
from tfnp_trax.supervised import decoding  # pylint: disable=g-import-not-at-top

CONFIG = dict(vocab_size=256, d_model=128, d_ff=512, n_heads=4, n_layers=2,
              max_len=128, dropout=0.0)  # max_len is set to --tokens.


def build(tokens):
  """Returns `{name: run}`; each run decodes `tokens` tokens from scratch."""
  eval_model = models.TransformerLM(mode='eval', **CONFIG)
  eval_model.init(shapes.ShapeDtype((1, CONFIG['max_len']), jnp.int32))
  predict_model = models.TransformerLM(mode='predict', **CONFIG)
  predict_model.init(shapes.ShapeDtype((1, 1), jnp.int32))
  predict_model.weights = eval_model.weights
  fresh_state = predict_model.state

  def cached():
    predict_model.state = fresh_state  # A new sequence: an empty cache.
    return decoding.autoregressive_sample(
        predict_model, temperature=0.0, eos_id=-1, max_length=tokens)

  def recompute(min_length):
    def run():
      return decoding.autoregressive_sample(
          eval_model, temperature=0.0, eos_id=-1, max_length=tokens,
          eval_mode=True, eval_min_length=min_length)
    return run

  weights = eval_model.weights

  def forward_argmax(ids, index):
    logits, _ = eval_model.pure_fn(ids, weights, eval_model.state,
                                   fastmath.random.get_prng(0))
    return jnp.argmax(jnp.take(logits, index, axis=1), axis=-1)
  xla_step = fastmath.jit(forward_argmax, jit_compile=True)

  def recompute_xla():
    # Position t's logits see only tokens before t (the model shifts right),
    # so later positions may hold anything: here zeros, filled as we go.
    generated = np.zeros((1, CONFIG['max_len']), np.int32)
    for t in range(tokens):
      token = xla_step(jnp.asarray(generated), jnp.asarray(t, jnp.int32))
      generated[:, t] = np.asarray(token)
    return generated[:, :tokens]

  return {'cached': cached,
          'recompute (pow2)': recompute(1),
          f'recompute (fixed {tokens})': recompute(CONFIG['max_len']),
          f'recompute (fixed {tokens}, XLA)': recompute_xla}


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--tokens', type=int, default=128)
  args = parser.parse_args()

  CONFIG['max_len'] = args.tokens
  runs = build(args.tokens)
  first, outputs = {}, {}
  for name, run in runs.items():
    start = time.perf_counter()
    outputs[name] = run()  # Traces and compiles every step shape used.
    first[name] = time.perf_counter() - start
  reference = outputs['cached']
  for name, out in outputs.items():
    assert np.array_equal(out, reference), f'{name} decoded other tokens'

  rates = {name: [] for name in runs}
  for _ in range(args.rounds):
    for name, run in runs.items():
      start = time.perf_counter()
      out = run()
      rates[name].append(out.shape[1] / (time.perf_counter() - start))

  print(f'TransformerLM {CONFIG}, batch 1, {args.tokens} greedy tokens, '
        f'{args.rounds} rounds (identical tokens in all variants)')
  print(f'{"variant":28s} {"tokens/s":>10s} {"first run (s)":>14s}')
  medians = {n: statistics.median(r) for n, r in rates.items()}
  for name in runs:
    print(f'{name:28s} {medians[name]:10.1f} {first[name]:14.2f}')
  for name in runs:
    if name != 'cached':
      print(f'speed-up of cached over {name}: '
            f'{medians["cached"] / medians[name]:.2f}x')


if __name__ == '__main__':
  main()
