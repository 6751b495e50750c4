"""Input streams for Loop: Python iterators or tf.data, resumable by count."""

import itertools

import numpy as onp
import tensorflow as tf

from tfnp_trax.supervised import _batches

__all__ = ['InputStream']


def _as_tuple(batch):
  return tuple(batch) if isinstance(batch, (list, tuple)) else (batch,)


def _join(batches, name):
  """Host batches (tuples of arrays) joined along axis 0, leaf by leaf."""
  sizes = {len(b) for b in batches}
  if len(sizes) != 1:
    raise ValueError(f'Loop: {name} gave batches with different numbers of '
                     f'arrays ({sorted(sizes)}) within one accumulated '
                     f'update.')
  joined = []
  for leaves in zip(*batches):
    if all(isinstance(x, onp.ndarray) or onp.isscalar(x) for x in leaves):
      joined.append(onp.concatenate(leaves, axis=0))
    else:
      joined.append(tf.concat([tf.convert_to_tensor(x) for x in leaves], 0))
  return tuple(joined)


def _merge_leading(*leaves):
  """`[k, b, ...]` leaves of a grouped Dataset element as `[k * b, ...]`."""
  return tuple(tf.reshape(x, tf.concat([[-1], tf.shape(x)[2:]], 0))
               for x in leaves)


class InputStream:
  """Yields training batches and counts them, so a resumed run can skip.

  Args:
    labeled_data: a `tf.data.Dataset` of (inputs, targets[, weights]), or a
      Python iterable/iterator of NumPy tuples.
    strategy: batches of a Dataset are distributed through it.
    position: how many batches an earlier run already consumed.
    name: what the stream is, for error messages (e.g. 'the training data
      of task 0').
    group: how many batches of `labeled_data` make one batch of the stream
      (a TrainTask's `gradient_accumulation_steps`): each `next` joins that
      many along axis 0. `position` counts the batches of `labeled_data`.
  """

  def __init__(self, labeled_data, strategy, position=0,
               name='the training data', group=1):
    self.position = position
    self._name = name
    self._strategy = strategy
    self._data = labeled_data
    self._group = group
    self._pushed = []
    if isinstance(labeled_data, tf.data.Dataset):
      ds = labeled_data.skip(position)
      if group > 1:
        # Joined before the strategy splits it, as host batches are.
        ds = ds.batch(group, drop_remainder=True).map(_merge_leading)
      self._it = _batches.BatchDistributor(strategy, 'Loop').iterate(ds)
      self.is_dataset = True
    else:
      it = iter(labeled_data)
      # A fresh iterator restarts the stream: skip what was consumed before.
      self._it = itertools.islice(it, position, None) if position else it
      self.is_dataset = False

  def fast_forward(self, position):
    """Moves on to `position` (batches consumed since the stream began).

    A Dataset is re-read from `position`. A Python iterator cannot be
    rewound, so its batches are consumed until the count matches; pass a
    fresh iterator when resuming in a new process.
    """
    if position < self.position:
      raise ValueError(f'InputStream: cannot move back from batch '
                       f'{self.position} to {position}.')
    if self.is_dataset:
      self.__init__(self._data, self._strategy, position, self._name,
                    self._group)
      return
    while self.position < position:
      self._next_one()

  def peek(self):
    """The next batch of `labeled_data`, left in the stream."""
    if not self._pushed:
      self._pushed.append(next(self._it))
    return self._pushed[0]

  def __iter__(self):
    return self

  def _next_one(self):
    batch = self._pushed.pop(0) if self._pushed else next(self._it)
    batch = _as_tuple(batch) if not self.is_dataset else tuple(batch)
    _batches.check_not_empty(batch, 'Loop', self._name)
    self.position += 1 if not self.is_dataset else self._group
    return batch

  def __next__(self):
    if self.is_dataset or self._group == 1:
      return self._next_one()
    return _join([self._next_one() for _ in range(self._group)], self._name)
