"""Runs the `Example:` sections of the export docstrings."""

import doctest

import keras
import numpy as onp
import pytest
import tensorflow as tf

from tfnp_trax import export
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.export import decode_signature
from tfnp_trax.export import from_keras
from tfnp_trax.export import keras as keras_lib
from tfnp_trax.export import layer_factory
from tfnp_trax.export import saved_model
from tfnp_trax.export import tflite
from tfnp_trax.fastmath import numpy as jnp

_MODULES = [decode_signature, from_keras, keras_lib, layer_factory,
            saved_model, tflite]


@pytest.mark.filterwarnings(
    'ignore:.*tf.lite.Interpreter is deprecated:UserWarning')
@pytest.mark.parametrize('module', _MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module, tmp_path):
  names = dict(keras=keras, onp=onp, tf=tf, tl=tl, models=models,
               shapes=shapes, jnp=jnp, export_dir=str(tmp_path / 'model'),
               **{n: getattr(export, n) for n in export.__all__})
  result = doctest.testmod(module, extraglobs=names,
                           optionflags=doctest.ELLIPSIS)
  assert result.attempted > 0
  assert result.failed == 0
