"""Tests for export.to_onnx: ONNX Runtime outputs against NumPy references."""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from tfnp_trax import export
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.export import _tf2onnx_compat

ort = pytest.importorskip('onnxruntime')
pytest.importorskip('tf2onnx')


def _session(path):
  return ort.InferenceSession(str(path), providers=['CPUExecutionProvider'])


def _mlp(widths=(8, 3), d_in=4, seed=0):
  model = models.MLP(layer_widths=widths)
  model.init(shapes.ShapeDtype((2, d_in)), rng=fastmath.random.get_prng(seed))
  return model


def _numpy_mlp(x, weights):
  """float64 reference of MLP: Flatten, then Dense and Relu per hidden layer."""
  h = x.reshape(x.shape[0], -1).astype(np.float64)
  dense = [fastmath.nested_map(np.asarray, w) for w in weights[1:]
           if isinstance(w, tuple) and len(w) == 2]
  for i, (w, b) in enumerate(dense):
    h = h @ w + b
    if i < len(dense) - 1:
      h = np.maximum(h, 0)
  return h


def test_mlp_matches_numpy_with_a_dynamic_batch(tmp_path):
  model = _mlp()
  path = export.to_onnx(model, tmp_path / 'mlp.onnx',
                        shapes.ShapeDtype((None, 4)))
  assert path == str(tmp_path / 'mlp.onnx')
  session = _session(path)
  assert [i.name for i in session.get_inputs()] == ['inputs']
  assert [o.name for o in session.get_outputs()] == ['outputs']
  assert session.get_inputs()[0].type == 'tensor(float)'
  for batch in (1, 5):
    x = np.random.RandomState(batch).normal(size=(batch, 4)).astype(
        np.float32)
    (y,) = session.run(None, {'inputs': x})
    np.testing.assert_allclose(y, _numpy_mlp(x, model.weights), rtol=1e-5,
                               atol=1e-6)


def test_fixed_sizes_are_checked_by_the_runtime(tmp_path):
  path = export.to_onnx(_mlp(), tmp_path / 'm.onnx',
                        shapes.ShapeDtype((2, 4)))
  with pytest.raises(Exception, match=r'invalid dimensions for input: inputs'):
    _session(path).run(None, {'inputs': np.zeros((3, 4), np.float32)})


def test_several_inputs_and_outputs_keep_their_names(tmp_path):
  model = tl.Serial(tl.Parallel(tl.Relu(), None), tl.Add(),
                    tl.Branch(tl.Dense(2), tl.Dense(3)))
  sig = (shapes.ShapeDtype((2, 4)), shapes.ShapeDtype((2, 4)))
  model.init(sig, rng=fastmath.random.get_prng(1))
  x0, x1 = np.random.RandomState(0).normal(size=(2, 2, 4)).astype(np.float32)
  session = _session(export.to_onnx(model, tmp_path / 'b.onnx', sig,
                                    output_names=('small', 'large')))
  assert [i.name for i in session.get_inputs()] == ['inputs_0', 'inputs_1']
  # In the layer's order, not sorted.
  assert [o.name for o in session.get_outputs()] == ['small', 'large']
  out = dict(zip(['small', 'large'],
                 session.run(['small', 'large'],
                             {'inputs_0': x0, 'inputs_1': x1})))
  h = np.maximum(x0, 0).astype(np.float64) + x1
  # Branch is Select, then Parallel of the two Dense layers.
  (w2, b2), (w3, b3) = [fastmath.nested_map(np.asarray, w)
                        for w in model.weights[-1][-1]]
  np.testing.assert_allclose(out['small'], h @ w2 + b2, atol=1e-5)
  np.testing.assert_allclose(out['large'], h @ w3 + b3, atol=1e-5)


@pytest.mark.parametrize('layer, reference', [
    (tl.Elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    (tl.Softplus, lambda x: np.log1p(np.exp(x))),
])
def test_expm1_and_log1p_are_rewritten_into_onnx_ops(tmp_path, layer,
                                                     reference):
  model = layer()
  sig = shapes.ShapeDtype((3, 5))
  model.init(sig)
  x = np.linspace(-4, 4, 15).reshape(3, 5).astype(np.float32)
  (y,) = _session(export.to_onnx(model, tmp_path / 'a.onnx', sig)).run(
      None, {'inputs': x})
  np.testing.assert_allclose(y, reference(x.astype(np.float64)), atol=1e-6)


def test_integer_inputs_and_a_sequence_model(tmp_path):
  model = models.TransformerLM(16, d_model=8, d_ff=16, n_layers=1, n_heads=2,
                               max_len=8, mode='eval')
  sig = shapes.ShapeDtype((2, 8), np.int32)
  model.init(sig, rng=fastmath.random.get_prng(2))
  x = np.random.RandomState(0).randint(0, 16, size=(2, 8)).astype(np.int32)
  (y,) = _session(export.to_onnx(model, tmp_path / 'lm.onnx', sig)).run(
      None, {'inputs': x})
  np.testing.assert_allclose(y, np.asarray(model(x)), atol=1e-4)


def test_large_model_writes_a_data_file_and_replaces_it(tmp_path):
  path = tmp_path / 'big.onnx'
  x = np.random.RandomState(0).normal(size=(2, 64)).astype(np.float32)
  for seed in (0, 1):
    model = _mlp((64, 3), d_in=64, seed=seed)
    export.to_onnx(model, path, shapes.ShapeDtype((2, 64)), large_model=True)
    data = [f for f in os.listdir(tmp_path) if f.endswith('.data')]
    # One data file, named after its contents: the second model's file
    # replaced the first model's.
    assert len(data) == 1 and data[0].startswith('big.onnx.'), data
    assert os.path.getsize(tmp_path / data[0]) >= 64 * 64 * 4
    assert os.path.getsize(path) < 64 * 64 * 4  # Weights live outside.
    (y,) = _session(path).run(None, {'inputs': x})
    np.testing.assert_allclose(y, _numpy_mlp(x, model.weights), atol=1e-5)
  assert sorted(os.listdir(tmp_path)) == sorted(['big.onnx', data[0]])


@pytest.mark.skipif(hasattr(np, 'product'), reason='NumPy 1 has np.product')
def test_numpy2_patch_is_what_makes_large_models_convert(tmp_path,
                                                         monkeypatch):
  from tf2onnx import graph as tf2onnx_graph
  _tf2onnx_compat.load('test')
  assert tf2onnx_graph.np.product([2, 3, 4]) == 24
  assert tf2onnx_graph.np.float32 is np.float32  # The rest is NumPy's.
  assert not hasattr(np, 'product')  # NumPy itself is left alone.
  # Without the view, tf2onnx fails on NumPy 2 exactly where the patch says.
  monkeypatch.setattr(_tf2onnx_compat, 'load', lambda caller: __import__(
      'tf2onnx'))
  monkeypatch.setattr(tf2onnx_graph, 'np', np)
  with pytest.raises(AttributeError, match='product'):
    export.to_onnx(_mlp((64, 3), d_in=64), tmp_path / 'x.onnx',
                   shapes.ShapeDtype((2, 64)), large_model=True)


def test_a_failing_optimizer_pass_is_dropped_and_the_rest_still_run(
    tmp_path, monkeypatch):
  from tf2onnx import optimizer
  passes = optimizer._get_optimizers()  # pylint: disable=protected-access
  calls = []

  class Broken:
    graph_been_opt = False

    def optimize(self, graph, iteration):
      calls.append(iteration)
      graph.remove_node(graph.get_nodes()[0].name)  # Half done, then fails.
      raise RuntimeError('broken pass')

  monkeypatch.setattr(optimizer, '_get_optimizers',
                      lambda: {'broken': Broken, **passes})
  model = _mlp()
  x = np.random.RandomState(0).normal(size=(3, 4)).astype(np.float32)
  path = export.to_onnx(model, tmp_path / 'm.onnx',
                        shapes.ShapeDtype((None, 4)))
  assert calls == [0]  # Tried once, then left out.
  (y,) = _session(path).run(None, {'inputs': x})
  np.testing.assert_allclose(y, _numpy_mlp(x, model.weights), atol=1e-5)
  # The other passes ran: the graph is as small as without the broken one.
  monkeypatch.setattr(optimizer, '_get_optimizers', lambda: passes)
  export.to_onnx(model, tmp_path / 'n.onnx', shapes.ShapeDtype((None, 4)))
  import onnx
  sizes = [len(onnx.load(str(tmp_path / f)).graph.node)
           for f in ('m.onnx', 'n.onnx')]
  assert sizes[0] == sizes[1]


def test_file_is_replaced_whole_and_nothing_else_is_left(tmp_path):
  path = tmp_path / 'm.onnx'
  path.write_bytes(b'old')
  export.to_onnx(_mlp(), path, shapes.ShapeDtype((2, 4)))
  assert os.listdir(tmp_path) == ['m.onnx']
  assert _session(path).get_inputs()[0].shape == [2, 4]


def test_ops_without_an_onnx_conversion_are_named(tmp_path):
  model = tl.Fn('BesselI0e', lambda x: tf.math.special.bessel_i0e(x))
  model.init(shapes.ShapeDtype((2, 3)))
  with pytest.raises(ValueError, match=r'to_onnx: BesselI0e uses TensorFlow '
                     r'ops that tf2onnx cannot express in ONNX opset 17: '
                     r'BesselI0e\b'):
    export.to_onnx(model, tmp_path / 'b.onnx', shapes.ShapeDtype((2, 3)))
  assert not os.listdir(tmp_path)


def test_bad_arguments_are_rejected_clearly(tmp_path):
  sig = shapes.ShapeDtype((2, 4))
  with pytest.raises(TypeError, match=r'to_onnx: expected a tfnp_trax layer'):
    export.to_onnx(lambda x: x, tmp_path / 'a.onnx', sig)
  with pytest.raises(ValueError, match=r'to_onnx: layer Serial is not '
                     r'initialized'):
    export.to_onnx(models.MLP((3,)), tmp_path / 'a.onnx', sig)
  with pytest.raises(IsADirectoryError, match=r'is a directory.*model\.onnx'):
    export.to_onnx(_mlp(), tmp_path, sig)
  with pytest.raises(FileNotFoundError, match=r'does not exist; create it'):
    export.to_onnx(_mlp(), tmp_path / 'no' / 'a.onnx', sig)
  with pytest.raises(TypeError, match=r'path must be a file path'):
    export.to_onnx(_mlp(), 3, sig)
  for opset in (12, 99, 17.0, True):
    with pytest.raises(ValueError, match=r'opset must be an int from 13'):
      export.to_onnx(_mlp(), tmp_path / 'a.onnx', sig, opset=opset)
  with pytest.raises(ValueError, match=r'takes 1 input\(s\) but the '
                     r'input_signature describes 2'):
    export.to_onnx(_mlp(), tmp_path / 'a.onnx', (sig, sig))
  assert not os.listdir(tmp_path)


def test_missing_tf2onnx_says_how_to_install(tmp_path, monkeypatch):
  monkeypatch.setitem(sys.modules, 'tf2onnx', None)
  with pytest.raises(ImportError, match=r"to_onnx needs tf2onnx.*pip install "
                     r"'tfnp-trax\[export\]'"):
    export.to_onnx(_mlp(), tmp_path / 'a.onnx', shapes.ShapeDtype((2, 4)))
