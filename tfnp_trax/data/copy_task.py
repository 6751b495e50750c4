"""The sequence-copy task: reproduce a random sequence after a separator.

Each example is `0 w_1 .. w_n 0 w_1 .. w_n` over symbols 1..vocab_size-1;
the loss weights cover only the second copy, so a model must attend back
to solve it.
"""

import numpy as onp

__all__ = ['copy_batches']


def copy_batches(batch_size, length, vocab_size, seed):
  """Yields (inputs, targets, weights) of length 2 * length + 2, forever."""
  rng = onp.random.default_rng(seed)
  while True:
    w = rng.integers(1, vocab_size, size=(batch_size, length))
    zero = onp.zeros((batch_size, 1), onp.int64)
    x = onp.concatenate([zero, w, zero, w], axis=1).astype(onp.int32)
    weights = onp.concatenate(
        [onp.zeros((batch_size, length + 2)), onp.ones((batch_size, length))],
        axis=1).astype(onp.float32)
    yield x, x, weights
