"""A small PPO run for the RL trainer tests, alone or as one of N workers.

usage: python -m tests.rl._agent_script OUTPUT_DIR N_EPOCHS [--multiworker]
       [--resume_to N]

Prints `worker I chief=B epoch=E saved=PATH` after the run (PATH: the
folder this process wrote at its last epoch, or None) and
`worker I resumed at epoch E` when it started from a checkpoint. With
--resume_to N, a second agent is then built on the same output_dir (as a
restarted job would be) and trained up to epoch N, so one launch tests
both the chief-only writes and the resume.
"""

import argparse
import json
import os


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('output_dir')
  parser.add_argument('n_epochs', type=int)
  parser.add_argument('--multiworker', action='store_true')
  parser.add_argument('--resume_to', type=int, default=0)
  args = parser.parse_args()
  strategy = None
  if args.multiworker:
    from distribute import strategy as strategy_lib  # pylint: disable=g-import-not-at-top
    strategy = strategy_lib.get_strategy('multiworker')
  index = json.loads(os.environ.get('TF_CONFIG') or '{}').get(
      'task', {}).get('index', 0)
  _train(args.output_dir, args.n_epochs, strategy, index)
  if args.resume_to:
    import distribute  # pylint: disable=g-import-not-at-top
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    # Every worker waits until the chief's last checkpoint is complete.
    distribute.barrier(strategy or tf.distribute.get_strategy())
    _train(args.output_dir, args.resume_to, strategy, index)


def _train(output_dir, n_epochs, strategy, index):
  from tfnp_trax.rl import presets  # pylint: disable=g-import-not-at-top
  agent = presets.make_agent(
      'ppo', 'CartPole-v1', n_envs=2, output_dir=output_dir,
      strategy=strategy, jit_compile=False, checkpoint_every=1,
      n_interactions_per_epoch=32, policy_batch_size=16,
      value_batch_size=16, policy_train_steps_per_epoch=2,
      value_train_steps_per_epoch=2)
  if agent.epoch:
    print(f'worker {index} resumed at epoch {agent.epoch}', flush=True)
  agent.run(n_epochs, n_epochs_is_total_epochs=True)
  # pylint: disable=protected-access
  saved = agent._books.saved_at(agent.epoch)
  print(f'worker {index} chief={agent.is_chief} epoch={agent.epoch} '
        f'saved={saved[-1] if saved else None}', flush=True)


if __name__ == '__main__':
  main()
