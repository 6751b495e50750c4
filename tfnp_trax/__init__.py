"""tfnp_trax: Trax's combinator deep-learning API on TensorFlow NumPy."""

from tfnp_trax import fastmath
from tfnp_trax import shapes

__version__ = '0.1.0'

__all__ = ['fastmath', 'shapes', '__version__']
