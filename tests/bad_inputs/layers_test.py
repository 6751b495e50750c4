"""Bad inputs to layers, combinators, losses, metrics and rng keys.

Each row pins the error type and the words of its message: the layer, what
it expected and what it got. Rows marked `debug` run with
`tfnp_trax.debug` switched on (value checks too costly for every step).
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.bad_inputs import _case
from tfnp_trax import debug
from tfnp_trax import fastmath
from tfnp_trax import shapes
import tfnp_trax.layers as tl

Case = _case.Case
LayerError = tl.LayerError
SD = shapes.ShapeDtype
F32 = np.float32


def _dense():
  layer = tl.Dense(4)
  layer.init(SD((2, 3), F32))
  return layer


def _with_weights(weights):
  layer = _dense()
  return lambda: layer(np.ones((2, 3), F32), weights=weights)


def _embedding():
  layer = tl.Embedding(10, 4)
  layer.init(SD((2,), np.int32))
  return layer


def _debug(fn):
  def call():
    with debug.enabled():
      return fn()
  return call


def _dropout_with_key(key):
  layer = tl.Dropout(0.5)
  return lambda: layer.pure_fn(np.ones((2, 3), F32), (), (), key)


def _loss(layer, *inputs):
  return lambda: layer(tuple(inputs))


_LOGITS = np.zeros((2, 4), F32)
_W2 = np.ones((2,), F32)
_KEY = fastmath.random.get_prng(0)


def _traced_ce(labels):
  ce = tl.CategoryCrossEntropy()
  f = tf.function(lambda x, y: ce((x, y)), autograph=False)
  return lambda: f(tf.zeros((2, 4)), tf.constant(labels, tf.int32))


def _traced_dense_nan():
  layer = _dense()
  f = tf.function(layer, autograph=False)
  return lambda: f(tf.fill((2, 3), np.nan))


def _nan_inside():
  model = tl.Serial(tl.Dense(4), tl.Fn('SqrtShifted',
                                       lambda x: (x - 100.0) ** 0.5),
                    tl.Dense(2))
  model.init(SD((2, 3), F32))
  return lambda: model(np.ones((2, 3), F32))


def _set_serial_weights():
  model = tl.Serial(tl.Dense(4), tl.Relu(), tl.Dense(2))
  model.init(SD((2, 3), F32))
  model.weights = model.weights[:2]


_W = _dense().weights

CASES = [
    # -- Layers: rank, width, dtype, weights ----------------------------------
    Case('dense_wrong_width', lambda: _dense()(np.ones((2, 5), F32)),
         LayerError, r'Dense_4: input last dim 5 does not match weights '
         r'in_dim 3 \(input shape \(2, 5\)'),
    Case('dense_scalar_input_wrong_rank',
         lambda: _dense()(np.float32(1.0)), LayerError,
         r'\(in layer Dense_4\): input 0 has rank 0 but .* needs rank at '
         r'least 1'),
    Case('dense_not_initialized',
         lambda: tl.Dense(4)(np.ones((2, 3), F32)), LayerError,
         r'Dense_4: has no weights; call layer.init'),
    Case('dense_weights_tree_missing_bias', _with_weights((_W[0],)),
         LayerError, r'Dense_4: expected weights \(w, b\) with w of shape '
         r'\(in_dim, 4\) and b of shape \(4,\), got a tuple of 1 item'),
    Case('dense_bias_wrong_shape',
         _with_weights((_W[0], np.ones((3,), F32))), LayerError,
         r'Dense_4: bias b has shape \(3,\) but weights w has shape '
         r'\(3, 4\); expected b of shape \(4,\)'),
    Case('dense_kernel_wrong_shape',
         _with_weights((np.ones((5, 4), F32), _W[1])), LayerError,
         r'Dense_4: input last dim 3 does not match weights in_dim 5'),
    Case('dense_negative_units', lambda: tl.Dense(-3), ValueError,
         r'Dense: n_units must be a positive int, got -3'),
    Case('init_with_plain_shape', lambda: tl.Dense(3).init((2, 3)),
         LayerError, r'Dense_3: init expects a ShapeDtype .* got the plain '
         r'shape \(2, 3\)'),
    Case('embedding_float_ids',
         lambda: _embedding()(np.ones((2,), F32)), LayerError,
         r'Embedding_10_4: expects integer ids, got dtype float32'),
    Case('embedding_not_initialized',
         lambda: tl.Embedding(10, 4)(np.ones((2,), np.int32)), LayerError,
         r'Embedding_10_4: has no weights; call layer.init'),
    Case('embedding_ids_beyond_vocab_debug',
         _debug(lambda: _embedding()(np.array([1, 12], np.int32))),
         LayerError, r'Embedding_10_4: ids: expected ids in \[0, 10\) but '
         r'got 1 of 2 outside \(min 1, max 12'),
    Case('conv_wrong_rank',
         lambda: _init(tl.Conv(4, (3, 3)), SD((1, 5, 5, 2), F32))(
             np.ones((5, 5, 2), F32)), LayerError,
         r"Conv: input shape \(5, 5, 2\) has rank 3, but the layout 'NHWC' "
         r'needs rank 4'),
    Case('conv_wrong_channels',
         lambda: _init(tl.Conv(4, (3, 3)), SD((1, 5, 5, 2), F32))(
             np.ones((1, 5, 5, 3), F32)), LayerError,
         r'Conv: input has 3 channels .* but the kernel expects 2'),
    Case('layer_norm_wrong_width',
         lambda: _init(tl.LayerNorm(), SD((2, 4), F32))(np.ones((2, 5), F32)),
         LayerError, r'LayerNorm: input has 5 channels .* initialized for 4'),
    Case('attention_heads_do_not_divide',
         lambda: _init(tl.Attention(6, n_heads=4),
                       (SD((2, 3, 6), F32), SD((2, 1, 1, 3), np.bool_))),
         LayerError, r'd_feature 6 is not a multiple of n_heads 4'),
    Case('lstm_state_wrong_width',
         lambda: _init(tl.LSTMCell(4), (SD((2, 3), F32), SD((2, 8), F32)))(
             (np.ones((2, 3), F32), np.ones((2, 6), F32))), LayerError,
         r'LSTMCell: state last dim 6 must be 8 for n_units=4'),
    Case('batch_norm_empty_batch',
         lambda: _init(tl.BatchNorm(mode='train'), SD((2, 2, 2, 3), F32))(
             np.zeros((0, 2, 2, 3), F32)), LayerError,
         r'BatchNorm: input shape \(0, 2, 2, 3\) is empty on axis 0, so there '
         r'are no values to take batch statistics over'),
    Case('dropout_rate_out_of_range', lambda: tl.Dropout(1.5), ValueError,
         r'Dropout: rate must be in \[0, 1\), got 1.5'),
    # -- Combinators -----------------------------------------------------------
    Case('serial_weights_wrong_count', _set_serial_weights, ValueError,
         r'Serial: weights must be a tuple with one entry per sublayer '
         r'\(3\), got 2'),
    Case('serial_too_few_inputs',
         lambda: tl.Serial(tl.Add())((np.ones(3, F32),)), LayerError,
         r'Serial: expects 2 inputs \(a tuple of 2 arrays\) but got 1'),
    Case('branch_one_input_for_two',
         lambda: tl.Branch(tl.Add(), tl.Add())(np.ones(3, F32)), LayerError,
         r'Branch: expects 2 inputs .* but got 1'),
    Case('select_index_beyond_stack',
         lambda: tl.Select([0, 3])((np.ones(3, F32), np.ones(3, F32))),
         LayerError, r'Select\[0,3\]: expects 4 inputs .* but got 2'),
    Case('add_shapes_do_not_broadcast',
         lambda: tl.Add()((np.ones((2, 3), F32), np.ones((2, 4), F32))),
         LayerError, r'Add: input shapes \(2, 3\) and \(2, 4\) do not '
         r'broadcast'),
    Case('concatenate_shapes_differ',
         lambda: tl.Concatenate()((np.ones((2, 3), F32),
                                   np.ones((3, 3), F32))), LayerError,
         r'Concatenate: input shapes \(2, 3\) and \(3, 3\) differ on axis '
         r'0; they may differ only on the concatenation axis -1'),
    Case('fn_with_default_argument',
         lambda: tl.Fn('F', lambda x, y=1: x), ValueError,
         r'Fn F: function has default arguments \(not allowed\): y'),
    # -- Losses and metrics ----------------------------------------------------
    Case('cross_entropy_float_labels',
         _loss(tl.CategoryCrossEntropy(), _LOGITS, np.array([1., 2.], F32)),
         LayerError, r'CategoryCrossEntropy: targets must be integer '
         r'category ids, got dtype float32 \(shape \(2,\)\)'),
    Case('accuracy_float_labels',
         _loss(tl.CategoryAccuracy(), _LOGITS, np.array([1., 2.], F32)),
         LayerError, r'CategoryAccuracy: targets must be integer category '
         r'ids, got dtype float32'),
    Case('cross_entropy_label_at_vocab_size',
         _loss(tl.CategoryCrossEntropy(), _LOGITS, np.array([1, 4],
                                                             np.int32)),
         LayerError, r'CategoryCrossEntropy: targets: expected ids in '
         r'\[0, 4\) but got 1 of 2 outside \(min 1, max 4'),
    Case('weighted_cross_entropy_label_beyond_vocab',
         _loss(tl.WeightedCategoryCrossEntropy(), _LOGITS,
               np.array([1, 7], np.int32), _W2), LayerError,
         r'WeightedCategoryCrossEntropy: targets: expected ids in \[0, 4\) '
         r'but got 1 of 2 outside \(min 1, max 7'),
    Case('cross_entropy_negative_label',
         _loss(tl.CategoryCrossEntropy(), _LOGITS, np.array([-1, 1],
                                                             np.int32)),
         LayerError, r'CategoryCrossEntropy: targets: expected ids in '
         r'\[0, 4\) .*min -1'),
    Case('accuracy_label_beyond_vocab',
         _loss(tl.CategoryAccuracy(), _LOGITS, np.array([1, 7], np.int32)),
         LayerError, r'CategoryAccuracy: targets: expected ids in \[0, 4\)'),
    Case('cross_entropy_traced_label_beyond_vocab_debug',
         _debug(_traced_ce([1, 9])), tf.errors.InvalidArgumentError,
         r'CategoryCrossEntropy: targets: expected ids in \[0, 4\) but got '
         r'values outside'),
    Case('cross_entropy_one_hot_targets',
         _loss(tl.CategoryCrossEntropy(), _LOGITS,
               np.eye(4, dtype=np.int32)[:2]), LayerError,
         r'CategoryCrossEntropy: targets shape \(2, 4\) does not fit '
         r'model_output shape \(2, 4\): expected targets of shape \(2,\)'),
    Case('weighted_cross_entropy_weights_do_not_broadcast',
         _loss(tl.WeightedCategoryCrossEntropy(), np.zeros((2, 3, 4), F32),
               np.zeros((2, 3), np.int32), np.ones((3, 2), F32)), LayerError,
         r'WeightedCategoryCrossEntropy: weights shape \(3, 2\) does not '
         r'broadcast against targets shape \(2, 3\)'),
    Case('l2_loss_targets_wrong_shape',
         _loss(tl.L2Loss(), np.zeros((2, 4), F32), np.zeros((2, 1), F32),
               np.ones((2, 4), F32)), LayerError,
         r'L2Loss: targets shape \(2, 1\) does not match model_output shape '
         r'\(2, 4\); .*no implicit broadcasting'),
    Case('label_smoothing_out_of_range',
         _loss(tl.CategoryCrossEntropy(label_smoothing=1.5), _LOGITS,
               np.zeros((2,), np.int32)), LayerError,
         r'CategoryCrossEntropy: label_smoothing must be between 0 and 1 '
         r'\(or None\), got 1.5'),
    # -- NaN and Inf (debug mode) ----------------------------------------------
    Case('nan_in_inputs_debug',
         _debug(lambda: _dense()(np.full((2, 3), np.nan, F32))),
         FloatingPointError, r'Dense_4: inputs leaf 0: expected finite '
         r'values but found 6 NaN and 0 Inf of 6 values'),
    Case('inf_in_weights_debug', _debug(_with_weights((_W[0] * np.inf,
                                                       _W[1]))),
         FloatingPointError, r'Dense_4: weights leaf 0: expected finite '
         r'values but found 0 NaN and 12 Inf'),
    Case('nan_made_inside_a_model_debug', _debug(_nan_inside()), LayerError,
         r'SqrtShifted: outputs leaf 0: expected finite values but found 8 '
         r'NaN'),
    Case('nan_logits_in_loss_debug',
         _debug(_loss(tl.CategoryCrossEntropy(),
                      np.full((2, 4), np.nan, F32),
                      np.array([1, 2], np.int32))), FloatingPointError,
         r'CategoryCrossEntropy: inputs leaf 0: expected finite values but '
         r'found 8 NaN'),
    Case('nan_traced_inputs_debug', _debug(_traced_dense_nan()),
         tf.errors.InvalidArgumentError,
         r'Dense_4: inputs leaf 0: expected finite values but found NaN or '
         r'Inf \(shape \(2, 3\), dtype float32\)'),
    # -- rng keys --------------------------------------------------------------
    Case('rng_key_wrong_shape',
         _dropout_with_key(np.array([0, 1, 2], np.int32)), LayerError,
         r'fastmath.random.bernoulli: keys must have shape \[2\], got shape '
         r'\(3,\)'),
    Case('rng_key_batch_of_keys',
         _dropout_with_key(fastmath.random.split(_KEY, 2)), LayerError,
         r'keys must have shape \[2\], got shape \(2, 2\). Did you pass the '
         r'result of split\(key, n\)\?'),
    Case('rng_key_float', lambda: fastmath.random.uniform(
        np.array([0., 1.]), (2,)), TypeError,
         r'fastmath.random.uniform: keys must be int32 tensors of shape '
         r'\[2\], got dtype float64'),
    Case('rng_key_int64_beyond_32_bits', lambda: fastmath.random.uniform(
        np.array([0, 2**40]), (2,)), ValueError,
         r'fastmath.random.uniform: keys must be int32 \[2\]; got dtype '
         r'int64 with values \[0, 1099511627776\] that do not fit in 32 '
         r'bits'),
    Case('init_rng_int64_beyond_32_bits', lambda: tl.Dense(3).init(
        SD((2, 3), F32), rng=np.array([2**40, 0])), LayerError,
         r'fastmath.random.split: keys must be int32 \[2\]; got dtype int64'),
]


def _init(layer, signature):
  layer.init(signature)
  return layer


@pytest.mark.parametrize('case', _case.params(CASES))
def test_bad_input_raises_clear_error(case):
  _case.check(case)
