"""tfnp_trax: Trax's combinator deep-learning API on TensorFlow NumPy."""

# First, in a command-line process only (no-op in others): a bad flag is
# a usage error before TensorFlow's seconds-long import, and the command
# hides TensorFlow's C++ start-up logging, which only works before it.
from tfnp_trax.cli import _preflight as _cli_preflight
_cli_preflight.check()
from tfnp_trax.cli import _quiet as _cli_quiet
_cli_quiet.begin()

# The same top-level names as `import trax`.
from tfnp_trax import data
from tfnp_trax import fastmath
from tfnp_trax import layers
from tfnp_trax import models
from tfnp_trax import optimizers
from tfnp_trax import shapes
from tfnp_trax import supervised
# Opt-in only: `import tfnp_trax` leaves `sys.modules` and `sys.meta_path`
# alone; calling alias_trax_modules() makes `import trax.*` give these.
from tfnp_trax._trax_imports import alias_trax_modules
from tfnp_trax._trax_imports import unalias_trax_modules
from tfnp_trax.export import AsKeras
from tfnp_trax.supervised import lr_schedules as lr

_cli_quiet.end()  # TensorFlow is imported: stderr as before.

__version__ = '0.1.0'

__all__ = ['data', 'fastmath', 'layers', 'models', 'optimizers', 'shapes',
           'supervised', 'lr', 'AsKeras', 'alias_trax_modules',
           'unalias_trax_modules', '__version__']
