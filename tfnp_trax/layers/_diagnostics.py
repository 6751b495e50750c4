"""What layer errors report: where a layer was built, signatures, messages."""

import inspect
import sys
import traceback

from tfnp_trax import shapes

__all__ = ['caller_location', 'short_signature', 'same_signature',
           'format_exception', 'describe', 'check_input_signature']


_LIBRARY_LAYER_DIRS = ('/tfnp_trax/layers/', '/tfnp_trax/models/',
                       '/tfnp_trax/rl/')


def caller_location():
  """`file:line` of the first frame outside the library's layer code.

  Layer code is tfnp_trax/layers, models and rl (whose layers, such as
  `rl.normalization.Normalize`, are library code too).

  Called from `Layer.__init__`, that is where the user built the layer. It
  walks raw frames: inspect.stack() reads source files for every frame,
  which made building each layer cost milliseconds under deep stacks.
  """
  frame = sys._getframe(2)  # pylint: disable=protected-access
  while frame is not None:
    path = frame.f_code.co_filename
    if not any(part in path for part in _LIBRARY_LAYER_DIRS):
      return f'{path}:{frame.f_lineno}'
    frame = frame.f_back
  return 'unknown'


def short_signature(x):
  """`x`'s ShapeDtype signature, or its repr when it has none."""
  try:
    return shapes.signature(x)
  except Exception:  # pylint: disable=broad-except
    return repr(x)


def same_signature(a, b):
  """Whether `a` and `b` have equal signatures (False if either has none)."""
  try:
    return shapes.signature(a) == shapes.signature(b)
  except Exception:  # pylint: disable=broad-except
    return False


def format_exception(e):
  """The exception's type and message on one line, as the traceback ends."""
  return ''.join(traceback.format_exception_only(type(e), e)).strip()


def describe(f):
  """`f`'s name and signature, for error messages."""
  label = getattr(f, '__name__', type(f).__name__)
  return f'{label}{inspect.signature(f)}'


def check_input_signature(layer_name, input_signature):
  """Raises a TypeError for a plain shape where a signature belongs.

  `layer.init((2, 3))` is a common slip for
  `layer.init(shapes.ShapeDtype((2, 3)))`; without this check it fails deep
  inside the layer with "'int' object has no attribute 'shape'".
  """
  sigs = (input_signature if isinstance(input_signature, (list, tuple))
          else (input_signature,))
  # `init(None)` is allowed, as in Trax: layers whose weights do not depend
  # on the inputs (Embedding, Dropout) are initialized without a signature.
  if (any(isinstance(d, int) for d in sigs) and
      all(isinstance(d, int) or d is None for d in sigs)):
    raise TypeError(
        f'{layer_name}: init expects a ShapeDtype (or a tuple of them, one '
        f'per input), got the plain shape {tuple(sigs)}. Pass '
        f'shapes.ShapeDtype({tuple(sigs)}, dtype) or shapes.signature(x).')
