"""ResNet-50 and Wide ResNet: shapes, modes and the FRN + TLU variant."""


import numpy as np
import pytest

from tests import _layer_testing as lt
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes


def _sublayers_of(layer, kind):
  found = [layer] if isinstance(layer, kind) else []
  for sub in layer.sublayers:
    found.extend(_sublayers_of(sub, kind))
  return found


def test_resnet50_defaults_build_batch_norm_and_relu():
  model = models.Resnet50()
  # 1 stem + 16 blocks * 3 + 4 shortcuts = 53 norms.
  assert len(_sublayers_of(model, tl.BatchNorm)) == 53
  assert not _sublayers_of(model, tl.FilterResponseNorm)


def test_resnet50_filter_response_norm_variant_runs_forward(rng):
  # 224 x 224 leaves the 7 x 7 map that the final average pooling expects;
  # d_hidden=2 keeps the compute small.
  x = rng.integers(0, 256, size=(1, 224, 224, 3)).astype(np.uint8)
  model = models.Resnet50(d_hidden=2, n_output_classes=5,
                          norm=tl.FilterResponseNorm,
                          non_linearity=tl.ThresholdedLinearUnit)
  assert len(_sublayers_of(model, tl.FilterResponseNorm)) == 53
  assert len(_sublayers_of(model, tl.ThresholdedLinearUnit)) == 49
  assert not _sublayers_of(model, tl.BatchNorm)
  model.init(shapes.signature(x))
  y = model(x)
  assert tuple(y.shape) == (1, 5)
  assert np.all(np.isfinite(y))


@pytest.mark.parametrize('norm,non_linearity', [
    (tl.BatchNorm, tl.Relu),
    (tl.FilterResponseNorm, tl.ThresholdedLinearUnit)])
def test_wide_resnet_runs_forward(norm, non_linearity, rng):
  x = lt.random(rng, 2, 32, 32, 3)
  model = models.WideResnet(n_blocks=1, n_output_classes=4, norm=norm,
                            non_linearity=non_linearity)
  model.init(shapes.signature(x))
  assert len(_sublayers_of(model, norm)) == 7  # 2 per block, 1 at the end.
  y = model(x)
  assert tuple(y.shape) == (2, 4)
  assert np.all(np.isfinite(y))


def test_wide_resnet_batch_norm_statistics_move_only_in_train(rng):
  x = lt.random(rng, 2, 32, 32, 3) + 1.0
  outputs = {}
  for mode in ('train', 'eval'):
    model = models.WideResnet(n_blocks=1, n_output_classes=3, mode=mode,
                              bn_momentum=0.5)
    weights, state = model.init(shapes.signature(x))
    norms = _sublayers_of(model, tl.BatchNorm)
    assert len(norms) == 7
    assert all(n._momentum == 0.5 for n in norms)  # pylint: disable=protected-access
    before = [lt.leaves(n.state) for n in norms]
    outputs[mode] = model(x, weights=weights, state=state)
    after = [lt.leaves(n.state) for n in norms]
    counts = [int(a[2]) for a in after]
    assert counts == ([1] * 7 if mode == 'train' else [0] * 7)
    moved = [not np.allclose(a[0], b[0]) for a, b in zip(after, before)]
    assert all(moved) if mode == 'train' else not any(moved)
  assert not np.allclose(outputs['train'], outputs['eval'])
