"""Efficient attention against outputs recorded from Trax 1.4.1.

See tests/testdata/efficient_attention/README.md for the recording.
"""

import numpy as np
import pytest

from tests import _fixtures
from tfnp_trax import shapes
from tfnp_trax.layers.research import efficient_attention as ea

CONFIGS = _fixtures.json_file('efficient_attention', 'configs.json')
ARRAYS = _fixtures.arrays('efficient_attention', 'fixtures.npz')


def _arrays(case, kind):
  found = sorted((k for k in ARRAYS if k.startswith(f'{case}/{kind}')),
                 key=lambda k: int(k.rsplit(kind, 1)[1]))
  return [ARRAYS[k] for k in found]


@pytest.mark.parametrize('case', sorted(CONFIGS['cases']))
@pytest.mark.parametrize('use_reference_code', [True, False])
def test_outputs_match_trax_given_its_weights(case, use_reference_code):
  cls, kw = CONFIGS['cases'][case]
  inputs = _arrays(case, 'input')
  inputs = inputs[0] if len(inputs) == 1 else tuple(inputs)
  layer = getattr(ea, cls)(mode='eval', use_reference_code=use_reference_code,
                           **kw)
  layer.init(shapes.signature(inputs))
  layer.weights = tuple(_arrays(case, 'weight'))
  np.testing.assert_allclose(layer(inputs), ARRAYS[f'{case}/output'],
                             rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('call', sorted(CONFIGS['reprs']))
def test_printed_names_match_trax(call):
  layer = eval(f'ea.{call}', {'ea': ea})  # pylint: disable=eval-used
  assert str(layer) == CONFIGS['reprs'][call]
