"""Reading and writing the TF_CONFIG cluster description.

TF_CONFIG is the JSON environment variable through which tf.distribute's
multi-worker strategies, `distribute.launch` and the data pipeline's
per-host seeking learn the cluster and which task this process is.
"""

import json
import os

__all__ = ['read', 'task_count', 'coordinated_jobs', 'make', 'TIMEOUT_ENV']

# Seconds; read by get_strategy('multiworker'), set by distribute.launch.
TIMEOUT_ENV = 'TFNP_COLLECTIVE_TIMEOUT'

# The jobs whose tasks take part in MultiWorkerMirroredStrategy's all-reduce.
_SYNC_JOBS = ('chief', 'worker')


def read(environ=None):
  """Parses TF_CONFIG from `environ` (default os.environ); None if unset.

  Raises:
    ValueError: TF_CONFIG is set but is not a JSON object.
  """
  environ = os.environ if environ is None else environ
  text = environ.get('TF_CONFIG', '').strip()
  if not text:
    return None
  try:
    config = json.loads(text)
  except json.JSONDecodeError as e:
    raise ValueError(f'TF_CONFIG is not valid JSON ({e}): {text!r}') from e
  if not isinstance(config, dict):
    raise ValueError(f'TF_CONFIG must be a JSON object, got {text!r}')
  return config


def coordinated_jobs(config):
  """{job: task count} for the synchronous-training jobs in `config`."""
  cluster = (config or {}).get('cluster', {}) or {}
  return {job: len(cluster[job]) for job in _SYNC_JOBS if cluster.get(job)}


def task_count(config):
  """Number of chief + worker tasks named by `config` (0 if None)."""
  return sum(coordinated_jobs(config).values())


def make(addresses, index, job='worker'):
  """TF_CONFIG JSON text for task `index` of a cluster of `addresses`."""
  return json.dumps({'cluster': {job: list(addresses)},
                     'task': {'type': job, 'index': index}})
