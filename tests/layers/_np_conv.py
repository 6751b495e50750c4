"""NumPy float64 references for convolution and pooling tests.

Written directly from the definitions (loops over kernel taps and windows),
independently of the TensorFlow ops the layers use.
"""

import itertools
import math

import numpy as np

__all__ = ['same_pads', 'conv', 'conv_transpose', 'pool']


def same_pads(sizes, windows, strides):
  """(low, high) pads so each axis has ceil(size / stride) windows."""
  pads = []
  for n, k, s in zip(sizes, windows, strides):
    total = max((math.ceil(n / s) - 1) * s + k - n, 0)
    pads.append((total // 2, total - total // 2))
  return pads


def conv(x, w, strides, pads, dilation):
  """y[n, o, f] = sum_{k, c} xpad[n, o*s + k*d, c] w[k, c, f], channels last."""
  xp = np.pad(x, [(0, 0)] + list(pads) + [(0, 0)])
  window = [(k - 1) * d + 1 for k, d in zip(w.shape[:-2], dilation)]
  out = [(n - k) // s + 1 for n, k, s in zip(xp.shape[1:-1], window, strides)]
  y = np.zeros((x.shape[0], *out, w.shape[-1]))
  for tap in itertools.product(*[range(k) for k in w.shape[:-2]]):
    index = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                  for t, d, o, s in zip(tap, dilation, out, strides))
    y += xp[(slice(None),) + index] @ w[tap]
  return y


def conv_transpose(x, w, strides, pads, dilation):
  """Scatter form: input cell i and tap k add x[i] w[k] at o = i*s + lo - k*d.

  This equals correlating the stride-dilated, padded input with w (XLA's
  `conv_transpose` without kernel flipping).
  """
  window = [(k - 1) * d + 1 for k, d in zip(w.shape[:-2], dilation)]
  out = [(n - 1) * s + 1 + lo + hi - k + 1 for n, s, (lo, hi), k in
         zip(x.shape[1:-1], strides, pads, window)]
  y = np.zeros((x.shape[0], *out, w.shape[-1]))
  for i in itertools.product(*[range(n) for n in x.shape[1:-1]]):
    for tap in itertools.product(*[range(k) for k in w.shape[:-2]]):
      o = tuple(ii * s + lo - t * d for ii, s, (lo, _), t, d in
                zip(i, strides, pads, tap, dilation))
      if all(0 <= oo < n for oo, n in zip(o, out)):
        y[(slice(None),) + o] += x[(slice(None),) + i] @ w[tap]
  return y


def pool(x, pool_size, strides, padding, kind):
  """Max, sum or average over windows; padded cells are excluded."""
  sizes = x.shape[1:-1]
  pads = (same_pads(sizes, pool_size, strides) if padding == 'SAME' else
          [(0, 0)] * len(sizes))
  out = [(n + lo + hi - k) // s + 1
         for n, (lo, hi), k, s in zip(sizes, pads, pool_size, strides)]
  y = np.zeros((x.shape[0], *out, x.shape[-1]))
  for o in itertools.product(*[range(n) for n in out]):
    index = tuple(slice(max(oo * s - lo, 0), min(oo * s - lo + k, n))
                  for oo, s, (lo, _), k, n in
                  zip(o, strides, pads, pool_size, sizes))
    cells = x[(slice(None),) + index].reshape(x.shape[0], -1, x.shape[-1])
    reduce = {'max': np.max, 'sum': np.sum, 'avg': np.mean}[kind]
    y[(slice(None),) + o] = reduce(cells, axis=1)
  return y
