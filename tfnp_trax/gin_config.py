"""Gin configuration under Trax's names: Trax's own `.gin` files parse as-is.

The functions here wrap gin's own parse functions. While they run,

- every tfnp_trax object Trax registers with gin is registered under Trax's
  name (`trax.models.TransformerLM`, `trax.optimizers.Adam`, ...; see
  `tfnp_trax._gin_registry`), and the `import trax.models` lines of a Trax
  config import the tfnp_trax modules (no package called `trax` is
  installed or left behind; see `tfnp_trax._trax_imports`);
- a binding for a Trax name tfnp_trax does not provide yet (e.g.
  `data_streams.data_dir = None` while `trax.data.data_streams` is absent) is
  skipped and logged, since setting a parameter of something never called
  changes nothing; a reference to one (`train.model =
  @trax.models.ConfigurableTerraformer`) raises `GinConfigError` naming it
  and the file and line, because the config would use it;
- gin's errors for typos (an unknown configurable or parameter) are raised
  again as `GinConfigError` with the closest registered names.

Example:

>>> import gin
>>> from tfnp_trax import gin_config
>>> gin.clear_config()
>>> gin_config.parse_config(['import trax.optimizers',
...                          'Adam.b1 = 0.8'])
>>> gin.query_parameter('Adam.b1')
0.8
>>> gin.clear_config()
"""

import contextlib
import difflib
import os
import re
import threading

from absl import logging
import gin
from gin import config_parser

from tfnp_trax import _gin_registry
from tfnp_trax import _trax_imports

__all__ = ['GinConfigError', 'parse_config_files_and_bindings',
           'parse_config_file', 'parse_config', 'missing_trax_names',
           'register_trax_names', 'skipped_bindings', 'operative_config_str',
           'config_str']

_LOCK = threading.RLock()
_SEARCH_PATHS = set()   # Folders already given to gin for `include`s.
_SKIPPED = []           # ('file:line', Trax name) of skipped bindings.


class GinConfigError(ValueError):
  """A gin config names something tfnp_trax lacks, or has a typo."""


def register_trax_names():
  """Registers tfnp_trax's objects under Trax's gin names now.

  Returns:
    The Trax gin names (`module.name`) registered by this call.
  """
  return _gin_registry.register_all()


def missing_trax_names():
  """Trax gin names (as `module.name`) that tfnp_trax does not provide yet."""
  _gin_registry.register_all()
  return _gin_registry.missing_names()


def skipped_bindings():
  """Bindings the last parse skipped: [('file:line', Trax name), ...]."""
  with _LOCK:
    return list(_SKIPPED)


def parse_config_files_and_bindings(config_files, bindings,
                                    finalize_config=True,
                                    skip_unknown=False):
  """Parses gin files, then binding strings, as `gin` does, with Trax names.

  Args:
    config_files: paths of `.gin` files (Trax's own files work unchanged);
      an `include` inside one is also looked up next to that file.
    bindings: gin binding strings (e.g. `['train.steps = 100']`), applied
      after the files.
    finalize_config: lock the config afterwards, as gin does.
    skip_unknown: as in gin (True, or a list of selectors to skip).

  Raises:
    GinConfigError: a config uses a Trax name tfnp_trax does not provide
      yet, or names an unknown configurable or parameter.
  """
  config_files = [os.fspath(f) for f in (config_files or [])]
  bindings = list(bindings or [])
  with _trax_names():
    for path in config_files:
      _add_search_path(os.path.dirname(os.path.abspath(path)))
    statements = []
    for path in config_files:
      statements += _statements_of_file(path)
    statements += _statements_of_text('\n'.join(bindings))
    skip = _plan(statements, skip_unknown)
    try:
      gin.parse_config_files_and_bindings(
          config_files, bindings, finalize_config=finalize_config,
          skip_unknown=skip)
    except (ValueError, ImportError) as e:
      explained = _explained(e)
      if explained is e:
        raise
      raise explained from e


def parse_config_file(config_file, skip_unknown=False):
  """Parses one gin file with Trax's names (see the module docstring)."""
  parse_config_files_and_bindings([config_file], [], finalize_config=False,
                                  skip_unknown=skip_unknown)


def parse_config(bindings, skip_unknown=False):
  """Parses binding strings (a string or a list) with Trax's names."""
  if isinstance(bindings, str):
    bindings = [bindings]
  parse_config_files_and_bindings([], bindings, finalize_config=False,
                                  skip_unknown=skip_unknown)


def operative_config_str(**kwargs):
  """`gin.operative_config_str`, with the config's `import trax.*` lines.

  Gin re-runs a config's import statements when it prints the config, so
  the `trax.*` names must resolve then too.
  """
  with _trax_names():
    return gin.operative_config_str(**kwargs)


def config_str(**kwargs):
  """`gin.config_str`, with the config's `import trax.*` lines."""
  with _trax_names():
    return gin.config_str(**kwargs)


# -- While parsing: registration and `import trax.*` --------------------------
@contextlib.contextmanager
def _trax_names():
  """Registry up to date, and `import trax.*` answered by tfnp_trax."""
  with _LOCK:
    _gin_registry.register_all()
    known = _gin_registry.known_trax_modules()
    with _trax_imports.trax_modules_as_tfnp_trax(
        placeholder_ok=known.__contains__,
        on_import=_gin_registry.register_all):
      yield


def _add_search_path(folder):
  # Trax's configs `include` siblings by bare name (terraformer_copy.gin
  # includes 'reformer_copy.gin'); gin resolves includes on its search path.
  if folder not in _SEARCH_PATHS:
    _SEARCH_PATHS.add(folder)
    gin.add_config_file_search_path(folder)


# -- Looking ahead at what a config binds and references ----------------------
class _Recorder(config_parser.ParserDelegate):
  """Parser delegate that notes the configurable references of a statement."""

  def __init__(self):
    self.references = []

  def configurable_reference(self, scoped_selector, evaluate):
    self.references.append(scoped_selector)
    return None

  def macro(self, name):
    return None


def _statements(source, filename):
  """[(statement, references)] of gin text or an open file, includes followed.

  Imports run now (through the `trax.*` alias), so the names they register
  are known when the bindings after them are checked.
  """
  recorder = _Recorder()
  result = []
  try:
    for statement in config_parser.ConfigParser(source, recorder):
      references, recorder.references = recorder.references, []
      if isinstance(statement, config_parser.ImportStatement):
        _import(statement)
      elif isinstance(statement, config_parser.IncludeStatement):
        path = _find_include(statement.filename, filename)
        if path is not None:
          result += _statements_of_file(path)
      else:
        result.append((statement, references))
  except SyntaxError:
    pass  # Gin's own parse reports it, with its location.
  return result


def _statements_of_text(text, filename=None):
  return _statements(text, filename)


def _statements_of_file(path):
  try:
    with open(path) as f:  # The file object's name goes into locations.
      return _statements(f, path)
  except OSError:
    return []  # Gin's own parse reports a missing file.


def _find_include(name, including_file):
  candidates = [name]
  if including_file:
    candidates.append(os.path.join(os.path.dirname(including_file), name))
  candidates += [os.path.join(folder, name) for folder in _SEARCH_PATHS]
  return next((c for c in candidates if os.path.isfile(c)), None)


def _import(statement):
  """Runs a config's import now, so its gin names are known for the check.

  Import errors are raised here: gin's own parse, given the list of names to
  skip, would only log them.
  """
  try:
    __import__(statement.module)
  except ModuleNotFoundError as e:
    if statement.module == 'trax' or statement.module.startswith('trax.'):
      reason = (f'tfnp_trax has no module '
                f'{_trax_imports.tfnp_trax_name(statement.module)} and Trax '
                f'registers no gin names there; check the module path.')
    else:
      reason = f'{e}.'
    raise GinConfigError(f'`import {statement.module}`: {reason}'
                         f'{_where(statement.location)}') from e


def _plan(statements, skip_unknown):
  """Checks references; returns gin's `skip_unknown` with absent names."""
  if skip_unknown is True:
    return True
  skip = set(skip_unknown or ())
  skipped = []
  for statement, references in statements:
    if not isinstance(statement, config_parser.BindingStatement):
      continue
    if statement.arg_name:  # `selector.param = value`, not a macro.
      missing = _missing(statement.selector)
      if missing:
        skip.add(statement.selector)
        location = statement.location
        skipped.append(
            (f'{location.filename or "bindings"}:{location.line_num}',
             missing))
        continue
    for reference in references:
      missing = _missing(reference)
      if missing:
        raise GinConfigError(
            f'{missing} is a Trax gin name that tfnp_trax does not provide '
            f'yet, and this config uses it (@{reference}). Pick another '
            f'configurable or add {missing} to tfnp_trax.'
            f'{_where(statement.location)}')
  with _LOCK:
    _SKIPPED[:] = skipped
  for where, name in skipped:
    logging.info('gin: skipped a binding for %s, which tfnp_trax does not '
                 'provide yet (%s).', name, where)
  return skip


def _missing(selector):
  """The Trax name `selector` means if tfnp_trax lacks it, else None."""
  selector = selector.rsplit('/', 1)[-1]
  if _matches(selector, _gin_registry.registered_names()):
    return None
  missing = _gin_registry.find_missing(selector)
  return missing[0] if missing else None


def _matches(selector, full_names):
  return [n for n in full_names
          if n == selector or n.endswith('.' + selector)]


def _where(location):
  """Gin's own way of naming a config line, for our errors to match it."""
  if location is None:
    return ''
  if location.filename:
    where = f'  In file "{location.filename}", line {location.line_num}'
  else:
    where = f'  In bindings string line {location.line_num}'
  return f'\n{where}\n    {location.line_content.strip()}'


# -- Making gin's own errors say what to do -----------------------------------
_UNKNOWN_CONFIGURABLE = re.compile(
    r"No configurable matching (?:reference )?'@?([^'(]+)(?:\(\))?'")
_UNKNOWN_PARAMETER = re.compile(
    r"Configurable '([^']+)' doesn't have a parameter named '([^']+)'")


def _explained(error):
  """`error` as a GinConfigError with a suggestion, or unchanged."""
  message = str(error)
  first, _, location = message.partition('\n')
  location = '\n' + location if location else ''
  match = _UNKNOWN_CONFIGURABLE.search(first)
  if match:
    return GinConfigError(_unknown_configurable(match.group(1)) + location)
  match = _UNKNOWN_PARAMETER.search(first)
  if match:
    return GinConfigError(
        _unknown_parameter(match.group(1), match.group(2)) + location)
  return error


def _unknown_configurable(selector):
  selector = selector.rsplit('/', 1)[-1]
  registered = _gin_registry.registered_names()
  trax_names = [f'{module}.{name}'
                for module, _, names in _gin_registry.TRAX_GIN_NAMES
                for name in names]
  missing = set(_gin_registry.missing_names())
  unloaded = [n for n in _matches(selector, trax_names)
              if n not in registered and n not in missing]
  if unloaded:
    package = '.'.join(unloaded[0].split('.')[:2])
    return (f"Unknown gin configurable '{selector}': it is Trax's "
            f"{unloaded[0]}; add `import {package}` to the config.")
  candidates = set(registered)
  candidates.update(n.rsplit('.', 1)[-1] for n in registered)
  close = difflib.get_close_matches(selector, sorted(candidates), n=3,
                                    cutoff=0.6)
  hint = (f" Did you mean {' or '.join(repr(c) for c in close)}?" if close
          else ' Check the spelling, or import the module that defines it.')
  return f"Unknown gin configurable '{selector}'.{hint}"


def _unknown_parameter(configurable, parameter):
  objects = [obj for name, obj in _gin_registry.registered_names().items()
             if _matches(configurable, [name])]
  signature = (_gin_registry.signature_of(objects[0]) if objects else None)
  if signature is None:
    return (f"Gin configurable '{configurable}' has no parameter "
            f"'{parameter}'.")
  names = [p for p in signature.parameters if p not in ('self', 'args',
                                                        'kwargs')]
  close = difflib.get_close_matches(parameter, names, n=3, cutoff=0.6)
  hint = (f" Did you mean {' or '.join(repr(c) for c in close)}?"
          if close else '')
  return (f"Gin configurable '{configurable}' has no parameter "
          f"'{parameter}'.{hint} Its parameters: {', '.join(names)}.")
