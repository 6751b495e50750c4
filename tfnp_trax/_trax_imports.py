"""`import trax.*` inside Trax's gin files, answered by tfnp_trax modules.

Trax's `.gin` files start with lines such as `import trax.models` and
`import trax.data.inputs`. Gin runs them with `__import__`, so while a config
is parsed (and only then) `trax_modules_as_tfnp_trax()` puts a finder at the
front of `sys.meta_path` that answers `trax.X.Y` with the already importable
`tfnp_trax.X.Y`. When the parse ends, every `trax` entry it added to
`sys.modules` is removed again and any entries that were there before are put
back, so no package called `trax` stays importable and a real Trax install
is left alone.

A Trax module tfnp_trax does not have yet (e.g. `trax.data.tf_inputs`) is
answered with an empty placeholder when gin knows Trax registers names in
it; the parse then goes on, and using one of those names fails with an error
that names it (see `tfnp_trax.gin_config`). An unknown `trax.*` module is a
plain ModuleNotFoundError.

`alias_trax_modules()` (exported as `tfnp_trax.alias_trax_modules`) installs
the same finder for good, on request: afterwards `import trax.layers` (in
code, or in a config given to `gin.parse_config` directly) gives
`tfnp_trax.layers`, and each such import registers tfnp_trax's objects
under Trax's gin names. It makes no placeholders: a Trax module tfnp_trax
lacks is a ModuleNotFoundError naming both modules.
"""

import contextlib
import importlib
import importlib.abc
import importlib.util
import sys
import threading
import types

from tfnp_trax import _trax_names
# Part of this module's API (gin_config uses it); it lives in _trax_names.
from tfnp_trax._trax_names import tfnp_trax_name

__all__ = ['trax_modules_as_tfnp_trax', 'tfnp_trax_name',
           'alias_trax_modules', 'unalias_trax_modules']

_LOCK = threading.RLock()


class _AliasLoader(importlib.abc.Loader):
  """Hands the import system an existing module object under a Trax name."""

  def __init__(self, module, on_import):
    self._module = module
    self._spec = getattr(module, '__spec__', None)
    self._on_import = on_import

  def create_module(self, spec):
    return self._module

  def exec_module(self, module):
    # The import system has just set `module.__spec__` to the alias spec;
    # the tfnp_trax module keeps its own (reload, pickling and tools read it).
    if self._spec is not None:
      module.__spec__ = self._spec
    self._on_import()


class _TraxAliasFinder(importlib.abc.MetaPathFinder):
  """Finds `trax.*` as the matching `tfnp_trax.*` module."""

  def __init__(self, placeholder_ok, on_import, explain_missing=False):
    self._placeholder_ok = placeholder_ok
    self._on_import = on_import
    self._explain_missing = explain_missing
    self.placeholders = []

  def find_spec(self, fullname, path=None, target=None):
    del path, target  # A Trax name maps to one tfnp_trax name, wherever.
    if not _trax_names.is_trax_name(fullname):
      return None
    ours = tfnp_trax_name(fullname)
    try:
      module = importlib.import_module(ours)
    except ModuleNotFoundError as e:
      # Only our own counterpart (or a parent of it) being absent means
      # "not provided yet"; a missing dependency inside it is a real error.
      if not e.name or not (ours == e.name or ours.startswith(e.name + '.')):
        raise
      if not self._placeholder_ok(fullname):
        if self._explain_missing:
          raise ModuleNotFoundError(
              f'No module named {fullname!r}: the Trax module names are '
              f'aliases of tfnp_trax (tfnp_trax.alias_trax_modules()), which '
              f'has no {ours}.', name=fullname) from e
        return None
      module = types.ModuleType(
          ours, f'Placeholder for Trax module {fullname}, which tfnp_trax '
          f'does not provide yet.')
      module.__path__ = []  # So `trax.a.b` can be found below `trax.a`.
      self.placeholders.append((fullname, module))
    return importlib.util.spec_from_loader(
        fullname, _AliasLoader(module, self._on_import),
        is_package=hasattr(module, '__path__'))


@contextlib.contextmanager
def trax_modules_as_tfnp_trax(placeholder_ok=lambda name: False,
                              on_import=lambda: None):
  """While active, `import trax.X` imports `tfnp_trax.X` under that name.

  Args:
    placeholder_ok: `placeholder_ok(trax_name)` says whether a Trax module
      tfnp_trax lacks may be imported as an empty placeholder.
    on_import: called after each `trax.*` import (gin registers the names
      the newly imported module brings before the next config line runs).

  Yields:
    The list of `(trax_name, placeholder_module)` created so far.
  """
  with _LOCK:
    saved = {k: sys.modules.pop(k) for k in list(sys.modules)
             if _trax_names.is_trax_name(k)}
    finder = _TraxAliasFinder(placeholder_ok, on_import)
    sys.meta_path.insert(0, finder)
    try:
      yield finder.placeholders
    finally:
      sys.meta_path.remove(finder)
      for name in [k for k in sys.modules if _trax_names.is_trax_name(k)]:
        del sys.modules[name]
      sys.modules.update(saved)
      _drop_placeholder_attributes(finder.placeholders)


def _drop_placeholder_attributes(placeholders):
  """Removes placeholders the import system bound on real parent modules."""
  for trax_name, placeholder in placeholders:
    parent_name, _, child = tfnp_trax_name(trax_name).rpartition('.')
    parent = sys.modules.get(parent_name)
    if parent is not None and getattr(parent, child, None) is placeholder:
      delattr(parent, child)


# -- The opt-in, lasting alias ------------------------------------------------
_ALIAS = []  # The installed _TraxAliasFinder, if any.


def _register_gin_names():
  # Gin is optional for the alias itself; without it there is nothing to
  # register.
  try:
    from tfnp_trax import _gin_registry  # pylint: disable=g-import-not-at-top
  except ImportError:
    return
  _gin_registry.register_all()


def alias_trax_modules():
  """Makes `import trax` and `import trax.X` give tfnp_trax's modules.

  Opt-in and lasting (until `unalias_trax_modules()`): Trax code and gin
  configs that import `trax.layers`, `trax.models`, ... run unchanged, e.g.
  a config with `import trax.layers` given to `gin.parse_config` itself
  (each `trax.*` import also registers tfnp_trax's objects under Trax's gin
  names). `import tfnp_trax` alone never does this. Calling it again does
  nothing.

  Example:
    >>> import tfnp_trax
    >>> tfnp_trax.alias_trax_modules()
    >>> import trax.layers
    >>> trax.layers is tfnp_trax.layers
    True
    >>> tfnp_trax.unalias_trax_modules()

  Raises:
    RuntimeError: a real `trax` package is already imported (the alias
      would give one program two different `trax` modules).
  """
  with _LOCK:
    if _ALIAS:
      return
    real = sys.modules.get('trax')
    if real is not None and real is not sys.modules.get('tfnp_trax'):
      raise RuntimeError(
          f'alias_trax_modules: a real trax package is already imported '
          f'({getattr(real, "__file__", real)!r}); import Trax or alias '
          f'tfnp_trax under its name, not both, in one process.')
    finder = _TraxAliasFinder(lambda name: False, _register_gin_names,
                              explain_missing=True)
    sys.meta_path.insert(0, finder)
    _ALIAS.append(finder)


def unalias_trax_modules():
  """Undoes `alias_trax_modules()`: `trax.*` names are unbound again."""
  with _LOCK:
    while _ALIAS:
      finder = _ALIAS.pop()
      if finder in sys.meta_path:
        sys.meta_path.remove(finder)
      for name in [k for k in sys.modules if _trax_names.is_trax_name(k)]:
        if sys.modules[name] is sys.modules.get(tfnp_trax_name(name)):
          del sys.modules[name]
