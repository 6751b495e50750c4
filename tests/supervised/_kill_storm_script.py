"""A Loop run SIGKILLed again and again, driven by training_kill_storm_test.

usage: python -m tests.supervised._kill_storm_script WORK_DIR SEED N_KILLS

TensorFlow is imported once here; each run is a forked child (a real
process, so SIGKILL is a real kill) that builds the Loop, resumes from
WORK_DIR/killed and trains. A TensorFlow start-up per run would cost 5-8 s;
a fork costs about one. TensorFlow runs no op in this parent, so the
children start from a clean runtime.

First an uninterrupted run writes WORK_DIR/reference. Then N_KILLS runs on
WORK_DIR/killed are each SIGKILLed at a random moment (seeded), and a last
run completes it. The killed runs write checkpoints slowly (sleeps patched
into the checkpoint protocol here, between its steps; the library has no
such hook), so many kills land inside a write. After each kill this script
records what the kill left (a temp folder, a step whose permanent
checkpoint is missing, a checkpoint whose evals are pending), before the
next run cleans up. Each completed run writes `<dir>/result.npz` (final
weights) and `<dir>/history.json`; the last line printed is a JSON summary.
"""

import json
import os
import random
import re
import signal
import sys
import time

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax import optimizers
import tfnp_trax.layers as tl
from tfnp_trax.supervised import checkpoints
from tfnp_trax.supervised import training

N_STEPS = 60
PERMANENT_EVERY = 5
KEEP = 2
_PAUSE = 0.012  # Seconds slept at each point of the slowed write protocol.


def eval_at(step):
  return step % 3 == 0


def _data(seed):
  r = np.random.default_rng(seed)
  while True:
    x = r.normal(size=(8, 6)).astype(np.float32)
    y = (x[:, :3].sum(-1) > 0).astype(np.int32)
    yield x, y, np.ones(8, np.float32)


def make_loop(output_dir):
  """The run under test: every Loop feature a kill can interrupt."""
  model = tl.Serial(tl.Dense(16), tl.Relu(), tl.Dropout(0.1), tl.Dense(2))
  task = training.TrainTask(
      _data(0), tl.WeightedCategoryCrossEntropy(), optimizers.Adam(0.01),
      n_steps_per_checkpoint=2,
      n_steps_per_permanent_checkpoint=PERMANENT_EVERY)
  # The eval batches differ from eval to eval, so a resumed run must read
  # the ones the uninterrupted run read.
  evals = training.EvalTask(
      _data(1), [tl.WeightedCategoryCrossEntropy(),
                 tl.WeightedCategoryAccuracy()],
      metric_names=['loss', 'accuracy'], n_eval_batches=2)
  return training.Loop(model, task, eval_tasks=[evals], eval_at=eval_at,
                       output_dir=output_dir, random_seed=5,
                       keep_checkpoints=KEEP, checkpoint_low_metric='loss')


def _slow_down_checkpoint_writes(events_fd):
  """Sleeps between the steps of the write protocol (this child only).

  Each pause is announced with a byte on `events_fd`, so the parent can
  kill at a chosen point of the protocol however loaded the machine is.
  """
  def slow(fn):
    def wrapped(*args, **kwargs):
      os.write(events_fd, b'W')
      time.sleep(_PAUSE)
      out = fn(*args, **kwargs)
      time.sleep(_PAUSE)
      return out
    return wrapped
  for name in ('_fsync_file', '_write_manifest', '_replace_dir',
               '_fsync_dir'):
    setattr(checkpoints, name, slow(getattr(checkpoints, name)))
  manager = checkpoints.CheckpointManager
  manager.copy = slow(manager.copy)


def _train(output_dir, slow, events_fd):
  if slow:
    _slow_down_checkpoint_writes(events_fd)
  loop = make_loop(output_dir)
  print(f'{time.time():.3f} built at step {loop.step}')
  os.write(events_fd, b'R')
  loop.run(N_STEPS - loop.step)
  weights = fastmath.tree_flatten(loop.model.weights)
  np.savez(os.path.join(output_dir, 'result.npz'),
           *[np.asarray(w) for w in weights])
  with open(os.path.join(output_dir, 'history.json'), 'w') as f:
    json.dump(loop.history.to_dict(), f)


def _fork_run(output_dir, slow):
  """Starts a child training on `output_dir`; returns (pid, ready fd)."""
  read_fd, write_fd = os.pipe()
  pid = os.fork()
  if pid == 0:
    os.close(read_fd)
    code = 1
    try:
      sys.stdout = open(os.path.join(output_dir, '..', 'child.log'), 'a',
                        buffering=1)
      _train(output_dir, slow, write_fd)
      code = 0
    finally:
      os._exit(code)  # pylint: disable=protected-access
  os.close(write_fd)
  return pid, read_fd


def _wait(pid):
  _, status = os.waitpid(pid, 0)
  return status


def _left_behind(output_dir):
  """What a kill left in the checkpoint folder, before a run cleans up."""
  found = {'tmp': 0, 'permanent_missing': 0, 'pending': 0}
  inner = os.path.join(output_dir, 'checkpoints')
  if not os.path.isdir(inner):
    return found
  names = os.listdir(inner)
  found['tmp'] = sum(n.startswith('.tmp-') for n in names)
  steps = [int(m.group(1)) for m in map(
      re.compile(r'^ckpt-(\d+)$').match, names) if m]
  for step in steps:
    if step % PERMANENT_EVERY == 0 or step == 1:
      found['permanent_missing'] += f'ckpt-{step}-permanent' not in names
  if steps:
    with open(os.path.join(inner, f'ckpt-{max(steps)}',
                           'manifest.json')) as f:
      progress = json.load(f)['extra'].get('loop_progress', {})
    found['pending'] += bool(progress.get('pending')) and eval_at(max(steps))
  return found


def _newest_step(output_dir):
  inner = os.path.join(output_dir, 'checkpoints')
  names = os.listdir(inner) if os.path.isdir(inner) else []
  return max([int(m.group(1)) for m in map(
      re.compile(r'^ckpt-(\d+)').match, names) if m], default=0)


def main():
  work, seed, n_kills = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
  reference, killed = (os.path.join(work, 'reference'),
                       os.path.join(work, 'killed'))
  os.makedirs(reference)
  os.makedirs(killed)
  start = time.time()
  pid, fd = _fork_run(reference, slow=False)
  assert _wait(pid) == 0, 'the uninterrupted run failed (see child.log)'
  os.close(fd)
  reference_s = time.time() - start

  rng = random.Random(seed)
  kills, seen = 0, {'tmp': 0, 'permanent_missing': 0, 'pending': 0}
  finished_early = False
  while kills < n_kills:
    pid, fd = _fork_run(killed, slow=True)
    # A sixth of the kills strike at a random time after the fork (while
    # the Loop is built and resumes, which also writes), a sixth at a
    # random time after training started, the others at a random pause of
    # the write protocol. Each window is short, so that however fast the
    # machine, the kills come before the run can finish.
    kind = rng.random()
    if kind < 1 / 6:
      time.sleep(rng.uniform(0.0, 1.2))
    elif kind < 1 / 3:
      os.read(fd, 1)
      time.sleep(rng.uniform(0.0, 0.4))
    else:
      target, events = rng.randint(1, 30), 0
      while events < target:
        got = os.read(fd, 64)
        if not got:  # The child finished first.
          break
        events += got.count(b'W')
      time.sleep(rng.uniform(0.0, _PAUSE))
    try:
      os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
      pass
    status = _wait(pid)
    os.close(fd)
    if os.WIFEXITED(status):
      assert os.WEXITSTATUS(status) == 0, 'a run failed (see child.log)'
      finished_early = True
      break
    kills += 1
    for key, value in _left_behind(killed).items():
      seen[key] += value
  reached = _newest_step(killed)
  pid, fd = _fork_run(killed, slow=False)
  assert _wait(pid) == 0, 'the final resumed run failed (see child.log)'
  os.close(fd)
  print(json.dumps({'kills': kills, 'seen': seen, 'reached': reached,
                    'finished_early': finished_early,
                    'reference_s': reference_s,
                    'total_s': time.time() - start}))


if __name__ == '__main__':
  main()
