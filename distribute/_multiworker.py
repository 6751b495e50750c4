"""MultiWorkerMirroredStrategy from TF_CONFIG, with bounded waits.

Without limits, a worker whose peer never starts blocks forever while the
cluster forms. With a collective timeout (argument, or the environment
variable `TFNP_COLLECTIVE_TIMEOUT` in seconds, as set by `distribute.launch`)
this module:

* configures TensorFlow's coordination service so that task registration
  ends in an error after the timeout (the Python helper does not expose
  `cluster_register_with_barrier`, so it is set on the config proto);
* passes `CommunicationOptions(timeout_seconds=...)` so each collective op
  fails instead of hanging when a peer stops answering.

A peer that dies after the cluster has formed makes a running ring
all-reduce fail at once ("Socket closed"), or else is caught by the
coordination service's heartbeats (about 10 s in TF 2.21); either way the
pending collectives end with an UnavailableError.
"""

import os

import tensorflow as tf

from distribute import tf_config

__all__ = ['TIMEOUT_ENV', 'collective_timeout', 'make_strategy']

TIMEOUT_ENV = tf_config.TIMEOUT_ENV


def collective_timeout(timeout=None):
  """`timeout`, else $TFNP_COLLECTIVE_TIMEOUT, as float seconds (or None)."""
  if timeout is None:
    text = os.environ.get(TIMEOUT_ENV, '').strip()
    if not text:
      return None
    try:
      timeout = float(text)
    except ValueError as e:
      raise ValueError(f'{TIMEOUT_ENV} must be a number of seconds, got '
                       f'{text!r}.') from e
  if timeout <= 0:
    raise ValueError(f'collective timeout must be > 0 seconds, got {timeout}.')
  return float(timeout)


def _configure_coordination(config, timeout):
  """Bounds cluster registration by `timeout`; a no-op if TF's layout moved."""
  # Internal TensorFlow modules: MultiWorkerMirroredStrategy configures the
  # same service itself, but with unbounded registration.
  try:
    from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top
    from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2  # pylint: disable=g-import-not-at-top
  except ImportError:
    return
  jobs = tf_config.coordinated_jobs(config)
  task_type = (config.get('task') or {}).get('type')
  ctx = context.context()
  # Once TF is initialised the strategy itself raises a clearer error.
  if (task_type not in jobs or ctx.coordination_service or
      getattr(ctx, '_context_handle', None)):
    return
  leader = 'chief' if 'chief' in jobs else 'worker'
  ctx.configure_coordination_service(
      service_type='standalone',
      service_leader=f'/job:{leader}/replica:0/task:0',
      cluster_register_timeout_in_ms=int(timeout * 1000),
      coordinated_jobs=[
          coordination_config_pb2.CoordinatedJob(name=job, num_tasks=count)
          for job, count in jobs.items()])
  ctx.coordination_service.cluster_register_with_barrier = True


def _describe(config):
  task = (config or {}).get('task', {})
  return (f"task {task.get('type')}:{task.get('index')} of cluster "
          f"{(config or {}).get('cluster')}")


def make_strategy(timeout=None):
  """Creates a MultiWorkerMirroredStrategy for the TF_CONFIG cluster.

  Args:
    timeout: collective timeout in seconds; None reads $TFNP_COLLECTIVE_TIMEOUT
      (unset: TensorFlow's defaults, i.e. no limit).

  Returns:
    tf.distribute.MultiWorkerMirroredStrategy.

  Raises:
    TimeoutError: the cluster did not form within `timeout`.
    RuntimeError: TensorFlow was initialised before this call.
  """
  timeout = collective_timeout(timeout)
  config = tf_config.read()
  if timeout is not None and config:
    _configure_coordination(config, timeout)
  options = tf.distribute.experimental.CommunicationOptions(
      timeout_seconds=timeout)
  try:
    return tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=options)
  except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError) as e:
    first_line = str(e).strip().splitlines()[0] if str(e).strip() else ''
    limit = f'{timeout:g} s' if timeout else "TensorFlow's time limit"
    raise TimeoutError(
        f"get_strategy('multiworker'): the cluster did not form within "
        f'{limit} ({_describe(config)}). Every worker listed in TF_CONFIG '
        f'must start and call get_strategy(); check that all of them were '
        f'launched and their addresses are reachable. TensorFlow said: '
        f'{first_line}') from e
  except RuntimeError as e:
    if 'initialized' not in str(e) and 'startup' not in str(e):
      raise
    raise RuntimeError(
        "get_strategy('multiworker') must be called before any TensorFlow op "
        'runs: MultiWorkerMirroredStrategy configures the runtime at '
        f'startup. ({e})') from e
