"""Finding a TPU and building a TPUStrategy on it, with bounded waits.

Each place a TPU can come from is tried in turn; each attempt is cheap and
time-limited so that `get_strategy('auto')` stays fast on machines without
one. What was tried is kept for the error message.
"""

import os
import socket
import threading

import tensorflow as tf

__all__ = ['find_tpu_strategy', 'ENV_VARS']

ENV_VARS = ('TPU_NAME', 'COLAB_TPU_ADDR')
_RESOLVE_TIMEOUT_S = 5.0
_CONNECT_TIMEOUT_S = 3.0


def _candidates():
  """(description, resolver argument) pairs, most specific first."""
  found, tried = [], []
  for var in ENV_VARS:
    value = os.environ.get(var, '').strip()
    if not value:
      tried.append(f'{var} (unset)')
    elif var == 'COLAB_TPU_ADDR':
      found.append((f'{var}={value}', 'grpc://' + value))
    else:
      found.append((f'{var}={value}', value))
  if tf.config.list_physical_devices('TPU'):
    found.append(('local TPU devices', 'local'))
  else:
    tried.append("local TPU devices (tf.config.list_physical_devices('TPU') "
                 'is empty)')
  # The resolver's own lookup (e.g. KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS on GKE).
  found.append(('TPUClusterResolver()', None))
  return found, tried


def _with_timeout(fn, timeout_s):
  """Runs fn() in a daemon thread; returns its result or raises its error."""
  box = {}

  def target():
    try:
      box['value'] = fn()
    except Exception as e:  # pylint: disable=broad-except
      box['error'] = e

  thread = threading.Thread(target=target, daemon=True)
  thread.start()
  thread.join(timeout_s)
  if thread.is_alive():
    raise TimeoutError(f'no answer within {timeout_s:g} s')
  if 'error' in box:
    raise box['error']
  return box['value']


def _check_reachable(master):
  """Raises ConnectionError unless grpc://host:port accepts a TCP connection."""
  if not master.startswith('grpc://'):
    return
  host, _, port = master[len('grpc://'):].rpartition(':')
  with socket.create_connection((host, int(port)), _CONNECT_TIMEOUT_S):
    pass


def _resolve(arg):
  resolver = _with_timeout(
      lambda: tf.distribute.cluster_resolver.TPUClusterResolver(tpu=arg),
      _RESOLVE_TIMEOUT_S)
  if arg != 'local':
    _check_reachable(resolver.master())
  return resolver


def find_tpu_strategy():
  """Returns (TPUStrategy or None, list of what was tried and why it failed)."""
  candidates, tried = _candidates()
  for description, arg in candidates:
    try:
      resolver = _resolve(arg)
    except Exception as e:  # pylint: disable=broad-except
      tried.append(f'{description} ({type(e).__name__}: {e})')
      continue
    if arg != 'local':
      tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver), tried
  return None, tried
