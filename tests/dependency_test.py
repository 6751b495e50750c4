"""Keeps the import direction of STYLE.md true by walking imports with ast.

distribute -> fastmath -> layers -> models, fastmath -> optimizers;
supervised never imports rl; optimizers never import layers; layers, models
and optimizers reach TensorFlow only through fastmath. Packages that do not
exist yet are checked as soon as they appear.
"""

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
TF = ('tensorflow', 'tensorflow_probability')
ABOVE_FASTMATH = ('tfnp_trax.layers', 'tfnp_trax.models',
                  'tfnp_trax.optimizers', 'tfnp_trax.supervised',
                  'tfnp_trax.rl', 'tfnp_trax.export')

# (package directory, forbidden module prefixes, why)
RULES = [
    ('distribute', ('tfnp_trax',), 'distribute sits below tfnp_trax'),
    ('tfnp_trax/fastmath', ABOVE_FASTMATH,
     'fastmath is the bottom layer of tfnp_trax'),
    ('tfnp_trax/layers', TF, 'layers reach TensorFlow only through fastmath'),
    ('tfnp_trax/models', TF, 'models reach TensorFlow only through fastmath'),
    ('tfnp_trax/optimizers', TF + ('tfnp_trax.layers',),
     'optimizers use only fastmath'),
    ('tfnp_trax/supervised', ('tfnp_trax.rl',), 'supervised never imports rl'),
]


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


def violations(package_dir, forbidden):
  found = []
  for path in sorted((REPO / package_dir).rglob('*.py')):
    imports = imported_modules(path.read_text(), module_name(path),
                               path.name == '__init__.py')
    found += [f'{path.relative_to(REPO)} imports {name}'
              for name in sorted(imports)
              if any(_matches(name, p) for p in forbidden)]
  return found


@pytest.mark.parametrize('package_dir,forbidden,why', RULES,
                         ids=[r[0] for r in RULES])
def test_import_direction(package_dir, forbidden, why):
  found = violations(package_dir, forbidden)
  assert not found, f'{why}:\n' + '\n'.join(found)


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
