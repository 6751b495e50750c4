"""Mixed bfloat16 vs float32 training: speed and loss curves.

usage: python bench/precision_bench.py [--steps 500] [--speed_rounds 6]
                                       [--skip_speed] [--skip_curve]

Speed: the MLP and LM of bench/step_one.py, each built twice in this one
process (precision None and 'bf16'); timed in alternating blocks of steps so
that load from other processes on a shared machine hits both alike. Reports
the median seconds per step of each and the bf16/fp32 speed-up.

Curve: a small TransformerLM on the pylm byte corpus, trained `--steps`
steps in each precision from the same initial weights and batches; prints
the final smoothed loss (mean of the last 50 steps) of each and the gap.

Also prints the machine's fp32 and bf16 matmul GFLOP/s through TensorFlow
and whether the CPU advertises native bf16 (AVX512_BF16, AMX).
Prints one JSON line at the end.
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # pylint: disable=g-import-not-at-top

from bench import _common  # pylint: disable=g-import-not-at-top
from bench import step_one  # pylint: disable=g-import-not-at-top

CURVE_LM = dict(batch=16, seq=64, d_model=64, d_ff=256, heads=2, layers=2)


def cpu_flags():
  """Native-bf16 flags of this CPU (from /proc/cpuinfo)."""
  try:
    with open('/proc/cpuinfo') as f:
      flags = set(next(l for l in f if l.startswith('flags')).split())
  except (OSError, StopIteration):
    return {}
  return {name: name in flags for name in
          ('avx512_bf16', 'amx_bf16', 'amx_tile', 'avx512f')}


def _trainer(model_name, precision):
  from tfnp_trax import fastmath, optimizers, shapes  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised.trainer import Trainer  # pylint: disable=g-import-not-at-top
  batches = [tuple(b) + (np.ones(b[1].shape, np.float32),)
             for b in step_one._batches(model_name)]  # pylint: disable=protected-access
  mwl = step_one.ours_model_with_loss(model_name)
  mwl.init(shapes.signature(batches[0]), rng=fastmath.random.get_prng(0))
  trainer = Trainer(mwl, optimizers.Adam(1e-3, weight_decay_rate=0.0),
                    precision=precision)
  dist = [trainer.distribute_batch(b) for b in batches]
  count = [0]

  def step():
    i = count[0]
    loss, _ = trainer.one_step(dist[i % len(dist)],
                               fastmath.random.get_prng(i), i)
    count[0] += 1
    return float(loss)
  return step


def speed(model_name, rounds, block):
  """Median s/step of fp32 and bf16, timed in alternating blocks."""
  steps = {'fp32': _trainer(model_name, None),
           'bf16': _trainer(model_name, 'bf16')}
  for step in steps.values():
    for _ in range(5):  # Trace, compile and warm up.
      step()
  times = {k: [] for k in steps}
  for _ in range(rounds):
    for name, step in steps.items():
      for _ in range(block):
        t = time.perf_counter()
        step()
        times[name].append(time.perf_counter() - t)
  med = {k: statistics.median(v) for k, v in times.items()}
  return {'fp32_steps_per_s': 1.0 / med['fp32'],
          'bf16_steps_per_s': 1.0 / med['bf16'],
          'bf16_speedup': med['fp32'] / med['bf16']}


def curve(n_steps, precision, corpus):
  """Per-step training losses of the small LM on pylm."""
  from tfnp_trax import data, fastmath, models, optimizers, shapes  # pylint: disable=g-import-not-at-top
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised.trainer import Trainer  # pylint: disable=g-import-not-at-top
  c = CURVE_LM
  stream = data.lm_batches(corpus, c['batch'], c['seq'], seed=0)
  first = next(stream)
  net = models.TransformerLM(256, d_model=c['d_model'], d_ff=c['d_ff'],
                             n_heads=c['heads'], n_layers=c['layers'],
                             max_len=c['seq'], dropout=0.0)
  mwl = tl.Serial(net, tl.WeightedCategoryCrossEntropy())
  mwl.init(shapes.signature(first), rng=fastmath.random.get_prng(0))
  trainer = Trainer(mwl, optimizers.Adam(3e-3, weight_decay_rate=0.0,
                                         clip_grad_norm=1.0),
                    precision=precision)
  losses = []
  batch = first
  for i in range(n_steps):
    loss, _ = trainer.one_step(batch, fastmath.random.get_prng(i), i)
    losses.append(float(loss))
    batch = next(stream)
  return losses


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--steps', type=int, default=500)
  parser.add_argument('--speed_rounds', type=int, default=6)
  parser.add_argument('--block', type=int, default=5)
  parser.add_argument('--skip_speed', action='store_true')
  parser.add_argument('--skip_curve', action='store_true')
  args = parser.parse_args()
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  result = {'cpu_flags': cpu_flags(),
            'fp32_matmul_gflops': _common.matmul_peak_gflops(),
            'bf16_matmul_gflops': _common.matmul_peak_gflops(dtype=tf.bfloat16)}
  print(json.dumps(result), flush=True)
  if not args.skip_speed:
    for name in ('mlp', 'lm'):
      result[name] = speed(name, args.speed_rounds, args.block)
      print(name, json.dumps(result[name]), flush=True)
  if not args.skip_curve:
    from tfnp_trax import data  # pylint: disable=g-import-not-at-top
    corpus, _ = data.load_corpus(max_bytes=2_000_000)
    smoothed = {}
    for name, precision in (('fp32', None), ('bf16', 'bf16')):
      t = time.perf_counter()
      losses = curve(args.steps, precision, corpus)
      smoothed[name] = float(np.mean(losses[-50:]))
      print(f'{name}: first loss {losses[0]:.4f}, final smoothed loss '
            f'{smoothed[name]:.4f} ({time.perf_counter() - t:.0f}s)',
            flush=True)
    gap = abs(smoothed['bf16'] - smoothed['fp32']) / smoothed['fp32']
    result['curve'] = {'steps': args.steps, 'fp32_final': smoothed['fp32'],
                       'bf16_final': smoothed['bf16'],
                       'relative_gap': gap}
    print(f'relative gap after {args.steps} steps: {100 * gap:.2f}%')
  print(json.dumps(result))


if __name__ == '__main__':
  main()
