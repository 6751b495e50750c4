"""Env steps and wall-clock time for DQN to reach a CartPole-v1 return.

`rl.training.DQN` (Trax's agent: trajectories played one at a time through
`task.RLTask`, a Q-network trained by the epoch Trainer on 1-step
double-DQN targets from a replay buffer of recent epochs) on CartPole-v1.
Every `--eval_every` epochs the greedy policy plays `--eval_episodes`
episodes; a seed is solved at the first evaluation whose mean return
reaches `--target` (475: CartPole-v1's own threshold). Wall-clock time
includes compilation and evaluation; evaluation steps are not counted.

Usage:
  python -m bench.rl.dqn_cartpole --seeds 0,1,2
"""

import argparse
import functools
import json
import os
import platform
import statistics
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')


def make_agent(seed, interactions_per_epoch):
  # pylint: disable=g-import-not-at-top
  import numpy as np
  from tfnp_trax import layers as tl
  from tfnp_trax import optimizers
  from tfnp_trax.rl import advantages
  from tfnp_trax.rl import task as task_lib
  from tfnp_trax.rl import training
  from tfnp_trax.supervised import lr_schedules
  np.random.seed(seed)
  task = task_lib.RLTask('CartPole-v1', initial_trajectories=0, gamma=0.99,
                         max_steps=500, seed=seed)
  body = lambda mode: tl.Serial(tl.Dense(256), tl.Relu(), tl.Dense(256),
                                tl.Relu())
  return training.DQN(
      task, value_body=body, value_optimizer=optimizers.Adam,
      value_lr_schedule=lambda: lr_schedules.multifactor(
          constant=2.3e-3, factors='constant'),
      value_batch_size=64, value_train_steps_per_epoch=128,
      n_interactions_per_epoch=interactions_per_epoch, n_replay_epochs=400,
      max_slice_length=2, advantage_estimator=advantages.td_k,
      double_dqn=True, scale_value_targets=False, sync_freq=128,
      exploration_rate=functools.partial(
          lr_schedules.multifactor, factors='constant * decay_every',
          constant=1.0, decay_factor=0.9, steps_per_decay=1, minimum=0.04))


def run_one(seed, max_steps, eval_every, eval_episodes, target,
            interactions_per_epoch):
  start = time.time()
  agent = make_agent(seed, interactions_per_epoch)
  curve, eval_seconds = [], 0.0
  result = {'seed': seed, 'target': target, 'solved': False}
  steps = 0
  while steps < max_steps:
    agent.run(eval_every)
    steps = agent.current_epoch * interactions_per_epoch
    t = time.time()
    mean = agent.task.collect_trajectories(
        functools.partial(agent.policy, temperature=0.0),
        n_trajectories=eval_episodes, only_eval=True)
    eval_seconds += time.time() - t
    curve.append((steps, round(float(mean), 1)))
    print(f'  dqn seed {seed}: {steps:6d} env steps, eval {mean:6.1f}, '
          f'{time.time() - start:6.1f}s', flush=True)
    if mean >= target:
      result.update(solved=True, env_steps=steps, eval_return=float(mean))
      break
  result.update(wall_seconds=round(time.time() - start, 1),
                eval_seconds=round(eval_seconds, 1), curve=curve)
  if not result['solved']:
    result.update(env_steps=None, eval_return=curve[-1][1] if curve else None)
  return result


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--seeds', default='0,1,2')
  parser.add_argument('--max_steps', type=int, default=100_000)
  parser.add_argument('--interactions_per_epoch', type=int, default=256)
  parser.add_argument('--eval_every', type=int, default=10,
                      help='Epochs between evaluations.')
  parser.add_argument('--eval_episodes', type=int, default=10)
  parser.add_argument('--target', type=float, default=475.0)
  parser.add_argument('--json', default=None)
  args = parser.parse_args(argv)
  print(f'Machine: {platform.machine()}, {os.cpu_count()} CPUs', flush=True)
  results = [run_one(int(s), args.max_steps, args.eval_every,
                     args.eval_episodes, args.target,
                     args.interactions_per_epoch)
             for s in args.seeds.split(',')]
  print('\nseed  solved  env_steps  wall_s  eval_return')
  for r in results:
    print(f'{r["seed"]:4d}  {str(r["solved"]):6s}  {str(r["env_steps"]):>9s}'
          f'  {r["wall_seconds"]:6.1f}  {r["eval_return"]}')
  solved = [r for r in results if r['solved']]
  if solved:
    print(f'dqn: solved {len(solved)}/{len(results)}; median '
          f'{statistics.median(r["env_steps"] for r in solved):.0f} env '
          f'steps')
  if args.json:
    with open(args.json, 'w') as f:
      json.dump(results, f, indent=1)
  return 0 if len(solved) == len(results) else 1


if __name__ == '__main__':
  raise SystemExit(main())
