"""Records what real Trax computes, as JSON fixtures for tfnp_trax's tests.

This script is NOT part of the test suite and CI never runs it: it needs Trax
1.4.1 on JAX, which tfnp_trax does not depend on. It is kept so that the
fixtures beside it can be regenerated and audited. See README.md.

    JAX_PLATFORMS=cpu /work/trax_venv/bin/python tests/testdata/trax/make_fixtures.py

Every fixture file is a JSON object {"generator": ..., "cases": [...]}. Arrays
are written as {"dtype": str, "shape": [...], "values": nested lists}, with
floating values as Python (float64) numbers. Other values use the tagged
encoding of `encode` below: {"tuple": [...]}, {"list": [...]}, {"dict": {...}},
{"py": "int"|"float"|"bool"|"str", "value": ...}, and null for None.
"""

import os

os.environ.setdefault('JAX_PLATFORMS', 'cpu')
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

# pylint: disable=g-import-not-at-top,wrong-import-position
import importlib
import inspect
import json
import re
import sys
import warnings

warnings.filterwarnings('ignore')

import numpy as np
import jax
import trax
from trax import fastmath
from trax import shapes
from trax.fastmath import numpy as jnp
import trax.layers as tl
import trax.models  # pylint: disable=unused-import
import trax.optimizers
import trax.rl
from trax.rl import advantages as rl_advantages

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
GENERATOR = {
    'trax': trax.__version__ if hasattr(trax, '__version__') else '1.4.1',
    'jax': jax.__version__,
    'numpy': np.__version__,
    'platform': 'cpu',
    'jax_enable_x64': bool(jax.config.jax_enable_x64),
    'script': 'tests/testdata/trax/make_fixtures.py',
}


# ----------------------------------------------------------------------------
# Encoding helpers.

def encode(x):
  """Turns arrays / Python containers into JSON-able tagged values."""
  if x is None:
    return None
  if isinstance(x, (bool, np.bool_)) and not hasattr(x, 'shape'):
    return {'py': 'bool', 'value': bool(x)}
  if isinstance(x, bool):
    return {'py': 'bool', 'value': x}
  if isinstance(x, int):
    return {'py': 'int', 'value': x}
  if isinstance(x, float):
    return {'py': 'float', 'value': x}
  if isinstance(x, str):
    return {'py': 'str', 'value': x}
  if isinstance(x, tuple):
    return {'tuple': [encode(v) for v in x]}
  if isinstance(x, list):
    return {'list': [encode(v) for v in x]}
  if isinstance(x, dict):
    return {'dict': {str(k): encode(v) for k, v in x.items()}}
  if hasattr(x, 'shape') and hasattr(x, 'dtype'):
    a = np.asarray(x)
    return {'dtype': str(a.dtype), 'shape': list(a.shape), 'values': a.tolist()}
  raise TypeError(f'cannot encode {type(x)}')


def structure(x):
  """A JSON-able outline of a tree: leaves become 'dtype[shape]' strings."""
  if x is None:
    return None
  if isinstance(x, tuple):
    return {'tuple': [structure(v) for v in x]}
  if isinstance(x, list):
    return [structure(v) for v in x]
  if isinstance(x, dict):
    return {'dict': {str(k): structure(v) for k, v in x.items()}}
  if hasattr(x, 'shape') and hasattr(x, 'dtype'):
    return f'{np.asarray(x).dtype}{list(np.shape(x))}'
  return f'{type(x).__name__}:{x!r}'


def arr(values, dtype):
  return np.array(values, dtype=dtype)


_SITE = os.path.dirname(os.path.dirname(trax.__file__))


def error_record(e):
  """Type and message of an exception, plus the root cause inside a LayerError."""
  msg = str(e).replace(_SITE, '<site-packages>')
  rec = {'type': type(e).__name__, 'message': msg[:1500]}
  causes = re.findall(
      r'^([A-Za-z_][\w.]*(?:Error|Exception|StopIteration))(?:: (.*))?$', msg,
      re.M)
  if type(e).__name__ == 'LayerError' and causes:
    cause_type, cause_message = causes[-1]
    rec['cause_type'] = cause_type.split('.')[-1]
    rec['cause_message'] = cause_message
  else:
    rec['cause_type'] = type(e).__name__
    rec['cause_message'] = msg.split('\n')[0][:500]
  return rec


def namespace():
  return {'tl': tl, 'np': np, 'jnp': jnp, 'trax': trax, 'shapes': shapes,
          'fastmath': fastmath}


def output_record(y):
  """Describes one layer output: Python scalar or array."""
  if isinstance(y, (bool, int, float)):
    return {'python_type': type(y).__name__, 'is_array': False,
            'value': encode(y)}
  a = np.asarray(y)
  rec = {'python_type': type(y).__name__, 'is_array': True,
         'dtype': str(a.dtype), 'value': encode(a)}
  if hasattr(y, 'weak_type'):
    rec['weak_type'] = bool(y.weak_type)
  return rec


def _call_record(layer, x):
  try:
    y = layer(x)
  except Exception as e:  # pylint: disable=broad-except
    return {'ok': False, 'error': error_record(e)}
  if isinstance(y, (tuple, list)):
    return {'ok': True, 'is_tuple': True,
            'outputs': [output_record(v) for v in y]}
  return {'ok': True, 'is_tuple': False, 'outputs': [output_record(y)]}


def run_layer(expr, inputs, n_calls=1, init_inputs=None, jnp_variant=False):
  """Builds the layer from `expr`, inits it with prng 0, calls it on inputs.

  Trax hands NumPy inputs to the layer's code unchanged when a layer is called
  eagerly (`layer(x)`), so a pure `tl.Fn` computes with NumPy's dtype rules.
  With `jnp_variant`, a second, fresh layer is also called on the inputs
  converted by `jnp.asarray` (as happens inside a jitted training step, where
  64-bit values become 32-bit): recorded as `jnp_input_call`.
  """
  rec = {'expr': expr, 'inputs': [encode(x) for x in inputs],
         'input_is_tuple': len(inputs) != 1}
  x = inputs[0] if len(inputs) == 1 else tuple(inputs)
  try:
    layer = eval(expr, namespace())  # pylint: disable=eval-used
  except Exception as e:  # pylint: disable=broad-except
    rec['build_ok'] = False
    rec['error'] = error_record(e)
    return rec
  rec['build_ok'] = True
  rec['n_in'], rec['n_out'] = layer.n_in, layer.n_out
  try:
    sig_src = x if init_inputs is None else init_inputs
    layer.init(shapes.signature(sig_src), rng=fastmath.random.get_prng(0))
  except Exception as e:  # pylint: disable=broad-except
    rec['init_ok'] = False
    rec['error'] = error_record(e)
    return rec
  rec['init_ok'] = True
  rec['weights_structure'] = structure(layer.weights)
  rec['weights_flat'] = [encode(w) for w in fastmath.tree_flatten(layer.weights)
                         if w is not None]
  rec['state_structure'] = structure(layer.state)
  rec['state_flat'] = [encode(s) for s in fastmath.tree_flatten(layer.state)
                       if s is not None]
  calls = []
  for _ in range(n_calls):
    calls.append(_call_record(layer, x))
    if not calls[-1]['ok']:
      break
    calls[-1]['state_flat'] = [
        encode(s) for s in fastmath.tree_flatten(layer.state) if s is not None]
  rec['calls'] = calls
  rec['call_ok'] = all(c['ok'] for c in calls)
  if jnp_variant:
    fresh = eval(expr, namespace())  # pylint: disable=eval-used
    jx = tuple(jnp.asarray(v) for v in inputs)
    jx = jx[0] if len(jx) == 1 else jx
    try:
      fresh.init(shapes.signature(jx), rng=fastmath.random.get_prng(0))
      rec['jnp_input_call'] = _call_record(fresh, jx)
    except Exception as e:  # pylint: disable=broad-except
      rec['jnp_input_call'] = {'ok': False, 'error': error_record(e)}
  return rec


def write(name, cases, extra=None):
  """Writes {"generator", "cases", **extra} with one case per line."""
  dump = lambda v: json.dumps(v, sort_keys=False, separators=(',', ':'))
  lines = ['{', ' "generator": ' + dump(GENERATOR) + ',']
  for k, v in (extra or {}).items():
    lines.append(f' {json.dumps(k)}: ' + dump(v) + ',')
  lines.append(' "cases": [')
  lines.append(',\n'.join('  ' + dump(c) for c in cases))
  lines.append(' ]')
  lines.append('}')
  path = os.path.join(OUT_DIR, name)
  with open(path, 'w') as f:
    f.write('\n'.join(lines) + '\n')
  json.load(open(path))  # The file must read back.
  print(f'{name}: {len(cases)} cases, {os.path.getsize(path)} bytes')


# ----------------------------------------------------------------------------
# 1. reprs.json

REPR_EXPRS = [
    # trax/layers/rnn.py
    ('tl.LSTM(3)', 'trax/layers/rnn.py'),
    ('tl.LSTM(3, return_state=True)', 'trax/layers/rnn.py'),
    ('tl.LSTM(3, initial_state=True)', 'trax/layers/rnn.py'),
    ('tl.LSTMCell(3)', 'trax/layers/rnn.py'),
    ('tl.GRU(3)', 'trax/layers/rnn.py'),
    ('tl.GRUCell(3)', 'trax/layers/rnn.py'),
    ('tl.ConvGRUCell(3)', 'trax/layers/rnn.py'),
    ('tl.SRU(3)', 'trax/layers/rnn.py'),
    ('tl.MakeZeroState()', 'trax/layers/rnn.py'),
    # trax/layers/metrics.py
    ('tl.L2Loss()', 'trax/layers/metrics.py'),
    ('tl.L1Loss()', 'trax/layers/metrics.py'),
    ('tl.SmoothL1Loss()', 'trax/layers/metrics.py'),
    ('tl.BinaryCrossEntropyLoss()', 'trax/layers/metrics.py'),
    ('tl.BinaryCrossEntropy()', 'trax/layers/metrics.py'),
    ('tl.BinaryCrossEntropySum()', 'trax/layers/metrics.py'),
    ('tl.CategoryCrossEntropy()', 'trax/layers/metrics.py'),
    ('tl.CategoryCrossEntropy(label_smoothing=0.1)', 'trax/layers/metrics.py'),
    ('tl.WeightedCategoryCrossEntropy()', 'trax/layers/metrics.py'),
    ('tl.CrossEntropyLoss()', 'trax/layers/metrics.py'),
    ('tl.CrossEntropyLossWithLogSoftmax()', 'trax/layers/metrics.py'),
    ('tl.CrossEntropySum()', 'trax/layers/metrics.py'),
    ('tl.MacroAveragedFScore()', 'trax/layers/metrics.py'),
    ('tl.WeightedFScore()', 'trax/layers/metrics.py'),
    ('tl.SequenceAccuracy()', 'trax/layers/metrics.py'),
    ('tl.MaskedSequenceAccuracy()', 'trax/layers/metrics.py'),
    ('tl.CategoryAccuracy()', 'trax/layers/metrics.py'),
    ('tl.WeightedCategoryAccuracy()', 'trax/layers/metrics.py'),
    ('tl.BinaryClassifier()', 'trax/layers/metrics.py'),
    ('tl.MulticlassClassifier()', 'trax/layers/metrics.py'),
    ('tl.Accuracy()', 'trax/layers/metrics.py'),
    ('tl.WeightedSum()', 'trax/layers/metrics.py'),
    # trax/layers/combinators.py
    ('tl.Concatenate(axis=0)', 'trax/layers/combinators.py'),
    ('tl.Concatenate()', 'trax/layers/combinators.py'),
    ('tl.Concatenate(n_items=3)', 'trax/layers/combinators.py'),
    ('tl.Split(n_items=3)', 'trax/layers/combinators.py'),
    ('tl.Serial()', 'trax/layers/combinators.py'),
    ('tl.Serial(tl.Dense(2))', 'trax/layers/combinators.py'),
    ('tl.Serial(tl.Dense(4), tl.Relu(), tl.Dense(2))', 'trax/layers/combinators.py'),
    ('tl.Serial(tl.Serial(tl.Dense(4), tl.Relu()), tl.Serial())', 'trax/layers/combinators.py'),
    ('tl.Serial(tl.Dense(2), name="Named")', 'trax/layers/combinators.py'),
    ('tl.Branch(tl.Dense(2), tl.Relu())', 'trax/layers/combinators.py'),
    ('tl.Branch(None, tl.Dense(2))', 'trax/layers/combinators.py'),
    ('tl.Parallel(tl.Dense(2), tl.Relu())', 'trax/layers/combinators.py'),
    ('tl.Parallel(None, tl.Relu())', 'trax/layers/combinators.py'),
    ('tl.Residual(tl.Dense(2))', 'trax/layers/combinators.py'),
    ('tl.Residual(tl.Dense(2), tl.Relu())', 'trax/layers/combinators.py'),
    ('tl.Residual(tl.Dense(2), shortcut=tl.Dense(2))', 'trax/layers/combinators.py'),
    ('tl.Select([0, 0])', 'trax/layers/combinators.py'),
    ('tl.Select([1, 0], n_in=3)', 'trax/layers/combinators.py'),
    ('tl.Select([0])', 'trax/layers/combinators.py'),
    ('tl.Dup()', 'trax/layers/combinators.py'),
    ('tl.Swap()', 'trax/layers/combinators.py'),
    ('tl.Drop()', 'trax/layers/combinators.py'),
    ('tl.Add()', 'trax/layers/combinators.py'),
    ('tl.SubtractTop()', 'trax/layers/combinators.py'),
    ('tl.Multiply()', 'trax/layers/combinators.py'),
    ('tl.Gate()', 'trax/layers/combinators.py'),
    ('tl.FlattenList()', 'trax/layers/combinators.py'),
    ('tl.Scan(tl.Fn("cs", lambda x, c: (x + c, x + c), n_out=2))', 'trax/layers/combinators.py'),
    ('tl.Scan(tl.LSTMCell(3), axis=1)', 'trax/layers/combinators.py'),
    ('tl.Scan(tl.Dense(3), n_carry=0)', 'trax/layers/combinators.py'),
    ('tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Dense(2))', 'trax/layers/combinators.py'),
    ('tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Dense(2), tl.Relu())', 'trax/layers/combinators.py'),
    ('tl.Chunk(tl.Dense(2), 4)', 'trax/layers/combinators.py'),
    ('tl.Chunk(tl.Dense(2), 0)', 'trax/layers/combinators.py'),
    ('tl.Cache(tl.Dense(2))', 'trax/layers/combinators.py'),
    ('tl.BatchLeadingAxes(tl.Dense(2))', 'trax/layers/combinators.py'),
    ('tl.BatchLeadingAxes(tl.Dense(2), n_last_axes_to_keep=2)', 'trax/layers/combinators.py'),
    ('tl.Bidirectional(tl.GRU(3))', 'trax/layers/combinators.py'),
    ('tl.SerialWithSideOutputs([tl.Dense(2), tl.Dense(2)])', 'trax/layers/combinators.py'),
    # trax/layers/core.py
    ('tl.Dense(3)', 'trax/layers/core.py'),
    ('tl.Dense(3, use_bias=False)', 'trax/layers/core.py'),
    ('tl.Embedding(10, 4)', 'trax/layers/core.py'),
    ('tl.Dropout(0.1)', 'trax/layers/core.py'),
    ('tl.Dropout(0.1, mode="eval")', 'trax/layers/core.py'),
    ('tl.Weights(tl.RandomNormalInitializer(1e-2), shape=(2,))', 'trax/layers/core.py'),
    ('tl.PrintShape()', 'trax/layers/core.py'),
    ('tl.SummaryScalar("loss")', 'trax/layers/core.py'),
    ('tl.RandomUniform()', 'trax/layers/core.py'),
    ('tl.LocallyConnected1d(2, 3)', 'trax/layers/core.py'),
    ('tl.Flatten()', 'trax/layers/core.py'),
    ('tl.Flatten(n_axes_to_keep=2)', 'trax/layers/core.py'),
    ('tl.LogSoftmax()', 'trax/layers/core.py'),
    ('tl.LogSumExp()', 'trax/layers/core.py'),
    ('tl.Softmax()', 'trax/layers/core.py'),
    ('tl.ToFloat()', 'trax/layers/core.py'),
    ('tl.Mean()', 'trax/layers/core.py'),
    ('tl.Mean(axis=0, keepdims=True)', 'trax/layers/core.py'),
    ('tl.Min()', 'trax/layers/core.py'),
    ('tl.Max()', 'trax/layers/core.py'),
    ('tl.Sum()', 'trax/layers/core.py'),
    ('tl.Sum(axis=1)', 'trax/layers/core.py'),
    ('tl.ThresholdToBinary()', 'trax/layers/core.py'),
    ('tl.ArgMax()', 'trax/layers/core.py'),
    ('tl.Negate()', 'trax/layers/core.py'),
    ('tl.StopGradient()', 'trax/layers/core.py'),
    # trax/layers/base.py
    ('tl.Fn("MyFn", lambda x: x)', 'trax/layers/base.py'),
    ('tl.Fn("Two", lambda x, y: (x, y), n_out=2)', 'trax/layers/base.py'),
    ('tl.Fn("", lambda x: x)', 'trax/layers/base.py'),
    ('tl.Fn("Zero", lambda: 0)', 'trax/layers/base.py'),
    ('tl.PureLayer(lambda x: x, n_in=1, n_out=1, name="P")', 'trax/layers/base.py'),
    # trax/layers/normalization.py
    ('tl.LayerNorm()', 'trax/layers/normalization.py'),
    ('tl.BatchNorm()', 'trax/layers/normalization.py'),
    ('tl.BatchNorm(mode="eval")', 'trax/layers/normalization.py'),
    ('tl.FilterResponseNorm()', 'trax/layers/normalization.py'),
    # trax/layers/activation_fns.py
    ('tl.Relu()', 'trax/layers/activation_fns.py'),
    ('tl.ParametricRelu()', 'trax/layers/activation_fns.py'),
    ('tl.LeakyRelu()', 'trax/layers/activation_fns.py'),
    ('tl.Elu()', 'trax/layers/activation_fns.py'),
    ('tl.Selu()', 'trax/layers/activation_fns.py'),
    ('tl.Gelu()', 'trax/layers/activation_fns.py'),
    ('tl.FastGelu()', 'trax/layers/activation_fns.py'),
    ('tl.Sigmoid()', 'trax/layers/activation_fns.py'),
    ('tl.Tanh()', 'trax/layers/activation_fns.py'),
    ('tl.HardSigmoid()', 'trax/layers/activation_fns.py'),
    ('tl.HardTanh()', 'trax/layers/activation_fns.py'),
    ('tl.Softplus()', 'trax/layers/activation_fns.py'),
    ('tl.Exp()', 'trax/layers/activation_fns.py'),
    ('tl.Log()', 'trax/layers/activation_fns.py'),
    ('tl.Swish()', 'trax/layers/activation_fns.py'),
    ('tl.Glu()', 'trax/layers/activation_fns.py'),
    ('tl.ThresholdedLinearUnit()', 'trax/layers/activation_fns.py'),
    # trax/layers/attention.py
    ('tl.Attention(8)', 'trax/layers/attention.py'),
    ('tl.Attention(8, n_heads=2, dropout=0.1)', 'trax/layers/attention.py'),
    ('tl.CausalAttention(8)', 'trax/layers/attention.py'),
    ('tl.CausalAttention(8, n_heads=2, mode="predict")', 'trax/layers/attention.py'),
    ('tl.AttentionQKV(8)', 'trax/layers/attention.py'),
    ('tl.AttentionQKV(8, n_heads=2, cache_KV_in_predict=True)', 'trax/layers/attention.py'),
    ('tl.PureAttention()', 'trax/layers/attention.py'),
    ('tl.DotProductAttention()', 'trax/layers/attention.py'),
    ('tl.DotProductCausalAttention()', 'trax/layers/attention.py'),
    ('tl.SplitIntoHeads(2)', 'trax/layers/attention.py'),
    ('tl.MergeHeads(2)', 'trax/layers/attention.py'),
    ('tl.ShiftRight()', 'trax/layers/attention.py'),
    ('tl.ShiftRight(n_positions=2, mode="predict")', 'trax/layers/attention.py'),
    ('tl.PaddingMask()', 'trax/layers/attention.py'),
    ('tl.EncoderDecoderMask()', 'trax/layers/attention.py'),
    ('tl.PositionalEncoding()', 'trax/layers/attention.py'),
    ('tl.PositionalEncoding(max_len=16, mode="predict")', 'trax/layers/attention.py'),
    # trax/layers/convolution.py, pooling.py, deconvolution.py
    ('tl.Conv(2, (3, 3))', 'trax/layers/convolution.py'),
    ('tl.Conv(2, (3,), padding="SAME")', 'trax/layers/convolution.py'),
    ('tl.Conv1d(2, 3)', 'trax/layers/convolution.py'),
    ('tl.CausalConv(2)', 'trax/layers/convolution.py'),
    ('tl.CausalConv(2, kernel_width=2)', 'trax/layers/convolution.py'),
    ('tl.CausalDepthwiseConv()', 'trax/layers/convolution.py'),
    ('tl.AvgPool()', 'trax/layers/pooling.py'),
    ('tl.AvgPool((2,), strides=(1,))', 'trax/layers/pooling.py'),
    ('tl.MaxPool()', 'trax/layers/pooling.py'),
    ('tl.MaxPool((3, 3), strides=(2, 2), padding="SAME")', 'trax/layers/pooling.py'),
    ('tl.SumPool()', 'trax/layers/pooling.py'),
    ('tl.SumPool((2,))', 'trax/layers/pooling.py'),
    ('tl.ConvTranspose(2, (2, 2))', 'trax/layers/deconvolution.py'),
    # trax/layers/assert_shape.py
    ('tl.AssertShape("ab->ab")', 'trax/layers/assert_shape.py'),
    ('tl.AssertShape("ab")', 'trax/layers/assert_shape.py'),
    ('tl.AssertShape("ab,c")', 'trax/layers/assert_shape.py'),
    # trax/layers/research/efficient_attention.py (re-exported by tl)
    ('tl.RemoveAxes()', 'trax/layers/research/...'),
    # trax/models/
    ('trax.models.MLP()', 'trax/models/mlp.py'),
    ('trax.models.MLP(layer_widths=(4, 2))', 'trax/models/mlp.py'),
    ('trax.models.MLP(layer_widths=(4, 2), out_activation=True, flatten=False)', 'trax/models/mlp.py'),
    ('trax.models.TransformerLM(vocab_size=10, d_model=8, d_ff=16, n_layers=1, n_heads=2)', 'trax/models/transformer.py'),
    ('trax.models.TransformerLM(vocab_size=10, d_model=8, d_ff=16, n_layers=1, n_heads=2, mode="eval")', 'trax/models/transformer.py'),
    ('trax.models.TransformerEncoder(vocab_size=10, n_classes=3, d_model=8, d_ff=16, n_layers=1, n_heads=2)', 'trax/models/transformer.py'),
    ('trax.models.TransformerDecoder(vocab_size=10, d_model=8, d_ff=16, n_layers=1, n_heads=2)', 'trax/models/transformer.py'),
    ('trax.models.Transformer(input_vocab_size=10, d_model=8, d_ff=16, n_encoder_layers=1, n_decoder_layers=1, n_heads=2)', 'trax/models/transformer.py'),
    ('trax.models.RNNLM(vocab_size=10, d_model=8, n_layers=1)', 'trax/models/rnn.py'),
    ('trax.models.RNNLM(vocab_size=10, d_model=8, n_layers=2)', 'trax/models/rnn.py'),
    ('trax.models.GRULM(vocab_size=10, d_model=8, n_layers=1)', 'trax/models/rnn.py'),
    ('trax.models.LSTMSeq2SeqAttn(input_vocab_size=10, target_vocab_size=10, d_model=8, n_encoder_layers=1, n_decoder_layers=1, n_attention_heads=2)', 'trax/models/rnn.py'),
    ('trax.models.WideResnet(n_blocks=1, widen_factor=1, n_output_classes=3)', 'trax/models/resnet.py'),
    ('trax.models.Resnet50(d_hidden=8, n_output_classes=3)', 'trax/models/resnet.py'),
    ('trax.models.AtariCnn()', 'trax/models/atari_cnn.py'),
    ('trax.models.FrameStackMLP()', 'trax/models/atari_cnn.py'),
    ('trax.models.Policy(trax.rl.distributions.Categorical(3))', 'trax/models/rl.py'),
    ('trax.models.Value()', 'trax/models/rl.py'),
    ('trax.models.PolicyAndValue(trax.rl.distributions.Categorical(3))', 'trax/models/rl.py'),
    ('trax.models.Quality(n_actions=3)', 'trax/models/rl.py'),
    ('trax.models.NeuralGPU(d_feature=8, steps=2, vocab_size=4)', 'trax/models/neural_gpu.py'),
]


def make_reprs():
  cases = []
  for expr, source in REPR_EXPRS:
    case = {'expr': expr, 'source': source}
    try:
      layer = eval(expr, namespace())  # pylint: disable=eval-used
      case['ok'] = True
      case['str'] = str(layer)
      case['repr'] = repr(layer)
      case['n_in'], case['n_out'] = layer.n_in, layer.n_out
    except Exception as e:  # pylint: disable=broad-except
      case['ok'] = False
      case['error'] = error_record(e)
    cases.append(case)
  write('reprs.json', cases)


# ----------------------------------------------------------------------------
# 2. int_inputs.json

I64_ROW = arr([[1, 2, 3]], np.int64)
I64_2x3 = arr([[1, -2, 3], [4, 5, -6]], np.int64)
I32_2x3 = arr([[1, -2, 3], [4, 5, -6]], np.int32)
BOOL_2x3 = arr([[True, False, True], [False, False, True]], np.bool_)
F32_2x3 = arr([[0.5, -1.25, 2.0], [3.5, -0.75, 1.0]], np.float32)
F64_2x3 = arr([[0.5, -1.25, 2.0], [3.5, -0.75, 1.0]], np.float64)
F16_2x3 = arr([[0.5, -1.25, 2.0], [3.5, -0.75, 1.0]], np.float16)
U8_2x3 = arr([[1, 200, 3], [250, 5, 6]], np.uint8)
I8_2x3 = arr([[1, -100, 3], [120, 5, -6]], np.int8)
SEQ_1D = np.arange(8, dtype=np.int64).reshape((1, 4, 2))  # (batch, len, ch)
IMG_2D = np.arange(16, dtype=np.int64).reshape((1, 4, 4, 1))
IMG_2D_I32 = np.arange(16, dtype=np.int32).reshape((1, 4, 4, 1))
SEQ_3D_INT = np.arange(12, dtype=np.int64).reshape((1, 3, 4))
TOKENS = arr([[1, 2, 3], [4, 0, 2]], np.int64)

INT_CASES = [
    # trax/layers/core.py
    ('tl.Dense(2)', [I64_ROW], 'trax/layers/core.py'),
    ('tl.Dense(2)', [I64_2x3], 'trax/layers/core.py'),
    ('tl.Dense(2)', [I32_2x3], 'trax/layers/core.py'),
    ('tl.Dense(2)', [BOOL_2x3], 'trax/layers/core.py'),
    ('tl.Dense(2)', [F64_2x3], 'trax/layers/core.py'),
    ('tl.Dense(2)', [F16_2x3], 'trax/layers/core.py'),
    ('tl.Dense(2, use_bias=False)', [I64_2x3], 'trax/layers/core.py'),
    ('tl.Dense(2)', [np.arange(6).reshape((2, 3))], 'trax/layers/core.py'),
    ('tl.Embedding(5, 3)', [TOKENS], 'trax/layers/core.py'),
    ('tl.Embedding(5, 3)', [TOKENS.astype(np.int32)], 'trax/layers/core.py'),
    ('tl.Embedding(5, 3)', [BOOL_2x3], 'trax/layers/core.py'),
    ('tl.Embedding(5, 3)', [arr([[1.0, 2.0]], np.float32)], 'trax/layers/core.py'),
    ('tl.LocallyConnected1d(2, 2)', [SEQ_1D], 'trax/layers/core.py'),
    ('tl.LocallyConnected1d(2, 3)', [SEQ_1D], 'trax/layers/core.py'),
    ('tl.LocallyConnected1d(2, 1)', [SEQ_1D], 'trax/layers/core.py'),
    ('tl.LocallyConnected1d(2, 3, padding="SAME")', [SEQ_1D], 'trax/layers/core.py'),
    ('tl.LocallyConnected1d(2, 3, padding="WRAP")', [SEQ_1D], 'trax/layers/core.py'),
    ('tl.LocallyConnected1d(2, 3, padding="SAME")', [SEQ_1D.astype(np.float32)], 'trax/layers/core.py'),
    ('tl.Mean()', [I64_2x3], 'trax/layers/core.py'),
    ('tl.Mean(axis=0)', [BOOL_2x3], 'trax/layers/core.py'),
    ('tl.Sum()', [I64_2x3], 'trax/layers/core.py'),
    ('tl.Sum(axis=1)', [BOOL_2x3], 'trax/layers/core.py'),
    ('tl.Max()', [I64_2x3], 'trax/layers/core.py'),
    ('tl.Min()', [BOOL_2x3], 'trax/layers/core.py'),
    ('tl.LogSoftmax()', [I64_2x3], 'trax/layers/core.py'),
    ('tl.Softmax()', [I64_2x3], 'trax/layers/core.py'),
    ('tl.LogSumExp()', [I64_2x3], 'trax/layers/core.py'),
    ('tl.ToFloat()', [I64_2x3], 'trax/layers/core.py'),
    ('tl.ToFloat()', [BOOL_2x3], 'trax/layers/core.py'),
    ('tl.ArgMax()', [F32_2x3], 'trax/layers/core.py'),
    ('tl.ArgMax()', [I64_2x3], 'trax/layers/core.py'),
    ('tl.Negate()', [I64_2x3], 'trax/layers/core.py'),
    ('tl.Negate()', [U8_2x3], 'trax/layers/core.py'),
    ('tl.ThresholdToBinary()', [I64_2x3], 'trax/layers/core.py'),
    ('tl.Flatten()', [SEQ_3D_INT], 'trax/layers/core.py'),
    ('tl.Dropout(0.5, mode="eval")', [I64_2x3], 'trax/layers/core.py'),
    ('tl.StopGradient()', [I64_2x3], 'trax/layers/core.py'),
    # trax/layers/pooling.py
    ('tl.AvgPool(pool_size=(2,))', [SEQ_1D], 'trax/layers/pooling.py'),
    ('tl.AvgPool(pool_size=(2,), strides=(1,))', [SEQ_1D], 'trax/layers/pooling.py'),
    ('tl.AvgPool(pool_size=(2, 2))', [IMG_2D], 'trax/layers/pooling.py'),
    ('tl.AvgPool(pool_size=(2, 2), strides=(1, 1))', [IMG_2D], 'trax/layers/pooling.py'),
    ('tl.AvgPool(pool_size=(3, 3), strides=(2, 2), padding="SAME")', [IMG_2D], 'trax/layers/pooling.py'),
    ('tl.AvgPool(pool_size=(2, 2))', [IMG_2D.astype(np.float32)], 'trax/layers/pooling.py'),
    ('tl.SumPool(pool_size=(2,))', [SEQ_1D], 'trax/layers/pooling.py'),
    ('tl.SumPool(pool_size=(2,), strides=(1,))', [SEQ_1D], 'trax/layers/pooling.py'),
    ('tl.SumPool(pool_size=(2, 2))', [IMG_2D], 'trax/layers/pooling.py'),
    ('tl.SumPool(pool_size=(2, 2), strides=(1, 1))', [IMG_2D_I32], 'trax/layers/pooling.py'),
    ('tl.SumPool(pool_size=(2, 2))', [IMG_2D.astype(np.bool_)], 'trax/layers/pooling.py'),
    ('tl.MaxPool(pool_size=(2,))', [SEQ_1D], 'trax/layers/pooling.py'),
    ('tl.MaxPool(pool_size=(2,), strides=(1,))', [SEQ_1D], 'trax/layers/pooling.py'),
    ('tl.MaxPool(pool_size=(2, 2))', [IMG_2D], 'trax/layers/pooling.py'),
    ('tl.MaxPool(pool_size=(2, 2), strides=(1, 1))', [IMG_2D], 'trax/layers/pooling.py'),
    ('tl.MaxPool(pool_size=(3, 3), strides=(2, 2), padding="SAME")', [IMG_2D], 'trax/layers/pooling.py'),
    ('tl.MaxPool(pool_size=(2, 2))', [IMG_2D.astype(np.bool_)], 'trax/layers/pooling.py'),
    # trax/layers/convolution.py
    ('tl.Conv(2, (2,))', [SEQ_1D], 'trax/layers/convolution.py'),
    ('tl.Conv(2, (2, 2))', [IMG_2D], 'trax/layers/convolution.py'),
    ('tl.Conv(2, (2, 2), strides=(2, 2), padding="SAME")', [IMG_2D_I32], 'trax/layers/convolution.py'),
    ('tl.Conv(2, (2, 2))', [IMG_2D.astype(np.float32)], 'trax/layers/convolution.py'),
    ('tl.Conv1d(2, 2)', [SEQ_1D], 'trax/layers/convolution.py'),
    ('tl.Conv1d(2, 2)', [SEQ_1D.astype(np.float32)], 'trax/layers/convolution.py'),
    ('tl.CausalConv(2, kernel_width=2)', [SEQ_1D], 'trax/layers/convolution.py'),
    # trax/layers/combinators.py
    ('tl.Chunk(tl.Dense(2), 1)', [I64_2x3], 'trax/layers/combinators.py'),
    ('tl.Chunk(tl.Dense(2), 2)', [F32_2x3], 'trax/layers/combinators.py'),
    ('tl.Scan(tl.Serial(tl.Add(), tl.Dense(2), tl.Dup()), axis=1)',
     [np.arange(6, dtype=np.int64).reshape((1, 3, 2)),
      arr([[0.5, -0.5]], np.float32)], 'trax/layers/combinators.py'),
    ('tl.Scan(tl.Serial(tl.Add(), tl.Dense(2), tl.Dup()), axis=1)',
     [np.arange(6, dtype=np.int64).reshape((1, 3, 2)),
      arr([[1, 2]], np.int64)], 'trax/layers/combinators.py'),
    ('tl.Scan(tl.Serial(tl.Add(), tl.Dense(2), tl.Dup()))',
     [np.arange(6, dtype=np.float32).reshape((3, 1, 2)),
      arr([[0.5, -0.5]], np.float32)], 'trax/layers/combinators.py'),
    ('tl.Scan(tl.Fn("cs", lambda x, c: (x + c, x + c), n_out=2), axis=1)',
     [np.arange(6, dtype=np.int64).reshape((2, 3)),
      arr([1, 2], np.int64)], 'trax/layers/combinators.py'),
    ('tl.Cond(tl.Fn("pos", lambda x: jnp.sum(x) > 0), tl.Fn("half", lambda x: x / 2))',
     [I64_ROW, I64_2x3], 'trax/layers/combinators.py'),
    ('tl.Cond(tl.Fn("pos", lambda x: jnp.sum(x) > 0), tl.Fn("half", lambda x: x / 2))',
     [-I64_ROW, I64_2x3], 'trax/layers/combinators.py'),
    ('tl.Cond(tl.Fn("pos", lambda x: jnp.sum(x) > 0), tl.Fn("half", lambda x: x / 2))',
     [I64_ROW, F32_2x3], 'trax/layers/combinators.py'),
    ('tl.Cond(tl.Fn("pos", lambda x: jnp.sum(x) > 0), tl.Fn("half", lambda x: x / 2), tl.Fn("one", lambda x: x * 1.0))',
     [I64_ROW, I64_2x3], 'trax/layers/combinators.py'),
    ('tl.Cond(tl.Fn("pos", lambda x: jnp.sum(x) > 0), tl.Fn("half", lambda x: x / 2), tl.Fn("one", lambda x: x * 1.0))',
     [-I64_ROW, I64_2x3], 'trax/layers/combinators.py'),
    ('tl.Cond(tl.Fn("pos", lambda x: jnp.sum(x) > 0), tl.Fn("twice", lambda x: x * 2))',
     [-I64_ROW, I64_2x3], 'trax/layers/combinators.py'),
    ('tl.Add()', [I64_2x3, I64_2x3], 'trax/layers/combinators.py'),
    ('tl.Add()', [I64_2x3, F32_2x3], 'trax/layers/combinators.py'),
    ('tl.Add()', [BOOL_2x3, BOOL_2x3], 'trax/layers/combinators.py'),
    ('tl.Add()', [U8_2x3, I8_2x3], 'trax/layers/combinators.py'),
    ('tl.Multiply()', [I64_2x3, BOOL_2x3], 'trax/layers/combinators.py'),
    ('tl.Multiply()', [I32_2x3, F16_2x3], 'trax/layers/combinators.py'),
    ('tl.SubtractTop()', [I64_2x3, I32_2x3], 'trax/layers/combinators.py'),
    ('tl.Gate()', [F32_2x3, I64_2x3, BOOL_2x3], 'trax/layers/combinators.py'),
    ('tl.Concatenate()', [I64_2x3, F32_2x3], 'trax/layers/combinators.py'),
    ('tl.Concatenate()', [BOOL_2x3, I32_2x3], 'trax/layers/combinators.py'),
    ('tl.Residual(tl.Dense(3))', [I64_2x3], 'trax/layers/combinators.py'),
    # trax/layers/normalization.py
    ('tl.LayerNorm()', [I64_2x3], 'trax/layers/normalization.py'),
    ('tl.LayerNorm()', [F16_2x3], 'trax/layers/normalization.py'),
    ('tl.BatchNorm(axis=(0,), mode="eval")', [I64_2x3], 'trax/layers/normalization.py'),
    ('tl.BatchNorm(axis=(0,))', [F32_2x3], 'trax/layers/normalization.py'),
    ('tl.FilterResponseNorm()', [IMG_2D], 'trax/layers/normalization.py'),
    # trax/layers/activation_fns.py
    ('tl.Relu()', [I64_2x3], 'trax/layers/activation_fns.py'),
    ('tl.Relu()', [I32_2x3], 'trax/layers/activation_fns.py'),
    ('tl.Relu()', [BOOL_2x3], 'trax/layers/activation_fns.py'),
    ('tl.Relu()', [U8_2x3], 'trax/layers/activation_fns.py'),
    ('tl.LeakyRelu()', [I64_2x3], 'trax/layers/activation_fns.py'),
    ('tl.Sigmoid()', [I64_2x3], 'trax/layers/activation_fns.py'),
    ('tl.Tanh()', [I64_2x3], 'trax/layers/activation_fns.py'),
    ('tl.Gelu()', [I64_2x3], 'trax/layers/activation_fns.py'),
    ('tl.HardTanh()', [I64_2x3], 'trax/layers/activation_fns.py'),
    ('tl.Exp()', [I64_2x3], 'trax/layers/activation_fns.py'),
    ('tl.ThresholdedLinearUnit()', [I64_2x3], 'trax/layers/activation_fns.py'),
    # trax/layers/attention.py
    ('tl.ShiftRight()', [TOKENS], 'trax/layers/attention.py'),
    ('tl.ShiftRight(n_positions=2)', [TOKENS.astype(np.int32)], 'trax/layers/attention.py'),
    ('tl.ShiftRight()', [BOOL_2x3], 'trax/layers/attention.py'),
    ('tl.ShiftRight()', [F32_2x3], 'trax/layers/attention.py'),
    ('tl.PositionalEncoding(max_len=8)', [SEQ_3D_INT], 'trax/layers/attention.py'),
    ('tl.PositionalEncoding(max_len=8)', [SEQ_3D_INT.astype(np.float32)], 'trax/layers/attention.py'),
    ('tl.PaddingMask()', [TOKENS], 'trax/layers/attention.py'),
    # trax/layers/base.py: Fn and Python-scalar weak typing.
    ('tl.Fn("Half", lambda x: x * 0.5)', [I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Half", lambda x: x * 0.5)', [I32_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Half", lambda x: x * 0.5)', [BOOL_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Half", lambda x: x * 0.5)', [F16_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Half", lambda x: x * 0.5)', [F64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Half", lambda x: x * 0.5)', [U8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("PlusOne", lambda x: x + 1)', [I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("PlusOne", lambda x: x + 1)', [I32_2x3], 'trax/layers/base.py'),
    ('tl.Fn("PlusOne", lambda x: x + 1)', [BOOL_2x3], 'trax/layers/base.py'),
    ('tl.Fn("PlusOne", lambda x: x + 1)', [U8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("PlusOne", lambda x: x + 1)', [I8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("PlusOne", lambda x: x + 1)', [F16_2x3], 'trax/layers/base.py'),
    ('tl.Fn("PlusOne", lambda x: x + 1)', [F64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("PlusTrue", lambda x: x + True)', [I8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("PlusHalf", lambda x: x + 1.5)', [U8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Div2", lambda x: x / 2)', [I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Div2", lambda x: x / 2)', [U8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("FloorDiv2", lambda x: x // 2)', [I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Mod3", lambda x: x % 3)', [I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Square", lambda x: x ** 2)', [I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Pow05", lambda x: x ** 0.5)', [I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Neg", lambda x: -x)', [U8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Times2", lambda x: 2 * x)', [I8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Big", lambda x: x + 300)', [U8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Gt", lambda x: x > 1.5)', [I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Where", lambda x: jnp.where(x > 0, x, 0.5))', [I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Where", lambda x: jnp.where(x > 0, x, 0))', [U8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Max0", lambda x: jnp.maximum(x, 0.0))', [I32_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Full", lambda x: jnp.zeros_like(x) + 0.5)', [I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Arange", lambda x: x + jnp.arange(3))', [F16_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Arange", lambda x: x + jnp.arange(3))', [I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Arr", lambda x: x * jnp.array(2.0))', [F16_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Arr", lambda x: x * jnp.array(2))', [I8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Mix", lambda x, y: x * y)', [I8_2x3, U8_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Mix", lambda x, y: x + y)', [F16_2x3, I64_2x3], 'trax/layers/base.py'),
    ('tl.Fn("Mix", lambda x, y: x + y)', [F64_2x3, F16_2x3], 'trax/layers/base.py'),
]


def make_int_inputs():
  cases = []
  for expr, inputs, source in INT_CASES:
    rec = run_layer(expr, inputs, jnp_variant=True)
    rec['source'] = source
    cases.append(rec)
  write('int_inputs.json', cases)


# ----------------------------------------------------------------------------
# 3. fn_checks.json

# (NumPy ufuncs are left out: whether `inspect` can read their signature
# depends on the NumPy version, not on Trax.)
FN_CASES = [
    ('default_argument', 'tl.Fn("f", lambda x, y=1: x + y)'),
    ('var_args', 'tl.Fn("f", lambda *args: args[0])'),
    ('var_kwargs', 'tl.Fn("f", lambda x, **kwargs: x)'),
    ('var_args_and_kwargs', 'tl.Fn("f", lambda *args, **kwargs: args[0])'),
    ('default_and_var_kwargs', 'tl.Fn("f", lambda x=1, **kwargs: x)'),
    ('keyword_only', 'tl.Fn("f", lambda x, *, y: x)'),
    ('keyword_only_default', 'tl.Fn("f", lambda x, *, y=2: x)'),
    ('plain_two_args', 'tl.Fn("f", lambda x, y: x + y)'),
    ('no_args', 'tl.Fn("f", lambda: 1)'),
    ('builtin', 'tl.Fn("f", abs)'),
]


def make_fn_checks():
  cases = []
  for name, expr in FN_CASES:
    case = {'name': name, 'expr': expr, 'source': 'trax/layers/base.py'}
    try:
      layer = eval(expr, namespace())  # pylint: disable=eval-used
      case['ok'] = True
      case['n_in'], case['n_out'] = layer.n_in, layer.n_out
      case['str'] = str(layer)
    except Exception as e:  # pylint: disable=broad-except
      case['ok'] = False
      case['error'] = error_record(e)
    cases.append(case)
  write('fn_checks.json', cases)


# ----------------------------------------------------------------------------
# 4. shapes.json

SHAPE_EXPRS = [
    'str(shapes.ShapeDtype((2, 3)))',
    'repr(shapes.ShapeDtype((2, 3)))',
    'str(shapes.ShapeDtype((2, 3), np.int32))',
    'repr(shapes.ShapeDtype((2, 3), np.int32))',
    'str(shapes.ShapeDtype([2, 3], np.dtype("int32")))',
    'str(shapes.ShapeDtype((), np.int8))',
    'str(shapes.ShapeDtype((None, 3)))',
    'str(shapes.ShapeDtype((2,), np.float16))',
    'str(shapes.signature(np.zeros((2, 3), np.float32)))',
    'str(shapes.signature(np.zeros((2, 3), np.int64)))',
    'str(shapes.signature(np.zeros((4,), np.bool_)))',
    'str(shapes.signature(np.float32(1.0)))',
    'str(shapes.signature(np.zeros((2,), np.float64)))',
    'str(shapes.signature((np.zeros((2,)), np.zeros((3,), np.int32))))',
    'str(shapes.signature([np.zeros((2,)), np.zeros((3,), np.int32)]))',
    'str(shapes.signature((np.zeros((2,)), (np.zeros((1,)), np.zeros((3,), np.int32)))))',
    'str(shapes.signature({"a": np.zeros((2,)), "b": np.zeros((3,), np.int32)}))',
    'str(shapes.signature(()))',
    'type(shapes.signature(np.zeros((2,)))).__name__',
    'type(shapes.signature((np.zeros((2,)),))).__name__',
    'type(shapes.signature([np.zeros((2,))])).__name__',
    'type(shapes.signature(())).__name__',
    'len(shapes.signature(np.zeros((2, 3))))',
    'len(shapes.signature(()))',
    'len(shapes.signature((np.zeros((2,)),)))',
    'len(shapes.signature((np.zeros((2,)), np.zeros((3,)), np.zeros((4,)))))',
    'len(shapes.signature([np.zeros((2,)), np.zeros((3,))]))',
    'len(shapes.ShapeDtype((2, 3)))',
    'len(shapes.ShapeDtype(()))',
    'str(shapes.ShapeDtype((2, 3)).as_tuple())',
    'str(shapes.ShapeDtype((2, 3), np.int32).as_tuple())',
    'str(shapes.ShapeDtype((2, 3)).replace(shape=(4,)))',
    'str(shapes.ShapeDtype((2, 3)).replace(dtype=np.int32))',
    'str(shapes.ShapeDtype((2, 3)).replace())',
    'str(shapes.ShapeDtype((2, 3)).replace(shape=(1,), dtype=np.int8))',
    'shapes.ShapeDtype((2, 3)) == shapes.ShapeDtype((2, 3))',
    'shapes.ShapeDtype((2, 3)) == shapes.ShapeDtype([2, 3])',
    'shapes.ShapeDtype((2, 3)) == shapes.ShapeDtype((2, 3), np.int32)',
    'shapes.ShapeDtype((2, 3)) != shapes.ShapeDtype((2, 3), np.int32)',
    'shapes.ShapeDtype((2,), np.float32) == shapes.signature(np.zeros((2,), np.float32))',
    'shapes.ShapeDtype((2, 3)).shape',
    'type(shapes.ShapeDtype([2, 3]).shape).__name__',
    'str(shapes.ShapeDtype((2, 3)).dtype)',
    'str(shapes.signature(np.zeros((2, 3))).dtype)',
    'shapes.ShapeDtype(5)',
    'shapes.ShapeDtype("ab")',
    'str(shapes.splice_signatures(shapes.ShapeDtype((1,)), (shapes.ShapeDtype((2,)), shapes.ShapeDtype((3,))), ()))',
    'str(shapes.splice_signatures(shapes.ShapeDtype((1,))))',
    'str(shapes.splice_signatures())',
    'hasattr(shapes, "assert_same_shape")',
    'hasattr(shapes, "assert_shape_equals")',
    'shapes.assert_same_shape(np.zeros((2,)), np.zeros((3,)))',
    'shapes.assert_shape_equals(np.zeros((2,)), (3,))',
]


def _json_value(v):
  if isinstance(v, tuple):
    return {'tuple': [_json_value(x) for x in v]}
  if isinstance(v, (bool, int, float, str)) or v is None:
    return v
  return {'repr': repr(v)}


def make_shapes():
  cases = []
  for expr in SHAPE_EXPRS:
    case = {'expr': expr, 'source': 'trax/shapes.py'}
    try:
      v = eval(expr, namespace())  # pylint: disable=eval-used
      case['ok'] = True
      case['value'] = _json_value(v)
    except Exception as e:  # pylint: disable=broad-except
      case['ok'] = False
      case['error'] = error_record(e)
    cases.append(case)
  write('shapes.json', cases)


# ----------------------------------------------------------------------------
# 5. combinators.json

def make_combinators():
  cases = []
  x = np.arange(6, dtype=np.float32).reshape((2, 3)) + 1.0
  c0 = arr([10.0, 20.0], np.float32)
  cumsum = 'tl.Fn("cs", lambda x, c: (x + c, x + c), n_out=2)'
  for mode in ('predict', 'train', 'eval'):
    rec = run_layer(f'tl.Scan({cumsum}, axis=1, mode="{mode}")', [x, c0],
                    n_calls=3)
    rec['kind'] = 'scan_carry'
    rec['source'] = 'trax/layers/combinators.py'
    cases.append(rec)
  # A Scan over an LSTMCell with Trax-initialized weights (in the fixture).
  xs = (np.arange(2 * 3 * 2, dtype=np.float32).reshape((2, 3, 2)) - 5.0) / 4.0
  carry = np.zeros((2, 6), np.float32)  # LSTM carry holds (c, h) of 3 units.
  for mode in ('predict', 'train'):
    rec = run_layer(f'tl.Scan(tl.LSTMCell(3), axis=1, mode="{mode}")',
                    [xs, carry], n_calls=2)
    rec['kind'] = 'scan_lstm'
    rec['source'] = 'trax/layers/combinators.py'
    cases.append(rec)
  xs3 = (np.arange(2 * 3 * 3, dtype=np.float32).reshape((2, 3, 3)) - 8.0) / 8.0
  rec = run_layer('tl.LSTM(3, mode="predict")', [xs3], n_calls=2)
  rec['kind'] = 'lstm_predict'
  rec['source'] = 'trax/layers/rnn.py'
  cases.append(rec)

  # Cond with constant branches: what type comes out?
  cond_cases = [
      ('tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Fn("one", lambda y: 1), tl.Fn("two", lambda y: 2))',
       [arr(3.0, np.float32), arr(7.0, np.float32)]),
      ('tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Fn("one", lambda y: 1), tl.Fn("two", lambda y: 2))',
       [arr(-3.0, np.float32), arr(7.0, np.float32)]),
      ('tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Fn("half", lambda y: 0.5), tl.Fn("ident", lambda y: y))',
       [arr(-3.0, np.float32), arr(7.0, np.float32)]),
      ('tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Fn("half", lambda y: 0.5), tl.Fn("ident", lambda y: y))',
       [arr(3.0, np.float32), arr(7.0, np.float32)]),
      ('tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Fn("seven", lambda y: 7))',
       [arr(3.0, np.float32), arr(7, np.int32)]),
      ('tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Fn("seven", lambda y: 7))',
       [arr(-3.0, np.float32), arr(7, np.int32)]),
      ('tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Dense(2))',
       [arr(-3.0, np.float32), arr([[1.0, 2.0]], np.float32)]),
      ('tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Dense(2))',
       [arr(3.0, np.float32), arr([[1.0, 2.0]], np.float32)]),
      ('tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Fn("dbl", lambda a, b: (2 * a, 2 * b), n_out=2))',
       [arr(3.0, np.float32), arr([1.0, 2.0], np.float32),
        arr([3.0], np.float32)]),
      ('tl.Serial(tl.Cond(tl.Fn("c", lambda x: x > 0), tl.Fn("one", lambda y: 1), tl.Fn("two", lambda y: 2)), tl.Fn("p", lambda y: y + 0.5))',
       [arr(3.0, np.float32), arr(7.0, np.float32)]),
  ]
  for expr, inputs in cond_cases:
    rec = run_layer(expr, inputs)
    rec['kind'] = 'cond'
    rec['source'] = 'trax/layers/combinators.py'
    cases.append(rec)

  # Module-level names of trax/layers/base.py.
  attrs = []
  for name in ('to_list', 'GET_WEIGHTS_FROM_CACHE', 'GET_STATE_FROM_CACHE',
               'EMPTY_WEIGHTS', 'EMPTY_STATE', 'Fn', 'PureLayer', 'LayerError',
               'flatten_weights_and_state', 'unflatten_weights_and_state',
               'shard', 'unshard', 'np_to_file', 'np_from_file'):
    rec = {'name': name, 'exists': hasattr(tl, name),
           'source': 'trax/layers/base.py'}
    if hasattr(tl, name):
      v = getattr(tl, name)
      rec['kind'] = ('class' if inspect.isclass(v) else
                     'function' if callable(v) else type(v).__name__)
      if not callable(v):
        rec['repr'] = repr(v)
    attrs.append(rec)
  to_list_cases = []
  for expr in ('tl.to_list(np.array([1, 2], np.int32))',
               'tl.to_list((np.array([1.5]), np.array([[1, 2]])))',
               'tl.to_list([np.array(3)])',
               'tl.to_list(jnp.array([0.5, 1.0]))'):
    try:
      v = eval(expr, namespace())  # pylint: disable=eval-used
      to_list_cases.append({'expr': expr, 'ok': True, 'value': v,
                            'type': type(v).__name__})
    except Exception as e:  # pylint: disable=broad-except
      to_list_cases.append({'expr': expr, 'ok': False,
                            'error': error_record(e)})
  write('combinators.json', cases,
        extra={'base_names': attrs, 'to_list': to_list_cases})


# ----------------------------------------------------------------------------
# 6. optimizers.json

def _weight_tree():
  rs = np.random.RandomState(6)
  return ((rs.randn(2, 3).astype(np.float32), rs.randn(3).astype(np.float32)),
          [rs.randn(3, 2).astype(np.float32)],
          {'s': rs.randn(1).astype(np.float32)})


def _grad_trees():
  rs = np.random.RandomState(7)
  out = []
  for _ in range(3):
    out.append(((rs.randn(2, 3).astype(np.float32),
                 rs.randn(3).astype(np.float32)),
                [rs.randn(3, 2).astype(np.float32)],
                {'s': rs.randn(1).astype(np.float32)}))
  return out


OPT_EXPRS = [
    'trax.optimizers.SGD(0.1)',
    'trax.optimizers.Momentum(0.1)',
    'trax.optimizers.Momentum(0.1, mass=0.5, nesterov=False)',
    'trax.optimizers.Adam(0.01)',
    'trax.optimizers.Adam(0.01, weight_decay_rate=0.0, clip_grad_norm=1.0)',
    'trax.optimizers.Adafactor(0.05)',
    'trax.optimizers.Adafactor(0.05, factored=False, do_momentum=True)',
    'trax.optimizers.RMSProp(0.01)',
    'trax.optimizers.SM3(0.01)',
    'trax.optimizers.SM3(0.01, momentum=0.0)',
]


def make_optimizers():
  cases = []
  for expr in OPT_EXPRS:
    case = {'expr': expr, 'source': 'trax/optimizers/'}
    opt = eval(expr, namespace())  # pylint: disable=eval-used
    case['source'] = 'trax/optimizers/' + type(opt).__module__.split('.')[-1] + '.py'
    case['class'] = type(opt).__name__
    case['slots_before_init'] = structure(opt.slots)
    case['opt_params'] = encode(dict(opt.opt_params))
    weights = _weight_tree()
    case['weights'] = encode(weights)
    grads = _grad_trees()
    case['grads'] = [encode(g) for g in grads]
    try:
      slots, opt_params = opt.tree_init(weights)
      case['init_ok'] = True
      case['slots_after_init_structure'] = structure(slots)
      case['slots_after_init'] = encode(slots)
      case['opt_slots_is_returned'] = opt.slots is slots
      case['opt_params_after_init'] = encode(dict(opt_params))
      steps = []
      for step, g in enumerate(grads):
        weights, slots, metrics = opt.tree_update(step, g, weights, slots,
                                                  opt_params)
        steps.append({'step': step, 'weights': encode(weights),
                      'slots': encode(slots),
                      'metrics': encode(dict(metrics))})
      case['steps'] = steps
    except Exception as e:  # pylint: disable=broad-except
      case['init_ok'] = False
      case['error'] = error_record(e)
    cases.append(case)
  write('optimizers.json', cases)


# ----------------------------------------------------------------------------
# 7. metrics.json

def _metric_inputs():
  rs = np.random.RandomState(11)
  d = {}
  d['logits'] = rs.randn(2, 3, 4).astype(np.float32)
  d['log_probs'] = np.asarray(tl.log_softmax(d['logits'])).astype(np.float32)
  d['cat_targets'] = rs.randint(0, 4, size=(2, 3)).astype(np.int64)
  # Make some targets equal to the argmax so accuracies are not trivial.
  am = d['logits'].argmax(-1)
  d['cat_targets'][0] = am[0]
  d['cat_targets'][1, 0] = am[1, 0]
  d['cat_weights'] = rs.uniform(0.1, 2.0, size=(2, 3)).astype(np.float32)
  d['cat_weights_zeros'] = d['cat_weights'].copy()
  d['cat_weights_zeros'][0, 1] = 0.0  # A correct position.
  d['cat_weights_zeros'][1, 0] = 0.0  # Another correct position.
  d['cat_weights_zeros'][1, 2] = 0.0
  d['flat_logits'] = rs.randn(8, 3).astype(np.float32)
  d['flat_targets'] = rs.randint(0, 3, size=(8,)).astype(np.int64)
  d['flat_targets'][:4] = d['flat_logits'][:4].argmax(-1)
  d['bin_probs'] = rs.uniform(0.05, 0.95, size=(6,)).astype(np.float32)
  d['bin_probs_2d'] = d['bin_probs'].reshape((6, 1))
  d['bin_logits'] = rs.randn(6).astype(np.float32)
  d['bin_targets'] = np.array([1, 0, 1, 1, 0, 0], np.int64)
  d['bin_targets_2d'] = d['bin_targets'].reshape((6, 1))
  d['bin_weights'] = rs.uniform(0.1, 2.0, size=(6,)).astype(np.float32)
  d['bin_weights_2d'] = d['bin_weights'].reshape((6, 1))
  d['bin_weights_zeros'] = d['bin_weights'] * np.array([1, 0, 1, 0, 1, 1],
                                                       np.float32)
  d['reg_out'] = rs.randn(2, 3).astype(np.float32) * 2
  d['reg_targets'] = rs.randn(2, 3).astype(np.float32)
  d['reg_weights'] = rs.uniform(0.1, 2.0, size=(2, 3)).astype(np.float32)
  d['reg_weights_zeros'] = d['reg_weights'] * np.array(
      [[1, 0, 1], [0, 1, 1]], np.float32)
  d['values'] = rs.randn(2, 3).astype(np.float32)
  return d


METRIC_CASES = [
    ('tl.L2Loss()', ['reg_out', 'reg_targets', 'reg_weights']),
    ('tl.L2Loss()', ['reg_out', 'reg_targets', 'reg_weights_zeros']),
    ('tl.L1Loss()', ['reg_out', 'reg_targets', 'reg_weights']),
    ('tl.SmoothL1Loss()', ['reg_out', 'reg_targets', 'reg_weights']),
    ('tl.SmoothL1Loss()', ['reg_out', 'reg_targets', 'reg_weights_zeros']),
    ('tl.BinaryCrossEntropyLoss()', ['bin_probs', 'bin_targets', 'bin_weights']),
    ('tl.BinaryCrossEntropyLoss()', ['bin_probs', 'bin_targets', 'bin_weights_zeros']),
    ('tl.BinaryCrossEntropyLoss()', ['bin_probs_2d', 'bin_targets_2d', 'bin_weights_2d']),
    ('tl.BinaryCrossEntropySum()', ['bin_probs', 'bin_targets', 'bin_weights']),
    ('tl.BinaryCrossEntropySum()', ['bin_probs_2d', 'bin_targets_2d', 'bin_weights_2d']),
    ('tl.BinaryCrossEntropy()', ['bin_logits', 'bin_targets']),
    ('tl.CategoryCrossEntropy()', ['logits', 'cat_targets']),
    ('tl.CategoryCrossEntropy(label_smoothing=0.1)', ['logits', 'cat_targets']),
    ('tl.WeightedCategoryCrossEntropy()', ['logits', 'cat_targets', 'cat_weights']),
    ('tl.WeightedCategoryCrossEntropy()', ['logits', 'cat_targets', 'cat_weights_zeros']),
    ('tl.WeightedCategoryCrossEntropy(label_smoothing=0.1)', ['logits', 'cat_targets', 'cat_weights']),
    ('tl.WeightedCategoryCrossEntropy(label_smoothing=0.2)', ['logits', 'cat_targets', 'cat_weights_zeros']),
    ('tl.WeightedCategoryCrossEntropy(cutoff=1.0)', ['logits', 'cat_targets', 'cat_weights']),
    ('tl.WeightedCategoryCrossEntropy(label_smoothing=1.5)', ['logits', 'cat_targets', 'cat_weights']),
    ('tl.CrossEntropyLoss()', ['log_probs', 'cat_targets', 'cat_weights']),
    ('tl.CrossEntropyLoss()', ['log_probs', 'cat_targets', 'cat_weights_zeros']),
    ('tl.CrossEntropyLossWithLogSoftmax()', ['logits', 'cat_targets', 'cat_weights']),
    ('tl.CrossEntropySum()', ['log_probs', 'cat_targets', 'cat_weights']),
    ('tl.CategoryAccuracy()', ['logits', 'cat_targets']),
    ('tl.CategoryAccuracy()', ['flat_logits', 'flat_targets']),
    ('tl.WeightedCategoryAccuracy()', ['logits', 'cat_targets', 'cat_weights']),
    ('tl.WeightedCategoryAccuracy()', ['logits', 'cat_targets', 'cat_weights_zeros']),
    ('tl.Accuracy()', ['logits', 'cat_targets', 'cat_weights']),
    ('tl.Accuracy()', ['logits', 'cat_targets', 'cat_weights_zeros']),
    ('tl.SequenceAccuracy()', ['logits', 'cat_targets', 'cat_weights']),
    ('tl.SequenceAccuracy()', ['logits', 'cat_targets', 'cat_weights_zeros']),
    ('tl.MaskedSequenceAccuracy()', ['logits', 'cat_targets', 'cat_weights']),
    ('tl.MaskedSequenceAccuracy()', ['logits', 'cat_targets', 'cat_weights_zeros']),
    ('tl.MacroAveragedFScore()', ['flat_logits', 'flat_targets']),
    ('tl.MacroAveragedFScore(beta=2.0)', ['flat_logits', 'flat_targets']),
    ('tl.MacroAveragedFScore(initial_category_index=1)', ['flat_logits', 'flat_targets']),
    ('tl.WeightedFScore()', ['flat_logits', 'flat_targets']),
    ('tl.WeightedFScore(beta=0.5)', ['flat_logits', 'flat_targets']),
    ('tl.WeightedFScore(initial_category_index=1)', ['flat_logits', 'flat_targets']),
    ('tl.WeightedSum()', ['values', 'reg_weights']),
    ('tl.BinaryClassifier()', ['bin_probs']),
    ('tl.MulticlassClassifier()', ['flat_logits']),
]


def make_metrics():
  d = _metric_inputs()
  cases = []
  for expr, names in METRIC_CASES:
    rec = run_layer(expr, [d[n] for n in names])
    rec['input_names'] = names
    rec['source'] = 'trax/layers/metrics.py'
    cases.append(rec)
  write('metrics.json', cases)


# ----------------------------------------------------------------------------
# 8. rl_advantages.json

def _rl_inputs():
  rs = np.random.RandomState(3)
  b, t = 2, 8
  rewards = rs.randn(b, t).astype(np.float32)
  values = rs.randn(b, t).astype(np.float32)
  dones = np.zeros((b, t), np.bool_)
  dones[0, 2] = dones[0, 5] = True
  dones[1, 3] = dones[1, 4] = dones[1, 7] = True
  gamma = 0.9
  mask_full = np.ones((b, t), np.bool_)
  mask_part = np.ones((b, t), np.bool_)
  mask_part[0, 1] = mask_part[0, 6] = False
  mask_part[1, 0] = mask_part[1, 4] = mask_part[1, 5] = False
  mask_row = np.ones((1, t), np.bool_)
  mask_row[0, 2] = mask_row[0, 3] = False
  return rewards, values, dones, gamma, {
      'all_true': mask_full, 'partial': mask_part, 'row_1xT': mask_row}


def _returns(rewards, dones, gamma, mask):
  """Discounted returns that restart after each done (as the RL tasks do)."""
  gammas = np.where(np.broadcast_to(mask, rewards.shape), gamma, 1.0)
  gammas = gammas * (1.0 - dones)
  return rl_advantages.discounted_returns(rewards,
                                          gammas.astype(np.float32))


def make_rl_advantages():
  rewards, values, dones, gamma, masks = _rl_inputs()
  estimators = [('monte_carlo', {}, m) for m in (0, 1, 2)]
  estimators += [('td_k', {}, m) for m in (1, 2, 3)]
  estimators += [('td_lambda', {'lambda_': lam}, m)
                 for lam in (0.5, 0.95) for m in (0, 1, 2)]
  estimators += [('gae', {'lambda_': lam}, m)
                 for lam in (0.5, 0.95) for m in (0, 1, 2)]
  returns_by_mask = {}
  for mask_name, mask in list(masks.items()) + [('none', None)]:
    returns_by_mask[mask_name] = _returns(rewards, dones, gamma,
                                          mask if mask is not None else True)
  cases = []
  for fn_name, kwargs, margin in estimators:
    for mask_name, mask in list(masks.items()) + [('none', None)]:
      returns = returns_by_mask[mask_name]
      case = {'fn': fn_name, 'gamma': gamma, 'margin': margin,
              'kwargs': kwargs, 'mask_name': mask_name,
              'source': 'trax/rl/advantages.py'}
      fn = getattr(rl_advantages, fn_name)
      try:
        estimator = fn(gamma, margin, **kwargs)
        # Trax estimators may write into their arguments; pass copies.
        out = estimator(rewards.copy(), returns.copy(), values.copy(),
                        dones.copy(), None if mask is None else mask.copy())
        case['ok'] = True
        case['output'] = encode(np.asarray(out))
        case['output_python_type'] = type(out).__name__
      except Exception as e:  # pylint: disable=broad-except
        case['ok'] = False
        case['error'] = error_record(e)
      cases.append(case)
  inputs = {'rewards': encode(rewards), 'values': encode(values),
            'dones': encode(dones),
            'discount_masks': {k: encode(v) for k, v in masks.items()},
            'returns': {k: encode(v) for k, v in returns_by_mask.items()},
            'note': ('estimator(rewards, returns[mask_name], values, dones, '
                     'discount_masks[mask_name] or None for "none")')}
  # Trax's mask_discount and discounted_returns directly.
  helpers = []
  gam = np.array([[0.9, 0.5, 1.0], [0.0, 0.9, 0.9]], np.float32)
  rew = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32)
  helpers.append({'fn': 'discounted_returns', 'rewards': encode(rew),
                  'gammas': encode(gam),
                  'output': encode(rl_advantages.discounted_returns(rew, gam))})
  m = np.array([[True, False, True]])
  helpers.append({'fn': 'mask_discount', 'discount': 0.9,
                  'discount_mask': encode(m),
                  'output': encode(np.asarray(
                      rl_advantages.mask_discount(0.9, m)))})
  names = sorted(n for n in dir(rl_advantages) if not n.startswith('_'))
  public = []
  for n in names:
    v = getattr(rl_advantages, n)
    if inspect.isfunction(v) or inspect.isclass(v):
      rec = {'name': n, 'module': getattr(v, '__module__', None)}
      try:
        rec['signature'] = str(inspect.signature(v))
      except (TypeError, ValueError):
        pass
      public.append(rec)
  write('rl_advantages.json', cases,
        extra={'inputs': inputs, 'helpers': helpers, 'public_names': public,
               'estimator_arg_names': ['rewards', 'returns', 'values',
                                       'dones', 'discount_mask']})


# ----------------------------------------------------------------------------
# 9. rl_paths.json

RL_MODULES = ['actor_critic', 'actor_critic_joint', 'advantages',
              'distributions', 'normalization', 'policy_tasks', 'rl_layers',
              'serialization_utils', 'space_serializer', 'task', 'training',
              'value_tasks', 'envs']


def make_rl_paths():
  cases = []
  for mod in RL_MODULES:
    full = f'trax.rl.{mod}'
    case = {'module': mod, 'source': f'trax/rl/{mod}.py'}
    try:
      m = importlib.import_module(full)
      case['ok'] = True
      names = []
      for n in sorted(dir(m)):
        if n.startswith('_'):
          continue
        v = getattr(m, n)
        if inspect.isfunction(v) or inspect.isclass(v):
          names.append({'name': n,
                        'kind': 'class' if inspect.isclass(v) else 'function',
                        'defined_here': getattr(v, '__module__', '') == full,
                        'defined_in': getattr(v, '__module__', None)})
      case['names'] = names
      case['submodules'] = sorted(
          n for n in dir(m) if inspect.ismodule(getattr(m, n)) and
          getattr(getattr(m, n), '__name__', '').startswith(full + '.'))
    except Exception as e:  # pylint: disable=broad-except
      case['ok'] = False
      case['error'] = error_record(e)
    cases.append(case)
  top = sorted(n for n in dir(trax.rl) if not n.startswith('_'))
  write('rl_paths.json', cases, extra={'trax_rl_names': top})


def main():
  makers = {'reprs': make_reprs, 'int_inputs': make_int_inputs,
            'fn_checks': make_fn_checks, 'shapes': make_shapes,
            'combinators': make_combinators, 'optimizers': make_optimizers,
            'metrics': make_metrics, 'rl_advantages': make_rl_advantages,
            'rl_paths': make_rl_paths}
  which = sys.argv[1:] or list(makers)
  for name in which:
    makers[name]()


if __name__ == '__main__':
  main()
