"""Trax's research layers (trax.layers.research) on TensorFlow NumPy."""

from tfnp_trax.layers.research import efficient_attention

__all__ = ['efficient_attention']
