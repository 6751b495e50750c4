"""Runs every docstring example (`>>>` lines) in tfnp_trax and distribute.

The examples are user documentation, so each one must run as written. This
one test walks every module of both packages with `pkgutil.walk_packages`
and runs the examples of each module that has any, as its own parametrized
case named after the module. New modules are covered without touching this
file.

Each module's examples see the module's own globals, plus the names in
`_shared_names` for those that the module does not define itself (the short
names the examples use without importing: `tl`, `jnp`, `shapes`, ...). They
run with `doctest.ELLIPSIS`, from the repository root (data examples name
vocabulary files relative to it), with `export_dir` a fresh temporary path.
"""

import doctest
import importlib
import io
import os
import pkgutil

import keras
import numpy as onp
import pytest
import tensorflow as tf

import distribute
import tfnp_trax
from tfnp_trax import export
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.data import text_encoder
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import initializers

_REPO = os.path.join(os.path.dirname(__file__), '..')
_PACKAGES = (tfnp_trax, distribute)

# Modules whose examples do not run yet. Each entry must fail (strict
# xfail), so fixing a module's examples without removing it here fails too.
_KNOWN_BROKEN = {}


def _module_names():
  """Every module of `_PACKAGES`, packages included, but no `__main__`."""
  names = []
  for package in _PACKAGES:
    names.append(package.__name__)
    for info in pkgutil.walk_packages(package.__path__,
                                      package.__name__ + '.'):
      # Importing a `__main__` module runs the program.
      if info.name.rsplit('.', 1)[-1] != '__main__':
        names.append(info.name)
  return names


def _examples(module):
  """The module's docstring tests with at least one example that runs."""
  return [t for t in doctest.DocTestFinder().find(module)
          if any(not e.options.get(doctest.SKIP) for e in t.examples)]


def _modules_with_examples():
  names = [n for n in _module_names()
           if _examples(importlib.import_module(n))]
  return [pytest.param(n, marks=pytest.mark.xfail(reason=_KNOWN_BROKEN[n],
                                                  strict=True))
          if n in _KNOWN_BROKEN else n for n in names]


_MODULES = _modules_with_examples()


def _shared_names(export_dir):
  names = dict(keras=keras, onp=onp, tf=tf, tl=tl, models=models,
               shapes=shapes, jnp=jnp, init=initializers, fastmath=fastmath,
               export_dir=export_dir)
  names.update({n: getattr(export, n) for n in export.__all__})
  names.update({n: getattr(text_encoder, n) for n in text_encoder.__all__})
  return names


@pytest.fixture(scope='module')
def docs_tmp_dir(tmp_path_factory):
  # One directory for all modules: a fresh tmp_path per module costs more
  # than most modules' examples take to run.
  return tmp_path_factory.mktemp('docs')


def run_doctests(module, export_dir=None):
  """Runs `module`'s docstring examples; fails naming the module.

  Args:
    module: an imported module.
    export_dir: path the export examples write to (a temporary one by
      default, under the system temporary directory).
  """
  globs = _shared_names(export_dir or os.path.join(
      os.environ.get('TMPDIR', '/tmp'), 'tfnp_trax_docs', module.__name__))
  globs.update(vars(module))  # The module's own names win.
  out = io.StringIO()
  runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
  for test in doctest.DocTestFinder().find(module, globs=globs):
    runner.run(test, out=out.write)
  result = runner.summarize(verbose=False)
  assert result.failed == 0, (
      f'{module.__name__}: {result.failed} of {result.attempted} docstring '
      f'examples failed:\n{out.getvalue()}')


@pytest.mark.filterwarnings(
    'ignore:.*tf.lite.Interpreter is deprecated:UserWarning')
@pytest.mark.parametrize('name', _MODULES)
def test_docstring_examples(name, docs_tmp_dir, monkeypatch):
  monkeypatch.chdir(_REPO)
  run_doctests(importlib.import_module(name), str(docs_tmp_dir / name))


def test_walk_covers_every_package_the_old_runners_covered():
  # One module per area that had its own runner before this test.
  ids = {getattr(p, 'values', (p,))[0] for p in _MODULES}
  for name in ('tfnp_trax.optimizers', 'tfnp_trax.optimizers.sm3',
               'tfnp_trax.export.tflite', 'tfnp_trax.data.text_encoder',
               'tfnp_trax.rl.value_aggregation', 'tfnp_trax.layers.core',
               'tfnp_trax.layers.research._lshff', 'tfnp_trax.models.rnn',
               'tfnp_trax.models.reformer.reformer', 'distribute.strategy',
               'tfnp_trax.supervised._beam_search', 'tfnp_trax.gin_config'):
    assert name in ids, name
  assert not set(_KNOWN_BROKEN) - ids, 'stale _KNOWN_BROKEN entries'


def test_a_wrong_example_fails_with_the_module_name(tmp_path):
  module = type(os)('fake_docs_module')
  module.__doc__ = """Doc.

  >>> 1 + 1
  3
  """
  with pytest.raises(AssertionError, match=r'fake_docs_module: 1 of 1 '
                     r'docstring examples failed:[\s\S]*Expected:\s+3'):
    run_doctests(module, str(tmp_path))
