"""The conformance checks that run in other processes, batched for speed.

Starting TensorFlow costs seconds, so each check starts one process for all
registry entries: one loads every exported SavedModel where tfnp_trax is
not importable; one runs every entry on two replicas of a MirroredStrategy.
"""

import json
import os

import numpy as np

from tests import _multi_device
from tests.conformance import _runs
from tests.conformance import registry
from tests.export import _isolated
from tfnp_trax import export

__all__ = ['saved_model_round_trip', 'mirrored_replicas']

_LOAD_ALL = '''
import json, os
import numpy as np
import tensorflow as tf
# Each model runs once: Grappler's passes would take longer than the run.
tf.config.optimizer.set_experimental_options({{'disable_meta_optimizer': True}})
root = {root!r}
for name in json.load(open(os.path.join(root, 'names.json'))):
  fn = tf.saved_model.load(os.path.join(root, name)).signatures[
      'serving_default']
  inputs = dict(np.load(os.path.join(root, name + '_in.npz')))
  outputs = fn(**{{k: tf.constant(v) for k, v in inputs.items()}})
  np.savez(os.path.join(root, name + '_out.npz'),
           **{{k: v.numpy() for k, v in outputs.items()}})
'''


def saved_model_round_trip(root, names):
  """Exports `names` under `root`, loads them all in one isolated process.

  Returns:
    dict name -> (native outputs tuple, loaded outputs tuple).
  """
  results = {}
  for name in names:
    entry = registry.get(name)
    layer = registry.build(entry)
    export.save_model(layer, os.path.join(root, name), entry.input_signature)
    xs = _runs.as_tuple(registry.make_inputs(entry))
    keys = ['inputs'] if len(xs) == 1 else [f'inputs_{i}'
                                             for i in range(len(xs))]
    np.savez(os.path.join(root, name + '_in.npz'), **dict(zip(keys, xs)))
    # Serving functions run with the fixed key get_prng(0).
    results[name] = _runs.as_tuple(
        _runs.native(entry, layer, key=_runs.SERVING_KEY)[0])
  with open(os.path.join(root, 'names.json'), 'w') as f:
    json.dump(list(names), f)
  _isolated.run_without_tfnp_trax(_LOAD_ALL.format(root=root), timeout=400)
  for name in names:
    loaded = dict(np.load(os.path.join(root, name + '_out.npz')))
    n = len(results[name])
    keys = ['outputs'] if n == 1 else [f'outputs_{i}' for i in range(n)]
    results[name] = (results[name], tuple(loaded[k] for k in keys))
  return results


_REPLICAS = '''
import numpy as np
from tests.conformance import _runs
from tests.conformance import registry
from tfnp_trax import fastmath

strategy = tf.distribute.MirroredStrategy(
    [d.name for d in tf.config.list_logical_devices('CPU')])
assert strategy.num_replicas_in_sync == 2


def local(value, replica):
  # A value every replica returned unchanged comes back as one tensor.
  values = strategy.experimental_local_results(value)
  return values[replica if len(values) > 1 else 0]


worst_by_name = {{}}
for name in {names!r}:
  entry = registry.get(name)
  layer = registry.build(entry)
  x = registry.make_inputs(entry)
  expected = fastmath.tree_flatten(_runs.native(entry, layer, x))
  if entry.replica_sum:  # Every replica holds the same batch.
    expected = [2 * e for e in expected]

  @tf.function(autograph=False)
  def run(x, w, s):
    return strategy.run(
        lambda: layer.pure_fn(x, w, s, tf.constant(_runs.KEY)))
  out = run(x, layer.weights, layer.state)
  per_replica = [fastmath.tree_flatten(_runs.to_numpy(
      fastmath.nested_map(lambda v: local(v, r), out))) for r in range(2)]
  worst = 0.0
  for got in per_replica:
    for a, e in zip(got, expected):
      if a.shape != e.shape:
        worst = float('inf')
      elif a.size:
        worst = max(worst, float(np.max(np.abs(
            a.astype(np.float64) - e.astype(np.float64)))))
  worst_by_name[name] = worst
report(worst_by_name)
'''


def mirrored_replicas(names):
  """Runs `names` on two replicas, each on the whole batch.

  Reductions over replicas (e.g. the weighted means of losses) must then
  equal the single-device values; sums over replicas are twice them.

  Returns:
    dict name -> the largest difference between any replica's outputs and
    new state and the single-device ones (inf on a shape mismatch).
  """
  return _multi_device.run(_REPLICAS.format(names=list(names)), n_devices=2,
                           timeout=400)
