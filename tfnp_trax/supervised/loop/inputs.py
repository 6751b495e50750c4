"""Input streams for Loop: Python iterators or tf.data, resumable by count."""

import itertools

import tensorflow as tf

from tfnp_trax.supervised import _batches

__all__ = ['InputStream']


def _as_tuple(batch):
  return tuple(batch) if isinstance(batch, (list, tuple)) else (batch,)


class InputStream:
  """Yields training batches and counts them, so a resumed run can skip.

  Args:
    labeled_data: a `tf.data.Dataset` of (inputs, targets[, weights]), or a
      Python iterable/iterator of NumPy tuples.
    strategy: batches of a Dataset are distributed through it.
    position: how many batches an earlier run already consumed.
    name: what the stream is, for error messages (e.g. 'the training data
      of task 0').
  """

  def __init__(self, labeled_data, strategy, position=0,
               name='the training data'):
    self.position = position
    self._name = name
    self._strategy = strategy
    self._data = labeled_data
    self._pushed = []
    if isinstance(labeled_data, tf.data.Dataset):
      self._it = _batches.BatchDistributor(strategy, 'Loop').iterate(
          labeled_data, position)
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
      self.__init__(self._data, self._strategy, position, self._name)
      return
    while self.position < position:
      next(self)

  def peek(self):
    """The next batch, left in the stream."""
    if not self._pushed:
      self._pushed.append(next(self._it))
    return self._pushed[0]

  def __iter__(self):
    return self

  def __next__(self):
    batch = self._pushed.pop(0) if self._pushed else next(self._it)
    self.position += 1
    batch = _as_tuple(batch) if not self.is_dataset else tuple(batch)
    _batches.check_not_empty(batch, 'Loop', self._name)
    return batch
