# %% [markdown]
# # Distributed training with `tf.distribute`
#
# tfnp_trax replaces JAX's `pmap` / `psum` with `tf.distribute`: a strategy
# runs a replica function on every device, and collectives such as `psum`
# and `pmean` reduce across the replicas on device.
#
# To try this without accelerators we split the CPU into 4 *logical*
# devices and build a `MirroredStrategy` over them. The same code runs
# unchanged over several GPUs, or over TPU cores with a `TPUStrategy`.
#
# We then check the property that makes data parallelism safe: a training
# step on 4 replicas, each seeing a quarter of the batch, gives the same
# loss and the same weights as one device seeing the whole batch.

# %%
# Setup: installs tfnp_trax on Colab; does nothing where it is installed.
import importlib.util
import os

if importlib.util.find_spec('tfnp_trax') is None:
  get_ipython().run_line_magic('pip', 'install -q "tfnp-trax[notebooks]"')

# The automated tests set TFNP_TRAX_NOTEBOOK_SMALL=1 so that the notebook
# runs in seconds; unset, it does full-size work.
SMALL = os.environ.get('TFNP_TRAX_NOTEBOOK_SMALL') == '1'
get_ipython().run_line_magic('matplotlib', 'inline')

# %% [markdown]
# ## Split the CPU first
#
# TensorFlow fixes its list of devices the first time it runs an op, so
# `split_cpu` must come before anything else touches TensorFlow. If you
# re-run this notebook, restart the runtime first (*Runtime > Restart
# session*); otherwise `split_cpu` explains what went wrong.

# %%
import distribute

distribute.split_cpu(4)

import tensorflow as tf

tf.get_logger().setLevel('ERROR')  # Hide tf.distribute's INFO messages.
cpus = [d.name for d in tf.config.list_logical_devices('CPU')]
print(cpus)

# %%
import matplotlib.pyplot as plt
import numpy as np

from tfnp_trax import data, fastmath, models, optimizers, shapes
import tfnp_trax.layers as tl
from tfnp_trax.supervised import trainer as trainer_lib

# %% [markdown]
# ## A MirroredStrategy over the 4 logical CPUs
#
# We pass the CPU devices explicitly, so the notebook uses them even on a
# GPU runtime.

# %%
mirrored = distribute.get_strategy('mirrored', devices=cpus)
single = distribute.get_strategy('one_device', devices=cpus[:1])
print(f'mirrored: {mirrored.num_replicas_in_sync} replicas, '
      f'single: {single.num_replicas_in_sync} replica')

# %% [markdown]
# ## Collectives inside `strategy.run`
#
# Each replica holds its own value, here `replica_id + 1`. Inside the
# replica function:
#
# * `psum` adds the values of all replicas: 1 + 2 + 3 + 4 = 10;
# * `pmean` and `mean_or_pmean(n_devices, x)` average them: 2.5;
# * `pmax` takes the largest: 4.
#
# Every replica gets the same reduced value, computed on device.

# %%
def replica_fn():
  ctx = tf.distribute.get_replica_context()
  x = tf.cast(ctx.replica_id_in_sync_group, tf.float32) + 1.0
  return {
      'x': x,
      'psum': distribute.psum(x),
      'pmean': distribute.pmean(x),
      'mean_or_pmean': distribute.mean_or_pmean(4, x),
      'pmax': distribute.pmax(x),
  }


results = mirrored.run(tf.function(replica_fn))
for name, value in results.items():
  per_replica = [float(v) for v in mirrored.experimental_local_results(value)]
  print(f'{name:>14}: {per_replica}')

# %% [markdown]
# Outside a multi-replica context the same functions are the identity (or a
# plain mean), so numerical code written with them also runs on one device.

# %%
print('psum outside strategy.run:', float(distribute.psum(tf.constant(3.0))))
print('mean_or_pmean(1, x):',
      float(distribute.mean_or_pmean(1, np.array([1.0, 2.0, 6.0]))))

# %% [markdown]
# ## The same training step on 4 replicas and on 1
#
# A `Trainer` runs the whole step inside `strategy.run`: forward and
# backward pass, `pmean` of the gradients, the optimizer update and the
# in-place write of the weights. The loss layer divides by the weights
# summed over all replicas, so the 4-replica loss is the loss of the whole
# batch.
#
# Both trainers start from the same weights (the same init rng) and see the
# same batches: the global batch of 64 is split into 4 x 16 on the mirrored
# strategy.

# %%
(x_train, y_train), _ = data.load_digits_split()
batch_size = 64


def make_trainer(strategy):
  model_with_loss = tl.Serial(models.MLP(layer_widths=(64, 10)),
                              tl.WeightedCategoryCrossEntropy())
  # Initialize on the batch each replica sees.
  per_replica = batch_size // strategy.num_replicas_in_sync
  signature = (shapes.ShapeDtype((per_replica, 8, 8, 1), np.float32),
               shapes.ShapeDtype((per_replica,), np.int32),
               shapes.ShapeDtype((per_replica,), np.float32))
  model_with_loss.init(signature, rng=fastmath.random.get_prng(0))
  return trainer_lib.Trainer(model_with_loss, optimizers.Adam(3e-3),
                             strategy)


mirrored_trainer = make_trainer(mirrored)
single_trainer = make_trainer(single)

# %%
n_steps = 10 if SMALL else 300
batches = data.classification_batches(x_train, y_train, batch_size, seed=0)
mirrored_losses, single_losses = [], []
for step in range(n_steps):
  batch = next(batches)
  rng = fastmath.random.get_prng(step)
  mirrored_losses.append(float(mirrored_trainer.one_step(batch, rng, step)[0]))
  single_losses.append(float(single_trainer.one_step(batch, rng, step)[0]))

loss_gap = np.max(np.abs(np.array(mirrored_losses) - np.array(single_losses)))
weight_gap = max(
    float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
    for a, b in zip(fastmath.tree_leaves(mirrored_trainer.model_weights),
                    fastmath.tree_leaves(single_trainer.model_weights)))
print(f'after {n_steps} steps: largest loss difference {loss_gap:.2e}, '
      f'largest weight difference {weight_gap:.2e}')
assert loss_gap < 1e-4 and weight_gap < 1e-4

# %% tags=["plot"]
fig, (ax, ax_gap) = plt.subplots(1, 2, figsize=(10, 3.5))
ax.plot(single_losses, label='1 device, batch 64')
ax.plot(mirrored_losses, '--', label='4 replicas, 16 each')
ax.set(xlabel='step', ylabel='cross-entropy', title='Training loss')
ax.legend()
ax_gap.plot(np.abs(np.array(mirrored_losses) - np.array(single_losses)))
ax_gap.set(xlabel='step', ylabel='|difference|',
           title='Loss difference (float32 rounding)')
plt.show()

# %% [markdown]
# ## What next
#
# `Loop(..., strategy=mirrored)` trains with the same replicated step (see
# the *Training with Loop* notebook). On a TPU runtime,
# `distribute.get_strategy('tpu')` gives a `TPUStrategy` and everything
# above runs on the TPU cores.
