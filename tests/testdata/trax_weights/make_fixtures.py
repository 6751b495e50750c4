"""Records Trax 1.4.1 weight files for tests/layers and tests/supervised.

Run with a Trax 1.4.1 install (not a test dependency):
  JAX_PLATFORMS=cpu python tests/testdata/trax_weights/make_fixtures.py

Writes, beside this script:
  serial.pkl.gz         Serial(Embedding(10, 4), Dense(3), LayerNorm())
                        saved by Layer.save_to_file with its input signature.
  serial_bf16.pkl.gz    the same model with the Dense kernel in bfloat16.
  loop/model.pkl.gz, loop/model.weights.npy.gz, loop/model.opt_slots0.npy.gz
                        a training.Loop checkpoint after 4 Adam steps (saved at 2 and 4) of
                        Serial(Dense(4), BatchNorm(axis=(0,)), Relu(),
                        Dense(2, use_bfloat16=True)) with an L2Loss task.
  outputs.npz           inputs and the outputs Trax computed with those
                        weights (eval mode for the Loop model), and the
                        checkpoint's history and step, for the tests to compare.
"""

import os
import shutil
import tempfile

import numpy as np
import trax
from trax import layers as tl
from trax import optimizers
from trax import shapes
from trax.supervised import training

HERE = os.path.dirname(os.path.abspath(__file__))


def serial_model():
  return tl.Serial(tl.Embedding(10, 4), tl.Dense(3), tl.LayerNorm())


def loop_model(mode):
  return tl.Serial(tl.Dense(4), tl.BatchNorm(axis=(0,), mode=mode), tl.Relu(),
                   tl.Dense(2, use_bfloat16=True))


def main():
  out = {}
  ids = np.array([[1, 2, 3, 9, 0], [4, 5, 6, 7, 8]], dtype=np.int32)
  sig = shapes.signature(ids)
  model = serial_model()
  model.init(sig, rng=trax.fastmath.random.get_prng(0))
  model.save_to_file(os.path.join(HERE, 'serial.pkl.gz'), input_signature=sig)
  out['serial_x'] = ids
  out['serial_y'] = np.asarray(model(ids))

  emb, (kernel, bias), ln = model.weights
  model.weights = (emb, (kernel.astype(trax.fastmath.numpy.bfloat16), bias),
                   ln)
  model.save_to_file(os.path.join(HERE, 'serial_bf16.pkl.gz'),
                     input_signature=sig)
  out['serial_bf16_y'] = np.asarray(model(ids))
  out['serial_bf16_kernel_bits'] = np.asarray(model.weights[1][0]).view(
      np.uint16)

  rng = np.random.RandomState(0)
  x = rng.randn(8, 3).astype(np.float32)
  y = rng.randn(8, 2).astype(np.float32)
  w = np.ones((8, 2), np.float32)

  def batches():
    while True:
      yield x, y, w

  task = training.TrainTask(batches(), tl.L2Loss(), optimizers.Adam(0.01),
                            n_steps_per_checkpoint=2)
  eval_task = training.EvalTask(batches(), [tl.L2Loss()])
  with tempfile.TemporaryDirectory() as tmp:
    loop = training.Loop(loop_model('train'), [task], eval_tasks=[eval_task],
                         eval_at=lambda step: step % 2 == 0, output_dir=tmp,
                         random_seed=0,
                         eval_model=loop_model('eval'))
    loop.run(4)
    saved = training.unpickle_from_file(
        os.path.join(tmp, 'model.pkl.gz'), gzip=True)
    # Trax 1.4.1's Loop.load_checkpoint fails under JAX 0.4.30 (it compares
    # arrays with `in [None, ()]`), so the expected outputs come from an eval
    # model given the checkpoint's weights (the train model's, at step 4) and
    # its saved eval state, unflattened by Trax's own function.
    eval_model = loop_model('eval')
    eval_model.init(shapes.signature(x))
    flat_weights, _ = tl.flatten_weights_and_state(loop.model.weights, ())
    _, eval_state = tl.unflatten_weights_and_state(
        flat_weights, saved['flat_eval_state'],
        eval_model.weights_and_state_signature(shapes.signature(x)))
    eval_model.weights = loop.model.weights
    eval_model.state = eval_state
    loop_eval_y = np.asarray(eval_model(x))
    dest = os.path.join(HERE, 'loop')
    os.makedirs(dest, exist_ok=True)
    for name in ('model.pkl.gz', 'model.weights.npy.gz',
                 'model.opt_slots0.npy.gz'):
      shutil.copy(os.path.join(tmp, name), os.path.join(dest, name))
  out['loop_x'] = x
  out['loop_eval_y'] = loop_eval_y
  out['loop_step'] = np.array(saved['step'])
  # The history as the checkpoint holds it (written before step 4's logs).
  history = trax.supervised.history.History.from_dict(saved['history'])
  for mode in history.modes:
    for metric in history.metrics_for_mode(mode):
      pairs = history.get(mode, metric)
      out[f'history/{mode}/{metric}'] = np.array(
          [(s, float(v)) for s, v in pairs], np.float64)
  np.savez(os.path.join(HERE, 'outputs.npz'), **out)


if __name__ == '__main__':
  main()
