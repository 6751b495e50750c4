"""Offline data for examples and the `tfnp-trax train` command."""

from tfnp_trax.data.copy_task import copy_batches
from tfnp_trax.data.digits import classification_batches
from tfnp_trax.data.digits import load_digits_split
from tfnp_trax.data.pylm import lm_batches
from tfnp_trax.data.pylm import load_corpus
from tfnp_trax.data.pylm import unigram_bits_per_char

__all__ = ['copy_batches', 'classification_batches', 'load_digits_split',
           'lm_batches', 'load_corpus', 'unigram_bits_per_char']
