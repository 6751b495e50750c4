"""Trax 1.4.1 recordings of FAVOR and sparse feed-forward layers.

See tests/testdata/sparsity_part2/README.md for how they were made.
`check_recorded(case)` builds the tfnp_trax layer with the recorded
arguments, checks its printed form and weight shapes and dtypes against
Trax's, loads Trax's weights and compares outputs in every execution mode.
"""

import numpy as np

from tests import _fixtures
from tests import _layer_testing as lt
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp

__all__ = ['CONFIGS', 'ARRAYS', 'cases_of', 'arrays', 'inputs_of',
           'build_recorded', 'check_recorded']

CONFIGS = _fixtures.json_file('sparsity_part2', 'configs.json')
ARRAYS = _fixtures.arrays('sparsity_part2', 'fixtures.npz')


def cases_of(*classes):
  return sorted(c for c, cfg in CONFIGS.items() if cfg['cls'] in classes)


def arrays(case, kind):
  """The recorded arrays `case/kind0`, `case/kind1`, ... in order."""
  found = sorted((k for k in ARRAYS if k.startswith(f'{case}/{kind}')
                  and k[len(case) + len(kind) + 1:].isdigit()),
                 key=lambda k: int(k[len(case) + len(kind) + 1:]))
  return [ARRAYS[k] for k in found]


def inputs_of(case):
  xs = arrays(case, 'input')
  return xs[0] if len(xs) == 1 else tuple(xs)


def build_recorded(case):
  """The layer of `case`, initialized, with Trax's weights loaded."""
  cfg = CONFIGS[case]
  layer = getattr(tl, cfg['cls'])(**cfg['kwargs'])
  layer.init(shapes.signature(inputs_of(case)))
  got = fastmath.tree_leaves(layer.weights)
  assert [list(w.shape) for w in got] == cfg['weight_shapes'], case
  assert [w.dtype.name for w in got] == cfg['weight_dtypes'], case
  leaves = [jnp.asarray(w) for w in arrays(case, 'weight')]
  layer.weights = fastmath.tree_unflatten(leaves, layer.weights)[0]
  projection = f'{case}/projection'
  if projection in ARRAYS:
    layer._projection_matrix = jnp.asarray(ARRAYS[projection])  # pylint: disable=protected-access
  return layer


def check_recorded(case, modes=('eager', 'xla'), atol=1e-5):
  """Printed form, weight layout and outputs of `case` equal Trax's."""
  cfg = CONFIGS[case]
  layer = build_recorded(case)
  assert str(layer) == cfg['repr'], case
  assert (layer.n_in, layer.n_out) == (cfg['n_in'], cfg['n_out']), case
  want = arrays(case, 'output')
  for mode in modes:
    got, _ = lt.run_layer(layer, inputs_of(case), mode)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(want), (case, mode)
    for g, w in zip(got, want):
      assert g.dtype.name == w.dtype.name, (case, mode, g.dtype, w.dtype)
      np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=atol,
                                 err_msg=f'{case} ({mode})')
  return layer
