"""Gin with Trax's names: Trax's own configs, errors, registration, imports."""

import os
import sys
import types

import gin
import pytest

from tests import _fixtures
from tests import _subprocess
from tfnp_trax import _gin_registry
from tfnp_trax import gin_config
import tfnp_trax.layers as tl
from tfnp_trax import models
from tfnp_trax import optimizers

CONFIGS = str(_fixtures.path('trax_configs'))
ALL_CONFIGS = ['gru_copy', 'rse_addition', 'mlp_mnist', 'reformer_copy',
               'reformer_addition', 'terraformer_copy',
               'terraformer_copy_self_attn', 'terraformer_purelsh_copy']
# Every Trax name these configs use has a tfnp_trax counterpart.
COMPLETE_CONFIGS = ALL_CONFIGS


@pytest.fixture(autouse=True)
def _clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _config(name):
  return os.path.join(CONFIGS, f'{name}.gin')


def _line_of(path, text):
  with open(path) as f:
    for number, line in enumerate(f, 1):
      if text in line:
        return number
  raise AssertionError(f'{text!r} not in {path}')


@pytest.fixture
def fake_trax_name(monkeypatch):
  """Adds a Trax gin name whose tfnp_trax module does not exist."""
  entry = ('trax.models', 'trax.models.research.not_there_yet',
           ('NotThereYetLM',))
  monkeypatch.setattr(_gin_registry, 'TRAX_GIN_NAMES',
                      _gin_registry.TRAX_GIN_NAMES + (entry,))
  yield 'trax.models.NotThereYetLM'
  # Forget it again, so each test starts with the name missing.
  # pylint: disable=protected-access
  with _gin_registry._LOCK:
    _gin_registry._MISSING.discard('trax.models.NotThereYetLM')
    _gin_registry._REGISTERED.pop('trax.models.NotThereYetLM', None)


def _not_there_yet_lm(d_model=4, mode='train'):
  """Stands in for a model another module adds later."""
  return (d_model, mode)


# -- Trax's own configs -------------------------------------------------------
@pytest.mark.parametrize('name', COMPLETE_CONFIGS)
def test_trax_configs_whose_names_all_exist_parse_unchanged(name):
  gin_config.parse_config_file(_config(name))
  assert 'trax' not in sys.modules
  assert gin.query_parameter('train.eval_steps') in (10, 50)


def test_trax_config_values_reach_the_tfnp_trax_objects():
  gin_config.parse_config_file(_config('gru_copy'))
  assert gin.query_parameter('RNNLM.d_model') == 128
  assert gin.query_parameter('train.model').selector == 'trax.models.RNNLM'
  model = gin.get_configurable(models.RNNLM)(mode='eval')
  # vocab 32, d_model 128, two GRU cells and a Dense, as the config asks.
  text = str(model)
  assert 'Embedding_32_128' in text and 'Dense_32' in text
  assert text.count('GRUCell_in2_out2') == 2
  adam = gin.get_configurable(optimizers.Adam)()
  assert isinstance(adam, optimizers.Adam)


def test_reformer_addition_skips_no_binding():
  path = _config('reformer_addition')
  gin_config.parse_config_file(path)
  # Its ConfigurableTerraformer bindings now reach tfnp_trax's model.
  assert gin_config.skipped_bindings() == []
  assert gin.query_parameter('ConfigurableTerraformer.d_model') == (
      gin.query_parameter('ConfigurableTransformerLM.d_model'))
  # Trax 1.4.1's ConfigurableTransformerLM arguments reach ours.
  assert gin.query_parameter(
      'ConfigurableTransformerLM.pos_start_from_zero_prob') == 0.05
  assert gin.query_parameter(
      'ConfigurableTransformerLM.pos_max_offset_to_add') == 300


def test_terraformer_copy_builds_trax_terraformer():
  gin_config.parse_config_file(_config('terraformer_copy'))
  assert gin.query_parameter('train.model').selector == (
      'trax.models.ConfigurableTerraformer')
  model_fn = gin.query_parameter('train.model').scoped_configurable_fn
  text = str(model_fn(mode='eval'))
  assert 'ReversibleHalfResidual' in text


def test_reformer_copy_builds_trax_fixed_base_reformer():
  gin_config.parse_config_file(_config('reformer_copy'))
  assert gin.query_parameter('ReformerLM.pos_type') == 'fixed-base'
  model_fn = gin.query_parameter('train.model').scoped_configurable_fn
  text = str(model_fn(mode='eval'))
  assert 'FixedBasePositionalEncoding' in text
  assert text.count('LSHSelfAttention') == 3  # n_layers = 3.


def test_config_using_a_missing_model_names_it_and_the_line(fake_trax_name,
                                                            tmp_path):
  path = tmp_path / 'uses_missing.gin'
  path.write_text('import trax.models\n\n'
                  'NotThereYetLM.d_model = 16\n'
                  'train.model = @trax.models.NotThereYetLM\n')
  with pytest.raises(gin_config.GinConfigError) as info:
    gin_config.parse_config_file(str(path))
  message = str(info.value)
  assert message.startswith(f'{fake_trax_name} is a Trax gin name that '
                            f'tfnp_trax does not provide yet')
  assert f'In file "{path}", line 4' in message
  assert 'train.model = @trax.models.NotThereYetLM' in message
  assert fake_trax_name in gin_config.missing_trax_names()


def test_bindings_of_a_missing_name_are_skipped_and_reported(fake_trax_name):
  gin_config.parse_config(['import trax.models',
                           'NotThereYetLM.d_model = 16',
                           'MLP.layer_widths = (3,)'])
  assert gin_config.skipped_bindings() == [('bindings:2', fake_trax_name)]
  assert gin.query_parameter('MLP.layer_widths') == (3,)


def test_names_that_appear_later_are_registered_on_the_next_parse(
    fake_trax_name, monkeypatch):
  with pytest.raises(gin_config.GinConfigError, match='NotThereYetLM'):
    gin_config.parse_config('train.model = @trax.models.NotThereYetLM')
  module = types.ModuleType('tfnp_trax.models.research.not_there_yet')
  module.NotThereYetLM = _not_there_yet_lm
  monkeypatch.setitem(sys.modules, module.__name__, module)
  gin_config.parse_config(['NotThereYetLM.d_model = 16',
                           'train.model = @trax.models.NotThereYetLM'])
  assert fake_trax_name not in gin_config.missing_trax_names()
  model_fn = gin.query_parameter('train.model').scoped_configurable_fn
  assert model_fn(mode='eval') == (16, 'eval')


# -- Typos --------------------------------------------------------------------
def test_unknown_configurable_suggests_the_closest_name(tmp_path):
  path = tmp_path / 'typo.gin'
  path.write_text('import trax.supervised.lr_schedules\n'
                  'multifactr.constant = 0.1\n')
  with pytest.raises(gin_config.GinConfigError,
                     match=r"(?s)Unknown gin configurable 'multifactr'\. "
                           r"Did you mean 'multifactor'\?.*line 2"):
    gin_config.parse_config_file(str(path))


def test_unknown_parameter_suggests_the_closest_and_lists_them():
  with pytest.raises(gin_config.GinConfigError) as info:
    gin_config.parse_config(['import trax.optimizers', 'Adam.b11 = 0.5'])
  message = str(info.value)
  assert message.startswith("Gin configurable 'Adam' has no parameter "
                            "'b11'. Did you mean 'b1'")
  assert ('Its parameters: learning_rate, weight_decay_rate, b1, b2, eps, '
          'clip_grad_norm.') in message
  assert 'In bindings string line 2' in message


def test_unknown_trax_module_import_is_a_clear_error():
  with pytest.raises(gin_config.GinConfigError,
                     match=r'`import trax\.modelz`: tfnp_trax has no module '
                           r'tfnp_trax\.modelz'):
    gin_config.parse_config('import trax.modelz')


# -- Registration and imports -------------------------------------------------
def test_registered_under_trax_names_with_trax_denylists():
  gin_config.register_trax_names()
  names = _gin_registry.registered_names()
  assert names['trax.layers.Relu'] is tl.Relu
  assert names['trax.models.TransformerLM'] is models.TransformerLM
  assert names['trax.optimizers.Adam'] is optimizers.Adam
  # Trax keeps `mode` of attention layers out of gin's reach.
  with pytest.raises(ValueError, match="'CausalAttention' has denylisted "
                                       "kwarg 'mode'"):
    gin_config.parse_config("CausalAttention.mode = 'eval'")


def test_known_trax_module_tfnp_trax_lacks_is_a_placeholder_while_parsing(
    fake_trax_name):
  del fake_trax_name
  gin_config.parse_config('import trax.models.research.not_there_yet')
  assert not hasattr(models.research, 'not_there_yet')
  assert 'trax.models.research.not_there_yet' not in sys.modules


def test_an_existing_trax_module_entry_is_restored(monkeypatch):
  stand_in = types.ModuleType('trax')
  monkeypatch.setitem(sys.modules, 'trax', stand_in)
  gin_config.parse_config(['import trax.optimizers', 'Adam.b1 = 0.7'])
  assert sys.modules['trax'] is stand_in
  b1 = gin.get_configurable(optimizers.Adam)().opt_params['b1']
  assert float(b1) == pytest.approx(0.7)
  assert optimizers.__spec__.name == 'tfnp_trax.optimizers'


def test_operative_config_prints_with_trax_imports():
  gin_config.parse_config(['import trax.optimizers', 'Adam.b1 = 0.7'])
  gin.get_configurable(optimizers.Adam)()
  text = gin_config.operative_config_str()
  assert 'import trax.optimizers' in text and 'Adam.b1 = 0.7' in text


def test_import_tfnp_trax_does_not_load_gin_and_rl_names_come_with_it():
  # In Trax, `import trax` loads trax.supervised, whose callbacks import
  # trax.rl: a config may bind RL names without `import trax.rl`.
  out = _subprocess.run_python('''
      import sys
      import tfnp_trax
      print('GIN', 'gin' in sys.modules,
            'tfnp_trax._gin_registry' in sys.modules)
      import gin
      from tfnp_trax import gin_config
      gin_config.parse_config('PPO.n_shared_layers = 1')
      print('BOUND', gin.query_parameter('PPO.n_shared_layers'))
      ''', timeout=120)
  assert 'GIN False False' in out
  assert 'BOUND 1' in out
