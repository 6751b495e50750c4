"""Trax's research layers (trax.layers.research) on TensorFlow NumPy."""

from tfnp_trax.layers.research import efficient_attention
from tfnp_trax.layers.research import position_encodings
from tfnp_trax.layers.research import rel_attention
from tfnp_trax.layers.research import resampling
from tfnp_trax.layers.research import rotary_positional_embedding
from tfnp_trax.layers.research import sparsity

__all__ = ['efficient_attention', 'position_encodings', 'rel_attention',
           'resampling', 'rotary_positional_embedding', 'sparsity']
