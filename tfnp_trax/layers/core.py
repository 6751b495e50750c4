"""Core layers: Dense, Embedding, Dropout and weightless reshaping layers.

Shape checks (`assert_shape`) sit where Trax puts them: on the Dense,
Embedding and Dropout classes they run inside `forward` and change nothing
else; `Negate()` and `StopGradient()` come wrapped, printing as Trax's do
(`Serial[Negate]`).

Trax's `core` module also holds Weights, RandomUniform, ToFloat,
LocallyConnected1d, the Gaussian log-densities, `one_hot` and
`multigaussian_loss`; they live in core_extras.py and mixture_density.py
and are imported here, so `core.Weights` works as in Trax. The dtype
helpers (`check_float`, `compute_dtype`, `cast_to`) live in `_dtypes`.
"""

import numpy as onp

from tfnp_trax import debug
from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import _dtypes
from tfnp_trax.layers import base
from tfnp_trax.layers import initializers as init
from tfnp_trax.layers.assert_shape import assert_shape

from tfnp_trax.layers._dtypes import cast_to
from tfnp_trax.layers._dtypes import check_float
from tfnp_trax.layers._dtypes import compute_dtype
from tfnp_trax.layers.core_extras import LocallyConnected1d
from tfnp_trax.layers.core_extras import RandomUniform
from tfnp_trax.layers.core_extras import ToFloat
from tfnp_trax.layers.core_extras import Weights
from tfnp_trax.layers.core_extras import log_gaussian_diag_pdf
from tfnp_trax.layers.core_extras import log_gaussian_pdf
from tfnp_trax.layers.core_extras import one_hot
from tfnp_trax.layers.mixture_density import multigaussian_loss
from tfnp_trax.layers.sampling import ThresholdToBinary
from tfnp_trax.layers.sampling import logsoftmax_sample
from tfnp_trax.layers.summaries import PrintShape
from tfnp_trax.layers.summaries import SummaryImage
from tfnp_trax.layers.summaries import SummaryScalar

__all__ = ['Dense', 'Embedding', 'Dropout', 'Flatten', 'LogSoftmax', 'Softmax',
           'LogSumExp', 'Mean', 'Sum', 'Min', 'Max', 'ArgMax', 'Negate',
           'StopGradient', 'check_float', 'compute_dtype', 'cast_to',
           'log_softmax', 'ThresholdToBinary', 'logsoftmax_sample',
           'PrintShape', 'SummaryImage', 'SummaryScalar', 'Weights',
           'RandomUniform', 'ToFloat', 'LocallyConnected1d',
           'log_gaussian_pdf', 'log_gaussian_diag_pdf', 'one_hot',
           'multigaussian_loss']

def _as_array(x):
  return x if hasattr(x, 'dtype') else jnp.asarray(x)


@assert_shape('...a->...b')
class Dense(base.Layer):
  """Affine map on the last axis: `y = x @ W + b` (or `x @ W` without bias).

  Weights are `(W, b)` with W `[in_dim, n_units]`, or just W if
  `use_bias=False`; with `use_bfloat16` they are stored in bfloat16. The
  weights are cast to a floating input's dtype, so bfloat16 inputs give
  bfloat16 outputs; integer and boolean inputs promote with the weights as
  in JAX (int32 ids and float32 weights give float32).

  Example:
    >>> layer = Dense(4)
    >>> _ = layer.init(shapes.ShapeDtype((2, 3)))
    >>> tuple(layer(jnp.ones((2, 3), dtype=jnp.float32)).shape)
    (2, 4)
  """

  def __init__(self, n_units,
               kernel_initializer=init.GlorotUniformInitializer(),
               bias_initializer=init.RandomNormalInitializer(1e-6),
               use_bias=True, use_bfloat16=False):
    super().__init__(name=f'Dense_{n_units}')
    if not isinstance(n_units, int) or n_units < 1:
      raise ValueError(f'Dense: n_units must be a positive int, got '
                       f'{n_units!r}.')
    self._n_units = n_units
    self._kernel_initializer = kernel_initializer
    self._bias_initializer = bias_initializer
    self._use_bias = use_bias
    self._use_bfloat16 = use_bfloat16

  @property
  def uses_rng(self):
    return False  # Its forward draws no random numbers.

  def forward(self, x):
    x = _as_array(x)
    w, b = self._weight_and_bias()
    dtype = compute_dtype(self.name, x, w)
    if x.shape[-1] != w.shape[0]:
      raise ValueError(
          f'{self.name}: input last dim {x.shape[-1]} does not match weights '
          f'in_dim {w.shape[0]} (input shape {tuple(x.shape)}, weights shape '
          f'{tuple(w.shape)}). Re-run init with the new input signature.')
    # One 2-D MatMul plus BiasAdd, which TensorFlow fuses (see
    # fastmath.linear); the same values as jnp.matmul(x, w) + b.
    return fastmath.linear(cast_to(x, dtype), cast_to(w, dtype),
                           cast_to(b, dtype) if self._use_bias else None)

  def _weight_and_bias(self):
    """`(w, b)` from the weights (b None without bias), structure checked."""
    weights = self.weights
    if weights is base.EMPTY_WEIGHTS:
      raise ValueError(f'{self.name}: has no weights; call '
                       f'layer.init(shapes.signature(x)) first.')
    if not self._use_bias:
      if not hasattr(weights, 'shape'):
        raise ValueError(f'{self.name}: expected weights w (one array, '
                         f'use_bias=False), got {type(weights).__name__}.')
      return weights, None
    if not isinstance(weights, (list, tuple)) or len(weights) != 2 or not all(
        hasattr(a, 'shape') for a in weights):
      got = (f'a tuple of {len(weights)} item(s)' if isinstance(
          weights, (list, tuple)) else type(weights).__name__)
      raise ValueError(
          f'{self.name}: expected weights (w, b) with w of shape (in_dim, '
          f'{self._n_units}) and b of shape ({self._n_units},), got {got}. '
          f'Set weights from the same Dense layout, or re-run init.')
    w, b = weights
    if tuple(b.shape) != (w.shape[-1],):
      raise ValueError(
          f'{self.name}: bias b has shape {tuple(b.shape)} but weights w has '
          f'shape {tuple(w.shape)}; expected b of shape ({w.shape[-1]},).')
    return w, b

  def _forward_abstract(self, input_signature):
    # A floating input's output signature follows from the shapes alone:
    # the last axis becomes n_units and the dtype is the input's. Evaluating
    # the layer on zeros instead would run a matmul during init, and a
    # process's first matmul costs about 25 ms of oneDNN set-up that an XLA
    # step never uses. Anything else (integer inputs, mismatched shapes,
    # malformed weights) takes the general path and its errors.
    sig = input_signature
    if (self.state == base.EMPTY_STATE and
        isinstance(sig, shapes.ShapeDtype) and sig.shape and
        onp.dtype(sig.dtype).name in _dtypes.FLOAT_NAMES):
      try:
        w, _ = self._weight_and_bias()
      except ValueError:
        w = None
      if w is not None and len(w.shape) == 2 and sig.shape[-1] == w.shape[0]:
        out = shapes.ShapeDtype(tuple(sig.shape[:-1]) + (self._n_units,),
                                sig.dtype)
        return out, base.EMPTY_STATE
    return super()._forward_abstract(input_signature)

  def init_weights_and_state(self, input_signature):
    shape_w = (input_signature.shape[-1], self._n_units)
    rng_w, rng_b = fastmath.random.split(self.rng, 2)
    dtype = _dtypes.BFLOAT16 if self._use_bfloat16 else jnp.float32
    w = self._kernel_initializer(shape_w, rng_w).astype(dtype)
    if self._use_bias:
      b = self._bias_initializer((self._n_units,), rng_b).astype(dtype)
      self.weights = (w, b)
    else:
      self.weights = w


@assert_shape('...->...d')
class Embedding(base.Layer):
  """Maps integer ids in [0, vocab_size) to learned vectors of d_feature.

  Ids outside the vocabulary are clipped into range, as in Trax (and as
  XLA's gather does), so eager, compiled and accelerator runs agree: a
  negative id reads row 0 and an id >= vocab_size reads the last row. With
  `use_bfloat16` the table is stored in bfloat16 and, as in Trax, the looked
  up vectors are returned in float32.

  Example:
    >>> layer = Embedding(10, 4)
    >>> _ = layer.init(shapes.ShapeDtype((2,), jnp.int32))
    >>> tuple(layer(jnp.array([1, 12])).shape)
    (2, 4)
  """

  def __init__(self, vocab_size, d_feature, use_bfloat16=False,
               kernel_initializer=init.ScaledInitializer(
                   out_dim=-1, in_dim=-2, scale=1., mode='fan_out',
                   distribution='uniform')):
    super().__init__(name=f'Embedding_{vocab_size}_{d_feature}')
    self._vocab_size = vocab_size
    self._d_feature = d_feature
    self._use_bfloat16 = use_bfloat16
    self._kernel_initializer = kernel_initializer

  @property
  def uses_rng(self):
    return False  # Its forward draws no random numbers.

  def forward(self, x):
    x = _as_array(x)
    if not _dtypes.dtype_name(x).startswith(('int', 'uint')):
      # Trax's jnp.take rejects float and boolean indices alike.
      raise TypeError(f'{self.name}: expects integer ids, got dtype '
                      f'{_dtypes.dtype_name(x)} with shape {tuple(x.shape)}. Cast '
                      f'with x.astype(jnp.int32).')
    # Trax (JAX's gather) clamps out-of-range ids silently; debug mode says
    # so instead, since such an id is almost always a vocabulary mismatch.
    if self.weights is base.EMPTY_WEIGHTS:
      raise ValueError(f'{self.name}: has no weights; call '
                       f'layer.init(shapes.signature(x)) first.')
    debug.check_ids(self.name, 'ids', x, self._vocab_size, hint=(
        'Without debug mode they are clamped to the first or last row, as '
        'in Trax; check the vocab_size against the data.'))
    ids = jnp.clip(x.astype(jnp.int32), 0, self._vocab_size - 1)
    embedded = jnp.take(self.weights, ids, axis=0)
    if self._use_bfloat16:
      embedded = embedded.astype(jnp.float32)
    return embedded

  def init_weights_and_state(self, input_signature):
    del input_signature
    dtype = _dtypes.BFLOAT16 if self._use_bfloat16 else jnp.float32
    self.weights = self._kernel_initializer(
        (self._vocab_size, self._d_feature), self.rng).astype(dtype)


@assert_shape('...->...')
class Dropout(base.Layer):
  """Zeroes a `rate` fraction of entries in train mode and rescales the rest.

  In 'train' mode each entry is kept with probability 1 - rate and scaled by
  1 / (1 - rate), so the expected output equals the input; other modes are
  the identity. As in Trax, the state holds the rate (a float32 scalar); a
  state dict `{layer.name: rate}` overrides the rate at run time. Integer
  and boolean inputs come out float32 in 'train' mode, as Trax's float mask
  makes them.

  Args:
    rate: probability of dropping each entry, in [0, 1).
    shared_axes: axes along which one mask value is shared (the mask has
      size 1 there and is broadcast).
    mode: 'train' drops; 'eval' and 'predict' pass inputs through.

  Example:
    >>> layer = Dropout(rate=0.5)
    >>> _ = layer.init(shapes.ShapeDtype((16,)),
    ...                rng=fastmath.random.get_prng(0))
    >>> y = layer(jnp.ones((16,), dtype=jnp.float32)).numpy()
    >>> sorted(set(y.tolist()) - {0.0})  # Kept entries are scaled by 2.
    [2.0]
  """

  def __init__(self, rate=0.0, shared_axes=None, mode='train'):
    super().__init__(name='Dropout')
    if not 0.0 <= rate < 1.0:
      raise ValueError(f'Dropout: rate must be in [0, 1), got {rate}.')
    self._initial_rate = rate
    self._shared_axes = [] if shared_axes is None else list(shared_axes)
    self._mode = mode

  def init_weights_and_state(self, input_signature):
    del input_signature
    self.state = jnp.asarray(self._initial_rate, dtype=jnp.float32)

  @property
  def uses_rng(self):
    # As `forward` decides: only in training, at a nonzero or stored rate.
    rate_from_state = isinstance(self.state, dict) and self.name in self.state
    return self._mode == 'train' and (rate_from_state or
                                      self._initial_rate != 0.0)

  def forward(self, x):
    if self._mode != 'train':
      return x
    rate = self._initial_rate
    rate_from_state = isinstance(self.state, dict) and self.name in self.state
    if rate_from_state:
      rate = self.state[self.name]
    if not fastmath.is_float(x):
      # Trax multiplies by the float mask keep / keep_prob, so integer and
      # boolean inputs promote as JAX's int32 * (mask / Python float) does:
      # to float32, even when nothing is dropped.
      x = x.astype(fastmath.result_type(x, 1.0 - rate))
    if not rate_from_state and rate == 0.0:
      return x
    shape = list(x.shape)
    for axis in self._shared_axes:
      if not -x.ndim <= axis < x.ndim:
        raise ValueError(f'{self.name}: shared axis {axis} is out of range '
                         f'for an input of shape {tuple(x.shape)}.')
      shape[axis] = 1
    keep_prob = 1.0 - rate
    keep = fastmath.random.bernoulli(self.rng, keep_prob, tuple(shape))
    # The mask is built in float32 so a Python-float scale does not promote
    # bfloat16 inputs.
    mask = (keep.astype(jnp.float32) / keep_prob).astype(x.dtype)
    return x * mask


def Flatten(n_axes_to_keep=1):  # pylint: disable=invalid-name
  """Flattens all but the first `n_axes_to_keep` axes into one."""
  if n_axes_to_keep < 0:
    raise ValueError(f'Flatten: n_axes_to_keep must be >= 0, got '
                     f'{n_axes_to_keep}.')

  def flatten(x):
    if n_axes_to_keep >= x.ndim:
      raise ValueError(f'Flatten: n_axes_to_keep ({n_axes_to_keep}) must be '
                       f'less than the input rank {x.ndim} (shape '
                       f'{tuple(x.shape)}).')
    keep = tuple(x.shape[:n_axes_to_keep])
    rest = tuple(x.shape[n_axes_to_keep:])
    if keep.count(None) == 1 and None not in rest:
      # One unknown kept size (the batch, in a Keras or SavedModel graph):
      # reshape infers it, given the known size of the flattened part.
      size = 1
      for d in rest:
        size *= d
      return jnp.reshape(x, tuple(-1 if d is None else d for d in keep) +
                         (size,))
    return jnp.reshape(x, keep + (-1,))
  return base.Fn(f'Flatten_keep{n_axes_to_keep}', flatten)


def _to_float(x):
  """Integer or boolean `x` in float32, as JAX's float-only functions take it.

  JAX's `logsumexp`, `mean` and friends first promote such inputs with a
  weak float (int32 -> float32); TensorFlow's NumPy mode would give float64
  or reject them. Floating inputs are returned as they are.
  """
  x = _as_array(x)
  if _dtypes.dtype_name(x) in _dtypes.FLOAT_NAMES:
    return x
  return cast_to(x, fastmath.result_type(x, 1.0))


# JAX sums booleans and narrow integers in its default integer width (int32
# or uint32 with x64 disabled); NumPy's rule would widen int32 to int64.
_SUM_DTYPES = {'bool': 'int32', 'int8': 'int32', 'int16': 'int32',
               'int32': 'int32', 'uint8': 'uint32', 'uint16': 'uint32',
               'uint32': 'uint32'}


def log_softmax(x, axis=-1):  # pylint: disable=invalid-name
  """x - logsumexp(x): log-probabilities along `axis`, computed stably."""
  x = _to_float(x)
  return x - fastmath.logsumexp(x, axis=axis, keepdims=True)


def LogSoftmax(axis=-1):  # pylint: disable=invalid-name
  """log(softmax(x)) along `axis`, computed stably."""
  return base.Fn('LogSoftmax', lambda x: log_softmax(x, axis=axis))


def Softmax(axis=-1):  # pylint: disable=invalid-name
  """softmax(x) along `axis`."""
  return base.Fn('Softmax', _dtypes.dtype_preserving(
      lambda x: jnp.exp(log_softmax(x, axis=axis))))


def LogSumExp(axis=-1):  # pylint: disable=invalid-name
  """log(sum(exp(x))) along `axis`, kept as a size-1 axis (as in Trax)."""
  return base.Fn('LogSumExp', lambda x: fastmath.logsumexp(
      _to_float(x), axis=axis, keepdims=True))


def Mean(axis=-1, keepdims=False):  # pylint: disable=invalid-name
  """Mean along `axis`; keepdims keeps a size-1 axis."""
  return base.Fn('Mean', lambda x: jnp.mean(_to_float(x), axis=axis,
                                            keepdims=keepdims))


def Sum(axis=None, keepdims=False):  # pylint: disable=invalid-name
  """Sum along `axis` (all axes if None); int32 sums stay int32, as in JAX."""
  def f(x):
    x = _as_array(x)
    return jnp.sum(x, axis=axis, keepdims=keepdims,
                   dtype=_SUM_DTYPES.get(_dtypes.dtype_name(x)))
  return base.Fn('Sum', f)


def Min(axis=-1, keepdims=False):  # pylint: disable=invalid-name
  """Minimum along `axis`."""
  return base.Fn('Min', lambda x: jnp.min(x, axis=axis, keepdims=keepdims))


def Max(axis=-1, keepdims=False):  # pylint: disable=invalid-name
  """Maximum along `axis`."""
  return base.Fn('Max', lambda x: jnp.max(x, axis=axis, keepdims=keepdims))


def ArgMax(axis=-1):  # pylint: disable=invalid-name
  """Index of the maximum along `axis` (int32)."""
  return base.Fn('ArgMax',
                 lambda x: jnp.argmax(x, axis=axis).astype(jnp.int32))


@assert_shape('...->...')
def Negate():  # pylint: disable=invalid-name
  """Element-wise negation."""
  return base.Fn('Negate', lambda x: -x)


@assert_shape('...->...')
def StopGradient():  # pylint: disable=invalid-name
  """Identity whose gradient is zero."""
  return base.Fn('StopGradient', fastmath.stop_gradient)
