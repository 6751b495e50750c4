r"""Trax's trainer binary: `python -m tfnp_trax.trainer --config_file=X.gin`.

Parses gin files and bindings with Trax's names (Trax's own `.gin` files
work unchanged, see `tfnp_trax.gin_config`) and runs
`tfnp_trax.supervised.trainer_lib.train`. The flags are Trax's:

  python -m tfnp_trax.trainer \
      --config_file=gru_copy.gin --config='train.steps = 100' \
      --output_dir=/tmp/gru_copy

This module keeps Trax's path (`trax.trainer`) and is the program; the code
is `tfnp_trax.cli.trainer`, beside the other commands' flags and checks.
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
