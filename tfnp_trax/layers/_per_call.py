"""Per-thread weights, state and rng of layers while a pure_fn call runs.

Within a `pure_fn` call, layers hold the weights, state and rng of that
call. tf.distribute runs replica functions in separate Python threads that
may switch at collectives, so these per-call values live in a per-thread
overlay: each replica sees only its own, and the overlay is dropped when the
outermost `pure_fn` returns (which restores the layer's values anyway).
"""

import threading

__all__ = ['PerCallSlot', 'in_call', 'begin_call', 'end_call']

_THREAD = threading.local()
_SLOT_DEFAULTS = {'_weights': (), '_state': (), '_rng': None}


def _overlay():
  return getattr(_THREAD, 'overlay', None)


def in_call():
  """True while this thread runs inside a layer's pure_fn."""
  return _overlay() is not None


def begin_call():
  """Opens this thread's overlay for one outermost pure_fn call."""
  _THREAD.overlay = {}


def end_call():
  """Drops this thread's overlay when the outermost pure_fn returns."""
  _THREAD.overlay = None


class PerCallSlot:
  """A layer attribute that is per-thread while a pure_fn call runs."""

  def __init__(self, name):
    self._name = name
    self._key = '_shared' + name

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self
    overlay = _overlay()
    if overlay is not None:
      values = overlay.get(id(obj))
      if values is not None and self._name in values:
        return values[self._name]
    return obj.__dict__.get(self._key, _SLOT_DEFAULTS[self._name])

  def __set__(self, obj, value):
    overlay = _overlay()
    if overlay is not None:
      overlay.setdefault(id(obj), {})[self._name] = value
    else:
      obj.__dict__[self._key] = value
