"""Trax's research layers (trax.layers.research) on TensorFlow NumPy."""

from tfnp_trax.layers.research import efficient_attention
from tfnp_trax.layers.research import position_encodings

__all__ = ['efficient_attention', 'position_encodings']
