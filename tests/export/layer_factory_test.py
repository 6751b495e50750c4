"""Tests for LayerFactory: recording constructors and rebuilding layers."""

import json

import pytest

from tfnp_trax import export
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes


def _untrusted_model():
  return tl.Dense(2)


def test_config_is_json_and_rebuilds_the_same_architecture():
  factory = export.LayerFactory(models.MLP, layer_widths=(8, 3),
                                activation_fn=tl.Tanh)
  config = json.loads(json.dumps(factory.get_config()))
  assert config == {
      'constructor': 'tfnp_trax.models.mlp.MLP',
      'kwargs': {'layer_widths': {'__tuple__': [8, 3]},
                 'activation_fn': {
                     '__callable__': 'tfnp_trax.layers.activation_fns.Tanh'}}}
  rebuilt = export.LayerFactory.from_config(config)()
  assert repr(rebuilt) == repr(factory())
  weights, _ = rebuilt.init(shapes.ShapeDtype((2, 4)))
  assert [tuple(w.shape) for w in weights[1]] == [(4, 8), (8,)]


def test_unregistered_constructor_is_refused_when_loading():
  config = {'constructor': 'os.system', 'kwargs': {}}
  with pytest.raises(ValueError, match=r"LayerFactory: constructor "
                     r"'os.system' is neither inside tfnp_trax nor "
                     r"registered.*register_layer_constructor"):
    export.LayerFactory.from_config(config)


def test_registered_constructor_round_trips():
  export.register_layer_constructor(_untrusted_model, name='tests.Untrusted')
  config = export.LayerFactory(_untrusted_model).get_config()
  assert config == {'constructor': 'tests.Untrusted', 'kwargs': {}}
  assert export.LayerFactory.from_config(config)().name == 'Dense_2'


def test_instances_cannot_be_recorded():
  with pytest.raises(TypeError, match=r'LayerFactory: argument '
                     r'kernel_initializer = .* cannot be recorded'):
    export.LayerFactory(tl.Dense, n_units=3,
                        kernel_initializer=tl.GlorotNormalInitializer())
