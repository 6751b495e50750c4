"""Debug mode: value checks too costly for every training step.

Shape and dtype mistakes are caught always, when a layer runs or is traced,
because they cost nothing at run time. Mistakes in the *values* (NaN in the
data, a label beyond the vocabulary) cost a pass over the data to find, so
most of them are looked for only in debug mode.

Switch it on with `tfnp_trax.debug.enable()` (or `with
tfnp_trax.debug.enabled(): ...`), or for a whole process with the
environment variable `TFNP_DEBUG=1` (read when tfnp_trax is imported).
Turn it on before building the training step: checks become part of a
`tf.function` graph only if debug mode is on while it traces.

What is checked where ("always" checks run in every mode; "eager" ones
whenever the values are concrete, never inside a traced step):

* Category losses and metrics (CategoryCrossEntropy, CrossEntropyLoss,
  CategoryAccuracy, F1, ...):
  - targets are integers, not floats: always (a static dtype check);
  - targets lie in [0, n_categories): eager calls always, and traced
    steps in debug mode;
  - the model output is finite: debug mode.
* `Embedding`: ids lie in [0, vocab_size): debug mode only, because Trax
  clamps out-of-range ids and that behaviour is kept.
* `Layer.pure_fn`, outermost call: inputs and weights are finite: debug
  mode.
* `Layer.pure_fn`, every layer: its outputs are finite, so the first layer
  that makes a NaN is the one named: debug mode.
* `Optimizer.tree_update`: gradients are finite: debug mode.
* `fastmath.random`: 64-bit keys fit in 32 bits (else a cast would wrap
  them): eager calls always.
* `Layer.init_from_file`: stored weights are finite: always (loading is
  one-off host work).

Shape inference (`Layer.init`, `output_signature`) runs layers on dummy
zeros; no value check runs there (`fastmath.checks.suspended`).

Eagerly a failed check raises `FloatingPointError` (non-finite values) or
`ValueError` (ids out of range) naming the layer or function, what it
expected and what it got. Inside `tf.function` it adds a
`tf.debugging.Assert`, which fails the step with
`tf.errors.InvalidArgumentError` carrying the same words. XLA
(`jit_compile=True`) drops Assert ops, so run debug mode without it.

Example:
  >>> from tfnp_trax import debug
  >>> with debug.enabled():
  ...   debug.is_enabled()
  True
"""

import contextlib
import os

from tfnp_trax import fastmath

__all__ = ['enable', 'disable', 'is_enabled', 'enabled', 'ENV_VAR',
           'check_finite', 'check_tree_finite', 'check_ids']

ENV_VAR = 'TFNP_DEBUG'
_FALSE = ('', '0', 'false', 'no', 'off')
_enabled = os.environ.get(ENV_VAR, '').strip().lower() not in _FALSE


def enable():
  """Turns debug-mode checks on (for steps traced from now on)."""
  global _enabled
  _enabled = True


def disable():
  """Turns debug-mode checks off."""
  global _enabled
  _enabled = False


def is_enabled():
  """Whether debug-mode checks are on."""
  return _enabled


@contextlib.contextmanager
def enabled(on=True):
  """Context manager: debug mode on (or off, `on=False`) inside, then back."""
  global _enabled
  before = _enabled
  _enabled = bool(on)
  try:
    yield
  finally:
    _enabled = before


def check_finite(where, what, x):
  """In debug mode, raises unless floating-point `x` is all finite.

  Args:
    where: the layer or function, e.g. 'Dense_4'.
    what: the value, e.g. 'input 0' or 'weights'.
    x: a tensor or array.
  """
  if _enabled:
    fastmath.checks.assert_finite(x, f'{where}: {what}')


def check_tree_finite(where, what, tree):
  """`check_finite` on every leaf of `tree`, naming the leaf's position."""
  if not _enabled:
    return
  for i, leaf in enumerate(fastmath.tree_leaves(tree)):
    if _is_numeric(leaf):
      fastmath.checks.assert_finite(leaf, f'{where}: {what} leaf {i}')


def check_ids(where, what, ids, n, always_eager=False, hint=''):
  """Raises unless integer `ids` lie in [0, n).

  Args:
    where: the layer or function.
    what: the value, e.g. 'targets'.
    ids: integer ids.
    n: their exclusive upper bound (number of categories, vocab size).
    always_eager: also check outside debug mode when `ids` is concrete
      (for values that are never valid, at no cost to traced steps).
    hint: the likely fix, appended to the eager message.
  """
  if _enabled or (always_eager and not fastmath.checks.is_traced(ids)):
    fastmath.checks.assert_ids_in_range(ids, n, f'{where}: {what}', hint)


def _is_numeric(x):
  return hasattr(x, 'dtype') and hasattr(x, 'shape')
