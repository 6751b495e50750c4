# %% [markdown]
# # Keras interop, SavedModel and TFLite
#
# A tfnp_trax model is a TensorFlow computation, so it plugs into the rest
# of the TensorFlow ecosystem:
#
# * `AsKeras` wraps a layer as a Keras 3 layer: `model.compile`,
#   `model.fit`, callbacks and `.keras` files work as usual;
# * `save_model` writes a SavedModel with a `serving_default` signature,
#   which loads with plain `tf.saved_model.load` (no tfnp_trax needed) and
#   serves with TF Serving;
# * `to_tflite` converts the model for TensorFlow Lite (mobile and edge).
#
# We train a digit classifier with Keras, then export it both ways.

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
import warnings

import keras
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

from tfnp_trax import data, fastmath, models, shapes
from tfnp_trax.export import AsKeras, save_model, to_tflite

tf.get_logger().setLevel('ERROR')  # Hide SavedModel's "Assets written" notes.
# tf.lite.Interpreter still works; its successor is the separate
# ai_edge_litert package.
warnings.filterwarnings('ignore', message='.*tf.lite.Interpreter is deprecated')

# %% [markdown]
# ## A tfnp_trax model inside Keras
#
# We build and initialize an MLP the usual way and wrap it. Its weights
# become trainable Keras variables (any layer state, such as BatchNorm
# statistics, becomes non-trainable ones).

# %%
(x_train, y_train), (x_test, y_test) = data.load_digits_split()

mlp = models.MLP(layer_widths=(64, 10))
mlp.init(shapes.signature(x_train[:1]), rng=fastmath.random.get_prng(0))

keras_layer = AsKeras(mlp)
model = keras.Sequential([keras.Input((8, 8, 1)), keras_layer])
model.compile(
    optimizer=keras.optimizers.Adam(1e-3),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=['accuracy'],
)
model.summary()

# %% [markdown]
# ## Train with `model.fit`

# %%
history = model.fit(x_train, y_train, epochs=3 if SMALL else 40,
                    batch_size=32, validation_data=(x_test, y_test),
                    verbose=2)

# %% tags=["plot"]
fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 3.5))
ax_loss.plot(history.history['loss'], label='train')
ax_loss.plot(history.history['val_loss'], label='validation')
ax_loss.set(xlabel='epoch', ylabel='cross-entropy', title='Loss')
ax_loss.legend()
ax_acc.plot(history.history['accuracy'], label='train')
ax_acc.plot(history.history['val_accuracy'], label='validation')
ax_acc.set(xlabel='epoch', ylabel='accuracy', title='Accuracy')
ax_acc.legend()
plt.show()

# %% [markdown]
# ## Back to tfnp_trax
#
# Keras trained its own copies of the weights. The wrapped layer's
# trainable variables are its weight tree's leaves in order, so
# `fastmath.tree_unflatten` rebuilds the tree; with it the tfnp_trax model
# gives the same outputs as the Keras model.

# %%
leaves = [v.numpy() for v in keras_layer.trainable_weights]
trained_weights, _ = fastmath.tree_unflatten(leaves, mlp.weights)
mlp.weights = trained_weights

keras_logits = model.predict(x_test, verbose=0)
np.testing.assert_allclose(mlp(x_test), keras_logits, rtol=1e-5, atol=1e-5)
print('tfnp_trax and Keras agree on', len(x_test), 'test images')

# %% [markdown]
# ## SavedModel
#
# The input signature's batch size is `None`, so the exported model takes
# any batch size. The SavedModel holds the weights as variables; loading it
# needs only TensorFlow.

# %%
export_dir = os.path.join(tempfile.mkdtemp(), 'digits_mlp')
save_model(mlp, export_dir, shapes.ShapeDtype((None, 8, 8, 1), np.float32))

loaded = tf.saved_model.load(export_dir)
serve = loaded.signatures['serving_default']
print(serve.structured_input_signature)
print(serve.structured_outputs)

outputs = serve(inputs=tf.constant(x_test[:5]))['outputs']
np.testing.assert_allclose(outputs, keras_logits[:5], rtol=1e-5, atol=1e-5)
print('predicted', np.argmax(outputs, axis=-1), 'true', y_test[:5])

# %% [markdown]
# Keras's own `model.export` works on the wrapped model too; it serves the
# same function under `serve`.

# %%
keras_export_dir = os.path.join(tempfile.mkdtemp(), 'digits_keras')
model.export(keras_export_dir, verbose=False)
reloaded = tf.saved_model.load(keras_export_dir)
np.testing.assert_allclose(reloaded.serve(x_test[:5]), keras_logits[:5],
                           rtol=1e-5, atol=1e-5)
print('Keras export agrees')

# %% [markdown]
# ## TensorFlow Lite
#
# TFLite needs fully known shapes, so we fix the batch size at 1 (one image
# per call, as on a phone). The interpreter runs the flatbuffer directly.

# %%
flatbuffer = to_tflite(mlp, shapes.ShapeDtype((1, 8, 8, 1), np.float32))
print(f'TFLite model: {len(flatbuffer) / 1024:.1f} KiB')

interpreter = tf.lite.Interpreter(model_content=flatbuffer)
interpreter.allocate_tensors()
input_index = interpreter.get_input_details()[0]['index']
output_index = interpreter.get_output_details()[0]['index']

n_check = 20 if SMALL else len(x_test)
tflite_logits = []
for image in x_test[:n_check]:
  interpreter.set_tensor(input_index, image[None])
  interpreter.invoke()
  tflite_logits.append(interpreter.get_tensor(output_index)[0])
tflite_logits = np.stack(tflite_logits)
np.testing.assert_allclose(tflite_logits, keras_logits[:n_check], rtol=1e-4,
                           atol=1e-4)
agree = np.mean(np.argmax(tflite_logits, -1) ==
                np.argmax(keras_logits[:n_check], -1))
print(f'TFLite and Keras predict the same class on {agree:.0%} of '
      f'{n_check} images')
