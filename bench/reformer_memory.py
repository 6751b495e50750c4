"""Peak memory of one training step: ReformerLM against TransformerLM.

usage: python bench/reformer_memory.py [--lengths 4096,16384,65536]
                                       [--depths 6,12,24] [--budget-gib 16]
                                       [--repeats 3] [--skip-search]
                                       [--out results.json]

Both models have the same width (d_model 256, d_ff 512, 2 heads, vocab 256,
batch 1). ReformerLM alternates chunked SelfAttention and LSHSelfAttention
(chunk_len 64, one chunk back, one hash), as Trax's reformer_memory_test
does, with an axial positional encoding; TransformerLM has full causal
attention. One step is: forward, cross-entropy loss, gradients (through
the reversible backward for ReformerLM), and an SGD update, under
tf.function (or eagerly, with --eager).

Every configuration runs in a fresh subprocess whose data segment is capped
at the budget with RLIMIT_DATA, so a configuration that does not fit fails
with an allocation error instead of pushing the machine into swap or the
OOM killer; its peak resident set is read from getrusage. The script then
searches for the longest TransformerLM length that fits at the smallest
depth, and times a second step of ReformerLM at 16k tokens against
TransformerLM at that length.

This is a benchmark, not a test: it takes tens of minutes on 2 cores and
needs the budget's worth of free memory.

Figures measured on the shared 2-core machine are in bench/README.md.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

WIDTH = dict(d_model=256, d_ff=512, n_heads=2, vocab=256)
GIB = 1 << 30


def _axial_shape(length):
  """A two-axis grid whose product is `length` (a power of two)."""
  first = 1 << ((length.bit_length() - 1) // 2)
  return (first, length // first)


def _build(kind, length, depth):
  """The model (train mode, no dropout) for one configuration."""
  import functools  # pylint: disable=g-import-not-at-top
  from tfnp_trax import layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax import models  # pylint: disable=g-import-not-at-top
  from tfnp_trax.layers.research import efficient_attention as ea  # pylint: disable=g-import-not-at-top
  if kind == 'transformer':
    return models.TransformerLM(
        WIDTH['vocab'], d_model=WIDTH['d_model'], d_ff=WIDTH['d_ff'],
        n_layers=depth, n_heads=WIDTH['n_heads'], max_len=length,
        dropout=0.0)
  chunked = functools.partial(ea.SelfAttention, chunk_len=64,
                              n_chunks_before=1, n_parallel_heads=1)
  lsh = functools.partial(ea.LSHSelfAttention, chunk_len=64,
                          n_chunks_before=1, n_chunks_after=0, n_hashes=1,
                          n_parallel_heads=1)
  return models.ReformerLM(
      WIDTH['vocab'], d_model=WIDTH['d_model'], d_ff=WIDTH['d_ff'],
      d_attention_key=64, d_attention_value=64, n_layers=depth,
      n_heads=WIDTH['n_heads'], dropout=0.0, max_len=length,
      attention_type=[chunked, lsh], pos_type='axial',
      pos_axial_shape=_axial_shape(length), pos_d_axial_embs=(64, 192),
      ff_activation=tl.Relu)


def child(kind, length, depth, timed_steps, eager=False):
  """Runs in the subprocess: one (or more) training steps; prints JSON."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top
  from tfnp_trax import layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax import shapes  # pylint: disable=g-import-not-at-top
  from tfnp_trax.fastmath import numpy as jnp  # pylint: disable=g-import-not-at-top

  def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

  baseline = rss_mib()
  model = _build(kind, length, depth)
  tokens = jnp.asarray(np.random.default_rng(0).integers(
      1, WIDTH['vocab'], size=(1, length)).astype(np.int32))
  model.init(shapes.signature(tokens), rng=fastmath.random.get_prng(0))
  weights, state = model.weights, model.state
  after_init = rss_mib()

  def step(x, w, s, rng):
    def loss_fn(w):
      logits, _ = model.pure_fn(x, w, s, rng)
      return -jnp.mean(jnp.sum(
          tl.log_softmax(logits) * tl.one_hot(x, WIDTH['vocab']), axis=-1))
    loss, grads = fastmath.value_and_grad(loss_fn)(w)
    new_w = fastmath.nested_map_multiarg(lambda a, g: a - 1e-4 * g, w, grads)
    return loss, new_w

  if not eager:
    step = fastmath.jit(step)
  t0 = time.perf_counter()
  loss, weights = step(tokens, weights, state, fastmath.random.get_prng(1))
  loss = float(loss)
  first_step_s = time.perf_counter() - t0
  step_s = None
  if timed_steps:
    t0 = time.perf_counter()
    for i in range(timed_steps):
      loss, weights = step(tokens, weights, state,
                           fastmath.random.get_prng(2 + i))
      loss = float(loss)
    step_s = (time.perf_counter() - t0) / timed_steps
  print(json.dumps(dict(
      kind=kind, length=length, depth=depth, eager=eager, ok=True,
      loss=loss,
      peak_rss_mib=rss_mib(), baseline_rss_mib=baseline,
      after_init_rss_mib=after_init, first_step_s=first_step_s,
      step_s=step_s,
      tokens_per_s=(length / step_s) if step_s else None)))


def run(kind, length, depth, budget_gib, timed_steps=0, timeout=3600,
        eager=False):
  """One configuration in a fresh process capped at `budget_gib`."""
  def cap():
    limit = int(budget_gib * GIB)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
  args = [sys.executable, os.path.abspath(__file__), '--child',
          json.dumps([kind, length, depth, timed_steps, eager])]
  t0 = time.perf_counter()
  try:
    out = subprocess.run(args, capture_output=True, text=True, env=env,
                         preexec_fn=cap, timeout=timeout, check=False)
  except subprocess.TimeoutExpired:
    return dict(kind=kind, length=length, depth=depth, ok=False,
                error=f'timed out after {timeout} s')
  lines = out.stdout.strip().splitlines()
  if out.returncode == 0 and lines:
    result = json.loads(lines[-1])
  else:
    tail = (out.stderr or '').strip().splitlines()[-3:]
    oom = any(w in (out.stderr or '') for w in (
        'OOM', 'bad_alloc', 'MemoryError', 'Cannot allocate',
        'failed to allocate', 'ResourceExhausted'))
    result = dict(kind=kind, length=length, depth=depth, ok=False,
                  error=('does not fit the budget' if oom else
                         f'exit {out.returncode}: ' + ' | '.join(tail)))
  result['wall_s'] = time.perf_counter() - t0
  print(json.dumps(result), flush=True)
  return result


def _median_run(runs):
  """The run with the median peak RSS (the first failure, if any failed)."""
  failed = [r for r in runs if not r['ok']]
  if failed:
    return failed[0]
  ordered = sorted(runs, key=lambda r: r['peak_rss_mib'])
  median = dict(ordered[len(ordered) // 2])
  median['peak_rss_runs_mib'] = [r['peak_rss_mib'] for r in runs]
  return median


def _fmt(result):
  if not result:
    return 'not run'
  if not result['ok']:
    return '> budget' if 'budget' in result['error'] else 'failed'
  return f"{result['peak_rss_mib'] / 1024:.2f}"


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--child')
  parser.add_argument('--lengths', default='4096,16384,65536')
  parser.add_argument('--depths', default='6,12,24')
  parser.add_argument('--budget-gib', type=float, default=16.0)
  parser.add_argument('--skip-search', action='store_true')
  parser.add_argument('--eager', action='store_true',
                      help='run the steps eagerly instead of in tf.function')
  parser.add_argument('--repeats', type=int, default=3,
                      help='runs of each ReformerLM configuration (median)')
  parser.add_argument('--out')
  args = parser.parse_args()
  if args.child:
    child(*json.loads(args.child))
    return
  lengths = [int(x) for x in args.lengths.split(',')]
  depths = [int(x) for x in args.depths.split(',')]
  budget = args.budget_gib
  results = {}

  # TransformerLM: per depth, lengths in increasing order until one fails
  # (memory grows with length, so longer ones cannot fit either).
  for depth in depths:
    for length in lengths:
      r = run('transformer', length, depth, budget, eager=args.eager)
      results[('transformer', length, depth)] = r
      if not r['ok']:
        break
  # ReformerLM, smallest configurations first. Its peaks differ by a few
  # percent from run to run (the executor's thread timing, the allocator),
  # as much as the growth with depth being measured, so each configuration
  # runs --repeats times and the median peak is reported.
  for length in lengths:
    for depth in depths:
      results[('reformer', length, depth)] = _median_run(
          [run('reformer', length, depth, budget, eager=args.eager)
           for _ in range(args.repeats)])

  # Longest TransformerLM length within the budget at the smallest depth:
  # doubling from the longest fitting grid length, then bisecting on
  # multiples of 1024.
  depth0 = depths[0]
  fits = [l for l in lengths if results.get(('transformer', l, depth0),
                                            {}).get('ok')]
  longest = max(fits) if fits else 1024
  if not args.skip_search:
    lo, hi = longest, None
    for length in [l for l in lengths if l > longest][:1]:
      hi = length
    hi = hi or 2 * longest
    while hi - lo > 1024:
      mid = (lo + hi) // 2 // 1024 * 1024
      r = run('transformer', mid, depth0, budget, eager=args.eager)
      results[('transformer', mid, depth0)] = r
      lo, hi = (mid, hi) if r['ok'] else (lo, mid)
    longest = lo

  speed_t = run('transformer', longest, depth0, budget, timed_steps=2,
                eager=args.eager)
  speed_r = run('reformer', 16384, depth0, budget, timed_steps=2,
                eager=args.eager)

  how = 'eager' if args.eager else 'tf.function'
  print(f'\nPeak RSS of one training step ({how}; GiB; budget {budget:g} '
        f'GiB, d_model {WIDTH["d_model"]}, d_ff {WIDTH["d_ff"]}, batch 1)')
  print('| length | depth | TransformerLM | ReformerLM |')
  print('| --- | --- | --- | --- |')
  for length in lengths:
    for depth in depths:
      print(f'| {length} | {depth} | '
            f'{_fmt(results.get(("transformer", length, depth)))} | '
            f'{_fmt(results.get(("reformer", length, depth)))} |')
  for length in lengths:
    peaks = [results[('reformer', length, d)].get('peak_rss_mib')
             for d in (depths[0], depths[-1])]
    if all(peaks):
      print(f'ReformerLM at {length}: peak grows '
            f'{100 * (peaks[1] / peaks[0] - 1):+.1f}% from {depths[0]} to '
            f'{depths[-1]} layers')
  print(f'Longest TransformerLM length within {budget:g} GiB at depth '
        f'{depth0}: {longest}')
  for name, r in (('TransformerLM', speed_t), ('ReformerLM', speed_r)):
    if r['ok']:
      print(f"{name} at {r['length']} tokens, depth {depth0}: "
            f"{r['tokens_per_s']:.0f} tokens/s ({r['step_s']:.1f} s/step)")
  if args.out:
    with open(args.out, 'w') as f:
      json.dump([dict(v) for v in results.values()] + [speed_t, speed_r], f,
                indent=1)


if __name__ == '__main__':
  main()
