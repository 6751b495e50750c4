"""A context in which layers run forward only, with no custom gradients.

Layers with their own `backward` (reversible layers, efficient attention)
wrap their forward pass in a custom gradient. A graph that is only ever run
forward, such as a SavedModel's decoding loop, does not need it, and in
'predict' mode a reversible layer has no reverse pass to trace. Inside
`forward_only()`, `Layer.pure_fn` calls `forward` directly. The flag is
per thread, so replica threads of tf.distribute do not see each other's.
"""

import contextlib
import threading

__all__ = ['forward_only', 'active']

_THREAD = threading.local()


@contextlib.contextmanager
def forward_only():
  """Within this context layers skip their custom gradients."""
  before = active()
  _THREAD.on = True
  try:
    yield
  finally:
    _THREAD.on = before


def active():
  """Whether this thread is inside `forward_only()`."""
  return getattr(_THREAD, 'on', False)
