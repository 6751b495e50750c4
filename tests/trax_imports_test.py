"""`tfnp_trax.alias_trax_modules`: Trax's module names, opt-in and lasting.

Each case runs in a fresh interpreter, since it is about `sys.modules` and
`sys.meta_path` of a whole process. The gin config is the one of Trax's
notebook trax/models/reformer/text_generation.ipynb (its import lines and a
few of its bindings), given to `gin.parse_config` itself.
"""

import textwrap

from tests import _subprocess


def _run(code):
  return _subprocess.run_python(textwrap.dedent(code), timeout=300)


def test_import_tfnp_trax_leaves_trax_names_alone():
  out = _run("""
      import sys
      finders = list(sys.meta_path)
      import tfnp_trax
      assert not [k for k in sys.modules if k.split('.')[0] == 'trax']
      # Libraries add their own finders (absl, six); tfnp_trax adds none.
      added = [f for f in sys.meta_path if f not in finders]
      assert not [f for f in added
                  if type(f).__module__.startswith('tfnp_trax')], added
      try:
        import trax
      except ModuleNotFoundError:
        print('no trax')
      """)
  assert out.strip().endswith('no trax')


def test_alias_lets_plain_gin_parse_a_trax_notebook_config():
  out = _run('''
      import sys
      import gin
      import tfnp_trax
      tfnp_trax.alias_trax_modules()
      tfnp_trax.alias_trax_modules()  # A second call changes nothing.
      gin.parse_config("""
      import trax.layers
      import trax.models
      import trax.optimizers
      import trax.data.inputs
      import trax.supervised.trainer_lib
      train.model = @trax.models.ReformerLM
      attn_type = [@trax.layers.SelfAttention, @LSHSelfAttention]
      Adam.b1 = 0.86
      multifactor.constant = 0.01
      """)
      import trax
      from trax import layers as tl
      import trax.supervised.training
      assert trax is tfnp_trax and tl is tfnp_trax.layers
      assert trax.supervised.training is tfnp_trax.supervised.training
      assert gin.query_parameter('Adam.b1') == 0.86
      assert gin.query_parameter('multifactor.constant') == 0.01
      # The reference resolves to tfnp_trax's model.
      print(gin.get_configurable('trax.models.ReformerLM').__module__)
      try:
        import trax.not_a_module
      except ModuleNotFoundError as e:
        print('missing:', e)
      tfnp_trax.unalias_trax_modules()
      assert not [k for k in sys.modules if k.split('.')[0] == 'trax']
      try:
        import trax.layers
      except ModuleNotFoundError:
        print('unaliased')
      ''')
  lines = out.strip().splitlines()
  assert lines[-3].startswith('tfnp_trax.models')
  assert 'tfnp_trax.not_a_module' in lines[-2]
  assert lines[-1] == 'unaliased'


def test_alias_refuses_when_real_trax_is_imported():
  out = _run("""
      import sys, types
      sys.modules['trax'] = types.ModuleType('trax')  # Stands for real Trax.
      import tfnp_trax
      try:
        tfnp_trax.alias_trax_modules()
      except RuntimeError as e:
        print('refused:', e)
      """)
  assert 'a real trax package is already imported' in out


def test_gin_wrapper_still_works_with_the_alias_installed():
  out = _run("""
      import sys
      import gin
      import tfnp_trax
      from tfnp_trax import gin_config
      tfnp_trax.alias_trax_modules()
      import trax.optimizers
      gin_config.parse_config(['import trax.optimizers', 'Adam.b1 = 0.8'])
      assert gin.query_parameter('Adam.b1') == 0.8
      # The wrapper's parse put the lasting alias's entries back.
      assert sys.modules['trax.optimizers'] is tfnp_trax.optimizers
      print('ok')
      """)
  assert out.strip().endswith('ok')
