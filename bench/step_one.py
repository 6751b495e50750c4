"""One benchmark configuration: a training step of one model, one framework.

usage: python bench/step_one.py --model mlp|lm --impl ours|keras|bare_tf
                                [--jit] [--replicas N] [--precision bf16]

`keras` with N > 1 replicas is a Keras custom step under MirroredStrategy
on the same logical devices and global batch; `bare_tf` is a hand-written
functional TensorFlow LM step (tf.Variables, tf.nn ops, fused Adam kernel).
With `--precision bf16`, ours trains with `Trainer(precision='bf16')` and
Keras under its `mixed_bfloat16` policy (both keep float32 master weights
and compute the loss in float32).
Prints one JSON line: steps/s, time to first step, peak RSS.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # pylint: disable=g-import-not-at-top

from bench import _common  # pylint: disable=g-import-not-at-top

MLP = dict(batch=128, sizes=(784, 512, 512, 10))
LM = dict(batch=16, seq=128, vocab=256, d_model=256, d_ff=1024, heads=4,
          layers=2)


def _batches(model, n=4):
  r = np.random.default_rng(0)
  if model == 'mlp':
    return [(r.normal(size=(MLP['batch'], 784)).astype(np.float32),
             r.integers(0, 10, MLP['batch']).astype(np.int32))
            for _ in range(n)]
  return [(r.integers(0, LM['vocab'], (LM['batch'], LM['seq'])).astype(
      np.int32),) * 2 for _ in range(n)]


def ours_model_with_loss(model):
  """The benchmark model (MLP or TransformerLM) with its loss, uninitialized."""
  from tfnp_trax import models  # pylint: disable=g-import-not-at-top
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  if model == 'mlp':
    net = tl.Serial(tl.Dense(512), tl.Relu(), tl.Dense(512), tl.Relu(),
                    tl.Dense(10))
  else:
    net = models.TransformerLM(LM['vocab'], d_model=LM['d_model'],
                               d_ff=LM['d_ff'], n_heads=LM['heads'],
                               n_layers=LM['layers'], max_len=LM['seq'],
                               dropout=0.0)
  return tl.Serial(net, tl.WeightedCategoryCrossEntropy())


def ours(model, jit, replicas, precision=None):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tfnp_trax import fastmath, optimizers, shapes  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised.trainer import Trainer  # pylint: disable=g-import-not-at-top
  strategy = None
  if replicas > 1:
    strategy = tf.distribute.MirroredStrategy(
        [d.name for d in tf.config.list_logical_devices('CPU')])
  # Tensors, made before the clock starts as for the other impls, so every
  # impl starts its clock with TensorFlow's runtime already running.
  batches = [tuple(tf.constant(x) for x in
                   tuple(b) + (np.ones(b[1].shape, np.float32),))
             for b in _batches(model)]
  t0 = time.perf_counter()
  mwl = ours_model_with_loss(model)
  mwl.init(shapes.signature(batches[0]), rng=fastmath.random.get_prng(0))
  trainer = Trainer(mwl, optimizers.Adam(1e-3, weight_decay_rate=0.0),
                    strategy=strategy, jit_compile=jit or None,
                    precision=precision)
  state = {'i': 0}
  dist = [trainer.distribute_batch(b) for b in batches]

  def step():
    i = state['i']
    loss, _ = trainer.one_step(dist[i % len(dist)], fastmath.random.get_prng(i),
                               i)
    state['i'] += 1
    return float(loss)
  step()
  first = time.perf_counter() - t0
  return step, first


def keras_impl(model, jit, replicas, precision=None):
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if precision == 'bf16':
    keras.mixed_precision.set_global_policy('mixed_bfloat16')
  if replicas > 1:
    return _keras_mirrored(keras, tf, model, replicas)
  batches = [tuple(tf.constant(x) for x in b) for b in _batches(model)]
  t0 = time.perf_counter()
  net = _keras_net(keras, model)
  opt = keras.optimizers.Adam(1e-3)
  loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

  @tf.function(jit_compile=jit)
  def train_step(x, y):
    with tf.GradientTape() as tape:
      logits = net(x, training=True)
      if model == 'lm':  # Predict token t+1 from tokens up to t.
        logits, y = logits[:, :-1], y[:, 1:]
      loss = loss_fn(y, logits)
    grads = tape.gradient(loss, net.trainable_variables)
    opt.apply_gradients(zip(grads, net.trainable_variables))
    return loss
  state = {'i': 0}

  def step():
    x, y = batches[state['i'] % len(batches)]
    state['i'] += 1
    return float(train_step(x, y))
  step()
  first = time.perf_counter() - t0
  return step, first


def _keras_net(keras, model):
  if model == 'mlp':
    return keras.Sequential([keras.Input((784,)),
                             keras.layers.Dense(512, activation='relu'),
                             keras.layers.Dense(512, activation='relu'),
                             keras.layers.Dense(10)])
  return _keras_lm(keras)


def _keras_mirrored(keras, tf, model, replicas):
  """Keras's custom step under MirroredStrategy, as its guide writes it."""
  strategy = tf.distribute.MirroredStrategy(
      [d.name for d in tf.config.list_logical_devices('CPU')][:replicas])
  datasets = [strategy.experimental_distribute_values_from_function(
      lambda ctx, b=b: tuple(
          tf.constant(x[ctx.replica_id_in_sync_group::replicas])
          for x in b)) for b in _batches(model)]
  t0 = time.perf_counter()
  with strategy.scope():
    net = _keras_net(keras, model)
    opt = keras.optimizers.Adam(1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction='none')
    # Slots made up front, in the strategy's scope, not lazily in the step.
    opt.build(net.trainable_variables)

  def replica_step(x, y):
    with tf.GradientTape() as tape:
      logits = net(x, training=True)
      if model == 'lm':
        logits, y = logits[:, :-1], y[:, 1:]
      per_item = loss_fn(y, logits)
      loss = tf.reduce_sum(per_item) / tf.cast(
          tf.size(per_item) * replicas, tf.float32)
    grads = tape.gradient(loss, net.trainable_variables)
    opt.apply_gradients(zip(grads, net.trainable_variables))
    return loss

  @tf.function
  def train_step(x, y):
    per_replica = strategy.run(replica_step, args=(x, y))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica,
                           axis=None)
  state = {'i': 0}

  def step():
    x, y = datasets[state['i'] % len(datasets)]
    state['i'] += 1
    return float(train_step(x, y))
  step()
  return step, time.perf_counter() - t0


def bare_tf_impl(model, jit, replicas):
  """The reference LM written directly in TensorFlow, no framework."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if model != 'lm' or replicas != 1:
    raise ValueError('bare_tf is the single-replica LM step only')
  batches = [tf.constant(b[0]) for b in _batches(model)]
  t0 = time.perf_counter()
  d, f, h, v, n = LM['d_model'], LM['d_ff'], LM['heads'], LM['vocab'], \
      LM['seq']
  init = tf.keras.initializers.GlorotUniform(seed=0)

  def var(shape, zeros=False, ones=False):
    value = (tf.zeros(shape) if zeros else tf.ones(shape) if ones
             else init(shape))
    return tf.Variable(value)
  params = [var((v, d)), var((n, d))]
  for _ in range(LM['layers']):
    params += [var((d,), ones=True), var((d,), zeros=True),
               var((d, 3 * d)), var((3 * d,), zeros=True),
               var((d, d)), var((d,), zeros=True),
               var((d,), ones=True), var((d,), zeros=True),
               var((d, f)), var((f,), zeros=True),
               var((f, d)), var((d,), zeros=True)]
  params += [var((d,), ones=True), var((d,), zeros=True), var((d, v)),
             var((v,), zeros=True)]
  slots = [(tf.Variable(tf.zeros_like(p)), tf.Variable(tf.zeros_like(p)))
           for p in params]
  mask = tf.constant(np.tril(np.ones((n, n), bool)))

  def norm(x, g, b):
    mean, var_ = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(var_ + 1e-5) * g + b

  def dense(x, w, b):
    return tf.nn.bias_add(tf.matmul(tf.reshape(x, [-1, x.shape[-1]]), w), b)

  def forward(tokens):
    batch = tokens.shape[0]
    x = tf.gather(params[0], tokens) + params[1]
    i = 2
    for _ in range(LM['layers']):
      g1, b1, wqkv, bqkv, wo, bo, g2, b2, w1, c1, w2, c2 = params[i:i + 12]
      i += 12
      qkv = tf.reshape(dense(norm(x, g1, b1), wqkv, bqkv),
                       [batch, n, 3, h, d // h])
      q, k, val = tf.unstack(tf.transpose(qkv, [2, 0, 3, 1, 4]))
      scores = tf.matmul(q, k, transpose_b=True) * (d // h) ** -0.5
      scores = tf.where(mask, scores, -1e9)
      att = tf.matmul(tf.nn.softmax(scores), val)
      att = tf.reshape(tf.transpose(att, [0, 2, 1, 3]), [batch * n, d])
      x = x + tf.reshape(tf.nn.bias_add(tf.matmul(att, wo), bo), x.shape)
      hid = tf.nn.relu(dense(norm(x, g2, b2), w1, c1))
      x = x + tf.reshape(tf.nn.bias_add(tf.matmul(hid, w2), c2), x.shape)
    g, b, w, c = params[i:]
    return tf.reshape(dense(norm(x, g, b), w, c), [batch, n, v])

  lr, b1_, b2_, eps = 1e-3, 0.9, 0.999, 1e-7
  count = tf.Variable(0.0)

  @tf.function(jit_compile=jit)
  def train_step(tokens):
    with tf.GradientTape() as tape:
      logits = forward(tokens)[:, :-1]
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=tokens[:, 1:], logits=logits))
    grads = tape.gradient(loss, params)
    count.assign_add(1.0)
    for p, (m, s_), g in zip(params, slots, grads):
      tf.raw_ops.ResourceApplyAdam(
          var=p.handle, m=m.handle, v=s_.handle,
          beta1_power=tf.pow(b1_, count), beta2_power=tf.pow(b2_, count),
          lr=lr, beta1=b1_, beta2=b2_, epsilon=eps,
          grad=tf.convert_to_tensor(g))
    return loss
  state = {'i': 0}

  def step():
    tokens = batches[state['i'] % len(batches)]
    state['i'] += 1
    return float(train_step(tokens))
  step()
  return step, time.perf_counter() - t0


def _keras_lm(keras):
  """The reference pre-norm GPT-style LM (see BENCHMARKS.md)."""
  layers = keras.layers
  tokens = keras.Input((LM['seq'],), dtype='int32')
  x = layers.Embedding(LM['vocab'], LM['d_model'])(tokens)
  pos = layers.Embedding(LM['seq'], LM['d_model'])(
      keras.ops.arange(LM['seq']))
  x = x + pos
  for _ in range(LM['layers']):
    h = layers.LayerNormalization(epsilon=1e-5)(x)
    h = layers.MultiHeadAttention(LM['heads'],
                                  LM['d_model'] // LM['heads'])(
                                      h, h, use_causal_mask=True)
    x = x + h
    h = layers.LayerNormalization(epsilon=1e-5)(x)
    h = layers.Dense(LM['d_ff'], activation='relu')(h)
    x = x + layers.Dense(LM['d_model'])(h)
  x = layers.LayerNormalization(epsilon=1e-5)(x)
  return keras.Model(tokens, layers.Dense(LM['vocab'])(x))


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--model', choices=['mlp', 'lm'], default='mlp')
  parser.add_argument('--impl', choices=['ours', 'keras', 'bare_tf'],
                      default='ours')
  parser.add_argument('--jit', action='store_true')
  parser.add_argument('--replicas', type=int, default=1)
  parser.add_argument('--timed', type=int, default=50)
  parser.add_argument('--precision', choices=['fp32', 'bf16'], default='fp32')
  args = parser.parse_args()
  if args.precision == 'bf16' and (args.impl == 'bare_tf' or
                                   args.replicas > 1):
    parser.error('--precision bf16 compares ours with Keras on one replica '
                 f'(got --impl {args.impl} --replicas {args.replicas}).')
  precision = 'bf16' if args.precision == 'bf16' else None
  if args.replicas > 1:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    cpu = tf.config.list_physical_devices('CPU')[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * args.replicas)
  impl = {'ours': ours, 'keras': keras_impl, 'bare_tf': bare_tf_impl}[
      args.impl]
  step, first = (impl(args.model, args.jit, args.replicas, precision)
                 if precision else impl(args.model, args.jit, args.replicas))
  seconds = _common.time_steps(step, n_timed=args.timed)
  print(json.dumps({'model': args.model, 'impl': args.impl, 'jit': args.jit,
                    'replicas': args.replicas, 'precision': args.precision,
                    'steps_per_s': 1.0 / seconds,
                    'first_step_s': first,
                    'peak_rss_mib': _common.peak_rss_mib()}))


if __name__ == '__main__':
  main()
