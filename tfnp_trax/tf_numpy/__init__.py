"""Trax's `trax.tf_numpy`: TensorFlow NumPy and its JAX-like extensions.

Trax code (its tests above all) writes `import trax.tf_numpy.numpy as tf_np`
and `from trax.tf_numpy import extensions as npe`. Both are thin views of
what tfnp_trax already has: `numpy` is `tf.experimental.numpy` (the module
`tfnp_trax.fastmath.numpy` is, with NumPy behaviour switched on) plus
TensorFlow's float64 switch, and `extensions` names the transforms and ops
of `tfnp_trax.fastmath` as Trax's `extensions` module did, plus its device
queries.
"""

from tfnp_trax.tf_numpy import extensions
from tfnp_trax.tf_numpy import numpy

__all__ = ['extensions', 'numpy']
