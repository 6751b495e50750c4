"""RNNLM and GRULM: output shapes, normalization and causality."""

import doctest

import numpy as np
import pytest

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models import rnn

_VOCAB = 7


def _models():
  return [
      ('RNNLM-2', lambda mode: models.RNNLM(_VOCAB, d_model=4, mode=mode)),
      ('RNNLM-1', lambda mode: models.RNNLM(_VOCAB, d_model=4, n_layers=1,
                                            mode=mode)),
      ('RNNLM-3-GRU', lambda mode: models.RNNLM(
          _VOCAB, d_model=4, n_layers=3, rnn_cell=tl.GRUCell,
          rnn_cell_d_state_multiplier=1, mode=mode)),
      ('GRULM', lambda mode: models.GRULM(_VOCAB, d_model=4, n_layers=2,
                                          mode=mode)),
  ]


@pytest.mark.parametrize('name,make', _models())
def test_language_models_output_log_probabilities(name, make, rng):
  ids = jnp.asarray(rng.integers(0, _VOCAB, size=(2, 5)), jnp.int32)
  model = make('train')
  model.init(shapes.signature(ids))
  y = model(ids)
  assert tuple(y.shape) == (2, 5, _VOCAB), name
  np.testing.assert_allclose(np.exp(y).sum(-1), np.ones((2, 5)), rtol=1e-5)


@pytest.mark.parametrize('name,make', _models())
def test_language_models_are_causal(name, make, rng):
  ids = rng.integers(0, _VOCAB, size=(2, 6))
  changed = ids.copy()
  changed[:, 3] = (ids[:, 3] + 1) % _VOCAB
  model = make('eval')
  model.init(shapes.ShapeDtype((2, 6), jnp.int32))
  # Unit-scale weights, so that every input visibly moves the outputs.
  weights = fastmath.nested_map(
      lambda w: jnp.asarray(rng.normal(size=w.shape), jnp.float32),
      model.weights)
  y = model(jnp.asarray(ids, jnp.int32), weights=weights).numpy()
  y_changed = model(jnp.asarray(changed, jnp.int32), weights=weights).numpy()
  # Inputs are shifted right: token 3 first affects the output at 4.
  np.testing.assert_array_equal(y[:, :4], y_changed[:, :4], err_msg=name)
  assert np.all(np.abs(y[:, 4:] - y_changed[:, 4:]).max(-1) > 1e-3), name


def test_rnnlm_rejects_gru_cell_with_lstm_state_multiplier():
  model = models.RNNLM(_VOCAB, d_model=4, rnn_cell=tl.GRUCell)
  with pytest.raises(tl.LayerError, match=r'GRUCell_4: state last dim 8 must '
                     r'be n_units = 4'):
    model.init(shapes.ShapeDtype((2, 5), jnp.int32))


def test_rnnlm_rejects_zero_layers():
  with pytest.raises(ValueError, match=r'RNNLM: n_layers must be at least 1, '
                     r'got 0'):
    models.RNNLM(_VOCAB, n_layers=0)


def test_docstring_examples():
  result = doctest.testmod(rnn, optionflags=doctest.ELLIPSIS)
  assert result.attempted > 0 and result.failed == 0
