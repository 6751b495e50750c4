"""Starts N local worker processes that form a multi-worker TF cluster.

Usage:
  python -m distribute.launch --workers 2 [--timeout 600] \\
      [--collective_timeout 60] [--max_restarts 3] -- python train.py ...

Every worker runs the same command with TF_CONFIG naming all workers on
127.0.0.1 (free ports) and its own task index, so a script that calls
`get_strategy('auto')` trains with MultiWorkerMirroredStrategy; on a real
cluster the same script runs unchanged given each machine's TF_CONFIG.

Output lines are prefixed `[worker i]`. If any worker exits non-zero or is
killed, the others are stopped and the launcher exits non-zero naming the
worker; `--timeout` bounds the whole run (exit code 124).

With `--max_restarts K`, a failed worker instead stops the whole group and
starts all N workers again (on fresh ports), up to K times. Each start sees
its number in the environment variable `TFNP_LAUNCH_ATTEMPT` (0 first), and
a script that trains with `Loop(output_dir=...)` resumes from its last
checkpoint. Once K restarts are spent, the launcher fails naming the worker
and showing its last lines of output.
"""

import argparse
import os
import shlex
import socket
import sys
import threading
import time

from distribute import _procs
from distribute import tf_config

__all__ = ['launch', 'main', 'TIMEOUT_EXIT_CODE', 'ATTEMPT_ENV']

TIMEOUT_EXIT_CODE = 124
# Tells each worker which start of the group it belongs to (0, 1, ...).
ATTEMPT_ENV = 'TFNP_LAUNCH_ATTEMPT'
_POLL_S = 0.05


def _free_ports(n, host):
  # All sockets stay open until every port is chosen, so no port repeats.
  socks = []
  try:
    for _ in range(n):
      sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      sock.bind((host, 0))
      socks.append(sock)
    return [sock.getsockname()[1] for sock in socks]
  finally:
    for sock in socks:
      sock.close()


def _worker_env(base, config, collective_timeout, attempt):
  env = dict(os.environ if base is None else base)
  env['TF_CONFIG'] = config
  env[ATTEMPT_ENV] = str(attempt)
  if collective_timeout is not None:
    env[tf_config.TIMEOUT_ENV] = f'{collective_timeout:g}'
  return env


def _say(message):
  print(f'distribute.launch: {message}', file=sys.stderr, flush=True)


class _Outcome:
  """How one start of the worker group ended."""

  def __init__(self, codes, status, failed=None, timed_out=False):
    self.codes = codes
    self.status = status
    self.failed = failed  # index of the first worker that failed
    self.timed_out = timed_out


def _supervise(children, deadline, timeout):
  """Waits for all workers; stops the rest on failure or timeout."""
  while True:
    codes = [child.poll() for child in children]
    failed = [i for i, code in enumerate(codes) if code not in (None, 0)]
    if failed:
      i = failed[0]
      running = [j for j, code in enumerate(codes) if code is None]
      _say(f'worker {i} {_procs.describe_exit(codes[i])}; stopping '
           f'{len(running)} other running worker(s) {running}.')
      status = codes[i] if 0 < codes[i] < 256 else 1
      return _Outcome([child.stop() for child in children], status, i)
    if all(code == 0 for code in codes):
      return _Outcome(codes, 0)
    if deadline is not None and time.monotonic() > deadline:
      running = [j for j, code in enumerate(codes) if code is None]
      _say(f'timed out after {timeout:g} s with worker(s) {running} still '
           f'running; stopping them. Raise --timeout if the job needs longer.')
      return _Outcome([child.stop() for child in children],
                      TIMEOUT_EXIT_CODE, timed_out=True)
    time.sleep(_POLL_S)


def _start_group(command, workers, attempt, collective_timeout, host, env,
                 stream, lock, deadline, timeout):
  addresses = [f'{host}:{port}' for port in _free_ports(workers, host)]
  children = []
  try:
    for i in range(workers):
      worker_env = _worker_env(env, tf_config.make(addresses, i),
                               collective_timeout, attempt)
      children.append(_procs.Child(command, worker_env, f'[worker {i}] ',
                                   stream, lock))
    outcome = _supervise(children, deadline, timeout)
  finally:
    # On any error in the launcher itself, leave no worker behind.
    for child in children:
      child.stop()
  for child in children:
    child.join_output()
  return outcome, children


def _run(command, workers, timeout=None, collective_timeout=None,
         host='127.0.0.1', env=None, stream=None, max_restarts=0):
  if isinstance(command, str):
    command = shlex.split(command)
  if not command:
    raise ValueError('launch: empty command; give the program to run, e.g. '
                     "['python', 'train.py'].")
  if not isinstance(workers, int) or workers < 1:
    raise ValueError(f'launch: workers must be a positive int, got '
                     f'{workers!r}.')
  if not isinstance(max_restarts, int) or max_restarts < 0:
    raise ValueError(f'launch: max_restarts must be an int >= 0, got '
                     f'{max_restarts!r}.')
  stream = sys.stdout if stream is None else stream
  lock = threading.Lock()
  deadline = None if timeout is None else time.monotonic() + timeout
  attempt = 0
  while True:
    outcome, children = _start_group(command, workers, attempt,
                                     collective_timeout, host, env, stream,
                                     lock, deadline, timeout)
    if outcome.status == 0 or outcome.timed_out:
      return outcome.codes, outcome.status
    if attempt < max_restarts:
      attempt += 1
      _say(f'restarting all {workers} worker(s) (restart {attempt} of '
           f'{max_restarts}); they resume from their last checkpoint.')
      continue
    if max_restarts:
      tail = '\n'.join(f'  {line}' for line in
                       children[outcome.failed].tail()) or '  (no output)'
      _say(f'giving up: worker {outcome.failed} '
           f'{_procs.describe_exit(outcome.codes[outcome.failed])} after '
           f'{max_restarts} restart(s) (--max_restarts {max_restarts}). Its '
           f'last lines:\n{tail}')
    return outcome.codes, outcome.status


def launch(command, workers, timeout=None, collective_timeout=None,
           host='127.0.0.1', env=None, stream=None, max_restarts=0):
  """Runs `command` as `workers` cooperating processes; returns exit codes.

  Args:
    command: argv list (or a shell-like string, split with shlex).
    workers: number of worker processes.
    timeout: hard limit in seconds for the whole run; None for no limit.
    collective_timeout: seconds, exported as TFNP_COLLECTIVE_TIMEOUT for
      `get_strategy('multiworker')`: bounds cluster forming and each
      collective op. None leaves TensorFlow's defaults (no limit).
    host: address the workers listen on.
    env: base environment for the workers (default: this process's).
    stream: where prefixed worker output goes (default sys.stdout).
    max_restarts: how many times a failed group is stopped and started
      again; each worker finds its start number in `ATTEMPT_ENV`.

  Returns:
    List of exit codes, one per worker, of the last start; workers stopped by
    the launcher show the negative signal number. Reasons for a failure go
    to stderr.
  """
  codes, _ = _run(command, workers, timeout, collective_timeout, host, env,
                  stream, max_restarts)
  return codes


def _parse(argv):
  if '--' not in argv:
    raise SystemExit('usage: python -m distribute.launch --workers N '
                     '[--timeout SEC] [--collective_timeout SEC] '
                     '[--max_restarts K] -- COMMAND')
  split = argv.index('--')
  parser = argparse.ArgumentParser(prog='python -m distribute.launch')
  parser.add_argument('--workers', type=int, required=True)
  parser.add_argument('--timeout', type=float, default=None,
                      help='hard limit for the whole run, seconds')
  parser.add_argument('--collective_timeout', type=float, default=None,
                      help='limit for forming the cluster and each collective')
  parser.add_argument('--host', default='127.0.0.1')
  parser.add_argument('--max_restarts', type=int, default=0,
                      help='restart all workers up to K times after a failure')
  args = parser.parse_args(argv[:split])
  return args, argv[split + 1:]


def main(argv=None):
  """Command-line entry point; returns the launcher's exit status."""
  args, command = _parse(sys.argv[1:] if argv is None else argv)
  codes, status = _run(command, args.workers, args.timeout,
                       args.collective_timeout, args.host,
                       max_restarts=args.max_restarts)
  if status == 0:
    _say(f'all {len(codes)} workers finished.')
  return status


if __name__ == '__main__':
  sys.exit(main())
