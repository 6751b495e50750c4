"""Env steps and wall-clock time for PPO, A2C and AWR to solve CartPole-v1.

Each (algorithm, seed) run trains the `rl.presets` agent and, every
`--eval_every` env steps, plays `--eval_episodes` fresh episodes with the
greedy policy (temperature 0). A run is solved at the first evaluation whose
average return reaches the target: 475 for PPO (CartPole-v1's own
threshold), 195 for A2C and AWR (the CartPole-v0 threshold). Evaluation
steps are not counted as training env steps; wall-clock time includes
compilation and evaluation.

Usage:
  python -m bench.rl.cartpole                      # all three, seeds 0-2
  python -m bench.rl.cartpole --algos ppo --env Pendulum-v1 --target -250 \
      --max_steps 500000
  python -m bench.rl.cartpole --algos ppo --seeds 0
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

TARGETS = {'ppo': 475.0, 'a2c': 195.0, 'awr': 195.0}


def run_one(algo, seed, max_steps, eval_every, eval_episodes, joint=False,
            env='CartPole-v1'):
  """Trains one agent until solved or `max_steps`; returns a result dict."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from tfnp_trax.rl import presets  # pylint: disable=g-import-not-at-top
  start = time.time()
  agent = presets.make_agent(algo, env, joint=joint,
                             random_seed=seed)
  epochs_per_eval = max(1, eval_every // agent.n_interactions_per_epoch)
  curve = []
  result = {'algo': algo + ('_joint' if joint else ''), 'seed': seed,
            'target': TARGETS[algo], 'solved': False}
  eval_seconds = 0.0
  while agent.env_steps < max_steps:
    agent.run(epochs_per_eval)
    t = time.time()
    returns = agent.evaluate(eval_episodes, temperature=0.0,
                             seed=100_000 + seed)
    eval_seconds += time.time() - t
    mean = float(np.mean(returns))
    curve.append((agent.env_steps, round(mean, 1)))
    print(f'  {result["algo"]} seed {seed}: {agent.env_steps:6d} env steps, '
          f'eval {mean:6.1f}, {time.time() - start:6.1f}s', flush=True)
    if mean >= TARGETS[algo]:
      result.update(solved=True, env_steps=agent.env_steps,
                    eval_return=mean, min_episode=float(np.min(returns)))
      break
  result.update(wall_seconds=round(time.time() - start, 1),
                eval_seconds=round(eval_seconds, 1), curve=curve)
  if not result['solved']:
    result.update(env_steps=None, eval_return=curve[-1][1] if curve else None)
  return result


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--algos', default='ppo,a2c,awr')
  parser.add_argument('--seeds', default='0,1,2')
  parser.add_argument('--max_steps', type=int, default=200_000)
  parser.add_argument('--eval_every', type=int, default=5120)
  parser.add_argument('--eval_episodes', type=int, default=20)
  parser.add_argument('--joint', action='store_true',
                      help='Use the joint-network agents (PPOJoint, ...).')
  parser.add_argument('--env', default='CartPole-v1',
                      help="CartPole-v1 or Pendulum-v1 (give --target, "
                      "e.g. -250)")
  parser.add_argument('--target', type=float, default=None,
                      help='Solved at this greedy return (default: 475 for '
                      'PPO, 195 for A2C and AWR); 500 is the maximum.')
  parser.add_argument('--json', default=None, help='Write results here.')
  args = parser.parse_args(argv)
  if args.target is not None:
    TARGETS.update({algo: args.target for algo in TARGETS})
  print(f'Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python '
        f'{platform.python_version()}', flush=True)
  results = []
  for algo in args.algos.split(','):
    for seed in (int(s) for s in args.seeds.split(',')):
      results.append(run_one(algo, seed, args.max_steps, args.eval_every,
                             args.eval_episodes, args.joint, args.env))
  print('\nalgo        seed  solved  env_steps  wall_s  eval_return')
  for r in results:
    print(f'{r["algo"]:10s}  {r["seed"]:4d}  {str(r["solved"]):6s}  '
          f'{str(r["env_steps"]):>9s}  {r["wall_seconds"]:6.1f}  '
          f'{r["eval_return"]}')
  for algo in sorted({r['algo'] for r in results}):
    solved = [r for r in results if r['algo'] == algo and r['solved']]
    n = len([r for r in results if r['algo'] == algo])
    if solved:
      print(f'{algo}: solved {len(solved)}/{n}; median '
            f'{statistics.median(r["env_steps"] for r in solved):.0f} env '
            f'steps, {statistics.median(r["wall_seconds"] for r in solved):.0f}'
            f' s wall-clock')
    else:
      print(f'{algo}: solved 0/{n}')
  if args.json:
    with open(args.json, 'w') as f:
      json.dump(results, f, indent=1)
  return 0 if all(r['solved'] for r in results) else 1


if __name__ == '__main__':
  sys.exit(main())
