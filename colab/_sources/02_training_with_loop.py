# %% [markdown]
# # Training with `Loop`
#
# This notebook trains a small classifier on the 8x8 handwritten digits
# that ship with scikit-learn (no download), using Trax's training API:
#
# * `TrainTask`: the training data, the loss layer and the optimizer;
# * `EvalTask`: the evaluation data and the metrics to report;
# * `Loop`: runs the steps, evaluates, writes checkpoints and TensorBoard
#   logs, and records everything in `loop.history`.
#
# The step runs under a `tf.distribute` strategy. With a TPU attached
# (Colab: *Runtime > Change runtime type > TPU*) `get_strategy('auto')`
# returns a `TPUStrategy` and each step runs on all TPU cores; otherwise it
# returns the default one-device strategy.

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

# %%
import tempfile

import matplotlib.pyplot as plt
import numpy as np

import distribute
from tfnp_trax import data, models, optimizers
import tfnp_trax.layers as tl
from tfnp_trax.supervised import training

# %% [markdown]
# ## Pick a strategy
#
# `'auto'` tries, in order: a TPU, a multi-worker cluster (`TF_CONFIG`),
# several GPUs, and finally the default strategy.

# %%
strategy = distribute.get_strategy('auto')
n_replicas = strategy.num_replicas_in_sync
print(f'{type(strategy).__name__} with {n_replicas} replica(s)')

# %% [markdown]
# ## Data
#
# `load_digits_split` returns images of shape (N, 8, 8, 1) in [0, 1] and
# integer labels. The input pipeline is written with Trax's data
# combinators: `data.Serial` chains a source (a function yielding
# `(image, label)` examples forever) with `Shuffle`, `Batch` and
# `AddLossWeights`, which adds the `weights` that `TrainTask` and the
# weighted losses expect. The batch is split over the replicas, so its
# size is a multiple of their number.

# %%
(x_train, y_train), (x_test, y_test) = data.load_digits_split()
print('train', x_train.shape, 'test', x_test.shape)

fig, axes = plt.subplots(1, 8, figsize=(8, 1.3))
for ax, image, label in zip(axes, x_train, y_train):
  ax.imshow(image[..., 0], cmap='gray_r')
  ax.set_title(int(label))
  ax.axis('off')
plt.show()

def digits_stream(x, y, seed):
  """Yields `(image, label)` examples forever, in a new order every epoch."""
  rng = np.random.default_rng(seed)
  while True:
    for i in rng.permutation(len(y)):
      yield x[i], y[i]


def digits_pipeline(x, y, batch_size, seed):
  return data.Serial(
      lambda _: digits_stream(x, y, seed),
      data.Shuffle(256),
      data.Batch(batch_size),
      data.AddLossWeights(),
  )


np.random.seed(0)  # Shuffle draws from NumPy's global random stream.
batch_size = 32 * n_replicas
train_batches = digits_pipeline(x_train, y_train, batch_size, seed=0)()
eval_batches = digits_pipeline(x_test, y_test, 64, seed=1)()
images, labels, weights = next(train_batches)
print('batch', images.shape, labels.shape, weights.dtype)

# %% [markdown]
# ## Model and tasks
#
# `models.MLP` flattens each image and applies Dense layers with ReLUs in
# between; it outputs logits. `WeightedCategoryCrossEntropy` applies the
# log-softmax itself.

# %%
model = models.MLP(layer_widths=(128, 64, 10))

eval_every = 10 if SMALL else 100
n_steps = 40 if SMALL else 1500

train_task = training.TrainTask(
    labeled_data=train_batches,
    loss_layer=tl.WeightedCategoryCrossEntropy(),
    optimizer=optimizers.Adam(1e-3),
    n_steps_per_checkpoint=eval_every,
)
eval_task = training.EvalTask(
    labeled_data=eval_batches,
    metrics=[tl.WeightedCategoryCrossEntropy(), tl.WeightedCategoryAccuracy()],
    n_eval_batches=4,
)
output_dir = tempfile.mkdtemp(prefix='digits_')
loop = training.Loop(model, train_task, eval_tasks=[eval_task],
                     output_dir=output_dir, strategy=strategy)

# %% [markdown]
# ## Train
#
# `Loop.run` prints the loss as it goes and evaluates every `eval_every`
# steps. Checkpoints land in `output_dir`; a new `Loop` on the same
# directory resumes from the last one. `tensorboard --logdir <output_dir>`
# shows the same curves.

# %%
loop.run(n_steps)

# %% [markdown]
# ## Loss curves from `loop.history`
#
# `history.get(mode, metric)` returns `(step, value)` pairs, under Trax's
# metric names: `metrics/<name>` for the loss and each eval metric. Train
# values are averaged over the steps between two evaluations.

# %% tags=["plot"]
train_steps, train_loss = zip(
    *loop.history.get('train', 'metrics/WeightedCategoryCrossEntropy'))
eval_steps, eval_loss = zip(
    *loop.history.get('eval', 'metrics/WeightedCategoryCrossEntropy'))
_, eval_accuracy = zip(
    *loop.history.get('eval', 'metrics/WeightedCategoryAccuracy'))

fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 3.5))
ax_loss.plot(train_steps, train_loss, 'o-', label='train')
ax_loss.plot(eval_steps, eval_loss, 'o-', label='eval')
ax_loss.set(xlabel='step', ylabel='cross-entropy', title='Loss')
ax_loss.legend()
ax_acc.plot(eval_steps, eval_accuracy, 'o-')
ax_acc.set(xlabel='step', ylabel='accuracy', title='Eval accuracy',
           ylim=(0, 1))
plt.show()

# %% [markdown]
# ## Use the trained model
#
# After `run`, the model layer holds the trained weights, so it can be
# called directly.

# %%
logits = model(x_test)
accuracy = float(np.mean(np.argmax(np.asarray(logits), axis=-1) == y_test))
print(f'test accuracy on all {len(y_test)} images: {accuracy:.3f}')
