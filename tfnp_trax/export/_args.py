"""Checks of the export functions' arguments, made before anything traces.

Tracing a model and writing variables take seconds; a wrong path or name
found only by TensorFlow at the end comes back as its own error, naming
neither the function that was called nor the fix.
"""

import os
import re

import numpy as onp
import tensorflow as tf

from tfnp_trax import shapes
from tfnp_trax.layers import base

__all__ = ['check_layer', 'check_export_dir', 'check_names',
           'check_signature_entries', 'check_count', 'check_optimizations']

# What TensorFlow accepts as a signature argument or output name.
_NAME = re.compile(r'^[A-Za-z0-9.][A-Za-z0-9_.\-/]*$')


def check_layer(layer, caller):
  """Raises TypeError unless `layer` is a tfnp_trax layer."""
  if not isinstance(layer, base.Layer):
    raise TypeError(f'{caller}: expected a tfnp_trax layer (e.g. '
                    f'models.MLP(...)), got {type(layer).__name__} '
                    f'({layer!r:.80}).')


def check_export_dir(path, caller):
  """`path` as a str, once it can become a SavedModel directory.

  Remote paths (`gs://...`) are left to TensorFlow's file systems. A local
  path must be a directory or not exist yet, under a directory that can be
  written to.

  Raises:
    TypeError: `path` is not a str or os.PathLike.
    NotADirectoryError: `path`, or a folder above it, is a file.
    PermissionError: the directory it would be written in is read-only.
  """
  if not isinstance(path, (str, os.PathLike)):
    raise TypeError(f'{caller}: path must be a directory path (str or '
                    f'os.PathLike), got {type(path).__name__} ({path!r}).')
  path = os.fspath(path)
  if '://' in path:
    return path
  full = os.path.abspath(os.path.expanduser(path))
  if os.path.exists(full) and not os.path.isdir(full):
    raise NotADirectoryError(
        f'{caller}: path {path} is a file, but a SavedModel is written as a '
        f'directory. Pass a new directory path (or remove the file).')
  existing = full
  while not os.path.exists(existing):
    existing = os.path.dirname(existing)
  if not os.path.isdir(existing):
    raise NotADirectoryError(
        f'{caller}: cannot create the SavedModel directory {path}: '
        f'{existing} above it is a file, not a directory. Pass a path under '
        f'a directory.')
  if not os.access(existing, os.W_OK):
    raise PermissionError(
        f'{caller}: cannot write the SavedModel to {path}: directory '
        f'{existing} is not writable. Pass a path you can write to.')
  return path


def check_names(names, what, caller):
  """Raises unless `names` are distinct strs TensorFlow takes as names."""
  for name in names:
    if not isinstance(name, str) or not _NAME.match(name):
      raise ValueError(
          f'{caller}: {what} must be names of letters, digits, "_", ".", "-" '
          f'or "/" (not starting with "_", "-" or "/"), got {name!r}.')
  repeated = sorted({n for n in names if list(names).count(n) > 1})
  if repeated:
    raise ValueError(f'{caller}: {what} {tuple(names)} repeat {repeated}; '
                     f'each must be distinct.')


def check_signature_entries(sigs, caller):
  """Raises TypeError for entries that are not shapes with a dtype."""
  for i, sig in enumerate(sigs):
    if isinstance(sig, (int, float, bool)):
      continue  # A Python scalar: shape () and NumPy's dtype for it.
    if isinstance(sig, shapes.ShapeDtype) or (hasattr(sig, 'shape') and
                                              hasattr(sig, 'dtype')):
      dtype = sig.dtype
    else:
      raise TypeError(
          f'{caller}: input_signature entry {i} must be a ShapeDtype (or an '
          f'array to take the shape and dtype of), got '
          f'{type(sig).__name__} ({sig!r:.60}). E.g. '
          f'shapes.ShapeDtype((2, 5), np.float32).')
    try:
      tf.as_dtype(dtype)
    except TypeError:
      raise TypeError(f'{caller}: input_signature entry {i} has dtype '
                      f'{dtype!r}, which is not a TensorFlow dtype; use e.g. '
                      f'np.float32 or np.int32.') from None


def check_count(value, name, caller, allow_none=False):
  """Raises unless `value` is a positive int (or None if allowed)."""
  if value is None and allow_none:
    return
  if isinstance(value, bool) or not isinstance(value, (int, onp.integer)):
    raise TypeError(f'{caller}: {name} must be a positive int'
                    f'{" or None" if allow_none else ""}, got {value!r} '
                    f'({type(value).__name__}).')
  if value < 1:
    raise ValueError(f'{caller}: {name} must be a positive int, got '
                     f'{value}.')


def check_optimizations(optimizations, caller):
  """Raises unless `optimizations` is None or a list of tf.lite.Optimize."""
  if optimizations is None:
    return
  if not isinstance(optimizations, (list, tuple, set)) or not all(
      isinstance(o, tf.lite.Optimize) for o in optimizations):
    raise TypeError(f'{caller}: optimizations must be a list of '
                    f'tf.lite.Optimize values, e.g. '
                    f'[tf.lite.Optimize.DEFAULT], got {optimizations!r}.')
