"""A multi-worker Loop run that loses a worker once, for `--max_restarts`.

usage: python -m distribute.launch --workers 2 --max_restarts 1 -- \
         python -m tests.distribute._restart_script OUTPUT_DIR N_STEPS RESULT \
         [--die_worker I --die_at_step K] [--die_always]

Worker I SIGKILLs itself right after step K of the first start of the group
(`TFNP_LAUNCH_ATTEMPT` is 0), or of every start with --die_always. The Loop
checkpoints every 2 steps, so a restarted group resumes from the last even
step. The chief writes the final weights to RESULT (.npz).
"""

import argparse
import json
import os
import signal

import numpy as np

from tests.supervised import _loop_script


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('output_dir')
  parser.add_argument('n_steps', type=int)
  parser.add_argument('result')
  parser.add_argument('--die_worker', type=int, default=-1)
  parser.add_argument('--die_at_step', type=int, default=0)
  parser.add_argument('--die_always', action='store_true')
  args = parser.parse_args()
  # MultiWorkerMirroredStrategy must exist before any TensorFlow op runs.
  from distribute import strategy as strategy_lib  # pylint: disable=g-import-not-at-top
  strategy = strategy_lib.get_strategy('multiworker')
  from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top
  from tfnp_trax import optimizers  # pylint: disable=g-import-not-at-top
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import training  # pylint: disable=g-import-not-at-top

  index = json.loads(os.environ['TF_CONFIG'])['task']['index']
  attempt = int(os.environ.get('TFNP_LAUNCH_ATTEMPT', '0'))
  print(f'start {attempt}', flush=True)

  class Die:

    def __init__(self, loop):
      del loop

    def call_at(self, step):
      return step == args.die_at_step

    def on_step_begin(self, step):
      del step

    def on_step_end(self, step):
      if index == args.die_worker and (attempt == 0 or args.die_always):
        print(f'worker {index} dies after step {step}', flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

  model = tl.Serial(tl.Dense(16), tl.Relu(), tl.Dense(2))
  task = training.TrainTask(_loop_script.data(0),
                            tl.WeightedCategoryCrossEntropy(),
                            optimizers.Adam(0.01), n_steps_per_checkpoint=2)
  loop = training.Loop(model, task, output_dir=args.output_dir,
                       strategy=strategy, callbacks=[Die], random_seed=3)
  print(f'resumed at step {loop.step}', flush=True)
  loop.run(args.n_steps - loop.step)
  if index == 0:
    np.savez(args.result, *[np.asarray(w) for w in
                            fastmath.tree_flatten(loop.model.weights)])


if __name__ == '__main__':
  main()
