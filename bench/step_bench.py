"""Training-step throughput: tfnp_trax's Trainer against Keras 3.

Runs every configuration in its own process, interleaved (A B A B ...) over
several rounds, as BENCHMARKS.md asks, and prints medians and ratios:

  python bench/step_bench.py [--rounds 3] [--models mlp,lm] [--replicas]
                             [--precision bf16]

Each process builds the model, times the first step (build + trace + first
step), warms up for at least 5 steps and 0.5 s, then times at least 50
steps and 2 s one by one (each waits for its loss) and reports the median,
plus its peak RSS. Synthetic batches are
cycled from memory. The LM also runs as a hand-written functional TF step
(`bare_tf`). With --replicas, the MLP step also runs on 2 and 4 logical CPU
replicas over the same global batch, beside a Keras MirroredStrategy custom
step on the same devices. With --precision bf16, ours trains in mixed
bfloat16 against Keras's mixed_bfloat16 policy.
"""

import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import _common  # pylint: disable=g-import-not-at-top

_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'step_one.py')
# GFLOP per training step, from BENCHMARKS.md.
_GFLOP = {'mlp': 0.514, 'lm': 23.0}


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--models', default='mlp,lm')
  parser.add_argument('--replicas', action='store_true')
  parser.add_argument('--out', default=None, help='Write results as JSON.')
  parser.add_argument('--precision', choices=['fp32', 'bf16'], default='fp32',
                      help='bf16: ours with precision="bf16" against Keras '
                      'under mixed_bfloat16 (no bare-TF or replica rows).')
  args = parser.parse_args()
  bf16 = args.precision == 'bf16'
  if bf16 and args.replicas:
    parser.error('--precision bf16 has no replica rows; drop --replicas.')

  configs = []
  for model in args.models.split(','):
    for jit in (False, True):
      impls = (('ours', 'keras', 'bare_tf') if model == 'lm' and not bf16
               else ('ours', 'keras'))
      for impl in impls:
        configs.append((model, impl, jit, 1))
  if args.replicas:
    configs += [('mlp', impl, False, n) for n in (2, 4)
                for impl in ('ours', 'keras')]
    if ('mlp', 'ours', False, 1) not in configs:
      configs.append(('mlp', 'ours', False, 1))

  results = collections.defaultdict(list)
  for rnd in range(args.rounds):
    for model, impl, jit, replicas in configs:
      flags = ['--model', model, '--impl', impl, '--replicas', str(replicas)]
      if jit:
        flags.append('--jit')
      flags += ['--precision', args.precision]
      r = _common.run_config(_SCRIPT, flags)
      results[(model, impl, jit, replicas)].append(r)
      print(f'round {rnd}: {model} {impl} jit={jit} replicas={replicas}: '
            f'{r["steps_per_s"]:.2f} steps/s, first step '
            f'{r["first_step_s"]:.2f}s', flush=True)

  peak = _common.matmul_peak_gflops()
  print(f'\nfp32 matmul peak here: {peak:.0f} GFLOP/s; step precision: '
        f'{args.precision}\n')
  print(f'{"config":34s} {"steps/s":>8s} {"first":>7s} {"RSS MiB":>8s} '
        f'{"%peak":>6s} {"vs keras":>9s}')
  table = {}
  for key, runs in results.items():
    model, impl, jit, replicas = key
    sps = _common.median([r['steps_per_s'] for r in runs])
    table[key] = dict(
        steps_per_s=sps,
        first_step_s=_common.median([r['first_step_s'] for r in runs]),
        peak_rss_mib=_common.median([r['peak_rss_mib'] for r in runs]),
        share_of_peak=sps * _GFLOP[model] / peak)
  for key, row in sorted(table.items()):
    model, impl, jit, replicas = key
    keras_row = table.get((model, 'keras', jit, replicas))
    ratio = (f'{row["steps_per_s"] / keras_row["steps_per_s"]:.2f}x'
             if keras_row and impl == 'ours' else '')
    name = f'{model} {impl} xla={"on" if jit else "off"} r={replicas}'
    print(f'{name:34s} {row["steps_per_s"]:8.2f} {row["first_step_s"]:7.2f} '
          f'{row["peak_rss_mib"]:8.0f} {100 * row["share_of_peak"]:5.0f}% '
          f'{ratio:>9s}')
  for jit in (False, True):
    ours_row, bare = (table.get(('lm', impl, jit, 1))
                      for impl in ('ours', 'bare_tf'))
    if ours_row and bare:
      print(f'lm xla={"on" if jit else "off"}: ours / bare TF = '
            f'{ours_row["steps_per_s"] / bare["steps_per_s"]:.2f}x')
  keras_lm = [table[k]['steps_per_s'] for k in table
              if k[0] == 'lm' and k[1] == 'keras']
  if keras_lm and ('lm', 'ours', False, 1) in table:
    best = max(table[k]['steps_per_s'] for k in table
               if k[0] == 'lm' and k[1] == 'ours')
    print(f'lm: best ours / fastest Keras setting = {best / max(keras_lm):.2f}x')
  if args.replicas:
    one = table[('mlp', 'ours', False, 1)]['steps_per_s']
    for n in (2, 4):
      cost = one / table[('mlp', 'ours', False, n)]['steps_per_s'] - 1
      print(f'mlp with {n} replicas: step time +{100 * cost:.0f}% over one '
            f'replica (same global batch)')
  if args.out:
    with open(args.out, 'w') as f:
      json.dump({' '.join(map(str, k)): v for k, v in table.items()}, f,
                indent=1)


if __name__ == '__main__':
  main()
