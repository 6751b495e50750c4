"""`python -m tfnp_trax.cli` runs the `tfnp-trax` command."""

import sys

from tfnp_trax.cli import run

sys.exit(run())
