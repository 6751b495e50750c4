"""Integer, boolean and NumPy inputs get the dtypes Trax (JAX, x64 off) gives.

Every case names the Trax source whose behaviour it checks. Expected values
come from NumPy float64 references written here (the registry walk at the
end compares integer inputs with the same inputs cast to float32); expected
dtypes are JAX's, written out literally.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests import _layer_testing as lt
from tests.conformance import registry
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp


def _init(layer, x):
  layer.init(shapes.signature(x), rng=fastmath.random.get_prng(0))
  return layer


def _np(x):
  return np.asarray(x)


def _close(got, want, tol=1e-5):
  np.testing.assert_allclose(_np(got).astype(np.float64), want, rtol=tol,
                             atol=tol)


def _ints(*shape, seed=0, low=-4, high=5):
  """int64 NumPy values, what `np.array([...])` of Python ints makes."""
  return np.random.default_rng(seed).integers(low, high, size=shape)


# -- The promotion lattice (jax/_src/dtypes.py, which Trax's jnp uses) --------

_BF16 = 'bfloat16'
_I32 = tf.constant([1, 2], tf.int32)

_LATTICE = [
    # Strong types.
    ((np.bool_, np.bool_), 'bool'),
    ((np.bool_, np.int8), 'int8'),
    ((np.bool_, np.float32), 'float32'),
    ((np.int32, np.float32), 'float32'),  # NumPy: float64.
    ((np.int64, np.float32), 'float32'),
    ((np.int8, np.uint8), 'int16'),
    ((np.uint8, np.int32), 'int32'),
    ((np.uint32, np.int32), 'int32'),  # int64, canonicalised.
    ((np.int32, np.float16), 'float16'),
    ((np.int32, _BF16), 'bfloat16'),
    ((_BF16, np.float16), 'float32'),
    ((np.float16, np.float32), 'float32'),
    ((np.float32, np.complex64), 'complex64'),
    ((np.float64,), 'float32'),
    ((np.complex128,), 'complex64'),
    ((np.float64(1.0), 1), 'float32'),  # NumPy scalars are strong.
    # Python scalars are weak: they take the other operand's width.
    ((np.int32, 0.5), 'float32'),
    ((_I32, 0.5), 'float32'),
    ((np.float16, 0.5), 'float16'),
    ((_BF16, 2), 'bfloat16'),
    ((np.uint8, 1), 'uint8'),
    ((np.int8, 300), 'int8'),
    ((np.float32, 1j), 'complex64'),
    ((np.bool_, 1), 'int32'),
    ((np.bool_, 1.0), 'float32'),
    ((1, 2), 'int32'),
    ((1, 2.0), 'float32'),
    ((1.0, 1j), 'complex64'),
    ((True, False), 'bool'),
]


@pytest.mark.parametrize('args, want', _LATTICE,
                         ids=[str(i) for i in range(len(_LATTICE))])
def test_result_type_lattice(args, want):
  assert fastmath.result_type(*args).name == want


@pytest.mark.parametrize('dtype, want', [
    (np.int64, 'int32'), (np.uint64, 'uint32'), (np.float64, 'float32'),
    (np.complex128, 'complex64'), (tf.int64, 'int32'), (np.int8, 'int8'),
    (_BF16, 'bfloat16'), (np.float16, 'float16'), (np.bool_, 'bool')])
def test_canonicalize_dtype(dtype, want):
  assert fastmath.canonicalize_dtype(dtype).name == want


def test_result_type_rejects_non_numbers():
  with pytest.raises(TypeError, match='no numeric type promotion'):
    fastmath.result_type(np.array(['a']), np.float32)
  with pytest.raises(ValueError, match='at least one'):
    fastmath.result_type()


# -- Python scalars are weakly typed (jax/_src/dtypes.py) ---------------------

def test_weak_python_scalars():
  x, half = fastmath.promote_args(_I32, 0.5)
  assert (x * half).dtype.name == 'float32'
  np.testing.assert_array_equal(_np(x * half), [0.5, 1.0])
  f, one = fastmath.promote_args(tf.constant([1., 2.]), 1)
  assert (f + one).dtype.name == 'float32'
  h, two = fastmath.promote_args(tf.constant([1., 2.], tf.float16), 2.0)
  assert (h * two).dtype.name == 'float16'


def test_promote_args_leaves_matching_tensors_alone():
  f = tf.constant([1., 2.])
  a, b = fastmath.promote_args(f, f)
  assert a is f and b is f


@pytest.mark.parametrize('rate', [0.0, 0.5])
def test_dropout_train_on_ints_is_float32(rate):
  # trax/layers/core.py Dropout: x * (keep.astype(x.dtype) / keep_prob); the
  # weak Python float keep_prob makes the int32 mask float32.
  x = _ints(4, 6, low=1)
  y = _init(tl.Dropout(rate, mode='train'), x)(x)
  assert y.dtype.name == 'float32'
  kept = _np(y) != 0
  _close(_np(y)[kept], x[kept] / (1 - rate))
  eval_layer = _init(tl.Dropout(rate, mode='eval'), x)
  assert eval_layer(x).dtype.name == 'int32'  # Identity on int32 input.


# -- Canonicalisation at the layer boundary (jnp.asarray, x64 off) ------------

def test_numpy_64_bit_inputs_enter_as_32_bit():
  # trax/layers/core.py Dense on NumPy float64: jnp.dot(x, w) sees float32.
  x = np.linspace(-1, 1, 12).reshape(3, 4)
  dense = _init(tl.Dense(2), x)
  w, b = (_np(v).astype(np.float64) for v in dense.weights)
  y = dense(x)
  assert y.dtype.name == 'float32'
  _close(y, x @ w + b)
  # trax/layers/activation_fns.py Relu keeps the (canonical) int32.
  assert tl.Relu()(np.arange(-2, 3)).dtype.name == 'int32'
  assert tl.Relu()(np.arange(3, dtype=np.uint64)).dtype.name == 'uint32'


def test_python_list_inputs_are_arrays():
  # As jnp.asarray makes them (JAX's jnp.dot itself refuses lists).
  dense = _init(tl.Dense(2), np.zeros((1, 3), np.float32))
  w, b = (_np(v).astype(np.float64) for v in dense.weights)
  y = dense([[1, 2, 3]])
  assert y.dtype.name == 'float32'
  _close(y, np.array([[1., 2., 3.]]) @ w + b)
  # A tuple is the data stack: two Python scalars stay two inputs.
  assert float(tl.Add()((1.5, 2.0))) == 3.5


def test_tensors_pass_the_boundary_unchanged():
  x64 = tf.constant([-1, 2], tf.int64)
  assert tl.Relu()(x64).dtype.name == 'int64'


def test_numpy_weights_are_canonicalised():
  x = np.ones((2, 3), np.float32)
  dense = _init(tl.Dense(2), x)
  w64 = tuple(_np(v).astype(np.float64) for v in dense.weights)
  y = dense(x, weights=w64)
  assert y.dtype.name == 'float32'
  _close(y, x @ w64[0] + w64[1])


# -- Dense (trax/layers/core.py: jnp.dot(x, w) + b) ---------------------------

_DENSE_INPUTS = {
    'int64': _ints(2, 3, 4),
    'int32': _ints(2, 3, 4).astype(np.int32),
    'bool': _ints(2, 3, 4) > 0,
    'uint8': _ints(2, 3, 4, low=0).astype(np.uint8),
}


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('kind', sorted(_DENSE_INPUTS))
def test_dense_promotes_integer_and_bool_inputs(kind, mode):
  x = _DENSE_INPUTS[kind]
  dense = _init(tl.Dense(5), x)
  w, b = (_np(v).astype(np.float64) for v in dense.weights)
  y, _ = lt.run_layer(dense, x, mode)
  assert y.dtype.name == 'float32'
  _close(y, x.astype(np.float64) @ w + b)


def test_dense_with_bfloat16_weights_and_int_input_is_bfloat16():
  # JAX's lattice: int32 meets bfloat16 weights in bfloat16.
  x = _ints(2, 4).astype(np.int32)
  y = _init(tl.Dense(3, use_bfloat16=True), x)(x)
  assert y.dtype.name == 'bfloat16'


def _op_types(layer, x_spec):
  def run(x, w):
    return layer.pure_fn(x, w, layer.state, fastmath.random.get_prng(0))[0]
  w_spec = tf.nest.map_structure(
      lambda v: tf.TensorSpec(v.shape, v.dtype), layer.weights)
  graph = tf.function(run).get_concrete_function(x_spec, w_spec).graph
  return [op.type for op in graph.get_operations()]


def test_float32_dense_graph_has_no_casts():
  dense = _init(tl.Dense(4), np.zeros((2, 3), np.float32))
  ops = _op_types(dense, tf.TensorSpec((2, 3), tf.float32))
  assert 'MatMul' in ops and 'Cast' not in ops, ops
  # An int32 input adds exactly the one cast it needs.
  ops = _op_types(dense, tf.TensorSpec((2, 3), tf.int32))
  assert ops.count('Cast') == 1, ops


@pytest.mark.parametrize('bad, dtype', [
    (np.array([['a', 'b', 'c']]), 'str'),
    (np.ones((1, 3), np.complex64), 'complex64')])
def test_dense_names_itself_on_bad_dtypes(bad, dtype):
  dense = _init(tl.Dense(4), np.zeros((1, 3), np.float32))
  with pytest.raises(tl.LayerError, match=(
      r'Dense_4: expects a floating-point, integer or boolean input, got '
      rf'dtype {dtype}')):
    dense(bad)


# -- Pooling (trax/layers/pooling.py over trax/fastmath/jax.py's
# _pooling_general: lax.reduce_window with a float init value; see
# tfnp_trax/fastmath/nn_ops.py for why integers keep their dtype) -----------

def _pool_ref(x, pool, strides, padding, kind):
  """Window max / sum / mean over axes 1 and 2 in float64 (real cells only)."""
  x = x.astype(np.float64)
  n, h, w, c = x.shape
  pads = []
  for size, k, s in zip((h, w), pool, strides):
    if padding == 'VALID':
      pads.append((0, 0))
    else:
      total = max((-(-size // s) - 1) * s + k - size, 0)
      pads.append((total // 2, total - total // 2))
  fill = -np.inf if kind == 'max' else 0.
  xp = np.pad(x, [(0, 0)] + pads + [(0, 0)], constant_values=fill)
  real = np.pad(np.ones((h, w)), pads)
  oh = (h + sum(pads[0]) - pool[0]) // strides[0] + 1
  ow = (w + sum(pads[1]) - pool[1]) // strides[1] + 1
  out = np.zeros((n, oh, ow, c))
  for i in range(oh):
    for j in range(ow):
      rows = slice(i * strides[0], i * strides[0] + pool[0])
      cols = slice(j * strides[1], j * strides[1] + pool[1])
      window = xp[:, rows, cols, :]
      if kind == 'max':
        out[:, i, j] = window.max(axis=(1, 2))
      else:
        out[:, i, j] = window.sum(axis=(1, 2))
        if kind == 'avg':
          out[:, i, j] /= real[rows, cols].sum()
  return out


_POOLS = {'max': (tl.MaxPool, 'int32'), 'sum': (tl.SumPool, 'int32'),
          'avg': (tl.AvgPool, 'float32')}
_POOL_SETTINGS = [((2, 2), (1, 1), 'VALID'), ((2, 3), (2, 2), 'SAME'),
                  ((3, 3), (2, 1), 'VALID')]


@pytest.mark.parametrize('mode', lt.MODES)
@pytest.mark.parametrize('setting', _POOL_SETTINGS, ids=str)
@pytest.mark.parametrize('kind', sorted(_POOLS))
def test_pooling_integer_inputs(kind, setting, mode):
  pool, strides, padding = setting
  make, want_dtype = _POOLS[kind]
  # Negative values too, so SAME padding must never win a max.
  x = _ints(2, 5, 6, 3, seed=1, low=-9, high=3).astype(np.int32)
  layer = make(pool, strides, padding)
  y, _ = lt.run_layer(layer, x, mode)
  assert y.dtype.name == want_dtype
  _close(y, _pool_ref(x, pool, strides, padding, kind))


def test_pooling_int64_numpy_enters_as_int32():
  x = _ints(1, 4, 4, 2)  # int64
  assert tl.SumPool((2, 2))(x).dtype.name == 'int32'
  assert tl.MaxPool((2, 2))(x).dtype.name == 'int32'
  assert tl.AvgPool((2, 2))(x).dtype.name == 'float32'


def test_pooling_booleans():
  # reduce_window_max accepts bool; reduce_window_sum needs a number dtype.
  x = _ints(1, 4, 4, 2) > 2
  y = tl.MaxPool((2, 2), padding='SAME')(x)
  assert y.dtype.name == 'bool'
  np.testing.assert_array_equal(
      _np(y), _pool_ref(x.astype(np.float64), (2, 2), (1, 1), 'SAME',
                        'max') > 0)
  for make in (tl.SumPool, tl.AvgPool):
    with pytest.raises(tl.LayerError,
                       match=r'Pool\(2,2\): expects a numeric input, got '
                             r'dtype bool'):
      make((2, 2))(x)


# -- LocallyConnected1d (trax/layers/core.py: jnp.einsum(x, w) + b) -----------

@pytest.mark.parametrize('mode', lt.MODES)
def test_locally_connected_1d_integer_input(mode):
  x = _ints(2, 6, 2)
  layer = _init(tl.LocallyConnected1d(3, 3), x.astype(np.float32))
  w, b = (_np(v).astype(np.float64) for v in layer.weights)
  y, _ = lt.run_layer(layer, x, mode)
  assert y.dtype.name == 'float32'
  # VALID: out[o] = sum_i x[o + 2 - i] @ w[o + 2 - i, i] + b[o].
  xf = x.astype(np.float64)
  want = np.stack([sum(xf[:, o + 2 - i] @ w[o + 2 - i, i] for i in range(3))
                   for o in range(4)], axis=1) + b
  _close(y, want)


# -- Normalization (trax/layers/normalization.py) -----------------------------

def test_layer_norm_integer_input():
  # LayerNorm: (x - mean) / sqrt(var + eps) * scale + bias, mean in float32.
  x = _ints(2, 5)
  y = _init(tl.LayerNorm(), x)(x)
  assert y.dtype.name == 'float32'
  xf = x.astype(np.float64)
  c = xf - xf.mean(-1, keepdims=True)
  _close(y, c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-6), 1e-4)


def test_batch_norm_rejects_integers_as_trax_does():
  # BatchNorm raises a TypeError when its output dtype is not the input's.
  x = _ints(4, 3)
  layer = _init(tl.BatchNorm(axis=(0,)), x.astype(np.float32))
  with pytest.raises(tl.LayerError, match=r'BatchNorm: expects a '
                     r'floating-point input, got dtype int32'):
    layer(x)


def test_conv_rejects_integers_as_trax_does():
  # Conv: lax.conv_general_dilated needs input and kernel of one dtype.
  x = _ints(1, 4, 4, 2)
  layer = _init(tl.Conv(2, (2, 2)), x.astype(np.float32))
  with pytest.raises(tl.LayerError, match=r"Conv: expects a floating-point "
                     r"input, got dtype int32 .* kernel's dtype"):
    layer(x)


# -- Chunk and Scan over Dense (trax/layers/combinators.py: lax.scan) ---------

@pytest.mark.parametrize('mode', lt.MODES)
def test_chunk_over_dense_integer_input(mode):
  x = _ints(4, 3)
  layer = _init(tl.Chunk(tl.Dense(2), chunk_size=2), x.astype(np.float32))
  w, b = _dense_weights(layer)
  y, _ = lt.run_layer(layer, x, mode)
  assert y.dtype.name == 'float32'
  _close(y, x.astype(np.float64) @ w + b)


def _dense_weights(layer):
  """The (w, b) of the only Dense inside `layer`."""
  found = []

  def walk(l):
    if isinstance(l, tl.Dense):
      found.append(l)
    for s in l.sublayers:
      walk(s)
  walk(layer)
  (dense,) = found
  return tuple(_np(v).astype(np.float64) for v in dense.weights)


@pytest.mark.parametrize('mode', lt.MODES)
def test_scan_over_a_dense_cell_integer_input(mode):
  # The cell: (x_t, h) -> (h', h') with h' = h + Dense(x_t).
  cell = tl.Serial(tl.Parallel(tl.Dense(3), None), tl.Add(), tl.Dup())
  xs = _ints(4, 2, 5)  # (time, batch, features), int64
  h0 = np.zeros((2, 3), np.float32)
  layer = tl.Scan(cell, n_carry=1)
  layer.init((shapes.ShapeDtype((4, 2, 5), np.int32),
              shapes.ShapeDtype((2, 3), np.float32)),
             rng=fastmath.random.get_prng(0))
  w, b = _dense_weights(layer)
  (ys, h), _ = lt.run_layer(layer, (xs, h0), mode)
  assert (ys.dtype.name, h.dtype.name) == ('float32', 'float32')
  want = np.cumsum(xs.astype(np.float64) @ w + b, axis=0)
  _close(ys, want)
  _close(h, want[-1])


# -- Cond (trax/layers/combinators.py over trax/fastmath/jax.py: lax.cond,
# which requires both branches to return identical types) -------------------

def _halving_cond():
  return tl.Cond(tl.Fn('SumIsPositive', lambda x: jnp.sum(x) > 0),
                 tl.Fn('Half', lambda x: x / 2))


@pytest.mark.parametrize('mode', lt.MODES)
def test_cond_with_dividing_branch_on_ints_is_an_error(mode):
  x = np.array([1, 2, 3], np.int32)
  layer = _init(_halving_cond(), (x, x))
  with pytest.raises(tl.LayerError, match=r'Cond: the true and false '
                     r'branches return different dtypes \(float\d+ vs '
                     r'int32\)'):
    lt.run_layer(layer, (x, x), mode)


@pytest.mark.parametrize('mode', lt.MODES)
def test_cond_with_dividing_branch_on_floats(mode):
  x = np.array([1., 2., 3.], np.float32)
  layer = _init(_halving_cond(), (x, x))
  y, _ = lt.run_layer(layer, (x, x), mode)
  assert y.dtype.name == 'float32'
  _close(y, [0.5, 1., 1.5])
  y, _ = lt.run_layer(layer, (-x, x), mode)
  _close(y, [1., 2., 3.])


@pytest.mark.parametrize('mode', lt.MODES)
def test_cond_with_dense_branches_on_ints(mode):
  x = _ints(2, 3)
  layer = tl.Cond(tl.Fn('SumIsPositive', lambda c: jnp.sum(c) > 0),
                  tl.Dense(2), tl.Dense(2))
  _init(layer, (x.astype(np.float32), x.astype(np.float32)))
  y, _ = lt.run_layer(layer, (np.ones(2, np.int32), x), mode)
  assert y.dtype.name == 'float32'
  w, b = (_np(v).astype(np.float64) for v in layer.sublayers[1].weights)
  _close(y, x.astype(np.float64) @ w + b)


# -- Every registry entry with integer inputs ---------------------------------

# Entries Trax rejects when their float inputs are integers, with the reason.
_CONV = ('trax/layers/convolution.py: lax.conv_general_dilated requires the '
         'input and the float32 kernel to have one dtype')
_TRAX_REJECTS = {
    'BatchNorm_train': 'trax/layers/normalization.py: BatchNorm raises when '
                       'its output dtype (float32) is not the input dtype',
    'BatchNorm_eval': 'as BatchNorm_train',
    'Conv': _CONV,
    'Conv1d': _CONV,
    'CausalConv': _CONV,
    'ConvTranspose': 'trax/layers/deconvolution.py: lax.conv_transpose, as '
                     'Conv',
    'Resnet_ConvBlock': 'starts with a Conv',
    'Resnet_IdentityBlock_FRN': 'starts with a Conv',
    'ConvGRUCell': 'trax/layers/rnn.py: its gates are Convs',
    'LocallyConvDense': 'trax/layers/research/sparsity.py: a tl.Conv over '
                        'the length axis',
    'ConvCausalAttention': 'trax/layers/research/sparsity.py: its '
                           'projections are LocallyConvDense',
}

# Trax's output dtype with integer inputs: one for every output, or a tuple
# with one per output. Entries not listed: float32 if the layer has weights
# (an integer input meets float32 weights), else only the values are checked.
_TRAX_DTYPES = {
    # Attention layers that hand their boolean mask input back unchanged.
    'Favor': ('float32', 'bool'), 'RelativeAttentionLayer': ('float32', 'bool'),
    # trax/layers/activation_fns.py: where / maximum / minimum keep int32.
    'Relu': 'int32', 'HardSigmoid': 'int32', 'HardTanh': 'int32',
    # trax/layers/core.py Fn layers that stay in the integers.
    'Dropout_eval': 'int32', 'Flatten': 'int32', 'Sum': 'int32',
    'Min': 'int32', 'Max': 'int32', 'ArgMax': 'int32', 'Negate': 'int32',
    'StopGradient': 'int32', 'ThresholdToBinary': 'int32',
    # trax/layers/assert_shape.py: AssertShape hands back the very objects
    # it was given, here the int64 NumPy inputs.
    'AssertShape': 'int64',
    # Layers that pass their inputs through (core.py).
    'PrintShape': 'int32', 'SummaryScalar': 'int32',
    'SummaryImage': 'int32',
    # trax/fastmath/jax.py pooling (see test_pooling_integer_inputs).
    'MaxPool': 'int32', 'SumPool': 'int32',
    # trax/layers/combinators.py: stack moves and integer arithmetic.
    'Select_Add': 'int32', 'Concatenate': 'int32',
    'Dup_Swap_SubtractTop_Multiply': 'int32',
    # trax/layers/metrics.py: jnp.sum(values * weights) of two int32 arrays.
    'WeightedSum': 'int32',
    # trax/layers/attention.py: (activations, mask) with a bool mask.
    'Attention': ('float32', 'bool'), 'AttentionQKV': ('float32', 'bool'),
    # trax/layers/research/efficient_attention.py: the output is cast back to
    # the input's dtype (recorded from Trax 1.4.1: SelfAttention and
    # EncDecAttention give int32). Trax's LSH layers fail on integer inputs
    # (a float-only op in the hashing); ours hash in float32 and cast back
    # like SelfAttention.
    'SelfAttention': 'int32', 'EncDecAttention': 'int32',
    'LSHSelfAttention': 'int32', 'PureLSHSelfAttention': 'int32',
    'MixedLSHSelfAttention': 'int32',
}
# Entries whose float result is truncated to the integer input's dtype, so
# their values are compared with the float-input result truncated.
_CAST_BACK = ('SelfAttention', 'EncDecAttention', 'LSHSelfAttention',
              'PureLSHSelfAttention', 'MixedLSHSelfAttention')
# Weightless entries whose Trax output is float32: JAX's float functions
# (tanh, exp, expit, logsumexp, mean, true division) promote int32 inputs.
_TRAX_DTYPES.update(dict.fromkeys([
    # trax/layers/activation_fns.py (and Swish: x * expit(x)).
    'ParametricRelu', 'LeakyRelu', 'Elu', 'Selu', 'Gelu', 'FastGelu',
    'Sigmoid', 'Tanh', 'Softplus', 'Exp', 'Log', 'Swish',
    # trax/layers/core.py and pooling (int32 sums / int32 counts).
    'LogSoftmax', 'Softmax', 'LogSumExp', 'Mean', 'AvgPool',
    # trax/layers/attention.py: matmul(q, k) / sqrt(depth), then softmax.
    'DotProductAttention', 'DotProductCausalAttention',
    'SplitIntoHeads_MergeHeads', 'Split_Gate',
    # trax/layers/metrics.py: float one-hots, true divisions, averages.
    'CrossEntropyLoss', 'Accuracy', 'CategoryAccuracy',
    'WeightedCategoryAccuracy', 'MaskedSequenceAccuracy',
    'WeightedCategoryCrossEntropy', 'CrossEntropyLossWithLogSoftmax',
    'CrossEntropySum', 'BinaryCrossEntropy', 'BinaryCrossEntropyLoss',
    'BinaryCrossEntropySum', 'L2Loss', 'SmoothL1Loss',
    'CategoryCrossEntropy', 'SequenceAccuracy',
], 'float32'))

# Entries that still differ from Trax: the layer casts its float result
# back to the integer input's dtype (or keeps it integer).
_KNOWN_GAPS = {}


def _int_entries():
  """Entries with at least one float input (those get integers instead)."""
  names = []
  for e in registry.ENTRIES:
    sig = e.input_signature
    sigs = sig if isinstance(sig, tuple) else (sig,)
    if any(np.issubdtype(np.dtype(s.dtype), np.floating) for s in sigs):
      names.append(e.name)
  return names


def _int_entry_params():
  # Known gaps run as strict xfails: a fix elsewhere fails until the entry
  # is taken off the list.
  return [pytest.param(n, marks=pytest.mark.xfail(strict=True,
                                                  reason=_KNOWN_GAPS[n]))
          if n in _KNOWN_GAPS else n for n in _int_entries()]


def _as_ints(entry):
  """The entry's inputs with float ones replaced by int64 NumPy integers."""
  x = registry.make_inputs(entry)
  xs = x if isinstance(x, tuple) else (x,)
  out = []
  for a in xs:
    if a.dtype.kind == 'f':
      a = np.rint(a * 2).astype(np.int64)
      if entry.positive:
        a = np.abs(a) + 1
    out.append(a)
  return tuple(out) if isinstance(x, tuple) else out[0]


def _as_float32(x):
  return fastmath.nested_map(
      lambda a: a.astype(np.float32) if a.dtype == np.int64 else a, x)


@pytest.mark.parametrize('name', _int_entry_params())
def test_registry_entry_with_integer_inputs(name):
  entry = registry.get(name)
  layer = registry.build(entry)
  x = _as_ints(entry)
  key = np.array([0, 7], np.int32)
  if name in _TRAX_REJECTS:
    with pytest.raises(tl.LayerError, match='expects a floating-point input'):
      layer.pure_fn(x, layer.weights, layer.state, key)
    return
  got, _ = layer.pure_fn(x, layer.weights, layer.state, key)
  want, _ = layer.pure_fn(_as_float32(x), layer.weights, layer.state, key)
  got, want = fastmath.tree_flatten(got), fastmath.tree_flatten(want)
  has_weights = bool(fastmath.tree_leaves(layer.weights))
  dtypes = _TRAX_DTYPES.get(name, 'float32' if has_weights else None)
  if dtypes is not None:
    dtypes = (dtypes,) * len(got) if isinstance(dtypes, str) else dtypes
    assert tuple(_np(g).dtype.name for g in got) == dtypes
  rtol = atol = max(entry.tolerance, 1e-5)
  if name in _CAST_BACK:
    # Truncation toward zero; float rounding may move a value by one.
    want = [np.trunc(_np(w).astype(np.float64)) for w in want]
    rtol, atol = 0.0, 1.0
  for g, w in zip(got, want):
    np.testing.assert_allclose(_np(g).astype(np.float64),
                               _np(w).astype(np.float64), rtol=rtol, atol=atol)


def test_rejected_and_gap_lists_name_registry_entries():
  names = set(_int_entries())
  assert set(_TRAX_REJECTS) <= names
  assert set(_KNOWN_GAPS) <= names
  assert set(_TRAX_DTYPES) <= names


# -- Element-wise ops promote along JAX's lattice (jax/_src/dtypes.py) --------
# fastmath/_numpy.py routes TensorFlow NumPy's result type through
# dtypes.lattice_result_type, so operators on tensors promote as jnp does.

@pytest.mark.parametrize('make,want', [
    (lambda: tf.constant([1, 2], tf.int32) * 0.5, 'float32'),
    (lambda: tf.constant([1, 2], tf.int32) + tf.constant([1., 2.]), 'float32'),
    (lambda: jnp.tanh(tf.constant([1, 2], tf.int32)), 'float32'),
    (lambda: tf.constant([1, 2], tf.int8) + tf.constant([1., 2.], tf.float16),
     'float16'),
    (lambda: tf.constant([True, False]) * tf.constant([1., 2.]), 'float32'),
    (lambda: jnp.dot(tf.constant([1, 2], tf.int32), tf.constant([1., 2.])),
     'float32'),
    # 64-bit types already present are kept (tf.data ids stay int64).
    (lambda: tf.constant([1, 2], tf.int64) + tf.constant([3, 4], tf.int64),
     'int64'),
    (lambda: tf.constant([1, 2], tf.int64) + 1, 'int64'),
    (lambda: tf.constant([1.], tf.float64) * tf.constant([2.]), 'float64'),
    (lambda: tf.constant([1.], tf.float32) + 1, 'float32'),
    # True division of int32 is float32, as in JAX (TensorFlow's table says
    # float64); int64 keeps float64.
    (lambda: tf.constant([1, 2], tf.int32) / 2, 'float32'),
    (lambda: jnp.true_divide(tf.constant([1, 2], tf.int32), 2), 'float32'),
    (lambda: tf.constant([1, 2], tf.int64) / 2, 'float64'),
])
def test_tensor_operators_promote_along_the_lattice(make, want):
  assert make().dtype.name == want


def test_operators_on_one_dtype_add_no_casts():
  """`a * b` on two float32 tensors traces to one Mul (TensorFlow's NumPy
  behaviour alone adds a no-op Cast per operand); mixed dtypes still go
  through TensorFlow's promotion, and the values are unchanged."""
  def run(a, b, i):
    return a * b, a - b, a / b, a ** b, a + i

  specs = [tf.TensorSpec((3,), tf.float32)] * 2 + [
      tf.TensorSpec((3,), tf.int32)]
  graph = tf.function(run, autograph=False).get_concrete_function(
      *specs).graph
  casts = [op for op in graph.get_operations() if op.type == 'Cast']
  # Only the mixed `a + i` casts (TensorFlow's own promotion path).
  assert casts and all(c.name.startswith('add/') for c in casts), casts
  assert 'int32' in [c.inputs[0].dtype.name for c in casts]
  a = np.array([1.5, 2.0, 3.0], np.float32)
  b = np.array([2.0, 0.5, -1.0], np.float32)
  i = np.array([1, 2, 3], np.int32)
  got = run(tf.constant(a), tf.constant(b), tf.constant(i))
  a64, b64 = a.astype(np.float64), b.astype(np.float64)
  want = [a64 * b64, a64 - b64, a64 / b64, a64 ** b64, a64 + i]
  for g, w in zip(got, want):
    assert g.dtype == tf.float32
    np.testing.assert_allclose(g.numpy(), w, rtol=1e-6)


@pytest.mark.parametrize('dtype,scalar,want', [
    (tf.float32, 1.0, 'float32'), (tf.bfloat16, 2.0, 'bfloat16'),
    (tf.float16, 3, 'float16'), (tf.int32, 0.5, 'float32'),
    (tf.int32, 2, 'int32'), (tf.float64, 1.0, 'float64'),
])
def test_operators_with_python_scalars_cast_only_what_changes(dtype, scalar,
                                                              want):
  """`1.0 - x` and `x * 2` trace without a Cast of a tensor that already
  has the result dtype; an int32 tensor with a Python float is cast once,
  to float32 (JAX's weak-typed scalars). Values match float64 NumPy."""
  def run(x):
    return scalar - x, x * scalar, x + scalar

  graph = tf.function(run, autograph=False).get_concrete_function(
      tf.TensorSpec((3,), dtype)).graph
  casts = [op for op in graph.get_operations() if op.type == 'Cast']
  if want == dtype.name:
    assert not casts, casts
  else:  # The tensor operand alone is cast, once per operator.
    assert len(casts) == 3 and all(
        c.inputs[0].dtype == dtype for c in casts), casts
  x = np.array([1.0, 2.0, 4.0])
  got = run(tf.constant(x, dtype))
  want_values = [scalar - x, x * scalar, x + scalar]
  for g, w in zip(got, want_values):
    assert g.dtype.name == want
    np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=1e-2)


def test_lattice_result_type_defers_to_numpy_for_unknown_arguments():
  calls = []

  def numpy_rule(*args):
    calls.append(args)
    return tf.string

  rule = fastmath.dtypes.lattice_result_type(numpy_rule)
  assert rule(np.int32, np.float32) == tf.float32
  assert rule(np.array(['a'])) == tf.string  # Strings: not in the lattice.
  assert rule(1, 2) == tf.string  # Python ints alone: NumPy's default int.
  assert len(calls) == 2


@pytest.mark.parametrize('mode', lt.MODES)
def test_sigmoid_of_integers_is_float32(mode):
  # trax/layers/activation_fns.py Sigmoid: jax.nn.sigmoid promotes ints.
  layer = tl.Sigmoid()
  x = np.array([[0, 1, -2]])
  layer.init(shapes.signature(x))
  y = lt.compile_fn(lambda v: layer(v), mode)(jnp.asarray(x, jnp.int32))
  assert y.dtype.name == 'float32'
  np.testing.assert_allclose(_np(y), 1 / (1 + np.exp(-x.astype(np.float64))),
                             rtol=1e-6)


def test_thresholded_linear_unit_of_integers_is_float32():
  # trax/layers/activation_fns.py ThresholdedLinearUnit: max(x, tau) with a
  # float32 tau.
  layer = tl.ThresholdedLinearUnit()
  x = np.array([[-1, 0, 3]])
  layer.init(shapes.signature(x))
  layer.weights = jnp.asarray(0.5, jnp.float32)
  y = layer(x)
  assert y.dtype.name == 'float32'
  np.testing.assert_array_equal(_np(y), [[0.5, 0.5, 3.0]])


def test_positional_encoding_of_integers_is_float32():
  # trax/layers/attention.py PositionalEncoding: x + sinusoids (float32).
  layer = tl.PositionalEncoding(max_len=8, mode='eval')
  x = np.arange(12).reshape(1, 3, 4)
  layer.init(shapes.signature(x))
  y = layer(x)
  assert y.dtype.name == 'float32'
  pos = np.arange(3)[:, None].astype(np.float64)
  div = np.exp(np.arange(0, 4, 2) * -(np.log(10000.0) / 4))
  pe = np.zeros((3, 4))
  pe[:, 0::2] = np.sin(pos * div)
  pe[:, 1::2] = np.cos(pos * div)
  np.testing.assert_allclose(_np(y), x + pe[None], rtol=1e-5, atol=1e-6)


def test_integer_true_division_values():
  # jnp.arange(n) / n, as Trax code writes positions: float32, exact here.
  got = jnp.arange(5, dtype=jnp.int32) / 4
  assert got.dtype.name == 'float32'
  np.testing.assert_array_equal(_np(got), [0., 0.25, 0.5, 0.75, 1.])
