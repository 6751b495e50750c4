"""How long a checkpoint blocks training: synchronous against asynchronous.

A TransformerLM of about 100M parameters (vocab 256, d_model 1024, d_ff
4096, 8 heads, 8 layers) trained by a Loop with Adam (so a checkpoint holds
the weights and two slots, about 3x the weights) and an output_dir on local
disk. Per configuration (`async_checkpoints` False/True, Trax's files on or
off), each in its own process:

  (a) blocking time: how long `save_checkpoint` holds the caller, as Orbax
      reports it (median over `--saves` saves; the async writer's first
      save, which makes the device copies, is reported apart);
  (b) steps/s while a background write is in flight (one save, then
      steps until its write is done), against steps/s without any
      checkpoint: the writer competes with training for the CPU cores;
  (c) the wall time of `--steps` steps with a checkpoint every `--every`
      steps, the last write included.

  python bench/checkpoint_bench.py [--small] [--saves 3] [--steps 12]
      [--every 4]

`--small` runs a tiny model in seconds (used by the tests).
"""

import argparse
import contextlib
import io
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench import _common  # pylint: disable=g-import-not-at-top,wrong-import-position

FULL = dict(vocab=256, d_model=1024, d_ff=4096, n_heads=8, n_layers=8,
            length=64, batch=2)
SMALL = dict(vocab=32, d_model=16, d_ff=32, n_heads=2, n_layers=1,
             length=8, batch=2)


def _batches(config):
  rng = np.random.default_rng(0)
  shape = (config['batch'], config['length'])
  while True:
    x = rng.integers(1, config['vocab'], shape).astype(np.int32)
    yield x, x, np.ones(shape, np.float32)


def _measure(config, async_checkpoints, trax_files, saves, steps, every,
             output_dir):
  """One configuration's figures, as a dict."""
  from tfnp_trax import models, optimizers  # pylint: disable=g-import-not-at-top
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import training  # pylint: disable=g-import-not-at-top
  model = models.TransformerLM(
      config['vocab'], d_model=config['d_model'], d_ff=config['d_ff'],
      n_heads=config['n_heads'], n_layers=config['n_layers'],
      max_len=config['length'], dropout=0.0)
  task = training.TrainTask(_batches(config), tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(1e-4))
  when = {'every': None}

  def checkpoint_at(step):
    return bool(when['every']) and step % when['every'] == 0

  ends = []  # (time, step, a write in flight) at the end of each step.

  class Clock:

    def __init__(self, loop):
      self._books = loop._books  # pylint: disable=protected-access

    def call_at(self, step):
      return True

    def on_step_begin(self, step):
      pass

    def on_step_end(self, step):
      writer = self._books._async  # pylint: disable=protected-access
      ends.append((time.perf_counter(), step,
                   writer is not None and writer.in_flight))

  loop = training.Loop(model, task, output_dir=output_dir, random_seed=0,
                       checkpoint_at=checkpoint_at, eval_at=lambda s: False,
                       async_checkpoints=async_checkpoints,
                       trax_checkpoint_files=trax_files, keep_checkpoints=1,
                       callbacks=[Clock])
  n_params = sum(int(np.size(w)) for w in _leaves(loop.model.weights))

  def run(n):
    with contextlib.redirect_stdout(io.StringIO()):
      loop.run(n)

  def intervals(n):
    """Runs n steps in one run(); (seconds, write in flight at its end)
    of each step after the first (`run` itself returns only once the
    write is done, so the steps must share one call)."""
    del ends[:]
    run(n)
    return [(b[0] - a[0], b[2]) for a, b in zip(ends, ends[1:])]

  run(2)  # Compiles the step.
  # Steps/s without checkpoints: the intervals between step ends.
  alone = [t for t, _ in intervals(max(4, steps // 4))]
  plain = len(alone) / sum(alone)
  # (a) Blocking time of save_checkpoint, each save from an idle writer.
  blocking, first = [], None
  for i in range(saves + (1 if async_checkpoints else 0)):
    run(1)
    start = time.perf_counter()
    loop.save_checkpoint()
    took = time.perf_counter() - start
    if async_checkpoints and i == 0:
      first = took  # Makes the shadows and traces the copy.
    else:
      blocking.append(took)
    start = time.perf_counter()
    loop.wait_for_checkpoints()
    write = took + time.perf_counter() - start  # The whole write.
  # (b) One save, then steps in one run() for about twice the write's
  # time; the steps that end while the write is in flight count.
  during = []
  if async_checkpoints:
    loop.save_checkpoint()
    n = min(200, max(4, int(2 * write * plain) + 2))
    during = [t for t, busy in intervals(n) if busy]
  # (c) N steps with a checkpoint every k steps in one run(), which
  # returns with the last write complete.
  when['every'] = every
  del ends[:]
  start = time.perf_counter()
  run(steps)
  total = time.perf_counter() - start
  size = sum(os.path.getsize(os.path.join(root, f))
             for root, _, files in os.walk(output_dir) for f in files)
  return dict(async_checkpoints=async_checkpoints, trax_files=trax_files,
              n_params=n_params, blocking_s=statistics.median(blocking),
              blocking_all_s=blocking, first_async_save_s=first,
              write_s=write, steps_per_s=plain,
              steps_during_write=len(during),
              steps_per_s_during_write=(len(during) / sum(during)
                                        if during else None),
              total_s=total, steps=steps, every=every, output_bytes=size)


def _leaves(tree):
  from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top
  return fastmath.tree_leaves(tree)


def _machine():
  name = platform.processor() or platform.machine()
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          name = line.split(':', 1)[1].strip()
          break
  except OSError:
    pass
  return f'{name}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}'


def _one(args):
  """Runs one configuration in this process; prints its JSON last."""
  config = SMALL if args.small else FULL
  output_dir = tempfile.mkdtemp(prefix='checkpoint_bench_',
                                dir=args.dir or None)
  try:
    result = _measure(config, args.mode == 'async', args.trax_files == 'on',
                      args.saves, args.steps, args.every, output_dir)
  finally:
    shutil.rmtree(output_dir, ignore_errors=True)
  print(json.dumps(result))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--small', action='store_true')
  parser.add_argument('--saves', type=int, default=3)
  parser.add_argument('--steps', type=int, default=12)
  parser.add_argument('--every', type=int, default=4)
  parser.add_argument('--dir', default='', help='where checkpoints go '
                      '(default: the system temp folder, on local disk)')
  parser.add_argument('--mode', choices=['sync', 'async'], default=None,
                      help=argparse.SUPPRESS)
  parser.add_argument('--trax_files', choices=['on', 'off'], default='on',
                      help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.mode:
    _one(args)
    return
  if args.small:
    args.saves, args.steps, args.every = 2, 4, 2
  print(f'machine: {_machine()}')
  print(f'fp32 matmul peak here: {_common.matmul_peak_gflops():.0f} GFLOP/s')
  rows = []
  for trax_files in ('on', 'off'):
    for mode in ('sync', 'async'):
      if args.small:  # In this process: seconds, not a process start each.
        output_dir = tempfile.mkdtemp(prefix='checkpoint_bench_',
                                      dir=args.dir or None)
        try:
          rows.append(_measure(SMALL, mode == 'async', trax_files == 'on',
                               args.saves, args.steps, args.every,
                               output_dir))
        finally:
          shutil.rmtree(output_dir, ignore_errors=True)
      else:
        rows.append(_common.run_config(os.path.abspath(__file__), [
            '--mode', mode, '--trax_files', trax_files, '--saves',
            str(args.saves), '--steps', str(args.steps), '--every',
            str(args.every), '--dir', args.dir], timeout=3600))
      print(json.dumps(rows[-1]), flush=True)
  print(f'\nmodel: {rows[0]["n_params"]:,} parameters; checkpoint folder '
        f'+ files of one run: {rows[0]["output_bytes"] / 2**20:,.0f} MiB '
        f'(Trax files on)')
  print('| Trax files | mode | save blocks (median) | steps/s, no checkpoint '
        '| steps/s, write in flight | write time | '
        f'{args.steps} steps, ckpt every {args.every} |')
  print('| --- | --- | --- | --- | --- | --- | --- |')
  for r in rows:
    during = r.get('steps_per_s_during_write')
    write = r['write_s']
    print(f'| {"on" if r["trax_files"] else "off"} | '
          f'{"async" if r["async_checkpoints"] else "sync"} | '
          f'{r["blocking_s"]:.3f} s | {r["steps_per_s"]:.2f} | '
          f'{"-" if during is None else f"{during:.2f}"} | '
          f'{write:.2f} s | {r["total_s"]:.1f} s |')


if __name__ == '__main__':
  main()
