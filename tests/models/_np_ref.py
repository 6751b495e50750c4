"""NumPy float64 references shared by the model tests.

Written from the models' definitions, independently of tfnp_trax: layer
norm, dense, LSTM cells, a conv GRU cell and pre-norm Transformer blocks
(optionally with ReZero gains). Weights are consumed from an iterator of
leaves in the models' weight-tree order.
"""

import numpy as np

from tests.layers import _attention_ref as attn_ref
from tests.layers import _np_conv
from tests._layer_testing import to_numpy64
from tfnp_trax import fastmath

__all__ = ['leaves', 'n_params', 'layer_norm', 'relu', 'sigmoid', 'gelu',
           'log_softmax', 'shift_right', 'lstm', 'conv_same', 'gru_cell',
           'hard_sigmoid', 'hard_tanh', 'decoder_stack', 'encoder_stack',
           'encoder_decoder_stack']


def leaves(weights):
  """The weight leaves as an iterator of float64 arrays."""
  return iter(to_numpy64(fastmath.tree_leaves(weights)))


def n_params(weights):
  return sum(int(np.prod(w.shape)) for w in fastmath.tree_leaves(weights))


def layer_norm(x, scale, bias, epsilon=1e-6):
  x = x - x.mean(-1, keepdims=True)
  return x / np.sqrt((x * x).mean(-1, keepdims=True) + epsilon) * scale + bias


def relu(x):
  return np.maximum(x, 0.0)


def sigmoid(x):
  return 1.0 / (1.0 + np.exp(-x))


def gelu(x):
  from math import erf, sqrt  # pylint: disable=g-import-not-at-top
  return x * 0.5 * (1.0 + np.vectorize(erf)(x / sqrt(2.0)))


def hard_sigmoid(x):
  return np.clip(1.0 + x, 0.0, 1.0)


def hard_tanh(x):
  return np.clip(x, -1.0, 1.0)


def log_softmax(x):
  z = x - x.max(-1, keepdims=True)
  return z - np.log(np.exp(z).sum(-1, keepdims=True))


def shift_right(ids):
  return np.concatenate([np.zeros_like(ids[:, :1]), ids[:, :-1]], axis=1)


def lstm(x, w, b):
  """An LSTM over axis 1 from zero state; gates i, j, f, o; state [c, h]."""
  n = w.shape[1] // 4
  c = np.zeros((x.shape[0], n))
  h = np.zeros((x.shape[0], n))
  out = []
  for t in range(x.shape[1]):
    i, j, f, o = np.split(np.concatenate([x[:, t], h], -1) @ w + b, 4, -1)
    c = c * sigmoid(f) + sigmoid(i) * np.tanh(j)
    h = np.tanh(c) * sigmoid(o)
    out.append(h)
  return np.stack(out, axis=1)


def conv_same(x, w, b):
  """A stride-1 'SAME' 2-D convolution, channels last."""
  pads = _np_conv.same_pads(x.shape[1:3], w.shape[:2], (1, 1))
  return _np_conv.conv(x, w, (1, 1), pads, (1, 1)) + b


def gru_cell(s, ws, gate_fn, candidate_fn, memory_fn=lambda s: s,
             transform=conv_same, sigmoid_bias=0.5):
  """s' = u * M(s) + (1 - u) * c, with u, r, c from three transforms."""
  (wu, bu), (wr, br), (wc, bc) = ws
  u = gate_fn(transform(s, wu, bu) + sigmoid_bias)
  r = gate_fn(transform(s, wr, br) + sigmoid_bias)
  c = candidate_fn(transform(r * s, wc, bc))
  return u * memory_fn(s) + (1.0 - u) * c


def _attention(w, q, kv, mask, n_heads, causal):
  return attn_ref.multi_head(q, kv, kv, mask, [next(w) for _ in range(8)],
                             n_heads, causal)


def _feed_forward(w, x):
  w1, b1, w2, b2 = (next(w) for _ in range(4))
  return relu(x @ w1 + b1) @ w2 + b2


def _residual(w, x, f, gains):
  """x + F(LN(x)), times a gain read after F's weights if `gains`."""
  scale, bias = next(w), next(w)
  y = f(layer_norm(x, scale, bias))
  return x + (next(w) * y if gains else y)


def decoder_stack(w, x, n_layers, n_heads, gains=False):
  """Causal self-attention + FF pre-norm blocks."""
  for _ in range(n_layers):
    x = _residual(w, x, lambda h: _attention(w, h, h, None, n_heads, True),
                  gains)
    x = _residual(w, x, lambda h: _feed_forward(w, h), gains)
  return x


def encoder_stack(w, x, mask, n_layers, n_heads, gains=False):
  """Masked self-attention + FF pre-norm blocks."""
  for _ in range(n_layers):
    x = _residual(w, x, lambda h: _attention(w, h, h, mask, n_heads, False),
                  gains)
    x = _residual(w, x, lambda h: _feed_forward(w, h), gains)
  return x


def encoder_decoder_stack(w, x, enc, mask, n_layers, n_heads, gains=False):
  """Causal self-attention, attention over `enc`, FF."""
  for _ in range(n_layers):
    x = _residual(w, x, lambda h: _attention(w, h, h, None, n_heads, True),
                  gains)
    x = _residual(w, x, lambda h: _attention(w, h, enc, mask, n_heads, False),
                  gains)
    x = _residual(w, x, lambda h: _feed_forward(w, h), gains)
  return x
