"""Shared timing helpers for the side-by-side benchmarks."""

import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def peak_rss_mib():
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def time_steps(step, n_warmup=5, n_timed=50, min_warmup_s=0.5,
               min_timed_s=2.0):
  """Runs warm-up steps, then times steps one by one; median s/step.

  At least `n_warmup` steps and `min_warmup_s` seconds of warm-up, then at
  least `n_timed` timed steps and `min_timed_s` seconds of them, so a
  millisecond step is measured over hundreds of steps rather than 0.1 s.

  `step()` must block until its result is ready (e.g. call float(loss)).
  """
  start, n = time.perf_counter(), 0
  while n < n_warmup or time.perf_counter() - start < min_warmup_s:
    step()
    n += 1
  times, start = [], time.perf_counter()
  while len(times) < n_timed or time.perf_counter() - start < min_timed_s:
    t = time.perf_counter()
    step()
    times.append(time.perf_counter() - t)
  return statistics.median(times)


def matmul_peak_gflops(n=1024, reps=20, dtype='float32'):
  """Matmul throughput of this machine through TensorFlow (fp32 default)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  a = tf.cast(tf.random.normal((n, n)), dtype)
  f = tf.function(lambda x: tf.matmul(x, x))
  f(a).numpy()
  t = time.perf_counter()
  for _ in range(reps):
    r = f(a)
  r.numpy()
  return 2 * n**3 * reps / (time.perf_counter() - t) / 1e9


def run_config(script, args, timeout=900):
  """Runs one benchmark configuration in its own process; returns its JSON."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
  out = subprocess.run([sys.executable, script] + args, capture_output=True,
                       text=True, timeout=timeout, env=env, check=False)
  if out.returncode != 0:
    raise RuntimeError(f'{script} {args} failed:\n{out.stderr[-3000:]}')
  return json.loads(out.stdout.strip().splitlines()[-1])


def median(values):
  return float(np.median(values))
