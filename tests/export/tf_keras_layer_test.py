"""AsKeras under TF_USE_LEGACY_KERAS=1: a tf_keras layer, as in Trax's days.

Trax's tf_numpy_and_keras notebook wraps a trained model with
`trax.AsKeras`, builds a `tf.keras.Model` around it, saves it with
`keras_model.save(directory)` (a SavedModel, under tf_keras) and loads it
with `tf.keras.models.load_model`. The environment variable must be set
before TensorFlow is imported, so each check runs in its own interpreter;
the SavedModel is loaded in one where tfnp_trax cannot be imported.
"""

import json

import numpy as np

from tests import _subprocess
from tests.export import _isolated

_LEGACY = {'TF_USE_LEGACY_KERAS': '1'}

_BUILD_AND_SAVE = '''
import json, sys
import numpy as np
import tensorflow as tf
import tf_keras
import tfnp_trax as trax
from tfnp_trax import export, layers as tl, shapes

out = {'is_tf_keras': isinstance(trax.AsKeras, type) and
       issubclass(trax.AsKeras, tf_keras.layers.Layer),
       'same_in_export': export.AsKeras is trax.AsKeras,
       'legacy': export.keras_mode.legacy_keras()}
model = tl.Serial(tl.Embedding(vocab_size=50, d_feature=8), tl.Mean(axis=1),
                  tl.Dense(2))
x = np.arange(12, dtype=np.int32).reshape(2, 6) % 50
model.init(shapes.signature(x))
out['native'] = np.asarray(model(x)).tolist()
layer = trax.AsKeras(model)
out['layer'] = np.asarray(layer(x)).tolist()
inputs = tf.keras.Input(shape=(None,), dtype='int32')
keras_model = tf.keras.Model(inputs=inputs, outputs=layer(inputs))
out['model'] = np.asarray(keras_model(x)).tolist()
out['n_trainable'] = len(keras_model.trainable_weights)
# tf_keras trains the wrapped weights: one SGD step on a fresh twin.
twin_layer = trax.AsKeras(tl.Serial(tl.Embedding(vocab_size=50, d_feature=8),
                                    tl.Mean(axis=1), tl.Dense(2)))
twin = tf.keras.Model(inputs=inputs, outputs=twin_layer(inputs))
before = [w.numpy().copy() for w in twin.trainable_weights]
twin.compile(optimizer=tf.keras.optimizers.SGD(0.5), loss='mse')
twin.fit(x, np.ones((2, 2), np.float32), epochs=1, verbose=0)
out['trained'] = [bool(np.any(w.numpy() != b))
                  for w, b in zip(twin.trainable_weights, before)]
keras_model.save(PATH)
print('RESULT ' + json.dumps(out))
'''


def _result(stdout):
  line = [l for l in stdout.splitlines() if l.startswith('RESULT ')][-1]
  return json.loads(line[len('RESULT '):])


def test_legacy_keras_model_saves_and_loads_without_tfnp_trax(tmp_path):
  path = str(tmp_path / 'model_checkpoint')  # No suffix: a SavedModel.
  got = _result(_subprocess.run_python(
      f'PATH = {path!r}\n' + _BUILD_AND_SAVE, env=_LEGACY, timeout=300))
  assert got['is_tf_keras'] and got['same_in_export'] and got['legacy']
  # Embedding and Dense: 1 + 2 trainable variables.
  assert got['n_trainable'] == 3
  assert got['trained'] == [True, True, True]
  native = np.asarray(got['native'])
  assert native.shape == (2, 2) and np.abs(native).sum() > 0
  np.testing.assert_allclose(got['layer'], native, rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(got['model'], native, rtol=1e-6, atol=1e-6)
  loaded = _isolated.run_without_tfnp_trax(f'''
      import json, os
      os.environ['TF_USE_LEGACY_KERAS'] = '1'
      import numpy as np
      import tensorflow as tf
      model = tf.keras.models.load_model({path!r})
      x = np.arange(12, dtype=np.int32).reshape(2, 6) % 50
      print('RESULT ' + json.dumps(np.asarray(model(x)).tolist()))
  ''')
  line = [l for l in loaded.splitlines() if l.startswith('RESULT ')][-1]
  np.testing.assert_allclose(json.loads(line[len('RESULT '):]), native,
                             rtol=1e-6, atol=1e-6)


def test_default_is_the_keras_3_layer():
  got = _subprocess.run_python('''
      import keras
      import tfnp_trax
      from tfnp_trax import export
      print('RESULT', issubclass(tfnp_trax.AsKeras, keras.layers.Layer),
            export.keras_mode.legacy_keras())
  ''', env={'TF_USE_LEGACY_KERAS': '0'})
  assert got.split('RESULT')[-1].split() == ['True', 'False']
