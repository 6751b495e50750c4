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
    warmup_steps: the learning rate's linear warm-up (a file written
      before this field existed reads as 100, what such runs used).
  """
  name: str
  n_layers: int
  d_model: int
  n_heads: int
  seq_len: int
  batch_size: int
  learning_rate: float
  min_steps: int
  warmup_steps: int = 100

  def describe(self):
    return (f'{self.n_layers} layer{"s" if self.n_layers > 1 else ""} x '
            f'{self.d_model} wide, batches of {self.batch_size} x '
            f'{self.seq_len} bytes')


# Smallest first; every rung must be slower per step than the one below.
# All train on batches of 4 windows of 256 bytes, after a warm-up of 300
# steps. On the standard library's sources, 2 x 128 on a 2-core CPU
# (held-out bits/char, every byte with >= 128 bytes of context / whole
# windows scored):
#   8 x 256 windows, rate 4e-3, warm-up 100, 3000 steps (198 s): 1.82 / 1.91
#   4 x 256, 3e-3, warm-up 100, 5112 steps (185 s):             1.93 / 2.01
#   4 x 256, 3e-3, warm-up 200, 5112 steps (188 s):             1.85 / 1.93
#   4 x 256, 3e-3, warm-up 200, 6000 steps (206 s):             1.75 / 1.85
#   4 x 256, 3e-3, warm-up 300, 5900 steps:                     1.71 / 1.82
#   2 x 256, 2e-3, warm-up 300, 10000 steps (212 s):            1.90 / 1.96
# A step costs about the same per byte at these batches, so the smaller
# batch buys more updates from the same bytes, down to where its noise
# costs more; a longer warm-up steadied the small batch's start. In the
# same time 3 x 128 (4 x 256, 4500 steps) reached only 2.00 / 2.06, and
# 8 x 256 windows had beaten 16 x 128 (more context per predicted byte).
# The rates follow the batch: 4e-3 was best for 2 x 128 on 8 x 256 (6e-3
# with Adam's b2 at 0.99 ended 0.15 bits worse), and 3e-3 on half that
# batch (about sqrt(1/2) of it). Each `min_steps` is in steps of its own
# batch (twice the counts measured on 8 x 256 windows).
LADDER = (
    Size('tiny', 1, 128, 4, 256, 4, 3.5e-3, 0, 300),
    Size('small', 2, 128, 4, 256, 4, 3e-3, 3000, 300),
    Size('medium', 3, 192, 4, 256, 4, 2e-3, 8000, 300),
    Size('large', 4, 256, 4, 256, 4, 1.5e-3, 12000, 300),
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
                       jit_compile=None, precision=None, warm_steps=3):
  """Seconds per training step of `size`, timed after its compiling step.

  Builds the model and an Adam trainer, runs one step (it compiles) and
  `warm_steps` more untimed (a 1-second probe that timed the first steps
  after compiling put the 1-layer model at 26.5 steps/s on a 2-core CPU,
  barely above the 2-layer one's 22.7, which then ran at 27 in the run),
  then times at least `min_steps` steps or `timed_s` seconds of them.

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
  for step in range(warm_steps):
    loss, _ = trainer.one_step(batch, rng, step=step + 1)
  if warm_steps:
    float(loss)
  start, n = clock(), 0
  while n < min_steps or clock() - start < timed_s:
    loss, _ = trainer.one_step(batch, rng, step=warm_steps + n + 1)
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
