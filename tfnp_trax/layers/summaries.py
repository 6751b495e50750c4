"""Pass-through layers that report on what flows through a model.

`PrintShape` logs shapes; `SummaryScalar` and `SummaryImage` keep a value
in their state (as Trax does) and, when a TensorBoard writer is the default
one (`with writer.as_default(step=...)`), also write it there. All three
return their inputs unchanged.
"""

from absl import logging

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.fastmath import summary
from tfnp_trax.layers import base

__all__ = ['PrintShape', 'SummaryScalar', 'SummaryImage']


def _shape_text(x):
  dtype = getattr(x.dtype, 'name', x.dtype)
  return f'{tuple(x.shape)}[{dtype}]'


def PrintShape(n_in=1, msg=''):  # pylint: disable=invalid-name
  """Prints (and logs) the shapes and dtypes of `n_in` inputs; an identity.

  Under `tf.function` it prints while tracing, once per trace, with the
  static shapes (None for an unknown size), as Trax does under `jit`.

  Example:
    >>> x = (jnp.ones((2, 3), jnp.float32), jnp.ones(4, jnp.int32))
    >>> _ = PrintShape(2, msg='here')(x)
    PrintShape: here: [(2, 3)[float32], (4,)[int32]]

  Args:
    n_in: how many inputs to show and pass through.
    msg: text put in the line, to tell several PrintShape layers apart.

  Returns:
    A weightless layer with `n_in` inputs and outputs.
  """
  def forward(xs):
    tensors = xs if n_in > 1 else (xs,)
    info = f'PrintShape: {msg}: [{", ".join(map(_shape_text, tensors))}]'
    print(info)
    logging.info(info)
    return xs
  return base.PureLayer(forward, n_in=n_in, n_out=n_in,
                        name=f'PrintShape_{n_in}')


class SummaryScalar(base.Layer):
  """Passes its input through and reports `aggregation_fun(input)`.

  The value is kept in the state, `{'summary_<name>': value}`, and written
  as the TensorBoard scalar `name` when a default writer is active, at the
  writer's step (0 if none is set). Under `tf.function` the writer is the
  one active at tracing; under XLA nothing is written (TensorFlow cannot
  compile summary ops), but the state still holds the value.

  Example:
    >>> layer = SummaryScalar('mean_x')
    >>> _ = layer.init(shapes.ShapeDtype((2,)))
    >>> _ = layer(jnp.array([1.0, 3.0]))
    >>> float(layer.state['summary_mean_x'])
    2.0
  """

  def __init__(self, name, aggregation_fun=jnp.mean):
    super().__init__(name=f'Summary_{name}', n_in=1, n_out=1)
    self._tag = name
    self._name = 'summary_' + name  # Also the state key, as in Trax.
    self._aggregation_fun = aggregation_fun

  def forward(self, x):
    value = jnp.asarray(self._aggregation_fun(x)).astype(jnp.float32)
    summary.scalar(self._tag, value)
    self.state = {self._name: value}
    return x

  def init_weights_and_state(self, input_signature):
    del input_signature  # The state is one scalar whatever the input.
    self.state = {self._name: jnp.array(0.0, dtype=jnp.float32)}


class SummaryImage(base.Layer):
  """Passes `n_in` inputs through and reports images of the first examples.

  For each of the first `num_summaries` examples of the batch, the example
  of every input (after `recover_fn`, if given) is stacked along the height
  axis into one image, kept in the state as `'summary_<name><i>'` and
  written under `name` when a default TensorBoard writer is active (float
  images are taken to hold values in [0, 1]; [height, width] or
  [height, width, 1|3|4 channels]).

  Example:
    >>> layer = SummaryImage('pair', n_in=2, num_summaries=1)
    >>> x = jnp.zeros((3, 4, 5, 1))
    >>> _ = layer.init(shapes.signature((x, x)))
    >>> _ = layer((x, x))
    >>> tuple(layer.state['summary_pair0'].shape)
    (8, 5, 1)
  """

  def __init__(self, name, n_in, num_summaries=5, recover_fn=None):
    super().__init__(name=f'Summary_{name}', n_in=n_in, n_out=n_in)
    self._tag = name
    self._name = 'summary_' + name
    self._num_summaries = num_summaries
    self._recover_fn = recover_fn

  def _images(self, xs):
    xs = tuple(xs) if self.n_in > 1 else (xs,)
    count = min(self._num_summaries, xs[0].shape[0])
    images = {}
    for s in range(count):
      parts = [self._recover_fn(x[s]) if self._recover_fn else x[s]
               for x in xs]
      images[self._name + str(s)] = jnp.concatenate(parts, axis=0)
    return images

  def forward(self, xs):
    images = self._images(xs)
    if images:
      summary.image(self._tag, jnp.stack(list(images.values())),
                    max_outputs=len(images))
    self.state = images
    return xs

  def init_weights_and_state(self, input_signature):
    # The state has the structure that forward gives it, so that compiled
    # training steps see one state structure throughout.
    signatures = fastmath.abstract_eval(self._images)(input_signature)
    self.state = fastmath.nested_map(
        lambda s: jnp.zeros(s.shape, s.dtype), signatures)
