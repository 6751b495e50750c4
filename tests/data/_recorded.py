"""Reads tests/testdata/trax_data/inputs.npz, recorded from real Trax 1.4.1."""

import numpy as np

from tests import _fixtures

_DATA = _fixtures.arrays('trax_data', 'inputs.npz')


def load(case):
  """The recorded examples of `case`, each a tuple of arrays."""
  out = []
  for i in range(int(_DATA[f'{case}/n'])):
    example, j = [], 0
    while f'{case}/{i}/{j}' in _DATA:
      example.append(_DATA[f'{case}/{i}/{j}'])
      j += 1
    out.append(tuple(example))
  return out


def assert_same(want, got, exact=True):
  """Same number of examples, each with equal shapes, dtypes and values."""
  got = [g if isinstance(g, tuple) else (g,) for g in got]
  assert len(got) == len(want), (len(got), len(want))
  for i, (w, g) in enumerate(zip(want, got)):
    assert len(w) == len(g), (i, len(w), len(g))
    for j, (a, b) in enumerate(zip(w, g)):
      b = np.asarray(b)
      assert a.shape == b.shape, (i, j, a.shape, b.shape)
      assert a.dtype == b.dtype, (i, j, a.dtype, b.dtype)
      if exact:
        np.testing.assert_array_equal(a, b, err_msg=f'example {i} pos {j}')
      else:
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
