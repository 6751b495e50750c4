"""Trax's trainer binary: `python -m tfnp_trax.trainer --config_file=X.gin`.

This module keeps Trax's path (`trax.trainer`) and is the program; the code,
its flags and their documentation are `tfnp_trax.cli.trainer`.
"""

import sys

from tfnp_trax.cli.trainer import FLAGS
from tfnp_trax.cli.trainer import gin_bindings
from tfnp_trax.cli.trainer import main
from tfnp_trax.cli.trainer import run_configs
from tfnp_trax.cli.trainer import train_from_configs

__all__ = ['FLAGS', 'main', 'gin_bindings', 'train_from_configs',
           'run_configs']

if __name__ == '__main__':
  sys.exit(main(sys.argv))
