"""Tests for the per-call slots (`layers/_per_call.py`) and their contract.

Two Python threads run `pure_fn` on the *same* layer object with different
weights, forced to interleave at a barrier inside `forward`, as
tf.distribute's replica threads do at a collective. Each must read only its
own weights, and the layer's own weights must be untouched afterwards.
"""

import threading

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import shapes
import tfnp_trax.layers as tl
from tfnp_trax.layers import _per_call
from tfnp_trax.layers import base


class _Scale(base.Layer):
  """y = w * x; waits at a barrier between reading w and returning."""

  def __init__(self, barrier):
    super().__init__(name='Scale')
    self._barrier = barrier
    self._seen = {}

  def init_weights_and_state(self, input_signature):
    self.weights = np.float32(1.0)

  def forward(self, x):
    w_before = float(self.weights)
    self._barrier.wait(timeout=30)  # the other thread sets its weights now
    w_after = float(self.weights)
    self._seen[threading.current_thread().name] = (w_before, w_after)
    return x * self.weights


def test_two_threads_see_only_their_own_weights():
  layer = _Scale(threading.Barrier(2))
  layer.init(shapes.ShapeDtype((2,)))
  x = np.ones(2, np.float32)
  rng = fastmath.random.get_prng(0)
  results, errors = {}, []

  def run(name, w):
    try:
      y, _ = layer.pure_fn(x, np.float32(w), (), rng)
      results[name] = np.asarray(y)
    except Exception as e:  # pylint: disable=broad-except
      errors.append(e)

  threads = [threading.Thread(target=run, args=(f'replica{w}', w),
                              name=f'replica{w}') for w in (2.0, 3.0)]
  for t in threads:
    t.start()
  for t in threads:
    t.join(timeout=60)
  assert not errors, errors
  np.testing.assert_array_equal(results['replica2.0'], [2.0, 2.0])
  np.testing.assert_array_equal(results['replica3.0'], [3.0, 3.0])
  assert layer._seen == {  # pylint: disable=protected-access
      'replica2.0': (2.0, 2.0), 'replica3.0': (3.0, 3.0)}
  assert float(layer.weights) == 1.0  # the layer's own weights
  assert not _per_call.in_call()


def test_overlay_exists_only_during_a_call():
  seen = []
  probe = tl.Fn('Probe', lambda x: seen.append(_per_call.in_call()) or x)
  assert not _per_call.in_call()
  probe.pure_fn(np.zeros(1, np.float32), (), (), fastmath.random.get_prng(0))
  assert seen == [True]
  assert not _per_call.in_call()


class _InitsInForward(base.Layer):

  def forward(self, x):
    tl.Dense(3).init(shapes.signature(x))
    return x


def test_init_inside_a_call_is_refused():
  layer = _InitsInForward(name='Lazy')
  with pytest.raises(base.LayerError,
                     match=r'(?s)layer Dense.*init was called while a pure_fn '
                     r'call is running.*call model\.init\(input_signature\) '
                     r'first'):
    layer(np.zeros((2, 4), np.float32))
