"""Resumable streams: counting examples per name, and per-host seeking.

`count_and_skip` counts, per name, the examples a stream has yielded, in the
process-wide dict `data_counters`. Saved with a checkpoint and loaded in a
new process, the counts make a deterministic stream skip what was already
read. The dict is updated in place, so `inputs.data_counters` stays the
object this module uses.
"""

import os
import pickle

from absl import logging
import tensorflow as tf

from distribute import tf_config
from tfnp_trax.data._tf_path import Step

__all__ = ['data_counters', 'count_and_skip', 'CountAndSkip',
           'save_data_counters', 'load_data_counters', 'UniformlySeek']

data_counters = {}


def _host_id():
  """This process's index among the training hosts (TF_CONFIG's task)."""
  config = tf_config.read()
  return int(config.get('task', {}).get('index', 0)) if config else 0


def _host_count():
  return max(tf_config.task_count(tf_config.read()), 1)


def count_and_skip(generator, name):
  """Yields the examples past `data_counters[name]`, counting each one.

  Args:
    generator: a deterministic iterator of examples.
    name: the counter's key.

  Yields:
    The examples from number `data_counters[name]` on (0 when unset).
  """
  seen = 0
  for example in generator:
    seen += 1
    # Read the counter here, not up front: it may be loaded after this
    # generator is made.
    data_counters.setdefault(name, 0)
    if seen > data_counters[name]:
      data_counters[name] += 1
      yield example


def CountAndSkip(name):  # pylint: disable=invalid-name
  """Counts and skips examples under `name` (see `count_and_skip`).

  Python only: on a Dataset, it reads the Dataset as NumPy.
  """
  return Step('CountAndSkip', lambda g: count_and_skip(g, name))


def _counters_file(output_dir, host_id):
  host_id = _host_id() if host_id is None else host_id
  return os.path.join(output_dir, 'data_counters%d.pkl' % host_id)


def save_data_counters(output_dir, host_id=None):
  """Writes `data_counters` to `output_dir/data_counters<host_id>.pkl`."""
  with tf.io.gfile.GFile(_counters_file(output_dir, host_id), 'wb') as f:
    pickle.dump(data_counters, f)


def load_data_counters(output_dir, host_id=None):
  """Replaces `data_counters` by the saved ones, if that file exists."""
  fname = _counters_file(output_dir, host_id)
  if not tf.io.gfile.exists(fname):
    logging.info('Did not load data counters as %s does not exist.', fname)
    return
  with tf.io.gfile.GFile(fname, 'rb') as f:
    loaded = pickle.load(f)
  data_counters.clear()
  data_counters.update(loaded)


def UniformlySeek(name=None, host_id=None, n_hosts=None, dataset_size=None):  # pylint: disable=invalid-name
  """Starts host `host_id` at `host_id * (dataset_size // n_hosts)`.

  Args:
    name: the dataset's name, for logs (required).
    host_id: this host's index (default: TF_CONFIG's task index, else 0).
    n_hosts: the number of hosts (default: from TF_CONFIG, else 1).
    dataset_size: examples in the dataset (default 2**18, with an error log).
  """
  if not name:
    raise ValueError('UniformlySeek: give the dataset a name.')
  if not dataset_size:
    dataset_size = 2 ** 18
    logging.error('No dataset size given to Uniformly seek, assuming: %d',
                  dataset_size)
  host_id = _host_id() if host_id is None else host_id
  n_hosts = n_hosts or _host_count()
  skip = int(host_id * int(dataset_size / n_hosts))

  def python_fn(generator):
    logging.info('Dataset[%s] host_id[%d] is seeking to position[%d]',
                 name, host_id, skip)
    generator = iter(generator)
    for _ in range(skip):
      next(generator)
    yield from generator

  return Step('UniformlySeek', python_fn, lambda ds: ds.skip(skip))
