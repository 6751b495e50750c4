"""ConfigurableTerraformer against real Trax, in every mode and in decoding.

Trax 1.4.1 built the same tiny models (tests/testdata/terraformer/, made
by make_fixtures.py there); with Trax's weights ours must print the same,
have the same weight leaves and give Trax's outputs. Predict mode must
give Trax's step-by-step logits and, decoding token by token, the logits a
full forward pass computes.
"""

import functools
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tests import _fixtures
from tests import _layer_testing as lt
from tests import _subprocess
from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import models
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import rnn
from tfnp_trax.layers import weight_files
from tfnp_trax.models.research import _terraformer_layers
from tfnp_trax.models.research import terraformer

_DIR = _fixtures.path('terraformer')
_RECORDING = _fixtures.Recording('terraformer', 'cases.json', 'cases.npz')
_RECORDS, _ARRAYS = _RECORDING.records, _RECORDING.arrays
_arrays = _RECORDING.numbered
_CONFIGS = _fixtures.path('trax_configs')

TINY = dict(input_vocab_size=16, d_model=8, d_ff=16, n_heads=2, max_len=16,
            dropout=0.1)
SELF_ATTN = functools.partial(tl.SelfAttention, predict_mem_len=16,
                              predict_drop_len=16)
# The arguments of make_fixtures.py's cases (on top of TINY).
CASES = {
    'terra_eval': dict(n_encoder_layers=1, n_decoder_layers=1),
    'terra_variants': dict(
        output_vocab_size=12, n_encoder_layers=2, n_decoder_layers=4,
        reversible_encoder=True, use_two_swaps_per_encoder_block=False,
        n_layers_forget=1, center_layernorm=False, ff_use_sru=(1, 4),
        n_decoder_attention_layers=1,
        encoder_decoder_attention_type=[tl.SelfAttention,
                                        tl.CausalAttention],
        pos_type='sin-cos', d_attention_key=2, d_attention_value=6),
    'terra_double': dict(n_encoder_layers=1, n_decoder_layers=2,
                         double_after_layer=0, forget_dense=False,
                         n_layers_forget=1),
    'terra_vectors': dict(input_vocab_size=None, output_vocab_size=16,
                          n_encoder_layers=1, n_decoder_layers=1,
                          pos_type=None, ff_chunk_size=2),
    'terra_sparse': dict(n_encoder_layers=1, n_decoder_layers=1,
                         ff_sparsity=4, loss_sparsity=2,
                         loss_sparsity_type='mult'),
    'terra_self': dict(n_encoder_layers=1, n_decoder_layers=2,
                       encoder_decoder_attention_type=SELF_ATTN),
    'terra_causal': dict(n_encoder_layers=1, n_decoder_layers=1,
                         encoder_decoder_attention_type=tl.CausalAttention),
}


def _inputs(name):
  return tuple(jnp.asarray(x) for x in _arrays(name, 'x'))


def _build(name, mode='eval'):
  return terraformer.ConfigurableTerraformer(mode=mode,
                                             **dict(TINY, **CASES[name]))


def _with_trax_weights(name, mode='eval'):
  model = _build(name, mode)
  model.init(shapes.signature(_inputs(name)),
             rng=fastmath.random.get_prng(0))
  leaves = [jnp.asarray(w) for w in _arrays(name, 'w')]
  model.weights = fastmath.tree_unflatten(leaves, model.weights)[0]
  return model


def _predict_model(name, eval_model):
  """The case in predict mode, with `eval_model`'s weights."""
  tok_e, tok_d = _inputs(name)
  model = _build(name, 'predict')
  model.init(shapes.signature((tok_e, tok_d[:, :1])))
  model.weights = fastmath.tree_unflatten(
      fastmath.tree_flatten(eval_model.weights), model.weights)[0]
  return model


def _decode(model, tok_e, tok_d):
  """Step logits, feeding 0 and then each target token, one per call."""
  fed = np.concatenate([np.zeros_like(tok_d[:, :1]), tok_d[:, :-1]], 1)
  return [np.asarray(model((tok_e, jnp.asarray(fed[:, t:t + 1])))[0])
          for t in range(tok_d.shape[1])]


# -- Against Trax ----------------------------------------------------------


@pytest.mark.parametrize('name', sorted(CASES))
def test_structure_and_eval_outputs_match_trax(name):
  model = _with_trax_weights(name)
  record = _RECORDS[name]
  assert str(model) == record['repr']
  assert (model.n_in, model.n_out) == (record['n_in'], record['n_out'])
  assert [list(w.shape) for w in fastmath.tree_flatten(model.weights)] == (
      record['weight_shapes'])
  # terra_eval runs in every mode; the others eagerly (they share the code).
  modes = lt.MODES if name == 'terra_eval' else ('eager',)
  for mode in modes:
    got = lt.run_layer(model, _inputs(name), mode)[0]
    for g, want in zip(got, _arrays(name, 'y')):
      lt.assert_close(lt.to_numpy64(g), want.astype(np.float64), rtol=1e-4,
                      atol=1e-5, err_msg=f'{name} ({mode})')


def test_predict_decoding_matches_trax_and_recomputation():
  evaluator = _with_trax_weights('terra_self')
  tok_e, tok_d = _inputs('terra_self')
  full = np.asarray(evaluator((tok_e, tok_d))[0])
  model = _predict_model('terra_self', evaluator)
  assert str(model) == _RECORDS['terra_self_predict']['repr']
  steps = _decode(model, tok_e, np.asarray(tok_d))
  for t, logits in enumerate(steps):
    assert logits.shape == (2, 1, 16)
    np.testing.assert_allclose(logits, _ARRAYS[f'terra_self_predict/step{t}'],
                               rtol=1e-4, atol=1e-5, err_msg=f'step {t}')
    # One token at a time, with caches, equals the full forward pass.
    np.testing.assert_allclose(logits[:, 0], full[:, t], rtol=1e-4,
                               atol=1e-5, err_msg=f'step {t}')


@pytest.mark.parametrize('mode', ['jit', 'xla'])
def test_predict_decoding_compiled(mode):
  evaluator = _with_trax_weights('terra_self')
  tok_e, tok_d = _inputs('terra_self')
  model = _predict_model('terra_self', evaluator)
  step = lt.compile_fn(model.pure_fn, mode)
  state, rng = model.state, fastmath.random.get_prng(0)
  fed = np.concatenate([np.zeros((2, 1), np.int32), np.asarray(tok_d)[:, :-1]],
                       1)
  for t in range(3):
    (logits, _), state = step((tok_e, jnp.asarray(fed[:, t:t + 1])),
                              model.weights, state, rng)
    np.testing.assert_allclose(np.asarray(logits),
                               _ARRAYS[f'terra_self_predict/step{t}'],
                               rtol=1e-4, atol=1e-5, err_msg=f'step {t}')


def test_causal_predict_skips_source_padding_as_trax_does():
  evaluator = _with_trax_weights('terra_causal')
  tok_e, tok_d = _inputs('terra_causal')
  assert int(np.sum(np.asarray(tok_e) == 0)) == 1  # The padding to skip.
  full = np.asarray(evaluator((tok_e, tok_d))[0])
  model = _predict_model('terra_causal', evaluator)
  for t, logits in enumerate(_decode(model, tok_e, np.asarray(tok_d))):
    np.testing.assert_allclose(
        logits, _ARRAYS[f'terra_causal_predict/step{t}'], rtol=1e-4,
        atol=1e-5, err_msg=f'step {t}')
    np.testing.assert_allclose(logits[:, 0], full[:, t], rtol=1e-4,
                               atol=1e-5, err_msg=f'step {t}')


def test_weight_file_written_by_trax_loads():
  model = _build('terra_eval')
  # Weights only: Trax saved the model after a call, when the joining
  # layers' "first call done" flags had become shape (1,) (they are () at
  # init), which the state check of a full load refuses.
  weight_files.init_from_file(model, str(_DIR / 'terra_eval.pkl.gz'),
                              weights_only=True)
  direct = _with_trax_weights('terra_eval')
  xs = _inputs('terra_eval')
  for got, want in zip(model(xs), direct(xs)):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  np.testing.assert_allclose(np.asarray(model(xs)[0]),
                             _ARRAYS['terra_eval/y0'], rtol=1e-4, atol=1e-5)


# -- Beyond Trax --------------------------------------------------------------


def test_half_before_layer_builds_with_integer_widths():
  # Trax 1.4.1 halves the widths with `/`, which fails; ours halves exactly.
  model = terraformer.ConfigurableTerraformer(
      16, d_model=16, d_ff=16, n_heads=2, n_encoder_layers=1,
      n_decoder_layers=2, half_before_layer=1, mode='eval')
  xs = _inputs('terra_eval')
  model.init(shapes.signature(xs))
  logits, targets = model(xs)
  assert tuple(logits.shape) == (2, 6, 16)
  np.testing.assert_array_equal(np.asarray(targets), np.asarray(xs[1]))
  text = str(model)
  assert 'ReversibleConcatenatePair' in text and 'Embedding_16_8' in text
  # The first decoder layer runs at width 8, the second at 16.
  widths = [w.shape[-1] for w in fastmath.tree_flatten(model.weights)
            if len(w.shape) == 2]
  assert 8 in widths and 16 in widths


def test_predict_mode_puts_the_sru_hook_back():
  before = rnn.ScanSRUCell
  model = terraformer.ConfigurableTerraformer(
      16, d_model=8, d_ff=16, n_heads=2, n_encoder_layers=1,
      n_decoder_layers=1, ff_use_sru=1, mode='predict',
      encoder_decoder_attention_type=SELF_ATTN)
  assert rnn.ScanSRUCell is before
  # The decoder's SRU reads the source mask through the portal.
  tok_e, tok_d = _inputs('terra_eval')
  model.init(shapes.signature((tok_e, tok_d[:, :1])))
  assert '_PortalOutput' in _all_names(model)
  with pytest.raises(ValueError, match='n_heads'):
    with _terraformer_layers.predict_mask_hooks(
        _terraformer_layers.PortalInput()):
      assert rnn.ScanSRUCell is not before
      terraformer.ConfigurableTerraformer(16, d_model=6, n_heads=2)
  assert rnn.ScanSRUCell is before


def _all_names(layer):
  return [layer.name] + [n for sub in layer.sublayers for n in _all_names(sub)]


def test_portal_passes_its_input_to_its_output_in_the_same_call():
  portal = _terraformer_layers.PortalInput()
  model = tl.Serial(portal, tl.Select([0, 0]),
                    tl.Parallel([], [tl.Drop(), portal.get_layer()]))
  x = jnp.asarray([[1, 0, 1]], dtype=jnp.int32)
  model.init(shapes.signature(x))
  first, second = model(x)
  np.testing.assert_array_equal(np.asarray(first), [[1, 0, 1]])
  np.testing.assert_array_equal(np.asarray(second), [[1, 0, 1]])
  assert str(portal) == '_PortalInput'


def test_bad_arguments_name_the_model():
  with pytest.raises(ValueError, match=r'ConfigurableTerraformer: n_heads '
                     r'\(4\) must divide d_model/2 \(6\.0\); got '
                     r'd_model=12'):
    terraformer.ConfigurableTerraformer(16, d_model=12, n_heads=4)
  with pytest.raises(ValueError, match=r'n_decoder_layers \(3\) must be a '
                     r'multiple of the number of '
                     r'encoder_decoder_attention_type entries \(2\)'):
    terraformer.ConfigurableTerraformer(
        16, d_model=8, n_heads=2, n_decoder_layers=3,
        encoder_decoder_attention_type=[tl.SelfAttention, tl.SelfAttention])


def test_exported_as_in_trax():
  assert models.ConfigurableTerraformer is terraformer.ConfigurableTerraformer
  assert models.terraformer is terraformer


# -- Trax's configs through the trainer ---------------------------------------

_SHRINK = [
    'simple_sequence_copy_inputs.batch_size = 2',
    'simple_sequence_copy_inputs.train_length = 16',
    'simple_sequence_copy_inputs.eval_min_length = 4',
    'simple_sequence_copy_inputs.eval_max_length = 16',
    'simple_sequence_copy_inputs.pad_to_multiple = 16',
    'ConfigurableTerraformer.d_model = 16',
    'ConfigurableTerraformer.d_ff = 32',
    'ConfigurableTerraformer.n_encoder_layers = 1',
    'ConfigurableTerraformer.n_decoder_layers = 1',
    'ConfigurableTerraformer.d_attention_key = 4',
    'ConfigurableTerraformer.d_attention_value = 4',
    'train.steps = 20', 'train.eval_steps = 1', 'train.eval_frequency = 20',
]
# The configs' own attention settings stay: their LSH layers hash 16-token
# sequences into n_buckets=[32, 32] (1024 buckets, chunk_len 16,
# max_length_for_buckets=1024), as Trax trains them.
_SHRINK_ATTENTION = {
    'terraformer_copy': [],
    'terraformer_copy_self_attn': [],
    'terraformer_purelsh_copy': [],
}


@pytest.mark.parametrize('name', [
    'terraformer_copy', 'terraformer_copy_self_attn',
    'terraformer_purelsh_copy'])
def test_trax_config_trains_20_steps(name, tmp_path):
  flags = [f'--config={b}' for b in _SHRINK + _SHRINK_ATTENTION[name]]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  out = subprocess.run(
      [sys.executable, '-m', 'tfnp_trax.trainer',
       f'--config_file={_CONFIGS / name}.gin', *flags,
       f'--output_dir={tmp_path / "run"}'],
      capture_output=True, text=True, timeout=300, env=env,
      cwd=_subprocess.REPO, check=False)
  assert out.returncode == 0, out.stderr[-3000:]
  assert 'Finished training.' in out.stdout
  losses = {int(step): float(value) for step, value in re.findall(
      r'Step\s+(\d+): train WeightedCategoryCrossEntropy \|\s+(\S+)',
      out.stdout)}
  assert sorted(losses) == [1, 20], out.stdout[-2000:]
  assert all(math.isfinite(v) and v > 0 for v in losses.values())
  assert os.path.isdir(tmp_path / 'run' / 'checkpoints' / 'ckpt-20')
