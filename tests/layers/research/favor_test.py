"""FavorAttention, Favor, CausalFavorAttention and CausalFavor.

Checked against float64 NumPy references written below (softmax attention,
the FAVOR feature maps and the prefix-sum formula; outputs and
finite-difference gradients in eager, tf.function and XLA), against Trax
1.4.1's recorded outputs and gradients given Trax's weights and random
matrix (tests/testdata/sparsity_part2), and by the random features'
defining properties.
"""

import numpy as np
import pytest

from tests import _layer_testing as lt
from tests.layers.research import _sparsity_part2_fixtures as rec
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp

STAB = 0.001  # The default numerical_stabilizer.


# -- NumPy references ----------------------------------------------------------


def _relu_features(x):
  return np.maximum(x, 0.0) + STAB


def _key_mask(mask, n_heads):
  """(batch * n_heads, length, 1) key mask from a batch * length mask."""
  per_batch = np.asarray(mask, np.float64).reshape(-1, 1, mask.shape[-1])
  return np.repeat(per_batch, n_heads, axis=1).reshape(-1, mask.shape[-1], 1)


def favor_ref(qp, kp, v):
  """Bidirectional: out_i = sum_j (qp_i.kp_j) v_j / sum_j qp_i.kp_j."""
  scores = np.einsum('blm,bsm->bls', qp, kp)
  return scores @ v / scores.sum(-1, keepdims=True)


def causal_favor_ref(qp, kp, v):
  """Causal, as prefix sums: S_i = sum_{j<=i} kp_j v_j^T, z_i likewise."""
  out = np.zeros(v.shape)
  for i in range(v.shape[1]):
    s = np.einsum('bjm,bjd->bmd', kp[:, :i + 1], v[:, :i + 1])
    z = kp[:, :i + 1].sum(1)
    out[:, i] = (np.einsum('bm,bmd->bd', qp[:, i], s) /
                 np.einsum('bm,bm->b', qp[:, i], z)[:, None])
  return out


def softmax_features(x, projection, is_query, normalize, eps=1e-4):
  """FAVOR+ positive features exp(w.x - |x|^2 / 2 - shift) / sqrt(m) (+eps)."""
  c = x.shape[-1] ** -0.25 if normalize else 1.0
  dash = np.einsum('bld,md->blm', c * x, projection)
  diag = 0.5 * c * c * np.sum(x * x, -1, keepdims=True)
  axes = (-1,) if is_query else (-1, -2)
  shift = dash.max(axis=axes, keepdims=True)
  return (np.exp(dash - diag - shift) + eps) / np.sqrt(projection.shape[0])


def softmax_attention_ref(q, k, v):
  logits = np.einsum('bld,bsd->bls', q, k) / np.sqrt(q.shape[-1])
  weights = np.exp(logits - logits.max(-1, keepdims=True))
  return weights @ v / weights.sum(-1, keepdims=True)


def _qkv(b, length, d, seed=0, scale=1.0):
  rs = np.random.RandomState(seed)
  return tuple(lt.random(rs, b, length, d, scale=scale) for _ in 'qkv')


def _mask(batch, length):
  mask = np.ones((batch, 1, 1, length), bool)
  mask[-1, ..., length - 2:] = False
  return mask


def _attention_only(layer):
  # Drops the passed-through mask, so gradients see float outputs only.
  return tl.Serial(layer, tl.Select([0], n_in=2))


# -- FavorAttention ------------------------------------------------------------


def test_favor_attention_relu_matches_numpy():
  q, k, v = _qkv(4, 5, 3)
  mask = _mask(2, 5)

  def ref(xs, _):
    q, k, v, mask = xs
    kp = _relu_features(k) * _key_mask(mask, 2)
    return favor_ref(_relu_features(q), kp, v)
  lt.check_layer(_attention_only(tl.FavorAttention(d_feature=6, n_heads=2)),
                 (q, k, v, mask), ref)


def test_favor_attention_softmax_features_match_numpy():
  q, k, v = _qkv(4, 5, 4, seed=1, scale=0.5)
  mask = _mask(2, 5)
  layer = tl.FavorAttention(d_feature=8, n_heads=2, n_random_features=6,
                            use_approximate_softmax=True, normalize_data=True)
  projection = np.asarray(layer._projection_matrix, np.float64)  # pylint: disable=protected-access

  def ref(xs, _):
    q, k, v, mask = xs
    qp = softmax_features(q, projection, True, True)
    kp = softmax_features(k, projection, False, True) * _key_mask(mask, 2)
    return favor_ref(qp, kp, v)
  lt.check_layer(_attention_only(layer), (q, k, v, mask), ref,
                 grad_rtol=1e-3, grad_atol=1e-3)


def test_favor_approximates_softmax_attention_better_with_more_features():
  q, k, v = _qkv(2, 16, 4, seed=2, scale=0.7)
  mask = np.ones((2, 1, 1, 16), bool)
  want = softmax_attention_ref(*(t.astype(np.float64) for t in (q, k, v)))
  errors = {}
  for n in (16, 4096):
    layer = tl.FavorAttention(d_feature=4, n_random_features=n,
                              use_approximate_softmax=True,
                              normalize_data=True)
    got, _ = layer((q, k, v, mask))
    errors[n] = np.mean(np.abs(np.asarray(got, np.float64) - want))
  # Not to zero: Trax's random rows are slightly biased (see get_2d_array);
  # the error here falls from about 0.059 to about 0.024.
  assert errors[4096] < 0.6 * errors[16], errors
  assert errors[4096] < 0.035, errors


@pytest.mark.parametrize('n_rows', [4, 11])
def test_random_matrix_has_orthogonal_blocks_of_fixed_norm(n_rows):
  m = np.asarray(tl.FavorAttention.get_2d_array(
      fastmath.random.get_prng(3), n_rows=n_rows, n_columns=4,
      scale_by_norm=False), np.float64)
  assert m.shape == (n_rows, 4)
  for start in range(0, n_rows, 4):
    block = m[start:start + 4]
    np.testing.assert_allclose(block @ block.T, 4.0 * np.eye(len(block)),
                               atol=1e-5)


def test_random_matrix_rows_have_gaussian_norms_when_scaled_by_norm():
  m = np.asarray(tl.FavorAttention.get_2d_array(
      fastmath.random.get_prng(4), n_rows=4096, n_columns=4), np.float64)
  norms = np.linalg.norm(m, axis=1)
  directions = m / norms[:, None]
  np.testing.assert_allclose(directions[:4] @ directions[:4].T, np.eye(4),
                             atol=1e-5)
  # Squared norms of 4-d standard Gaussians: chi-square(4), mean 4, var 8.
  assert abs(np.mean(norms ** 2) - 4.0) < 0.2
  assert abs(np.var(norms ** 2) - 8.0) < 1.2


# -- CausalFavorAttention ------------------------------------------------------


def test_causal_favor_attention_matches_prefix_sum_reference():
  lt.check_layer(
      tl.CausalFavorAttention(), _qkv(4, 6, 3, seed=5),
      lambda xs, _: causal_favor_ref(_relu_features(xs[0]),
                                     _relu_features(xs[1]), xs[2]))


@pytest.mark.parametrize('mode', lt.MODES)
def test_causal_favor_is_causal(mode):
  x = lt.random(np.random.RandomState(6), 2, 7, 8)
  later = x.copy()
  later[:, 4:] = lt.random(np.random.RandomState(7), 2, 3, 8)
  layer = tl.CausalFavor(8, n_heads=2)
  layer.init(shapes.signature(x))
  y, y_later = (np.asarray(lt.run_layer(layer, a, mode)[0])
                for a in (x, later))
  np.testing.assert_allclose(y_later[:, :4], y[:, :4], rtol=1e-6, atol=1e-6)
  assert np.abs(y_later[:, 4:] - y[:, 4:]).max() > 1e-3


def test_causal_favor_gradients_match_trax():
  # Trax's hand-written gradient subtracts prefix terms back out, which
  # leaves float32 cancellation error up to about 1e-4 (e.g. the query
  # gradient at position 0 is exactly 0 but Trax records -8.7e-5); the exact
  # NumPy check above holds ours to 1e-4 relative.
  case = 'causal_favor_attention'
  layer = rec.build_recorded(case)
  ct = jnp.asarray(rec.ARRAYS[f'{case}/ct'])
  for mode in lt.MODES:
    def grads(xs):
      return fastmath.grad(lambda xs: jnp.sum(layer(xs) * ct))(xs)
    got = lt.compile_fn(grads, mode)(lt.to_tensors(rec.inputs_of(case)))
    lt.assert_close(list(got), rec.arrays(case, 'grad'), rtol=1e-3,
                    atol=2e-4, err_msg=mode)


# -- Against Trax, dtypes and errors -------------------------------------------


@pytest.mark.parametrize('case', rec.cases_of(
    'FavorAttention', 'Favor', 'CausalFavorAttention', 'CausalFavor'))
def test_outputs_and_weights_match_trax(case):
  rec.check_recorded(case)


def test_bfloat16_inputs_compute_in_float32_as_in_trax():
  q, k, v = (jnp.asarray(t).astype('bfloat16') for t in _qkv(2, 3, 4))
  mask = np.ones((2, 1, 1, 3), bool)
  assert tl.CausalFavorAttention()((q, k, v)).dtype == jnp.float32
  assert tl.FavorAttention()((q, k, v, mask))[0].dtype == jnp.float32


@pytest.mark.parametrize('make', [
    lambda: tl.FavorAttention(d_feature=6, n_heads=4),
    lambda: tl.Favor(6, n_heads=4),
    lambda: tl.CausalFavor(6, n_heads=4)])
def test_heads_must_divide_d_feature(make):
  with pytest.raises(ValueError, match=r'(Favor|FavorAttention|CausalFavor): '
                     r'd_feature 6 is not a multiple of n_heads 4'):
    make()


def test_bad_inputs_are_named():
  q, k, v = _qkv(4, 5, 4)
  with pytest.raises(tl.LayerError, match=r'FavorAttention: mask of shape '
                     r'\(2, 1, 1, 3\) has 6 entries; expected batch \* length'
                     r' = 2 \* 5'):
    tl.FavorAttention(n_heads=2)((q, k, v, np.ones((2, 1, 1, 3), bool)))
  with pytest.raises(tl.LayerError, match=r'FavorAttention: queries have '
                     r'd_head 4 but the layer was built for d_feature 6 // '
                     r'n_heads 2 = 3'):
    tl.FavorAttention(6, 2, n_random_features=4,
                      use_approximate_softmax=True)((q, k, v, _mask(2, 5)))
  with pytest.raises(tl.LayerError, match=r'CausalFavorAttention: expected Q '
                     r'and K of one shape .* got shapes \(4, 5, 4\), '
                     r'\(4, 3, 4\)'):
    tl.CausalFavorAttention()((q, k[:, :3], v))
