"""`tfnp-trax export`: a trained run's folder to a SavedModel, ONNX or TFLite.

The runs train in this process (`train.main`) to keep the test short; the
exported files are read back where tfnp_trax cannot be imported.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from tests.export import _isolated
from tfnp_trax import data
from tfnp_trax.cli import export_run
from tfnp_trax.cli import train


def _export(*flags):
  return export_run.main(['tfnp-trax export', *flags])


@pytest.fixture(scope='module')
def digits_run(tmp_path_factory):
  """A 100-step digits MLP run, and the SavedModel `--export` made of it."""
  root = tmp_path_factory.mktemp('digits')
  assert train.main([
      'tfnp-trax train', '--task', 'digits', '--model', 'mlp', '--steps',
      '100', '--eval_every', '50', '--output_dir', str(root / 'run'),
      '--export', str(root / 'trained')]) == 0
  return root


def test_exported_checkpoints_classify_as_the_run_trained(digits_run,
                                                          capsys):
  run = str(digits_run / 'run')
  assert os.path.isfile(os.path.join(run, 'run.json'))
  for name, flags in (('newest', []), ('step1', ['--step', '1']),
                      ('lite', ['--format', 'tflite']),
                      ('onnx', ['--format', 'onnx'])):
    assert _export('--output_dir', run, '--export_dir',
                   str(digits_run / name), *flags) == 0
  out = capsys.readouterr().out
  assert f'from {os.path.join(run, "checkpoints", "ckpt-100")}' in out
  assert 'serving_default (inputs float32 [any batch, 8, 8, 1])' in out
  assert "input `inputs` float32 [any batch, 8, 8, 1]" in out
  _, (x, y) = data.load_digits_split(seed=0)
  np.save(digits_run / 'x.npy', x)
  _isolated.run_without_tfnp_trax(f'''
      import numpy as np
      import tensorflow as tf
      root = {str(digits_run)!r}
      x = np.load(root + '/x.npy')
      logits = {{}}
      for name in ('trained', 'newest', 'step1'):
        serve = tf.saved_model.load(f'{{root}}/{{name}}').signatures[
            'serving_default']
        logits[name] = serve(inputs=tf.constant(x))['outputs'].numpy()
      from ai_edge_litert import interpreter
      import onnxruntime
      lite = interpreter.Interpreter(
          model_path=root + '/lite/model.tflite').get_signature_runner()
      logits['lite'] = np.concatenate(
          [lite(inputs=image[None])['outputs'] for image in x[:16]])
      session = onnxruntime.InferenceSession(root + '/onnx/model.onnx')
      logits['onnx'] = session.run(['outputs'], {{'inputs': x}})[0]
      np.savez(root + '/logits.npz', **logits)
  ''')
  logits = dict(np.load(digits_run / 'logits.npz'))
  # The newest checkpoint is the trained model: the same predictions.
  np.testing.assert_allclose(logits['newest'], logits['trained'], rtol=1e-5,
                             atol=1e-5)
  accuracy = (logits['newest'].argmax(-1) == y).mean()
  assert accuracy > 0.8
  np.testing.assert_allclose(logits['lite'], logits['trained'][:16],
                             rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(logits['onnx'], logits['trained'], rtol=1e-4,
                             atol=1e-4)
  # Step 1's checkpoint holds other weights: barely trained.
  assert (logits['step1'].argmax(-1) == y).mean() < accuracy - 0.2


def test_a_copy_run_exports_generate(tmp_path):
  run = str(tmp_path / 'run')
  assert train.main(['tfnp-trax train', '--task', 'copy', '--steps', '5',
                     '--checkpoint_every', '5', '--d_model', '16',
                     '--n_heads', '2', '--n_layers', '1', '--output_dir',
                     run]) == 0
  assert _export('--output_dir', run, '--export_dir',
                 str(tmp_path / 'model'), '--max_length', '6') == 0
  sigs = tf.saved_model.load(str(tmp_path / 'model')).signatures
  out = sigs['generate'](inputs=tf.constant([[0, 3, 4, 5]]))['outputs']
  assert out.shape == (1, 6) and out.dtype == tf.int32
  assert np.all((out.numpy() >= 0) & (out.numpy() < 16))
  # Attention splits heads with a static batch: saved for --batch_size.
  logits = sigs['serving_default'](inputs=tf.zeros([1, 34], tf.int32))
  assert logits['outputs'].shape == (1, 34, 16)


def test_bad_requests_say_what_is_wrong(digits_run, tmp_path, capsys):
  run = str(digits_run / 'run')
  assert _export('--output_dir', str(tmp_path), '--export_dir',
                 str(tmp_path / 'x')) == 2
  assert 'holds no run.json: it is not the folder of a `tfnp-trax train` run' \
      in capsys.readouterr().err
  assert _export('--output_dir', run, '--export_dir', str(tmp_path / 'x'),
                 '--step', '7') == 1
  assert ('holds no checkpoint for step 7; its numbered checkpoints: '
          'ckpt-1, ckpt-50, ckpt-100') in capsys.readouterr().err
  assert _export('--output_dir', run, '--export_dir', str(tmp_path / 'x'),
                 '--step', '1', '--checkpoint', 'best') == 2
  assert '--step and --checkpoint both choose' in capsys.readouterr().err
  assert not os.path.exists(tmp_path / 'x')
