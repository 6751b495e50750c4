"""Trax's RL trainer binary: `python -m tfnp_trax.rl_trainer --config_file=X`.

This module keeps Trax's path (`trax.rl_trainer`, which Trax's RL configs
import) and is the program; the code and its flags are
`tfnp_trax.cli.rl_trainer`.
"""

import sys

from tfnp_trax.cli.rl_trainer import FLAGS
from tfnp_trax.cli.rl_trainer import main
from tfnp_trax.cli.rl_trainer import train_rl

__all__ = ['FLAGS', 'main', 'train_rl']

if __name__ == '__main__':
  sys.exit(main(sys.argv))
