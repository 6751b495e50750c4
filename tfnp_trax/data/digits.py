"""scikit-learn's bundled 8x8 handwritten digits (no download needed)."""

import numpy as onp

__all__ = ['load_digits_split', 'classification_batches', 'N_CLASSES']

N_CLASSES = 10


def load_digits_split(test_fraction=0.2, seed=0):
  """Returns ((x_train, y_train), (x_test, y_test)); x in [0, 1], (N, 8, 8, 1)."""
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  digits = datasets.load_digits()
  x = (digits.images / 16.0).astype(onp.float32)[..., None]
  y = digits.target.astype(onp.int32)
  order = onp.random.default_rng(seed).permutation(len(y))
  n_test = int(len(y) * test_fraction)
  test, train = order[:n_test], order[n_test:]
  return (x[train], y[train]), (x[test], y[test])


def classification_batches(x, y, batch_size, seed, shuffle=True):
  """Yields (x, y, weights) batches forever, reshuffling every epoch."""
  rng = onp.random.default_rng(seed)
  n = len(y)
  while True:
    order = rng.permutation(n) if shuffle else onp.arange(n)
    for i in range(0, n - batch_size + 1, batch_size):
      idx = order[i:i + batch_size]
      yield x[idx], y[idx], onp.ones(len(idx), onp.float32)
