"""Linear-regression SGD on whatever strategy get_strategy('auto') picks.

Run alone it trains on the default strategy; run under
`python -m distribute.launch --workers N -- python _mw_train_script.py ...`
each worker trains on its slice of the batch with gradients all-reduced by
MultiWorkerMirroredStrategy. Both must end with the same weights, which
worker 0 writes as JSON to --out.

Fault options (for the launcher tests): --die_worker I --die_after K makes
worker I SIGKILL itself after step K; --hang_worker I makes worker I sleep
instead of joining the cluster.
"""

import argparse
import json
import os
import signal
import sys
import time

import numpy as np


def _task_index():
  config = json.loads(os.environ.get('TF_CONFIG') or '{}')
  return int(config.get('task', {}).get('index', 0))


def _data():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(8, 3))
  y = x @ np.array([1.5, -2.0, 0.5]) + 0.25 + 0.1 * rng.normal(size=8)
  return x, y


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--out', required=True)
  parser.add_argument('--steps', type=int, default=5)
  parser.add_argument('--lr', type=float, default=0.1)
  parser.add_argument('--die_worker', type=int, default=-1)
  parser.add_argument('--die_after', type=int, default=2)
  parser.add_argument('--hang_worker', type=int, default=-1)
  args = parser.parse_args()
  task = _task_index()
  if task == args.hang_worker:
    print('hanging before joining the cluster', flush=True)
    time.sleep(3600)

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import distribute  # pylint: disable=g-import-not-at-top

  strategy = distribute.get_strategy('auto')
  n = strategy.num_replicas_in_sync
  print(f'strategy {type(strategy).__name__} with {n} replicas', flush=True)

  def step(w, b, xs, ys):
    with tf.GradientTape() as tape:
      tape.watch([w, b])
      loss = tf.reduce_mean((tf.linalg.matvec(xs, w) + b - ys) ** 2)
    grads = distribute.pmean(tape.gradient(loss, [w, b]))
    return w - args.lr * grads[0], b - args.lr * grads[1]

  train_step = distribute.pmap(step, in_axes=(None, None, 0, 0),
                               strategy=strategy)
  x, y = _data()
  xs, ys = distribute.shard_batch((x, y), n)
  w, b = tf.zeros([3], tf.float64), tf.zeros([], tf.float64)
  for k in range(args.steps):
    w, b = train_step(w, b, xs, ys)[0]
    print(f'step {k + 1}: w={w.numpy()} b={float(b):.6f}', flush=True)
    if task == args.die_worker and k + 1 == args.die_after:
      print(f'killing myself at {time.time():.3f}', flush=True)
      os.kill(os.getpid(), signal.SIGKILL)
  if task == 0:
    with open(args.out, 'w') as f:
      json.dump({'w': w.numpy().tolist(), 'b': float(b), 'replicas': n}, f)
  return 0


if __name__ == '__main__':
  sys.exit(main())
