"""Tests of the standard-library byte corpus and its batch streams."""

import itertools
import math

import numpy as np
import pytest

from tfnp_trax.data import pylm


def test_window_batches_every_whole_window_once():
  data = np.arange(100, dtype=np.uint8)
  batches = list(pylm.window_batches(data, batch_size=3, seq_len=10))
  # 10 whole windows, 3 batches of 3 (the tenth is dropped).
  assert len(batches) == 3
  starts = np.linspace(0, 90, 9).round().astype(int)
  expected = np.stack([data[s:s + 10] for s in starts]).reshape(3, 3, 10)
  for (x, y, w), want in zip(batches, expected):
    assert x.dtype == np.int32 and x.shape == (3, 10)
    np.testing.assert_array_equal(x, want)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(w, np.ones((3, 10), np.float32))
  # The windows reach the last byte.
  assert batches[-1][0][-1, -1] == 99


def test_window_batches_n_windows_spread_and_repeat():
  data = np.arange(1000, dtype=np.uint16).astype(np.uint8)
  stream = pylm.window_batches(data, batch_size=2, seq_len=4, n_windows=4,
                               repeat=True)
  first = [next(stream)[0] for _ in range(2)]
  again = [next(stream)[0] for _ in range(2)]
  starts = [row[0] for batch in first for row in batch]
  # Starts 0, 332, 664, 996 (mod 256 as bytes).
  assert starts == [0, 332 % 256, 664 % 256, 996 % 256]
  for a, b in zip(first, again):
    np.testing.assert_array_equal(a, b)


def test_window_batches_finite_without_repeat():
  data = np.zeros(64, np.uint8)
  assert len(list(pylm.window_batches(data, 2, 8))) == 4
  assert len(list(itertools.islice(
      pylm.window_batches(data, 2, 8, repeat=True), 10))) == 10


def test_window_batches_too_little_text_is_a_clear_error():
  with pytest.raises(ValueError, match='window_batches: 15 bytes hold 1 '
                     'windows of seq_len=8.*batch_size=2'):
    next(pylm.window_batches(np.zeros(15, np.uint8), 2, 8))
  with pytest.raises(ValueError, match='at least 1, got seq_len=0'):
    next(pylm.window_batches(np.zeros(15, np.uint8), 2, 0))


def test_unigram_bits_per_char_hand_computed():
  train = np.array([0, 0, 1], np.uint8)
  evals = np.array([0, 1], np.uint8)
  # Add-one counts over 256 bytes: p(0) = 3/259, p(1) = 2/259.
  want = -(math.log2(3 / 259) + math.log2(2 / 259)) / 2
  assert pylm.unigram_bits_per_char(train, evals) == pytest.approx(want)


def test_bits():
  assert pylm.bits(math.log(2.)) == pytest.approx(1.0)


def test_window_batches_context_bytes_are_not_scored():
  data = np.arange(40, dtype=np.uint8)
  (x, y, w), = list(pylm.window_batches(data, 2, 8, n_windows=2, context=3))
  np.testing.assert_array_equal(x, y)
  want = np.array([[0, 0, 0, 1, 1, 1, 1, 1]] * 2, np.float32)
  np.testing.assert_array_equal(w, want)
  for bad in (-1, 8):
    with pytest.raises(ValueError, match=f'context must be .*below '
                       f'seq_len=8.*got context={bad}'):
      next(pylm.window_batches(data, 2, 8, context=bad))
