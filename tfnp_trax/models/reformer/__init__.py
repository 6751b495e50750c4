"""Reformer models (Trax's trax.models.reformer)."""

from tfnp_trax.models.reformer import reformer
from tfnp_trax.models.reformer.reformer import Reformer
from tfnp_trax.models.reformer.reformer import ReformerLM
from tfnp_trax.models.reformer.reformer import ReformerShortenLM

__all__ = ['reformer', 'Reformer', 'ReformerLM', 'ReformerShortenLM']
