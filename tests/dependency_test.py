"""Keeps the import rules of the codebase true by walking imports with ast.

Import direction: distribute -> fastmath -> layers -> models, and
fastmath -> optimizers; supervised never imports rl; optimizers never import
layers. Packages that do not exist yet are checked as soon as they appear.

Where TensorFlow may be imported: TensorFlow (with Keras, TFP, TFDS and the
other `tensorflow_*` packages) is imported directly only in the places listed
in TF_ALLOWED, each for the reason given there: distribute/ and fastmath/
(with shapes.py, which fastmath builds on) are the backend seam, and
supervised/, rl/, export/ and data/ use TensorFlow's runtime itself
(tf.function steps, tf.distribute, checkpoints and summaries, SavedModel and
TFLite files, tf.data pipelines), which no NumPy-style API covers. Every
other module in tfnp_trax, above all layers/, models/ and optimizers/, may
not import it: the math of a layer, model or optimizer goes through
`tfnp_trax.fastmath` (jnp, fastmath.random, fastmath.jit, ...), so it keeps
one backend seam and stays readable as Trax code. (Trax's layers called
jax.lax directly and that broke its own TensorFlow backend.) A new package is
TensorFlow-free until it is added to TF_ALLOWED with its reason.
"""

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
ABOVE_FASTMATH = ('tfnp_trax.layers', 'tfnp_trax.models',
                  'tfnp_trax.optimizers', 'tfnp_trax.supervised',
                  'tfnp_trax.rl', 'tfnp_trax.export')

# (package directory, forbidden module prefixes, why)
RULES = [
    ('distribute', ('tfnp_trax',), 'distribute sits below tfnp_trax'),
    ('tfnp_trax/fastmath', ABOVE_FASTMATH,
     'fastmath is the bottom layer of tfnp_trax'),
    ('tfnp_trax/optimizers', ('tfnp_trax.layers',),
     'optimizers use only fastmath'),
    ('tfnp_trax/supervised', ('tfnp_trax.rl',), 'supervised never imports rl'),
]

# The only places that may import TensorFlow directly, and why.
TF_ALLOWED = {
    'distribute': 'it wraps tf.distribute: strategies, replicas, '
                  'collectives, multi-worker launch',
    'tfnp_trax/fastmath': 'it is the backend seam: jnp is '
                          'tf.experimental.numpy, and jit, grad and random '
                          'wrap tf.function, GradientTape and stateless ops',
    'tfnp_trax/shapes.py': 'ShapeDtype reads tf.DType and tf.TensorShape; '
                           'fastmath builds on it',
    'tfnp_trax/supervised': 'training compiles steps with tf.function, runs '
                            'them under tf.distribute, and writes '
                            'tf.train.Checkpoint and tf.summary files',
    'tfnp_trax/rl': 'the agents train like supervised (tf.function, '
                    'tf.distribute, checkpoints) and sample with TFP',
    'tfnp_trax/export': 'SavedModel, Keras and TFLite are TensorFlow formats',
    'tfnp_trax/data': 'input pipelines are tf.data and TFDS, as in Trax',
    'tfnp_trax/tf_numpy': "it is Trax's module path for TensorFlow NumPy "
                          'itself (with its float64 switch and device '
                          'queries)',
}
TF_FREE_FIX = ('use tfnp_trax.fastmath instead (jnp, fastmath.random, '
               'fastmath.jit, ...); if this code needs TensorFlow\'s runtime '
               'itself, add its package to TF_ALLOWED in '
               'tests/dependency_test.py with the reason')


def is_tensorflow(name):
  """Whether a dotted module name belongs to TensorFlow or its family."""
  top = name.split('.')[0]
  return (top == 'tensorflow' or top.startswith('tensorflow_') or
          top in ('keras', 'tf_keras'))


def module_name(path):
  parts = list(path.relative_to(REPO).with_suffix('').parts)
  if parts[-1] == '__init__':
    parts.pop()
  return '.'.join(parts)


def imported_modules(source, module, is_package=False):
  """Every module a source file imports, anywhere in it, as dotted names.

  `from a import b` yields both `a` and `a.b`, since `b` may be a module.
  Relative imports are resolved against `module`.
  """
  names = set()
  for node in ast.walk(ast.parse(source)):
    if isinstance(node, ast.Import):
      names.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
      if node.level:
        package = module.split('.')
        if not is_package:
          package = package[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = '.'.join(package + ([node.module] if node.module else []))
      else:
        base = node.module
      names.add(base)
      names.update(f'{base}.{alias.name}' for alias in node.names)
  return names


def _matches(name, prefix):
  return name == prefix or name.startswith(prefix + '.')


def _imports_of(path):
  return imported_modules(path.read_text(), module_name(path),
                          path.name == '__init__.py')


def violations(package_dir, forbidden):
  found = []
  for path in sorted((REPO / package_dir).rglob('*.py')):
    found += [f'{path.relative_to(REPO)} imports {name}'
              for name in sorted(_imports_of(path))
              if any(_matches(name, p) for p in forbidden)]
  return found


def _tf_allowed(path):
  rel = path.relative_to(REPO)
  return any(rel == pathlib.Path(place) or pathlib.Path(place) in rel.parents
             for place in TF_ALLOWED)


@pytest.mark.parametrize('package_dir,forbidden,why', RULES,
                         ids=[r[0] for r in RULES])
def test_import_direction(package_dir, forbidden, why):
  found = violations(package_dir, forbidden)
  assert not found, f'{why}:\n' + '\n'.join(found)


def test_only_the_allowed_places_import_tensorflow():
  found = [f'{path.relative_to(REPO)} imports {name}'
           for root in ('tfnp_trax', 'distribute')
           for path in sorted((REPO / root).rglob('*.py'))
           if not _tf_allowed(path)
           for name in sorted(_imports_of(path)) if is_tensorflow(name)]
  assert not found, (f'only {sorted(TF_ALLOWED)} may import TensorFlow; '
                     f'{TF_FREE_FIX}:\n' + '\n'.join(found))


@pytest.mark.parametrize('place', sorted(TF_ALLOWED))
def test_each_tensorflow_allowance_is_still_needed(place):
  path = REPO / place
  files = sorted(path.rglob('*.py')) if path.is_dir() else [path]
  assert files, f'TF_ALLOWED lists {place}, which does not exist'
  assert any(is_tensorflow(n) for f in files for n in _imports_of(f)), (
      f'{place} no longer imports TensorFlow: remove it from TF_ALLOWED')


def test_layers_models_and_optimizers_are_tensorflow_free():
  # The rule this file exists for: these never get an allowance.
  for package in ('tfnp_trax/layers', 'tfnp_trax/models',
                  'tfnp_trax/optimizers'):
    assert not _tf_allowed(REPO / package / 'x.py'), package


def test_tensorflow_family_names():
  for name in ('tensorflow', 'tensorflow.experimental.numpy',
               'tensorflow_probability', 'tensorflow_datasets.core', 'keras',
               'tf_keras.layers'):
    assert is_tensorflow(name), name
  for name in ('tensorflowish', 'tfnp_trax.fastmath', 'numpy', 'kerasy'):
    assert not is_tensorflow(name), name


def test_checker_sees_every_import_form():
  source = '''
import tensorflow as tf
from tensorflow_probability import distributions
from tfnp_trax import layers
from . import sibling
from ..layers import core

def lazy():
  import tfnp_trax.rl.task
'''
  names = imported_modules(source, 'tfnp_trax.optimizers.adam')
  for want in ('tensorflow', 'tensorflow_probability', 'tfnp_trax.layers',
               'tfnp_trax.optimizers.sibling', 'tfnp_trax.layers.core',
               'tfnp_trax.rl.task'):
    assert want in names
  assert 'tfnp_trax.layers' in imported_modules(
      'from .. import layers', 'tfnp_trax.optimizers', is_package=True)
  assert not any(_matches(n, 'tensorflow') for n in imported_modules(
      'import tensorflow_datasets', 'x'))


def _public_inits():
  for root in ('tfnp_trax', 'distribute'):
    for path in sorted((REPO / root).rglob('__init__.py')):
      parts = path.relative_to(REPO).parts[:-1]
      if not any(p.startswith('_') for p in parts):
        yield path


def _all_and_bound_names(tree):
  exported, bound = None, set()
  for node in tree.body:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
      bound.update((a.asname or a.name).split('.')[0] for a in node.names)
    elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
      bound.add(node.name)
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
      targets = node.targets if isinstance(node, ast.Assign) else [node.target]
      for t in targets:
        if isinstance(t, ast.Name):
          bound.add(t.id)
          if t.id == '__all__':
            try:
              exported = ast.literal_eval(node.value)
            except ValueError:
              exported = ['<__all__ is not a literal list of names>']
  return exported, bound


@pytest.mark.parametrize('path', list(_public_inits()),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_public_init_lists_explicit_exports(path):
  tree = ast.parse(path.read_text())
  stars = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and
           any(a.name == '*' for a in n.names)]
  assert not stars, f'{path}: import * hides the public API'
  exported, bound = _all_and_bound_names(tree)
  assert exported is not None, f'{path} does not define __all__'
  missing = sorted(set(exported) - bound)
  assert not missing, f'{path}: __all__ names undefined names {missing}'
