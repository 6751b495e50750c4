"""tfnp_trax: Trax's combinator deep-learning API on TensorFlow NumPy."""

import sys as _sys  # Private: `tfnp_trax.<tab>` shows only the API.

# First, in a command-line process only (no-op in others): a bad flag is
# a usage error before TensorFlow's seconds-long import, and the command
# hides TensorFlow's C++ start-up logging, which only works before it.
from tfnp_trax import cli as _cli
_cli.before_tensorflow_import()

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

# Trax's layers/__init__.py makes PureLSHSelfAttention and
# PureLSHSelfAttentionWrapper gin configurables under `trax.layers`
# (denylist 'mode') on import, and its tests bind them from Python
# (`gin.bind_parameter('PureLSHSelfAttention.chunk_len', 2)`) before any
# config is parsed. tfnp_trax imports gin only when it is used, so they are
# registered here when gin is already imported, else with the other Trax
# names when a config is parsed. Gin wraps their `__init__` in place: the
# classes stay the same objects, and a call without bindings is unchanged.
if 'gin' in _sys.modules:
  from tfnp_trax import _gin_registry  # pylint: disable=g-import-not-at-top
  _gin_registry.register_in_place()

_cli.after_tensorflow_import()  # TensorFlow is imported.

__version__ = '0.1.0'

__all__ = ['data', 'fastmath', 'layers', 'models', 'optimizers', 'shapes',
           'supervised', 'lr', 'AsKeras', 'alias_trax_modules',
           'unalias_trax_modules', '__version__']
