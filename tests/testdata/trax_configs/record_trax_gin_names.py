"""Prints the gin names Trax 1.4.1 registers, as tfnp_trax/_gin_registry.py
holds them in `TRAX_GIN_NAMES` (run with a Trax 1.4.1 install:
`JAX_PLATFORMS=cpu python record_trax_gin_names.py`).

Each entry is (gin module, Python module that defines the object, names);
`TRAX_GIN_DENYLISTS` holds the parameters Trax keeps out of gin's reach.
Gin's own builtins and Trax's private names (leading underscore) are left out.
"""

import collections

import gin
from gin import config as gin_config
# Importing these runs every registration Trax makes at import time.
import trax  # pylint: disable=unused-import
import trax.data  # pylint: disable=unused-import
import trax.layers  # pylint: disable=unused-import
import trax.models  # pylint: disable=unused-import
import trax.optimizers  # pylint: disable=unused-import
import trax.rl  # pylint: disable=unused-import
import trax.supervised.trainer_lib  # pylint: disable=unused-import


def main():
  groups = collections.defaultdict(list)
  denylists = {}
  for _, configurable in gin_config._REGISTRY.items():  # pylint: disable=protected-access
    module = configurable.module
    if not module.startswith('trax') or configurable.name.startswith('_'):
      continue
    source = configurable.wrapped.__module__
    groups[(module, source)].append(configurable.name)
    if configurable.denylist:
      key = f'{module}.{configurable.name}'
      denylists[key] = tuple(configurable.denylist)
  print('TRAX_GIN_NAMES = (')
  for (module, source), names in sorted(groups.items()):
    print(f'    ({module!r}, {source!r}, (')
    line = '       '
    names = sorted(names)
    for i, name in enumerate(names):
      item = f' {name!r},' + (')),' if i == len(names) - 1 else '')
      if len(line) + len(item) > 79:
        print(line)
        line = '       '
      line += item
    print(line)
  print(')')
  print()
  print('TRAX_GIN_DENYLISTS = {')
  for key, value in sorted(denylists.items()):
    item = f'    {key!r}: {value!r},'
    if len(item) > 79:
      item = f'    {key!r}: (\n        {str(value)[1:]},'
    print(item)
  print('}')
  del gin


if __name__ == '__main__':
  main()
