"""Trax's module paths for names that live in a module built on top.

Trax defines some names in a module that, in tfnp_trax, sits below the
module that defines them: `trax.layers.combinators.Scan` is our
`layers.flow.Scan`, and `flow` is built from the combinators. Importing
`flow` from `combinators` would make the two files import each other. Yet
`combinators.Scan` is Trax's API, and Trax code and configs use it.

`lazy_reexports` keeps such paths without the import: the old module
declares, as data, which names it shows and where each one lives, and gets
a module-level `__getattr__` (PEP 562) that imports the home module on the
first use of one of those names. Because the home is named by a string,
the file imports nothing from it, so the import graph (as
`tests/dependency_test.py` reads it with `ast`) has no circle; the mapping
documents the alias where a reader of the old module looks for the name.

Use it only where a plain import would be circular. Where the home module
does not import the old one, a plain `from home import Name` is simpler
and is what the other modules do.

Example:
  In `layers/combinators.py`, after the module's own definitions:

      __getattr__, __dir__ = _reexport.lazy_reexports(globals(), {
          'Scan': 'tfnp_trax.layers.flow',
          'Cond': 'tfnp_trax.layers.flow',
      })
"""

import importlib

__all__ = ['lazy_reexports']


def _resolve(module_name, name, home):
  """`home.name`, or the module `home` itself when it is named `name`."""
  module = importlib.import_module(home)
  if home.rsplit('.', 1)[-1] == name:
    return module
  try:
    return getattr(module, name)
  except AttributeError:
    raise AttributeError(
        f'module {module_name!r} re-exports {name!r} from {home!r}, which '
        f'has no such attribute; fix the mapping given to '
        f'lazy_reexports in {module_name}.') from None


def lazy_reexports(module_globals, aliases):
  """A module's `__getattr__` and `__dir__` that show names from elsewhere.

  Args:
    module_globals: the re-exporting module's `globals()`; a resolved name
      is stored there, so later uses are plain attribute lookups.
    aliases: {name: 'dotted.module.path'}: `name` is the attribute of that
      module with the same name, or the module itself if its last dotted
      component is `name` (e.g. {'trainer': 'tfnp_trax.optimizers.trainer'}).

  Returns:
    `(__getattr__, __dir__)`, to assign at module level under those names.
  """
  module_name = module_globals['__name__']
  aliases = dict(aliases)

  def __getattr__(name):  # pylint: disable=invalid-name
    home = aliases.get(name)
    if home is None:
      raise AttributeError(
          f'module {module_name!r} has no attribute {name!r}')
    value = _resolve(module_name, name, home)
    module_globals[name] = value
    return value

  def __dir__():  # pylint: disable=invalid-name
    return sorted(set(module_globals) | set(aliases))

  return __getattr__, __dir__
