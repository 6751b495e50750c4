"""Optimizers: Trax's per-weight `init`/`update` API over weight trees.

Example:

>>> from tfnp_trax import optimizers
>>> opt = optimizers.Adam(learning_rate=1e-3)
>>> opt.opt_params['learning_rate'].numpy().item()
0.0010000000474974513
"""

from tfnp_trax import _reexport
from tfnp_trax.optimizers import adafactor
from tfnp_trax.optimizers import adam
from tfnp_trax.optimizers import base
from tfnp_trax.optimizers import momentum
from tfnp_trax.optimizers import rms_prop
from tfnp_trax.optimizers import sm3
from tfnp_trax.optimizers.adafactor import Adafactor
from tfnp_trax.optimizers.adam import Adam
from tfnp_trax.optimizers.base import clip_grads
from tfnp_trax.optimizers.base import l2_norm
from tfnp_trax.optimizers.base import Optimizer
from tfnp_trax.optimizers.base import SGD
from tfnp_trax.optimizers.momentum import Momentum
from tfnp_trax.optimizers.rms_prop import RMSProp
from tfnp_trax.optimizers.sm3 import MomentumType
from tfnp_trax.optimizers.sm3 import SM3

__all__ = [
    'adafactor', 'adam', 'base', 'momentum', 'rms_prop', 'sm3',
    'Adafactor', 'Adam', 'clip_grads', 'l2_norm', 'Optimizer', 'Momentum',
    'RMSProp', 'SGD', 'MomentumType', 'SM3',
]

# `trainer` (and the two trainers, as Trax exports them here) import
# tfnp_trax.supervised, which imports this package: they load on first use.
__getattr__, __dir__ = _reexport.lazy_reexports(globals(), {
    'trainer': 'tfnp_trax.optimizers.trainer',
    'Trainer': 'tfnp_trax.optimizers.trainer',
    'ReversibleSerialTrainer': 'tfnp_trax.optimizers.trainer',
})
