"""A character-level language-modelling corpus: Python's own standard library.

The `.py` files of the running interpreter's standard library are found at
run time, so no download is needed. Text is modelled as bytes (vocab 256).
Every 10th file (in sorted order) is held out for evaluation.
"""

import glob
import math
import os
import sysconfig

import numpy as onp

__all__ = ['load_corpus', 'lm_batches', 'window_batches',
           'unigram_bits_per_char', 'bits', 'VOCAB_SIZE']

VOCAB_SIZE = 256


def load_corpus(max_bytes=6_000_000, eval_every=10):
  """Returns (train_bytes, eval_bytes) as uint8 arrays."""
  root = sysconfig.get_paths()['stdlib']
  files = sorted(glob.glob(os.path.join(root, '*.py')))
  if not files:
    raise FileNotFoundError(f'pylm: no .py files found under {root}.')
  train, evals, total = [], [], 0
  for i, path in enumerate(files):
    with open(path, 'rb') as f:
      data = f.read()
    (evals if i % eval_every == 0 else train).append(data)
    total += len(data)
    if total >= max_bytes:
      break
  as_array = lambda chunks: onp.frombuffer(b'\n'.join(chunks), onp.uint8)
  return as_array(train), as_array(evals)


def lm_batches(data, batch_size, seq_len, seed):
  """Yields (inputs, targets, weights) of random windows, forever."""
  rng = onp.random.default_rng(seed)
  high = len(data) - seq_len
  while True:
    starts = rng.integers(0, high, size=batch_size)
    x = onp.stack([data[s:s + seq_len] for s in starts]).astype(onp.int32)
    yield x, x, onp.ones_like(x, dtype=onp.float32)


def window_batches(data, batch_size, seq_len, n_windows=None, repeat=False,
                   context=0):
  """Yields (inputs, targets, weights) of fixed, evenly spaced windows.

  Unlike `lm_batches`' random windows, the same windows come every time,
  so two evals over them differ only by the weights (no sampling noise),
  and evenly spaced windows cover the whole text (a stratified sample).

  Args:
    data: a uint8 array.
    batch_size: windows per batch.
    seq_len: bytes per window.
    n_windows: how many windows, spread evenly from the first byte to the
      last; None: every whole non-overlapping window of `data`. Rounded
      down to whole batches.
    repeat: start again after the last batch (for an EvalTask, which
      reads `n_eval_batches` batches per eval), else stop.
    context: the first `context` bytes of each window get weight 0: they
      are read as context only, so every byte scored is predicted from at
      least `context` bytes before it (a window's first bytes, predicted
      from few or none, score far worse than the model does on running
      text).

  Raises:
    ValueError: `data` is shorter than one batch of windows.
  """
  data = onp.asarray(data)
  if seq_len < 1 or batch_size < 1:
    raise ValueError(f'window_batches: seq_len and batch_size must be at '
                     f'least 1, got seq_len={seq_len}, '
                     f'batch_size={batch_size}.')
  if not 0 <= context < seq_len:
    raise ValueError(f'window_batches: context must be at least 0 and below '
                     f'seq_len={seq_len} (some bytes must be scored), got '
                     f'context={context}.')
  fits = len(data) // seq_len
  n_windows = fits if n_windows is None else min(int(n_windows), fits)
  n_batches = n_windows // batch_size
  if n_batches < 1:
    raise ValueError(
        f'window_batches: {len(data)} bytes hold {fits} windows of seq_len='
        f'{seq_len}, fewer than one batch of batch_size={batch_size} '
        f'(n_windows={n_windows}); give more text or smaller batches.')
  n_windows = n_batches * batch_size
  starts = onp.linspace(0, len(data) - seq_len, n_windows).round().astype(
      onp.int64)
  windows = data[starts[:, None] + onp.arange(seq_len)].astype(onp.int32)
  windows = windows.reshape(n_batches, batch_size, seq_len)
  weights = onp.ones((batch_size, seq_len), onp.float32)
  weights[:, :context] = 0.0
  while True:
    for x in windows:
      yield x, x, weights
    if not repeat:
      return


def unigram_bits_per_char(train, evals):
  """Cross-entropy (bits/char) of `evals` under train's byte frequencies."""
  counts = onp.bincount(train, minlength=VOCAB_SIZE).astype(onp.float64) + 1.
  probs = counts / counts.sum()
  eval_counts = onp.bincount(evals, minlength=VOCAB_SIZE)
  return float(-(eval_counts * onp.log2(probs)).sum() / eval_counts.sum())


def bits(nats):
  return nats / math.log(2.)
