"""One benchmark configuration: a training step of one model, one framework.

usage: python bench/step_one.py --model mlp|lm --impl ours|keras
                                [--jit] [--replicas N]
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


def ours(model, jit, replicas):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tfnp_trax import fastmath, optimizers, shapes  # pylint: disable=g-import-not-at-top
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax import models  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised.trainer import Trainer  # pylint: disable=g-import-not-at-top
  strategy = None
  if replicas > 1:
    strategy = tf.distribute.MirroredStrategy(
        [d.name for d in tf.config.list_logical_devices('CPU')])
  batches = [tuple(b) + (np.ones(b[1].shape, np.float32),)
             for b in _batches(model)]
  t0 = time.perf_counter()
  if model == 'mlp':
    net = tl.Serial(tl.Dense(512), tl.Relu(), tl.Dense(512), tl.Relu(),
                    tl.Dense(10))
  else:
    net = models.TransformerLM(LM['vocab'], d_model=LM['d_model'],
                               d_ff=LM['d_ff'], n_heads=LM['heads'],
                               n_layers=LM['layers'], max_len=LM['seq'],
                               dropout=0.0)
  mwl = tl.Serial(net, tl.WeightedCategoryCrossEntropy())
  mwl.init(shapes.signature(batches[0]), rng=fastmath.random.get_prng(0))
  trainer = Trainer(mwl, optimizers.Adam(1e-3, weight_decay_rate=0.0),
                    strategy=strategy, jit_compile=jit or None)
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


def keras_impl(model, jit, replicas):
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  del replicas
  batches = [tuple(tf.constant(x) for x in b) for b in _batches(model)]
  t0 = time.perf_counter()
  if model == 'mlp':
    net = keras.Sequential([keras.Input((784,)),
                            keras.layers.Dense(512, activation='relu'),
                            keras.layers.Dense(512, activation='relu'),
                            keras.layers.Dense(10)])
  else:
    net = _keras_lm(keras)
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
  parser.add_argument('--impl', choices=['ours', 'keras'], default='ours')
  parser.add_argument('--jit', action='store_true')
  parser.add_argument('--replicas', type=int, default=1)
  parser.add_argument('--timed', type=int, default=50)
  args = parser.parse_args()
  if args.replicas > 1:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    cpu = tf.config.list_physical_devices('CPU')[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * args.replicas)
  impl = ours if args.impl == 'ours' else keras_impl
  step, first = impl(args.model, args.jit, args.replicas)
  seconds = _common.time_steps(step, n_timed=args.timed)
  print(json.dumps({'model': args.model, 'impl': args.impl, 'jit': args.jit,
                    'replicas': args.replicas, 'steps_per_s': 1.0 / seconds,
                    'first_step_s': first,
                    'peak_rss_mib': _common.peak_rss_mib()}))


if __name__ == '__main__':
  main()
