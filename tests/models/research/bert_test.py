"""BERT against real Trax recordings, a NumPy float64 BERT, and checkpoints.

`tests/testdata/bert/` holds Trax 1.4.1's reprs, weights and outputs for
tiny BERTs and a weight file written by Trax's `save_to_file` (see the
README there). The NumPy reference below is written in the original
TensorFlow BERT's variable layout (full (d_model, d_model) attention
matrices), so it also checks the per-head layout that checkpoints are
converted to.
"""

import functools
import math
import os
import zipfile

import numpy as np
import pytest
import tensorflow as tf

from tests import _fixtures
from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models.research import _bert_checkpoint
from tfnp_trax.models.research import _bert_tf_bundle
from tfnp_trax.models.research import bert

_DIR = _fixtures.path('bert')
_RECORDING = _fixtures.Recording('bert', 'cases.json', 'cases.npz')
_RECORDS, _ARRAYS = _RECORDING.records, _RECORDING.arrays
# The sizes make_fixtures.py recorded with.
TINY = dict(d_model=8, vocab_size=11, max_len=6, type_vocab_size=3,
            n_heads=2, d_ff=16)
CASES = {
    'bert_cls': lambda: bert.BERT(n_layers=2, head=functools.partial(
        bert.BERTClassifierHead, 3), **TINY),
    'bert_plain': lambda: bert.BERT(n_layers=1, **TINY),
    'bert_reg': lambda: bert.BERT(n_layers=1, head=bert.BERTRegressionHead,
                                  mode='train', **TINY),
    'bert_mlm': lambda: bert.BERT(n_layers=1, head=functools.partial(
        bert.BERTMLMHead, vocab_size=11), **TINY),
}


def _inputs():
  return tuple(jnp.asarray(_ARRAYS[f'inputs/x{i}']) for i in range(3))


def _trax_leaves(name):
  n = len(_RECORDS[name]['weight_shapes'])
  return [_ARRAYS[f'{name}/w{i}'] for i in range(n)]


def _with_trax_weights(name):
  model = CASES[name]()
  model.init(shapes.signature(_inputs()))
  model.weights = fastmath.tree_unflatten(
      [jnp.asarray(w) for w in _trax_leaves(name)], model.weights)[0]
  return model


def _as_list(ys):
  return list(ys) if isinstance(ys, (tuple, list)) else [ys]


# -- A float64 NumPy BERT in the TensorFlow checkpoint layout -----------------


def _layer_norm(x, gamma, beta, eps=1e-12):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _gelu(x):
  erf = np.vectorize(math.erf)
  return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def _numpy_bert(v, tokens, segments, n_layers, n_heads):
  """`(pooled, sequence)` from TF-named float64 variables `v`."""
  e = 'bert/embeddings/'
  length = tokens.shape[1]
  x = (v[e + 'word_embeddings'][tokens] +
       v[e + 'token_type_embeddings'][segments] +
       v[e + 'position_embeddings'][:length])
  x = _layer_norm(x, v[e + 'LayerNorm/gamma'], v[e + 'LayerNorm/beta'])
  padding = (tokens == 0)[:, None, None, :]  # (batch, 1, 1, keys)
  for i in range(n_layers):
    p = f'bert/encoder/layer_{i}/'

    def heads(name, x=x, p=p):
      y = x @ v[p + f'attention/self/{name}/kernel'] + v[
          p + f'attention/self/{name}/bias']
      return y.reshape(y.shape[0], length, n_heads, -1).transpose(0, 2, 1, 3)
    q, k, val = heads('query'), heads('key'), heads('value')
    logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    logits = np.where(padding, logits - 1e9, logits)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    context = (weights @ val).transpose(0, 2, 1, 3).reshape(x.shape)
    attended = (context @ v[p + 'attention/output/dense/kernel'] +
                v[p + 'attention/output/dense/bias'])
    x = _layer_norm(x + attended, v[p + 'attention/output/LayerNorm/gamma'],
                    v[p + 'attention/output/LayerNorm/beta'])
    hidden = _gelu(x @ v[p + 'intermediate/dense/kernel'] +
                   v[p + 'intermediate/dense/bias'])
    x = _layer_norm(
        x + hidden @ v[p + 'output/dense/kernel'] + v[p + 'output/dense/bias'],
        v[p + 'output/LayerNorm/gamma'], v[p + 'output/LayerNorm/beta'])
  pooled = np.tanh(x[:, 0] @ v['bert/pooler/dense/kernel'] +
                   v['bert/pooler/dense/bias'])
  return pooled, x


def _tf_layout(leaves, n_layers):
  """Trax-layout weight leaves -> TF-named arrays (the inverse reshape)."""
  names = _bert_checkpoint.checkpoint_variable_names(n_layers)
  out = {}
  for name, w in zip(names, leaves):
    w = np.asarray(w)
    if '/attention/self/' in name and name.endswith('kernel'):
      w = w.transpose(1, 0, 2).reshape(w.shape[1], -1)  # (d, heads * dh)
    elif '/attention/self/' in name:
      w = w.reshape(-1)
    elif name.endswith('attention/output/dense/kernel'):
      w = w.reshape(-1, w.shape[-1])
    out[name] = w
  return out


# -- Structure and outputs against real Trax ----------------------------------


@pytest.mark.parametrize('name', sorted(CASES))
def test_structure_matches_trax(name):
  model = CASES[name]()
  model.init(shapes.signature(_inputs()))
  want = _RECORDS[name]
  assert str(model) == want['repr']
  assert (model.n_in, model.n_out) == (want['n_in'], want['n_out'])
  assert [list(w.shape) for w in fastmath.tree_leaves(model.weights)] == (
      want['weight_shapes'])


@pytest.mark.parametrize('name,make', [
    ('head_cls', lambda: bert.BERTClassifierHead(3)),
    ('head_reg', bert.BERTRegressionHead),
    ('head_mlm', bert.BERTMLMHead),
    ('head_pretraining', lambda: bert.BERTPretrainingHead(2)[0]),
    ('pretraining_loss', bert.BERTPretrainingLoss)])
def test_heads_match_trax(name, make):
  layer = make()
  assert str(layer) == _RECORDS[name]['repr']
  assert (layer.n_in, layer.n_out) == (_RECORDS[name]['n_in'],
                                       _RECORDS[name]['n_out'])


@pytest.mark.parametrize('name,modes', [('bert_cls', ('eager',)),
                                        ('bert_plain', lt.MODES),
                                        ('bert_reg', ('eager',)),
                                        ('bert_mlm', ('eager',))])
def test_outputs_match_trax(name, modes):
  model = _with_trax_weights(name)
  for mode in modes:
    ys, _ = lt.run_layer(model, _inputs(), mode)
    ys = _as_list(ys)
    assert len(ys) == _RECORDS[name]['n_out']
    for i, got in enumerate(ys):
      np.testing.assert_allclose(np.asarray(got), _ARRAYS[f'{name}/y{i}'],
                                 rtol=1e-5, atol=2e-5, err_msg=mode)


def test_pretraining_loss_matches_trax():
  xs = tuple(jnp.asarray(_ARRAYS[f'loss/x{i}']) for i in range(6))
  loss = bert.BERTPretrainingLoss()
  loss.init(shapes.signature(xs))
  np.testing.assert_allclose(float(loss(xs)), _ARRAYS['loss/y0'], rtol=1e-6)


def test_matches_numpy_bert_with_gradients():
  """Outputs and all weight gradients against the float64 NumPy BERT."""
  tokens = np.array([[3, 4, 1, 0], [5, 2, 6, 1]], np.int32)
  segments = np.array([[0, 0, 1, 1], [0, 1, 1, 0]], np.int32)
  make = functools.partial(bert.BERT, d_model=4, vocab_size=7, max_len=4,
                           n_heads=2, d_ff=6, n_layers=1)
  model = make()
  model.init(shapes.signature((tokens, segments, tokens[:, 0])))
  rng = np.random.default_rng(3)
  weights = fastmath.tree_unflatten(
      [rng.normal(size=w.shape) * 0.5
       for w in fastmath.tree_leaves(model.weights)], model.weights)[0]

  def reference(xs, ws):
    v = _tf_layout(fastmath.tree_leaves(ws), 1)
    return _numpy_bert(v, xs[0], xs[1], 1, 2)
  lt.check_layer(
      make(), (tokens, segments, tokens[:, 0]), reference, weights=weights,
      rtol=1e-5, atol=1e-5, grad_rtol=1e-3, grad_atol=1e-4,
      modes=('eager',))  # test_outputs_match_trax covers jit and XLA.


# -- Weight files --------------------------------------------------------------


def test_trax_weight_file_loads_and_gives_trax_outputs():
  from_file = CASES['bert_cls']()
  from_file.init_from_file(str(_DIR / 'bert_cls.pkl.gz'))
  direct = _with_trax_weights('bert_cls')
  for got, want in zip(fastmath.tree_leaves(from_file.weights),
                       fastmath.tree_leaves(direct.weights)):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  got = np.asarray(from_file(_inputs()))
  np.testing.assert_array_equal(got, np.asarray(direct(_inputs())))
  np.testing.assert_allclose(got, _ARRAYS['bert_cls/y0'], rtol=1e-5,
                             atol=2e-5)


def test_weight_file_round_trip(tmp_path):
  model = _with_trax_weights('bert_plain')
  model.save_to_file(str(tmp_path / 'bert.pkl.gz'),
                     input_signature=shapes.signature(_inputs()))
  loaded = CASES['bert_plain']()
  loaded.init_from_file(str(tmp_path / 'bert.pkl.gz'))
  for got, want in zip(_as_list(loaded(_inputs())),
                       _as_list(model(_inputs()))):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# -- TensorFlow BERT checkpoints -------------------------------------------


def _write_checkpoint(prefix, arrays):
  names = sorted(arrays)
  tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names,
                    shape_and_slices=[''] * len(names),
                    tensors=[tf.constant(arrays[n]) for n in names])
  return str(prefix)


def _checkpoint_arrays(n_layers=2, d_model=8, d_ff=16, max_len=6, seed=0):
  """Random float32 variables named and shaped as in Google's checkpoints."""
  rng = np.random.default_rng(seed)
  shapes_by_suffix = {'word_embeddings': (11, d_model),
                      'token_type_embeddings': (3, d_model),
                      'position_embeddings': (max_len, d_model),
                      'intermediate/dense/kernel': (d_model, d_ff),
                      'intermediate/dense/bias': (d_ff,),
                      'output/dense/kernel': (d_ff, d_model)}
  arrays = {}
  for name in _bert_checkpoint.checkpoint_variable_names(n_layers):
    shape = next((s for suffix, s in shapes_by_suffix.items()
                  if name.endswith(suffix) and 'attention' not in name),
                 (d_model, d_model) if name.endswith('kernel') else
                 (d_model,))
    arrays[name] = (rng.normal(size=shape) * 0.5).astype(np.float32)
  # Optimizer slots and the step, as real checkpoints hold, are skipped.
  arrays['bert/pooler/dense/kernel/adam_m'] = np.ones((d_model, d_model),
                                                      np.float32)
  arrays['global_step'] = np.int64(7)
  return arrays


def test_tf_checkpoint_loads_into_train_mode_bert(tmp_path):
  arrays = _checkpoint_arrays()
  prefix = _write_checkpoint(tmp_path / 'bert_model.ckpt', arrays)
  model = bert.BERT(n_layers=2, init_checkpoint=prefix, mode='train', **TINY)
  model.init(shapes.signature(_inputs()))
  tokens, segments, _ = (np.asarray(x) for x in _inputs())
  want = _numpy_bert({k: v.astype(np.float64) for k, v in arrays.items()},
                     tokens, segments, n_layers=2, n_heads=2)
  got = model(_inputs())
  for g, w in zip(got, want):
    np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-4)


def test_tf_checkpoint_is_ignored_outside_train_mode(tmp_path):
  # Trax loads the checkpoint only in 'train' mode.
  prefix = _write_checkpoint(tmp_path / 'bert_model.ckpt',
                             _checkpoint_arrays(n_layers=1))
  model = bert.BERT(n_layers=1, init_checkpoint=prefix, mode='eval', **TINY)
  assert model.init_checkpoint is None


def test_tf_checkpoint_of_other_sizes_is_refused(tmp_path):
  prefix = _write_checkpoint(tmp_path / 'bert_model.ckpt',
                             _checkpoint_arrays(n_layers=1, max_len=5))
  model = bert.BERT(n_layers=1, init_checkpoint=prefix, mode='train', **TINY)
  with pytest.raises(tl.LayerError, match=(
      r'position_embeddings has shape \(5, 8\), but the '
      r"model's weight has shape \(6, 8\); build BERT with the checkpoint's "
      r'sizes')):
    model.init(shapes.signature(_inputs()))


def test_tf_checkpoint_missing_a_layer_names_it(tmp_path):
  prefix = _write_checkpoint(tmp_path / 'bert_model.ckpt',
                             _checkpoint_arrays(n_layers=1))
  model = bert.BERT(n_layers=2, init_checkpoint=prefix, mode='train', **TINY)
  with pytest.raises(tl.LayerError,
                     match=r"no variables \['bert/encoder/layer_1/"):
    model.init(shapes.signature(_inputs()))


def test_model_names_resolve_to_the_local_copy(tmp_path, monkeypatch):
  monkeypatch.setenv('HOME', str(tmp_path))
  folder = tmp_path / 'trax' / 'bert-base-uncased' / 'uncased_L-12_H-768_A-12'
  folder.mkdir(parents=True)
  for suffix in ('.index', '.data-00000-of-00001', '.meta'):
    (folder / ('bert_model.ckpt' + suffix)).write_bytes(b'')
  model = bert.PretrainedBERT(tl.Dense(2), init_checkpoint='bert-base-uncased')
  assert model.init_checkpoint == str(folder / 'bert_model.ckpt')
  with pytest.raises(KeyError, match=r"unknown model name 'bert-huge'"):
    bert.PretrainedBERT(tl.Dense(2), init_checkpoint='bert-huge')


def test_model_download_unzips_into_trax_folder(tmp_path, monkeypatch):
  monkeypatch.setenv('HOME', str(tmp_path))
  archive = tmp_path / 'bert.zip'
  with zipfile.ZipFile(archive, 'w') as z:
    z.writestr('uncased/bert_model.ckpt.index', b'')
    z.writestr('uncased/vocab.txt', b'[PAD]\n')
  fetched = []

  def fake_urlretrieve(url, path):  # No network in tests.
    fetched.append(url)
    os.link(archive, path)
  monkeypatch.setattr(_bert_checkpoint.urllib.request, 'urlretrieve',
                      fake_urlretrieve)
  folder, name = bert.PretrainedBERT.download_model('bert-base-uncased')
  assert fetched == [_bert_checkpoint.MODEL_LINKS['bert-base-uncased']]
  assert (folder, name) == (
      str(tmp_path / 'trax' / 'bert-base-uncased' / 'uncased'),
      'bert_model.ckpt')
  assert not (tmp_path / 'trax' / 'bert-base-uncased' / 'model_temp').exists()


# -- The TensorFlow checkpoint reader ----------------------------------------


def test_bundle_reader_equals_tensorflow_reader(tmp_path):
  rng = np.random.default_rng(1)
  arrays = {f'scope_{i:03d}/long/variable/name/kernel':
                rng.normal(size=(3, i % 4 + 1)).astype(np.float32)
            for i in range(300)}  # Enough entries for several table blocks.
  arrays.update({'a/f64': rng.normal(size=(2, 2)), 'a/f16': np.float16([1, 2]),
                 'a/i32': np.int32([[1], [-2]]), 'a/i64': np.int64(-5),
                 'a/bool': np.array([True, False]), 'a/empty': np.zeros((0, 3)),
                 'a/bf16': tf.constant([1.5, -2.0], tf.bfloat16).numpy()})
  prefix = _write_checkpoint(tmp_path / 'model.ckpt', arrays)
  got = _bert_tf_bundle.read_tensor_bundle(prefix)
  reader = tf.train.load_checkpoint(prefix)
  assert sorted(got) == sorted(reader.get_variable_to_shape_map())
  for name, value in got.items():
    want = reader.get_tensor(name)
    assert value.dtype == want.dtype, name
    np.testing.assert_array_equal(value, want, err_msg=name)
  subset = _bert_tf_bundle.read_tensor_bundle(prefix, ['a/i64'])
  assert list(subset) == ['a/i64'] and subset['a/i64'] == -5


def test_bundle_reader_refuses_unreadable_files(tmp_path):
  with pytest.raises(FileNotFoundError, match=r'model.ckpt.index not found'):
    _bert_tf_bundle.read_tensor_bundle(str(tmp_path / 'model.ckpt'))
  (tmp_path / 'bad.ckpt.index').write_bytes(b'x' * 64)
  with pytest.raises(_bert_tf_bundle.CheckpointFormatError,
                     match=r'bad magic number'):
    _bert_tf_bundle.read_tensor_bundle(str(tmp_path / 'bad.ckpt'))
  prefix = _write_checkpoint(tmp_path / 'cut.ckpt',
                             {'w': np.ones((4, 4), np.float32),
                              's': np.array([b'text'])})
  data = tmp_path / 'cut.ckpt.data-00000-of-00001'
  data.write_bytes(data.read_bytes()[:10])
  with pytest.raises(_bert_tf_bundle.CheckpointFormatError,
                     match=r"variable 'w' \(float32, shape \(4, 4\)\) has "):
    _bert_tf_bundle.read_tensor_bundle(prefix, ['w'])
  with pytest.raises(_bert_tf_bundle.CheckpointFormatError,
                     match=r"'s' has TensorFlow dtype enum 7"):
    _bert_tf_bundle.read_tensor_bundle(prefix, ['s'])


# -- Bad input -----------------------------------------------------------------


@pytest.mark.parametrize('segment_shape', [(3, 1), (3, 5), (3,)])
def test_segment_ids_of_the_wrong_shape_are_refused(segment_shape):
  tokens, _, idx = _inputs()
  segments = jnp.zeros(segment_shape, jnp.int32)
  pattern = (r'BERT: segment ids \(input 2\) must have the shape of the '
             r'token ids \(input 1\), \(3, 6\), but have shape ' +
             str(segment_shape).replace('(', r'\(').replace(')', r'\)'))
  with pytest.raises(tl.LayerError, match=pattern) as init_error:
    CASES['bert_plain']().init(shapes.signature((tokens, segments, idx)))
  assert isinstance(init_error.value.__cause__, ValueError)
  model = _with_trax_weights('bert_plain')
  with pytest.raises(tl.LayerError, match=pattern):
    model((tokens, segments, idx))


def test_heads_must_divide_d_model():
  with pytest.raises(ValueError, match=r'BERT: n_heads \(3\) must divide '
                                       r'd_model \(8\)'):
    bert.BERT(d_model=8, n_heads=3)


def test_exported_as_in_trax():
  assert models.BERT is bert.BERT
  assert models.BERTClassifierHead is bert.BERTClassifierHead
  assert models.BERTRegressionHead is bert.BERTRegressionHead
  assert models.bert is bert
