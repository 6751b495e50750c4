"""Trax's dotted module names and their tfnp_trax counterparts.

Both the `trax.*` import finder (`_trax_imports`) and the gin registry
(`_gin_registry`) translate Trax's paths; this module is the one place that
says how, so neither has to import the other for it.
"""

__all__ = ['tfnp_trax_name', 'is_trax_name']


def tfnp_trax_name(trax_name):
  """'trax.models.rnn' -> 'tfnp_trax.models.rnn' (any dotted Trax path)."""
  return 'tfnp_trax' + trax_name[len('trax'):]


def is_trax_name(name):
  """Whether `name` is `trax` or a module below it (not `traxx`)."""
  return name == 'trax' or name.startswith('trax.')
