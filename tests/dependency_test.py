"""Keeps the import rules of the codebase true by walking imports with ast.

Every import counts, wherever it is in a file (a lazy import inside a
function too). The names that a module shows through the shared re-export
helper `tfnp_trax/_reexport.py` (Trax's module paths kept as data, imported
on first use) are not imports: the helper names their homes by strings.
Packages that do not exist yet are checked as soon as they appear. A
"package" here is `distribute`, the top package `tfnp_trax` (its own
modules), or a direct subpackage of tfnp_trax with all that is below it
(`tfnp_trax.layers` includes `tfnp_trax.layers.research`).

The rules (each failure names the file, the import, the rule and the fix):

1. Import direction (RULES): distribute -> fastmath -> layers -> models,
   and fastmath -> optimizers. distribute imports nothing of tfnp_trax;
   fastmath imports none of the packages above it; optimizers never import
   layers; supervised never imports rl; layers import neither supervised,
   rl, models, export, data nor cli; models import neither supervised nor
   rl; export does not import supervised.
2. Private modules stay in their package: no module imports another
   package's `_private` module (one whose last name starts with a single
   underscore). The one exception is the re-export helper
   `tfnp_trax._reexport` (SHARED_PRIVATE), which exists to be imported by
   every package.
3. No import cycle between files: the modules other than package
   `__init__` files, linked by their imports of one another (imports of a
   package `__init__` do not count), form no cycle.
4. `layers/acceleration.py` goes through `tfnp_trax.fastmath`: it imports
   neither TensorFlow nor JAX itself.
5. Where TensorFlow may be imported: TensorFlow (with Keras, TFP, TFDS and
   the other `tensorflow_*` packages) is imported directly only in the
   places listed in TF_ALLOWED, each for the reason given there:
   distribute/ and fastmath/ (with shapes.py, which fastmath builds on) are
   the backend seam, and supervised/, rl/, export/ and data/ use
   TensorFlow's runtime itself (tf.function steps, tf.distribute,
   checkpoints and summaries, SavedModel and TFLite files, tf.data
   pipelines), which no NumPy-style API covers. Every other module in
   tfnp_trax, above all layers/, models/ and optimizers/, may not import
   it: the math of a layer, model or optimizer goes through
   `tfnp_trax.fastmath` (jnp, fastmath.random, fastmath.jit, ...), so it
   keeps one backend seam and stays readable as Trax code. (Trax's layers
   called jax.lax directly and that broke its own TensorFlow backend.) A
   new package is TensorFlow-free until it is added to TF_ALLOWED with its
   reason.
6. Every public `__init__.py` lists its exports explicitly in `__all__`
   (no `import *`).
"""

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
ROOTS = ('tfnp_trax', 'distribute')
ABOVE_FASTMATH = ('tfnp_trax.layers', 'tfnp_trax.models',
                  'tfnp_trax.optimizers', 'tfnp_trax.supervised',
                  'tfnp_trax.rl', 'tfnp_trax.export')
_MOVE_DOWN = ('move what both need down into {below} (or into a small '
              'module both import); a Trax module path that must stay '
              'is a lazy alias declared with tfnp_trax._reexport')

# (package directory, forbidden module prefixes, why, fix)
RULES = [
    ('distribute', ('tfnp_trax',), 'distribute sits below tfnp_trax',
     _MOVE_DOWN.format(below='distribute')),
    ('tfnp_trax/fastmath', ABOVE_FASTMATH,
     'fastmath is the bottom layer of tfnp_trax',
     _MOVE_DOWN.format(below='fastmath')),
    ('tfnp_trax/optimizers', ('tfnp_trax.layers',),
     'optimizers use only fastmath', _MOVE_DOWN.format(below='optimizers')),
    ('tfnp_trax/supervised', ('tfnp_trax.rl',), 'supervised never imports rl',
     _MOVE_DOWN.format(below='supervised')),
    ('tfnp_trax/layers',
     ('tfnp_trax.supervised', 'tfnp_trax.rl', 'tfnp_trax.models',
      'tfnp_trax.export', 'tfnp_trax.data', 'tfnp_trax.cli'),
     'layers import neither supervised, rl, models, export, data nor cli',
     _MOVE_DOWN.format(below='layers')),
    ('tfnp_trax/models', ('tfnp_trax.supervised', 'tfnp_trax.rl'),
     'models import neither supervised nor rl',
     _MOVE_DOWN.format(below='models or layers')),
    ('tfnp_trax/export', ('tfnp_trax.supervised',),
     'export does not import supervised',
     _MOVE_DOWN.format(below='export or layers')),
]

# Private modules that every package may import, and why.
SHARED_PRIVATE = {
    'tfnp_trax._reexport': 'the one helper that declares the lazy aliases '
                           "keeping Trax's module paths",
}
PRIVATE_FIX = ('make it public (drop the underscore, give it __all__), or '
               'move the helper into the importing package, or down into a '
               'small module both packages may use')
CYCLE_FIX = ('a file-level import circle usually means a helper sits one '
             'floor too high: move it into a small module both import, and '
             'keep any Trax module path with a lazy alias '
             '(tfnp_trax._reexport)')

ACCELERATION = 'tfnp_trax/layers/acceleration.py'
ACCELERATION_FIX = ('call tfnp_trax.fastmath (fastmath.jit, fastmath.pmap, '
                    'fastmath.device_count, ...) instead; add what is '
                    'missing to fastmath')

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


def import_sites(source, module, is_package=False):
  """Every module a source file imports, anywhere in it: {name: first line}.

  `from a import b` yields both `a` and `a.b`, since `b` may be a module.
  Relative imports are resolved against `module`.
  """
  sites = {}
  for node in ast.walk(ast.parse(source)):
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
      if node.level:
        package = module.split('.')
        if not is_package:
          package = package[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = '.'.join(package + ([node.module] if node.module else []))
      else:
        base = node.module
      names = [base] + [f'{base}.{alias.name}' for alias in node.names]
    else:
      continue
    for name in names:
      sites[name] = min(sites.get(name, node.lineno), node.lineno)
  return sites


def imported_modules(source, module, is_package=False):
  """The dotted names `import_sites` finds, as a set."""
  return set(import_sites(source, module, is_package))


def _matches(name, prefix):
  return name == prefix or name.startswith(prefix + '.')


def _sites_of(path):
  return import_sites(path.read_text(), module_name(path),
                      path.name == '__init__.py')


def _imports_of(path):
  return set(_sites_of(path))


def _where(path, line):
  return f'{path.relative_to(REPO)}:{line}'


def violations(package_dir, forbidden):
  found = []
  for path in sorted((REPO / package_dir).rglob('*.py')):
    sites = _sites_of(path)
    found += [f'{_where(path, sites[name])} imports {name}'
              for name in sorted(sites)
              if any(_matches(name, p) for p in forbidden)]
  return found


def _tf_allowed(path):
  rel = path.relative_to(REPO)
  return any(rel == pathlib.Path(place) or pathlib.Path(place) in rel.parents
             for place in TF_ALLOWED)


@pytest.mark.parametrize('package_dir,forbidden,why,fix', RULES,
                         ids=[r[0] for r in RULES])
def test_import_direction(package_dir, forbidden, why, fix):
  found = violations(package_dir, forbidden)
  assert not found, (f'rule: {why}; fix: {fix}. {len(found)} import(s):\n' +
                     '\n'.join(found))


# -- The module graph ------------------------------------------------------
def _modules():
  """{dotted module name: path} for every module of tfnp_trax and distribute."""
  return {module_name(p): p for root in ROOTS
          for p in sorted((REPO / root).rglob('*.py'))}


def package_of(module):
  """The package a module belongs to (see the module docstring)."""
  parts = module.split('.')
  if parts[0] == 'tfnp_trax' and len(parts) > 2:
    return '.'.join(parts[:2])
  if parts[0] == 'tfnp_trax' and len(parts) == 2 and (
      REPO / 'tfnp_trax' / parts[1]).is_dir():
    return module  # A subpackage's own __init__.
  return parts[0]


def is_private(module):
  last = module.rsplit('.', 1)[-1]
  return last.startswith('_') and not last.startswith('__')


def private_imports(modules):
  """`file:line imports name` for each import of another package's private."""
  found = []
  for module, path in modules.items():
    sites = _sites_of(path)
    for name in sorted(sites):
      if (name in modules and name != module and is_private(name) and
          name not in SHARED_PRIVATE and
          package_of(name) != package_of(module)):
        found.append(f'{_where(path, sites[name])} imports {name} (private '
                     f'to {package_of(name)}, imported from '
                     f'{package_of(module)})')
  return found


def file_graph(modules):
  """{module: {module: line}} between modules that are not package inits."""
  plain = {m for m, p in modules.items() if p.name != '__init__.py'}
  return {m: {n: line for n, line in _sites_of(modules[m]).items()
              if n in plain and n != m} for m in plain}


def import_cycles(graph):
  """The strongly connected components of more than one module, sorted."""
  index, low, stack, on_stack, components = {}, {}, [], set(), []
  for root in sorted(graph):
    if root in index:
      continue
    # An iterative Tarjan: (node, iterator over its successors).
    work = [(root, iter(sorted(graph[root])))]
    index[root] = low[root] = len(index)
    stack.append(root)
    on_stack.add(root)
    while work:
      node, successors = work[-1]
      for nxt in successors:
        if nxt not in index:
          index[nxt] = low[nxt] = len(index)
          stack.append(nxt)
          on_stack.add(nxt)
          work.append((nxt, iter(sorted(graph[nxt]))))
          break
        if nxt in on_stack:
          low[node] = min(low[node], index[nxt])
      else:
        work.pop()
        if work:
          parent = work[-1][0]
          low[parent] = min(low[parent], low[node])
        if low[node] == index[node]:
          component = []
          while True:
            member = stack.pop()
            on_stack.discard(member)
            component.append(member)
            if member == node:
              break
          if len(component) > 1:
            components.append(sorted(component))
  return sorted(components)


def _describe_cycle(component, graph, modules):
  inside = set(component)
  edges = [f'  {_where(modules[a], line)} imports {b}'
           for a in component for b, line in sorted(graph[a].items())
           if b in inside]
  return f'{" <-> ".join(component)}:\n' + '\n'.join(edges)


def test_no_module_imports_another_packages_private_module():
  found = private_imports(_modules())
  assert not found, (
      f'rule: a _private module is private to its package (tfnp_trax\'s '
      f'direct subpackages with all below them, the top package tfnp_trax, '
      f'distribute); only {sorted(SHARED_PRIVATE)} is shared; fix: '
      f'{PRIVATE_FIX}. {len(found)} import(s):\n' + '\n'.join(found))


def test_no_import_cycle_between_files():
  modules = _modules()
  graph = file_graph(modules)
  cycles = import_cycles(graph)
  assert not cycles, (
      f'rule: no import cycle between files (package __init__ files aside); '
      f'fix: {CYCLE_FIX}. {len(cycles)} cycle(s):\n' + '\n'.join(
          _describe_cycle(c, graph, modules) for c in cycles))


def test_acceleration_goes_through_fastmath():
  path = REPO / ACCELERATION
  sites = _sites_of(path)
  found = [f'{_where(path, sites[name])} imports {name}'
           for name in sorted(sites)
           if is_tensorflow(name) or _matches(name, 'jax') or
           _matches(name, 'jaxlib')]
  assert not found, (f'rule: {ACCELERATION} goes through tfnp_trax.fastmath; '
                     f'fix: {ACCELERATION_FIX}:\n' + '\n'.join(found))


def test_only_the_allowed_places_import_tensorflow():
  found = [f'{_where(path, line)} imports {name}'
           for root in ROOTS
           for path in sorted((REPO / root).rglob('*.py'))
           if not _tf_allowed(path)
           for name, line in sorted(_sites_of(path).items())
           if is_tensorflow(name)]
  assert not found, (f'rule: only {sorted(TF_ALLOWED)} may import '
                     f'TensorFlow; fix: {TF_FREE_FIX}:\n' + '\n'.join(found))


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


def test_checker_reports_lines_and_skips_reexport_aliases():
  source = '''from tfnp_trax import _reexport
import tensorflow as tf

def lazy():
  import tensorflow

__getattr__, __dir__ = _reexport.lazy_reexports(globals(), {
    'Scan': 'tfnp_trax.layers.flow',
})
'''
  sites = import_sites(source, 'tfnp_trax.layers.combinators')
  assert sites == {'tfnp_trax': 1, 'tfnp_trax._reexport': 1, 'tensorflow': 2}
  assert 'tfnp_trax.layers.flow' not in sites


def test_packages_and_private_names():
  for module, package in [
      ('tfnp_trax.layers.research.sparsity', 'tfnp_trax.layers'),
      ('tfnp_trax.layers._base', 'tfnp_trax.layers'),
      ('tfnp_trax.layers', 'tfnp_trax.layers'),
      ('tfnp_trax._naming', 'tfnp_trax'), ('tfnp_trax.shapes', 'tfnp_trax'),
      ('tfnp_trax', 'tfnp_trax'), ('distribute._procs', 'distribute'),
      ('distribute', 'distribute')]:
    assert package_of(module) == package, module
  assert is_private('tfnp_trax.layers._base') and is_private('_x')
  assert not is_private('tfnp_trax.layers.__init__')
  assert not is_private('tfnp_trax.layers.base')


def test_cycle_finder():
  graph = {'a': {'b'}, 'b': {'c'}, 'c': {'a', 'd'}, 'd': set(),
           'e': {'f'}, 'f': {'e'}, 'g': {'a'}}
  assert import_cycles(graph) == [['a', 'b', 'c'], ['e', 'f']]
  assert import_cycles({'a': {'b'}, 'b': set()}) == []


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
