"""Environment steps per second while collecting, against plain gymnasium.

Configurations (CartPole-v1 unless `--env`), each timed over `--steps`
environment steps after a warm-up (compilation is not timed):

* `gymnasium random`: a plain loop, `env.step(env.action_space.sample())`,
  resetting when an episode ends: the environment's own speed.
* `gymnasium SyncVectorEnv random (16)`: gymnasium's vector environment
  with random actions.
* `VectorTask + policy (n)`: `rl.vector_task.VectorTask.collect` with the
  PPO agent's compiled policy (a 64-64 MLP sampled on the whole batch of
  `n` observations in one call), for n = 1 and 16: what the PPO, A2C and
  AWR agents do each step.
* `RLTask.play + network_policy (1)`: Trax's trajectory API (one
  environment, the policy network called once per step on the trajectory's
  last observation), what PolicyGradient, ExpertIteration and DQN do.

Usage:
  python -m bench.rl.env_throughput
  python -m bench.rl.env_throughput --steps 2000 --json out.json
"""

import argparse
import json
import os
import platform
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')


def gymnasium_random(env_id, steps):
  import gymnasium  # pylint: disable=g-import-not-at-top
  env = gymnasium.make(env_id)
  env.reset(seed=0)
  env.action_space.seed(0)

  def run(n):
    for _ in range(n):
      _, _, term, trunc, _ = env.step(env.action_space.sample())
      if term or trunc:
        env.reset()
  run(min(steps, 200))
  start = time.perf_counter()
  run(steps)
  return steps / (time.perf_counter() - start)


def gymnasium_vector_random(env_id, steps, n_envs):
  import gymnasium  # pylint: disable=g-import-not-at-top
  envs = gymnasium.vector.SyncVectorEnv(
      [lambda: gymnasium.make(env_id) for _ in range(n_envs)])
  envs.reset(seed=0)
  envs.action_space.seed(0)
  n_calls = max(1, steps // n_envs)
  for _ in range(min(n_calls, 20)):
    envs.step(envs.action_space.sample())
  start = time.perf_counter()
  for _ in range(n_calls):
    envs.step(envs.action_space.sample())
  return n_calls * n_envs / (time.perf_counter() - start)


def vector_task_policy(env_id, steps, n_envs):
  # pylint: disable=g-import-not-at-top,protected-access
  from tfnp_trax.rl import actor_critic
  from tfnp_trax.rl import vector_task
  task = vector_task.VectorTask(env_id, n_envs=n_envs, seed=0)
  agent = actor_critic.PPO(task, n_interactions_per_epoch=n_envs * 4,
                           policy_batch_size=n_envs,
                           value_batch_size=n_envs)
  sampler = agent._sampler(1.0)
  n_calls = max(1, steps // n_envs)
  task.collect(sampler, min(n_calls, 20))  # Compiles the policy once.
  start = time.perf_counter()
  task.collect(sampler, n_calls)
  rate = n_calls * n_envs / (time.perf_counter() - start)
  traces = sampler._step.experimental_get_tracing_count()
  return rate, traces


def rl_task_play(env_id, steps):
  # pylint: disable=g-import-not-at-top
  import functools
  from tfnp_trax import layers as tl
  from tfnp_trax import models
  from tfnp_trax.rl import task as task_lib
  from tfnp_trax.rl import training
  task = task_lib.RLTask(env_id, initial_trajectories=0, max_steps=500,
                         seed=0)
  model_fn = functools.partial(
      models.Policy,
      body=lambda mode: tl.Serial(tl.Dense(64), tl.Tanh(), tl.Dense(64),
                                  tl.Tanh()))
  agent = training.PolicyGradient(task, model_fn=model_fn,
                                  n_interactions_per_epoch=steps,
                                  batch_size=2)
  task.collect_trajectories(agent.policy, n_interactions=min(steps, 200))
  start = time.perf_counter()
  task.collect_trajectories(agent.policy, n_interactions=steps)
  return steps / (time.perf_counter() - start)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--env', default='CartPole-v1')
  parser.add_argument('--steps', type=int, default=20_000)
  parser.add_argument('--json', default=None)
  args = parser.parse_args(argv)
  from bench import _common  # pylint: disable=g-import-not-at-top
  gflops = _common.matmul_peak_gflops()
  print(f'Machine: {platform.machine()}, {os.cpu_count()} CPUs, fp32 matmul '
        f'{gflops:.0f} GFLOP/s; {args.env}, {args.steps} steps each',
        flush=True)
  rows = []
  base = gymnasium_random(args.env, args.steps)
  rows.append(('gymnasium random (1)', base, None))
  rows.append(('gymnasium SyncVectorEnv random (16)',
               gymnasium_vector_random(args.env, args.steps, 16), None))
  for n in (1, 16):
    rate, traces = vector_task_policy(args.env, args.steps, n)
    rows.append((f'VectorTask + compiled policy ({n})', rate, traces))
  rows.append(('RLTask.play + network_policy (1)',
               rl_task_play(args.env, max(args.steps // 10, 500)), None))
  print(f'\n{"configuration":40s} {"env steps/s":>12s} {"vs random":>10s}'
        f' {"policy traces":>14s}')
  for name, rate, traces in rows:
    print(f'{name:40s} {rate:12.0f} {rate / base:9.2f}x '
          f'{"" if traces is None else traces:>14}')
  if args.json:
    with open(args.json, 'w') as f:
      json.dump({'matmul_gflops': gflops, 'env': args.env,
                 'rows': [dict(name=n, steps_per_s=r, policy_traces=t)
                          for n, r, t in rows]}, f, indent=1)
  return 0


if __name__ == '__main__':
  raise SystemExit(main())
