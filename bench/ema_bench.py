"""Evals on the weights' moving average against evals on the weights.

A noisy small task: scikit-learn's 8x8 digits with 30% of the training
labels replaced by random ones, an MLP trained by Adam at a high learning
rate on batches of 16. Per seed, two Loops train identically (same seed,
same data; the average does not change training) and differ only in what
their evals read (`eval_with_ema`). Prints test cross-entropy and accuracy
of the last eval, per seed and the mean.

  python bench/ema_bench.py [--seeds 3] [--steps 1500] [--decay 0.99]
"""

import argparse
import contextlib
import io
import time

import numpy as np


def _run(seed, steps, decay, eval_with_ema):
  from tfnp_trax import data, models, optimizers  # pylint: disable=g-import-not-at-top
  import tfnp_trax.layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import training  # pylint: disable=g-import-not-at-top
  (xtr, ytr), (xte, yte) = data.load_digits_split(seed=0)
  rs = np.random.RandomState(100 + seed)
  noisy = ytr.copy()
  flip = rs.rand(len(noisy)) < 0.3
  noisy[flip] = rs.randint(0, 10, int(flip.sum()))
  task = training.TrainTask(
      data.classification_batches(xtr, noisy, 16, seed),
      tl.WeightedCategoryCrossEntropy(), optimizers.Adam(0.01))
  evals = training.EvalTask(
      data.classification_batches(xte, yte, len(yte), seed, shuffle=False),
      [tl.WeightedCategoryCrossEntropy(), tl.WeightedCategoryAccuracy()],
      metric_names=['ce', 'accuracy'])
  loop = training.Loop(models.MLP(layer_widths=(128, 64, 10)), task,
                       eval_tasks=[evals], random_seed=seed,
                       eval_at=lambda s: s == steps, ema_decay=decay,
                       eval_with_ema=eval_with_ema)
  with contextlib.redirect_stdout(io.StringIO()):
    loop.run(steps)
  return (loop.history.last('eval', 'metrics/ce'),
          loop.history.last('eval', 'metrics/accuracy'))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--seeds', type=int, default=3)
  parser.add_argument('--steps', type=int, default=1500)
  parser.add_argument('--decay', type=float, default=0.99)
  args = parser.parse_args()
  start = time.time()
  rows = []
  for seed in range(args.seeds):
    raw = _run(seed, args.steps, args.decay, False)
    ema = _run(seed, args.steps, args.decay, True)
    rows.append(raw + ema)
    print(f'seed {seed}: raw ce {raw[0]:.4f} acc {raw[1]:.4f} | ema ce '
          f'{ema[0]:.4f} acc {ema[1]:.4f}', flush=True)
  mean = np.mean(rows, axis=0)
  print(f'\n| evals on | test cross-entropy | test accuracy |\n|---|---|---|\n'
        f'| weights | {mean[0]:.4f} | {mean[1]:.4f} |\n'
        f'| moving average (decay {args.decay}) | {mean[2]:.4f} | '
        f'{mean[3]:.4f} |')
  print(f'({args.seeds} seeds, {args.steps} steps, {time.time() - start:.0f}'
        f' s)')


if __name__ == '__main__':
  main()
