"""`tfnp_trax._reexport.lazy_reexports`: Trax's paths without import circles."""

import sys
import types

import pytest

from tfnp_trax import _reexport
from tfnp_trax.layers import combinators
from tfnp_trax.layers import flow


def _module(name, aliases):
  """A fresh module whose `__getattr__`/`__dir__` come from `aliases`."""
  module = types.ModuleType(name)
  module.own = 1
  module.__getattr__, module.__dir__ = _reexport.lazy_reexports(
      vars(module), aliases)
  return module


def test_combinators_keep_trax_paths_for_the_flow_layers():
  for name in ('Scan', 'Cond', 'Chunk', 'Cache', 'BatchLeadingAxes',
               'Bidirectional', 'SerialWithSideOutputs'):
    assert getattr(combinators, name) is getattr(flow, name)
    assert name in dir(combinators)
    assert name in combinators.__all__
  from tfnp_trax.layers.combinators import Scan  # pylint: disable=g-import-not-at-top
  assert Scan is flow.Scan


def test_alias_resolves_to_the_same_named_attribute_and_is_kept():
  module = _module('fake_reexporting', {'dumps': 'json'})
  assert 'dumps' not in vars(module)
  assert module.dumps is sys.modules['json'].dumps
  assert vars(module)['dumps'] is module.dumps  # Stored after first use.


def test_alias_named_like_its_module_is_the_module():
  module = _module('fake_reexporting', {'path': 'os.path'})
  assert module.path is sys.modules['os.path']


def test_dir_lists_own_names_and_aliases():
  module = _module('fake_reexporting', {'dumps': 'json'})
  names = dir(module)
  assert {'own', 'dumps', '__name__'} <= set(names)
  assert names == sorted(names)


def test_unknown_name_is_an_attribute_error_naming_the_module():
  module = _module('fake_reexporting', {'dumps': 'json'})
  with pytest.raises(AttributeError,
                     match=r"module 'fake_reexporting' has no attribute "
                           r"'nothing'"):
    module.nothing  # pylint: disable=pointless-statement
  assert not hasattr(module, 'nothing')


def test_wrong_mapping_names_the_mapping_to_fix():
  module = _module('fake_reexporting', {'no_such_name': 'json'})
  with pytest.raises(AttributeError,
                     match=r"'fake_reexporting' re-exports 'no_such_name' "
                           r"from 'json', which has no such attribute; fix "
                           r'the mapping'):
    module.no_such_name  # pylint: disable=pointless-statement
