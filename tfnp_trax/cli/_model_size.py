"""Choosing the language model's size for `tfnp-trax train`'s time budget.

A bigger model learns more per step but takes fewer steps in a fixed
time; which reaches the lowest loss depends on the machine. The default
pylm run times one training step of each size on a ladder (smallest
first, after compiling it), predicts how many steps of it the budget
buys, and takes the biggest size that still gets the steps it needs to
beat the size below it (`Size.min_steps`, measured on 2-core CPUs). A
slow machine stops on a low rung; a fast one climbs. The choice is
written to `<output_dir>/model_size.json` before training, so a resumed
run rebuilds the same model.

`choose` is a pure function of the timings it is given, so the rule is
tested with made-up ones; `probe_step_seconds` does the timing.
"""

import math
import time
from typing import Callable, NamedTuple, Optional, Sequence

from tfnp_trax.cli import _run_files

__all__ = ['Size', 'LADDER', 'Choice', 'choose', 'probe_step_seconds',
           'SIZE_FILE', 'write_size', 'read_size']

SIZE_FILE = 'model_size.json'


class Size(NamedTuple):
  """One rung of the ladder: a TransformerLM and its batches.

  Attributes:
    name: a short label.
    n_layers, d_model, n_heads: the TransformerLM (d_ff = 4 * d_model).
    seq_len, batch_size: each step's batch of byte windows.
    learning_rate: Adam's peak rate for this size.
    min_steps: the fewest steps at which this size ends below the size
      under it in the same wall time (from runs on 2-core CPUs); the
      smallest size needs none.
  """
  name: str
  n_layers: int
  d_model: int
  n_heads: int
  seq_len: int
  batch_size: int
  learning_rate: float
  min_steps: int

  def describe(self):
    return (f'{self.n_layers} layer{"s" if self.n_layers > 1 else ""} x '
            f'{self.d_model} wide, batches of {self.batch_size} x '
            f'{self.seq_len} bytes')


# Smallest first; every rung must be slower per step than the one below.
# All train on 256-byte windows: on the standard library's sources, with
# the same compute, 2 x 128 reached 1.24 nats/byte on 8 x 256 windows
# against 1.31 on 16 x 128 (more context per predicted byte), while wider
# (2 x 192) or deeper (3 x 128) models did worse at under ~4000 steps.
LADDER = (
    Size('tiny', 1, 128, 4, 256, 8, 5e-3, 0),
    Size('small', 2, 128, 4, 256, 8, 4e-3, 1500),
    Size('medium', 3, 192, 4, 256, 8, 3e-3, 4000),
    Size('large', 4, 256, 4, 256, 8, 2e-3, 6000),
)


class Choice(NamedTuple):
  """The chosen size, what the steps were predicted to cost, and why."""
  size: Size
  step_s: float
  steps: int
  reasons: tuple

  def to_dict(self):
    return {'size': self.size._asdict(), 'step_s': self.step_s,
            'steps': self.steps, 'reasons': list(self.reasons)}

  @classmethod
  def from_dict(cls, d):
    return cls(Size(**d['size']), float(d['step_s']), int(d['steps']),
               tuple(d['reasons']))


def choose(ladder: Sequence[Size], step_seconds: Callable[[Size], float],
           train_seconds: float) -> Choice:
  """The biggest size that gets its `min_steps` in `train_seconds`.

  Sizes are timed smallest first, and timing stops at the first size
  that would get too few steps (the bigger ones are slower still). A size
  is not timed at all where the one below it already gets fewer steps
  than it needs: being slower per step, it would get fewer still.

  Args:
    ladder: sizes, smallest (and fastest) first.
    step_seconds: size -> measured seconds per training step.
    train_seconds: the seconds the budget leaves for training steps.

  Returns:
    A `Choice`; its `reasons` say, per size timed, what it would get.
  """
  if not ladder:
    raise ValueError('choose: the ladder is empty.')
  chosen, reasons = None, []
  for size in ladder:
    if chosen is not None and chosen.steps < size.min_steps:
      reasons.append(
          f'{size.name} ({size.describe()}): not timed; it needs '
          f'{size.min_steps} steps, more than {chosen.size.name} gets')
      break
    step_s = float(step_seconds(size))
    if not step_s > 0 or not math.isfinite(step_s):
      raise ValueError(f'choose: the step time of {size.name} must be a '
                       f'positive number of seconds, got {step_s}.')
    steps = int(train_seconds / step_s)
    fits = chosen is None or steps >= size.min_steps
    reasons.append(
        f'{size.name} ({size.describe()}): {1 / step_s:.1f} steps/s, '
        f'~{steps} steps' + ('' if chosen is None else
                             f' (needs {size.min_steps})'))
    if not fits:
      break
    chosen = Choice(size, step_s, steps, ())
  return chosen._replace(reasons=tuple(reasons))


def probe_step_seconds(size, vocab_size, batch, timed_s=1.0, min_steps=3,
                       clock=time.perf_counter, strategy=None,
                       jit_compile=None, precision=None):
  """Seconds per training step of `size`, timed after its compiling step.

  Builds the model and an Adam trainer, runs one step (it compiles), then
  times at least `min_steps` steps or `timed_s` seconds of them.

  Args:
    size: a Size.
    vocab_size: the model's vocabulary.
    batch: (inputs, targets, weights) of the size's batch shape.
    timed_s: seconds of steps to time, after the compiling one.
    min_steps: the fewest steps timed.
    clock: a clock.
    strategy, jit_compile, precision: as the run's Trainer has them.
  """
  # pylint: disable=g-import-not-at-top
  import tfnp_trax.layers as tl
  from tfnp_trax import fastmath
  from tfnp_trax import models
  from tfnp_trax import optimizers
  from tfnp_trax import shapes
  from tfnp_trax.supervised import trainer as trainer_lib
  # pylint: enable=g-import-not-at-top
  model = tl.Serial(
      models.TransformerLM(vocab_size, d_model=size.d_model,
                           d_ff=4 * size.d_model, n_layers=size.n_layers,
                           n_heads=size.n_heads, max_len=size.seq_len,
                           dropout=0.0, mode='train'),
      tl.WeightedCategoryCrossEntropy())
  if strategy is not None:
    with strategy.scope():
      model.init(shapes.signature(batch))
  else:
    model.init(shapes.signature(batch))
  trainer = trainer_lib.Trainer(
      model, optimizers.Adam(size.learning_rate, weight_decay_rate=0.0,
                             clip_grad_norm=1.0),
      strategy=strategy, jit_compile=jit_compile, precision=precision)
  rng = fastmath.random.get_prng(0)
  float(trainer.one_step(batch, rng, step=0)[0])  # Compiles.
  start, n = clock(), 0
  while n < min_steps or clock() - start < timed_s:
    loss, _ = trainer.one_step(batch, rng, step=n + 1)
    n += 1
  float(loss)
  return (clock() - start) / n


def write_size(output_dir, choice):
  """Writes `choice` to `<output_dir>/model_size.json` atomically."""
  return _run_files.write_json(output_dir, SIZE_FILE, choice.to_dict())


def read_size(output_dir) -> Optional[Choice]:
  """The choice `write_size` left in `output_dir`, or None."""
  return _run_files.read_json(
      output_dir, SIZE_FILE, Choice.from_dict,
      'does not describe a model size', 'the model of the run')
