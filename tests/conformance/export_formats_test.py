"""ONNX Runtime and LiteRT run every registry entry as the layer does.

Each entry is converted with `export.to_onnx` and run in `onnxruntime`, and
converted with `export.to_tflite(select_tf_ops=False)` and run in
`ai_edge_litert`'s interpreter (TFLite's builtin ops only, as on a phone),
on the entry's inputs, against the layer's own outputs under the serving
rng. The entries a format cannot take are listed below with the ops that
stop them; each must fail with an error naming exactly those ops, so the
lists (and the README's table) cannot go stale.

The largest models (`FULL_RUN_ONLY`, where conversion takes seconds) run
only with TFNP_TRAX_ALL_FORMATS=1, which keeps the suite within its time;
the rest, and one model of each family (TransformerLM, Transformer,
ReformerLM, ConfigurableTerraformer, the RNN LMs, BERT), run every time:

    TFNP_TRAX_ALL_FORMATS=1 python -m pytest tests/conformance/export_formats_test.py
"""

import functools
import os

import pytest

from tests.conformance import _runs
from tests.conformance import registry
from tfnp_trax import export

ort = pytest.importorskip('onnxruntime')
pytest.importorskip('tf2onnx')
litert = pytest.importorskip('ai_edge_litert.interpreter')

# The bar for ONNX; LiteRT's kernels (XNNPACK) are held to it too.
ATOL = 1e-4

# Entry -> the TensorFlow ops tf2onnx has no conversion for. None today:
# every entry converts (Expm1 and Log1p through the library's own rewrites).
ONNX_UNSUPPORTED = {}

_RNG = ('StatelessRandomGetKeyCounter', 'StatelessRandomUniformV2')
_RNG_INT = ('StatelessRandomGetKeyCounter', 'StatelessRandomUniformFullIntV2',
            'StatelessRandomUniformV2')
_LSH = ('BitwiseAnd', 'StatelessRandomGetKeyCounter',
        'StatelessRandomUniformFullIntV2', 'StatelessRandomUniformIntV2')
# Entry -> the TensorFlow ops with no TFLite builtin kernel. Random draws
# made in the graph (dropout, LSH's hash rotations, layer skipping) and
# LSH's bit masks need the Flex delegate, which LiteRT's runtime lacks.
LITERT_NEEDS_FLEX = {
    'Dropout_train': _RNG,
    'RandomUniform': _RNG_INT,
    'InfinitePositionalEncoding': _RNG,
    'LSHSelfAttention': _LSH,
    'PureLSHSelfAttention': _LSH,
    'PureLSHSelfAttentionWrapper': _LSH,
    'MixedLSHSelfAttention': _LSH,
    'ReformerLM_LSH': _LSH,
    'ConfigurableTerraformer_LSH_sparse': _LSH,
    'BlockSparseFF': _RNG_INT,
    'SwitchSparseFF': _RNG_INT,
    'RandomLayer': _RNG_INT,
    'SparseDenseWithOptions': _RNG_INT,
    'SkippingTransformerLM': ('PartitionedCall',),
    'LayerDropTransformerLM': _RNG_INT,
    'LayerDropTransformerLM_train': _RNG_INT,
    'EveryOtherLayerDropTransformerLM': _RNG_INT,
}


# Models whose conversions take seconds each, covered in every run by a
# smaller model of the same family.
FULL_RUN_ONLY = frozenset({
    'ConfigurableTerraformer_LSH_sparse', 'HourglassLM', 'ReformerLM_LSH',
    'ResidualShuffleExchange', 'Reformer', 'LayerDropTransformerLM_train',
    'ConfigurableTransformer', 'Transformer2', 'ReformerShortenLM',
    'SkippingTransformerLM', 'LSTMSeq2SeqAttn',
    'EveryOtherLayerDropTransformerLM', 'ReZeroTransformer',
    'MixedLSHSelfAttention', 'LayerDropTransformerLM', 'Resnet_ConvBlock',
    'WideResnet_train', 'AttentionResampling', 'PureLSHSelfAttentionWrapper',
    'RelativeAttentionWrapper'})
_ALL = os.environ.get('TFNP_TRAX_ALL_FORMATS') == '1'


def _entries():
  return [pytest.param(n, marks=pytest.mark.skipif(
      not _ALL, reason='a large model: runs with TFNP_TRAX_ALL_FORMATS=1'))
          if n in FULL_RUN_ONLY else n
          for n in registry.entry_names('saved_model')]


def _feeds(entry, names):
  return dict(zip(names, _runs.as_tuple(registry.make_inputs(entry))))


def _input_names(n):
  return ['inputs'] if n == 1 else [f'inputs_{i}' for i in range(n)]


@functools.lru_cache(maxsize=None)
def _built(name):
  """`(entry, layer, expected outputs)`, made once for both formats."""
  entry = registry.get(name)
  layer = registry.build(entry)
  expected = _runs.as_tuple(
      _runs.native(entry, layer, key=_runs.SERVING_KEY)[0])
  return entry, layer, expected


def _close(got, expected, entry, what):
  _runs.assert_trees_close(got, expected, max(entry.tolerance, ATOL), what)


@pytest.mark.parametrize('name', _entries())
def test_onnx_runtime_matches_the_layer(name, tmp_path):
  entry, layer, expected = _built(name)
  path = str(tmp_path / 'model.onnx')
  if name in ONNX_UNSUPPORTED:
    with pytest.raises(ValueError, match=ONNX_UNSUPPORTED[name]):
      export.to_onnx(layer, path, entry.input_signature)
    return
  export.to_onnx(layer, path, entry.input_signature)
  session = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
  names = [i.name for i in session.get_inputs()]
  assert names == _input_names(len(names))
  got = session.run(None, _feeds(entry, names))
  _close(tuple(got), expected, entry, f'{name} onnx')


@pytest.mark.parametrize('name', _entries())
def test_litert_matches_the_layer(name):
  entry, layer, expected = _built(name)
  if name in LITERT_NEEDS_FLEX:
    with pytest.raises(ValueError, match='no builtin kernel for') as error:
      export.to_tflite(layer, entry.input_signature, select_tf_ops=False)
    named = str(error.value).split('kernel for: ')[1].split('. ')[0]
    assert named.split(', ') == sorted(LITERT_NEEDS_FLEX[name])
    return
  flatbuffer = export.to_tflite(layer, entry.input_signature,
                                select_tf_ops=False)
  runner = litert.Interpreter(model_content=flatbuffer).get_signature_runner()
  names = _input_names(len(_runs.as_tuple(registry.make_inputs(entry))))
  out = runner(**_feeds(entry, names))
  keys = ['outputs'] if len(expected) == 1 else [
      f'outputs_{i}' for i in range(len(expected))]
  assert sorted(out) == sorted(keys)
  _close(tuple(out[k] for k in keys), expected, entry, f'{name} litert')
