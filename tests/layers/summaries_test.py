"""PrintShape, SummaryScalar and SummaryImage: event files read back."""

import glob
import os

import numpy as np
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.fastmath import numpy as jnp


def _events(log_dir):
  """[(tag, step, value as NumPy)] of every summary under `log_dir`."""
  found = []
  for path in sorted(glob.glob(os.path.join(log_dir, 'events.out.*'))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        found.append((value.tag, event.step, tf.make_ndarray(value.tensor)))
  return found


def _scalar_layer():
  layer = tl.SummaryScalar('mean_x')
  layer.init(shapes.ShapeDtype((2,)))
  return layer


def test_print_shape_passes_inputs_and_prints(capsys):
  one = tl.PrintShape(msg='one')
  x = jnp.ones((2, 3), jnp.float32)
  np.testing.assert_array_equal(one(x), x)
  two = tl.PrintShape(n_in=2, msg='two')
  assert two.n_in == two.n_out == 2 and two.name == 'PrintShape_2'
  a, b = two((x, jnp.zeros((4,), jnp.int32)))
  assert tuple(b.shape) == (4,)
  compiled = fastmath.jit(lambda v: one(v))
  for _ in range(3):
    compiled(jnp.ones((5, 3), jnp.float32))
  assert capsys.readouterr().out.splitlines() == [
      'PrintShape: one: [(2, 3)[float32]]',
      'PrintShape: two: [(2, 3)[float32], (4,)[int32]]',
      'PrintShape: one: [(5, 3)[float32]]',  # Printed while tracing only.
  ]


def test_summary_scalar_without_writer_is_an_identity_with_state():
  layer = _scalar_layer()
  assert layer.name == 'summary_mean_x'
  assert float(layer.state['summary_mean_x']) == 0.0
  y = layer(jnp.array([1.0, 3.0]))
  np.testing.assert_array_equal(y, [1.0, 3.0])
  assert float(layer.state['summary_mean_x']) == 2.0


def test_summary_scalar_writes_eagerly_and_under_tf_function(tmp_path):
  layer = _scalar_layer()
  writer = tf.summary.create_file_writer(str(tmp_path))
  with writer.as_default(step=7):
    layer(jnp.array([1.0, 3.0]))
  step = tf.Variable(0, dtype=tf.int64)
  compiled = tf.function(lambda x: layer(x))
  with writer.as_default(step=step):
    for i, x in enumerate(([2.0, 4.0], [5.0, 7.0])):
      step.assign(10 + i)
      compiled(jnp.array(x))
  writer.flush()
  got = [(tag, s, float(v)) for tag, s, v in _events(str(tmp_path))]
  assert got == [('mean_x', 7, 2.0), ('mean_x', 10, 3.0), ('mean_x', 11, 6.0)]


def test_summary_scalar_custom_aggregation_and_xla(tmp_path):
  layer = tl.SummaryScalar('biggest', aggregation_fun=jnp.max)
  layer.init(shapes.ShapeDtype((3,)))
  writer = tf.summary.create_file_writer(str(tmp_path))
  with writer.as_default(step=1):
    layer(jnp.array([1.0, 5.0, 2.0]))
    # TensorFlow cannot compile summary writes with XLA: nothing is
    # written there, but the layer runs and keeps the value in its state.
    y, state = fastmath.jit(layer.pure_fn, jit_compile=True)(
        jnp.array([9.0, 5.0, 2.0]), layer.weights, layer.state, None)
  writer.flush()
  assert float(state['summary_biggest']) == 9.0
  np.testing.assert_array_equal(y, [9.0, 5.0, 2.0])
  assert [(t, s, float(v)) for t, s, v in _events(str(tmp_path))] == [
      ('biggest', 1, 5.0)]


def test_summary_image_state_and_event(tmp_path):
  layer = tl.SummaryImage('pair', n_in=2, num_summaries=2)
  assert layer.n_in == layer.n_out == 2
  rng = np.random.RandomState(0)
  a = rng.uniform(size=(3, 4, 5, 1)).astype(np.float32)
  b = rng.uniform(size=(3, 4, 5, 1)).astype(np.float32)
  layer.init(shapes.signature((a, b)))
  assert sorted(layer.state) == ['summary_pair0', 'summary_pair1']
  writer = tf.summary.create_file_writer(str(tmp_path))
  with writer.as_default(step=3):
    ya, yb = layer((a, b))
  writer.flush()
  np.testing.assert_array_equal(ya, a)
  np.testing.assert_array_equal(yb, b)
  for i in range(2):
    np.testing.assert_array_equal(layer.state[f'summary_pair{i}'],
                                  np.concatenate([a[i], b[i]], axis=0))
  (tag, step, value), = _events(str(tmp_path))
  assert (tag, step) == ('pair', 3)
  # An image summary holds width, height, then one PNG per image.
  assert value[:2].tolist() == [b'5', b'8'] and len(value) == 4
  png = tf.image.decode_png(value[2]).numpy()
  want = np.concatenate([a[0], b[0]], axis=0)
  np.testing.assert_allclose(png / 255.0, want, atol=1 / 255.0)


def test_summary_image_recover_fn_and_single_input():
  layer = tl.SummaryImage('grey', n_in=1, num_summaries=5,
                          recover_fn=lambda x: x[..., 0])
  x = jnp.ones((2, 3, 4, 1), jnp.float32)
  layer.init(shapes.signature(x))
  y = layer(x)
  assert tuple(y.shape) == (2, 3, 4, 1)  # Fewer examples than summaries.
  assert {k: tuple(v.shape) for k, v in layer.state.items()} == {
      'summary_grey0': (3, 4), 'summary_grey1': (3, 4)}
