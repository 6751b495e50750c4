"""Optimizer update throughput: tfnp_trax versus Keras 3, in one process.

Adam and Adafactor update a tree of about 10M float32 parameters (three
Dense-like (matrix, bias) pairs) with fixed gradients. Each variant runs in a
`tf.function`, with and without XLA:

* `tfnp_trax` (assign): reads weights and slots from `tf.Variable`s, calls the
  pure `tree_update`, and assigns the results back, as Keras does. This is
  the like-for-like comparison with Keras's `apply_gradients`, and the one the
  ratios use.
* `tfnp_trax` (assign+stats): the same, also returning the `gradients_l2` and
  `weights_l2` stats that a Trax training loop logs (two extra full passes
  over gradients and weights; Keras computes no such norms).
* `tfnp_trax` (functional): weights and slots go in and come out as tensors,
  as in a jitted training step; shown for information.
* `keras`: `keras.optimizers.Adam` / `Adafactor` `apply_gradients` on
  `keras.Variable`s.

Variants run interleaved step by step (A B C ... A B C ...) for several
rounds; after warm-up, each step is timed on its own (waiting for its
result) and the median over all rounds is reported as updates/s. Ratios are
ours / keras: higher is better.

Usage:
  python bench/optimizers_bench.py [--rounds 3] [--steps 15] [--warmup 2]
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
os.environ.setdefault('KERAS_BACKEND', 'tensorflow')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # pylint: disable=g-import-not-at-top
import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top
from tfnp_trax import optimizers  # pylint: disable=g-import-not-at-top

# Three (matrix, bias) pairs: 9,967,104 parameters.
SHAPES = [(2048, 2048), (2048,), (2048, 2048), (2048,), (1024, 1536),
          (1536,)]

# Matched hyperparameters; Keras's weight decay is scaled by the learning
# rate, ours is not, but both cost one extra multiply-add per weight.
OURS = {
    'Adam': lambda: optimizers.Adam(learning_rate=1e-4),
    'Adafactor': lambda: optimizers.Adafactor(learning_rate=0.05),
}
KERAS = {
    'Adam': lambda: keras.optimizers.Adam(learning_rate=1e-4, epsilon=1e-5,
                                          weight_decay=1e-5),
    'Adafactor': lambda: keras.optimizers.Adafactor(learning_rate=0.05),
}


def as_tree(leaves):
  return tuple(tuple(leaves[i:i + 2]) for i in range(0, len(leaves), 2))


def make_problem(seed=0):
  rng = np.random.default_rng(seed)
  weights = [rng.normal(scale=0.02, size=s).astype(np.float32)
             for s in SHAPES]
  grads = [tf.constant(rng.normal(scale=1e-3, size=s).astype(np.float32))
           for s in SHAPES]
  return weights, grads


def ours_assign(name, weights, grads, jit_compile, with_stats=False):
  """Our tree_update reading and writing tf.Variables, like Keras.

  Without `with_stats` the step returns only the step counter, so TF prunes
  the unused norm computations and the work matches Keras's; with it the
  step also returns both global norms, as a Trax training loop logs them.
  """
  opt = OURS[name]()
  slots, params = opt.tree_init(as_tree(weights))
  w_vars = [tf.Variable(w) for w in weights]
  s_vars = [tf.Variable(s) for s in fastmath.tree_flatten(slots)]
  step = tf.Variable(0, dtype=tf.int32)
  grad_tree = as_tree(grads)

  @tf.function(jit_compile=jit_compile, autograph=False)
  def update(grad_tree, params):
    weights = as_tree([v.value() for v in w_vars])
    old_slots, _ = fastmath.tree_unflatten([v.value() for v in s_vars], slots)
    new_w, new_s, stats = opt.tree_update(step.value(), grad_tree, weights,
                                          old_slots, params,
                                          store_slots=False)
    for var, x in zip(w_vars, fastmath.tree_flatten(new_w)):
      var.assign(x)
    for var, x in zip(s_vars, fastmath.tree_flatten(new_s)):
      var.assign(x)
    step.assign_add(1)
    return stats if with_stats else step.value()
  return lambda: update(grad_tree, params)


def ours_assign_with_stats(name, weights, grads, jit_compile):
  return ours_assign(name, weights, grads, jit_compile, with_stats=True)


def ours_functional(name, weights, grads, jit_compile):
  """Our tree_update as a pure function: state in, state out."""
  opt = OURS[name]()
  tree = as_tree([tf.constant(w) for w in weights])
  slots, params = opt.tree_init(tree)
  state = {'weights': tree, 'slots': slots, 'step': tf.constant(0)}
  grad_tree = as_tree(grads)

  @tf.function(jit_compile=jit_compile, autograph=False)
  def update(step, grad_tree, weights, slots, params):
    new_w, new_s, _ = opt.tree_update(step, grad_tree, weights, slots,
                                      params, store_slots=False)
    return new_w, new_s

  def run():
    state['weights'], state['slots'] = update(
        state['step'], grad_tree, state['weights'], state['slots'], params)
    state['step'] += 1
    return fastmath.tree_flatten(state['weights'])[-1]
  return run


def keras_apply(name, weights, grads, jit_compile):
  opt = KERAS[name]()
  variables = [keras.Variable(w) for w in weights]
  opt.build(variables)

  @tf.function(jit_compile=jit_compile, autograph=False)
  def update(grads):
    opt.apply_gradients(zip(grads, variables))
    return opt.iterations.value
  return lambda: update(grads)


def timed(fn):
  start = time.perf_counter()
  np.asarray(fn())  # Waits for the step's result.
  return time.perf_counter() - start


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--steps', type=int, default=15)
  parser.add_argument('--warmup', type=int, default=2)
  args = parser.parse_args()

  weights, grads = make_problem()
  n_params = sum(int(np.prod(s)) for s in SHAPES)
  print(f'TensorFlow {tf.__version__}, Keras {keras.__version__}, '
        f'{n_params:,} parameters, {args.rounds} rounds x {args.steps} '
        f'timed steps')

  variants = {}  # (optimizer, label) -> step function
  first = {}
  for name in OURS:
    for xla in (False, True):
      mode = 'XLA' if xla else 'tf.function'
      for label, build in (('tfnp_trax assign', ours_assign),
                           ('tfnp_trax assign+stats', ours_assign_with_stats),
                           ('tfnp_trax functional', ours_functional),
                           ('keras', keras_apply)):
        key = (name, f'{label} {mode}')
        try:
          fn = build(name, weights, grads, xla)
          first[key] = timed(fn)  # Trace, compile and the first step.
          variants[key] = fn
        except Exception as e:  # pylint: disable=broad-except
          print(f'skipped {key}: {type(e).__name__}: {str(e)[:200]}')

  # Interleave step by step (A B C ... A B C ...), rotating the order each
  # round, so that load from other processes hits every variant alike.
  times = {key: [] for key in variants}
  keys = list(variants)
  for r in range(args.rounds):
    order = keys[r % len(keys):] + keys[:r % len(keys)]
    for key in order:
      for _ in range(args.warmup):
        timed(variants[key])
    for _ in range(args.steps):
      for key in order:
        times[key].append(timed(variants[key]))

  median = {key: statistics.median(t) for key, t in times.items()}
  print(f'\n{"optimizer":10} {"variant":34} {"first step s":>12} '
        f'{"median ms":>10} {"updates/s":>10}')
  for (name, label), t in median.items():
    print(f'{name:10} {label:34} {first[(name, label)]:12.2f} '
          f'{1e3 * t:10.2f} {1 / t:10.1f}')

  print('\nratios ours (assign) / keras, updates/s, higher is better:')
  for name in OURS:
    parts = []
    for mode in ('tf.function', 'XLA'):
      ours = median.get((name, f'tfnp_trax assign {mode}'))
      theirs = median.get((name, f'keras {mode}'))
      if ours and theirs:
        parts.append(f'{mode} {theirs / ours:.2f}x')
    best_ours = min(v for (n, l), v in median.items()
                    if n == name and l.startswith('tfnp_trax assign '))
    best_keras = min(v for (n, l), v in median.items()
                     if n == name and l.startswith('keras'))
    parts.append(f'best vs best {best_keras / best_ours:.2f}x')
    print(f'  {name:10} ' + ', '.join(parts))


if __name__ == '__main__':
  main()
