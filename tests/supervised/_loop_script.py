"""A small deterministic training run, driven by the Loop tests.

usage: python -m tests.supervised._loop_script OUTPUT_DIR N_STEPS RESULT.npz
       [--replicas N] [--sleep SECONDS] [--load_from DIR]

--load_from DIR resumes through an explicit Loop.load_checkpoint(DIR)
(OUTPUT_DIR then only receives the rest of the run). --pid_dir DIR makes
each process write its pid to DIR/pid<task index> once training starts (for
the tests that signal one worker of several).
"""

import argparse
import json
import os
import time

import numpy as np

from tests import _multi_device


def data(seed):
  r = np.random.default_rng(seed)
  while True:
    x = r.normal(size=(8, 6)).astype(np.float32)
    y = (x[:, :3].sum(-1) > 0).astype(np.int32)
    yield x, y, np.ones(8, np.float32)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('output_dir')
  parser.add_argument('n_steps', type=int)
  parser.add_argument('result')
  parser.add_argument('--replicas', type=int, default=1)
  parser.add_argument('--sleep', type=float, default=0.0)
  parser.add_argument('--dropout', type=float, default=0.1)
  parser.add_argument('--load_from', default=None)
  parser.add_argument('--pid_dir', default=None)
  parser.add_argument('--multiworker', action='store_true',
                      help='Use MultiWorkerMirroredStrategy from TF_CONFIG.')
  args = parser.parse_args()
  if args.replicas > 1:
    _multi_device.split_cpu(args.replicas)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top
  from tfnp_trax import optimizers  # pylint: disable=g-import-not-at-top
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import training  # pylint: disable=g-import-not-at-top

  strategy = None
  if args.multiworker:
    from distribute import strategy as strategy_lib  # pylint: disable=g-import-not-at-top
    strategy = strategy_lib.get_strategy('multiworker')
    task = json.loads(os.environ['TF_CONFIG'])['task']['index']
    if task:  # Only worker 0 writes the result file.
      args.result += f'.worker{task}.npz'
  if args.replicas > 1:
    strategy = tf.distribute.MirroredStrategy(
        [d.name for d in tf.config.list_logical_devices('CPU')])
  model = tl.Serial(tl.Dense(16), tl.Relu(), tl.Dropout(args.dropout), tl.Dense(2))
  task = training.TrainTask(data(0), tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(0.01), n_steps_per_checkpoint=5)

  class Slow:  # Gives the killing test time to strike mid-run.

    def __init__(self, loop):
      del loop

    def call_at(self, step):
      return True

    def on_step_begin(self, step):
      pass

    def on_step_end(self, step):
      del step
      time.sleep(args.sleep)

  loop = training.Loop(model, task, output_dir=args.output_dir,
                       strategy=strategy, callbacks=[Slow], random_seed=3,
                       eval_tasks=[], eval_at=lambda step: True)
  if args.load_from:
    loop.load_checkpoint(directory=args.load_from)
  if args.pid_dir:
    index = json.loads(os.environ.get('TF_CONFIG') or '{}').get(
        'task', {}).get('index', 0)
    with open(os.path.join(args.pid_dir, f'pid{index}'), 'w') as f:
      f.write(str(os.getpid()))
  loop.run(args.n_steps - loop.step)
  np.savez(args.result, *[np.asarray(w) for w in
                          fastmath.tree_flatten(loop.model.weights)],
           losses=np.array([v for _, v in loop.history.get(
               'train', 'metrics/WeightedCategoryCrossEntropy')]))


if __name__ == '__main__':
  main()
