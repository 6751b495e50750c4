"""Per-replica shapes of a global batch, for initializing models."""

__all__ = ['per_replica_shape']


def per_replica_shape(shape, num_replicas, what='batch'):
  """The shape one replica sees when a global batch is split evenly.

  Args:
    shape: the global batch shape (leading axis: examples).
    num_replicas: the strategy's `num_replicas_in_sync`.
    what: names the batch in the error message.

  Returns:
    `shape` with its leading axis divided by `num_replicas`, as a tuple.

  Raises:
    ValueError: the leading axis does not divide by `num_replicas`.

  Example:
    >>> per_replica_shape((8, 6), 4)
    (2, 6)
  """
  shape = tuple(shape)
  if not shape:
    raise ValueError(f'per_replica_shape: the {what} is a scalar; it needs a '
                     f'leading batch axis to split over {num_replicas} '
                     f'replicas.')
  if shape[0] is not None and shape[0] % num_replicas:
    raise ValueError(
        f'per_replica_shape: the {what} size {shape[0]} (shape {shape}) does '
        f'not divide by the {num_replicas} replicas; use a global batch size '
        f'that is a multiple of {num_replicas}.')
  lead = None if shape[0] is None else shape[0] // num_replicas
  return (lead,) + shape[1:]
