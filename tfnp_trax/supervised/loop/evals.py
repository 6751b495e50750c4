"""Metric layers run on a model's outputs: Loop's evals and RL's metrics.

`MetricsFunction` is the one builder of "model then metrics" functions:
`Serial(model, Branch(*metrics))`, where the model gets weights passed in
at each call (the trained ones) and the metric layers keep their own. Loop's
`Evaluator` averages it over an EvalTask's batches; `rl._compiled.Metrics`
names its outputs.
"""

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import layers as tl
from tfnp_trax import shapes
from tfnp_trax.supervised import _precision
from tfnp_trax.supervised.loop import inputs as inputs_lib
from tfnp_trax.supervised.loop import task_trainers as trainers_lib

__all__ = ['Evaluator', 'MetricsFunction']


class MetricsFunction:
  """`(batch, weights, state) -> tuple of metric values`, compiled once.

  Args:
    model: the model whose outputs the metrics read; its own weights are
      kept (initialized only if it was not).
    metrics: a list of metric layers.
    sample_batch: a batch (tuple of arrays) giving the input signature.
    jit_compile: passed to `fastmath.jit` (None: TensorFlow decides).
    precision: None/'float32', or 'bf16' to run the model in bfloat16 as
      the Trainer's mixed precision does (weights and the model's float
      inputs cast to bfloat16; the metrics upcast to float32).
  """

  def __init__(self, model, metrics, sample_batch, jit_compile=None,
               precision=None):
    self._compute_dtype = _precision.resolve(precision, 'MetricsFunction')
    self._n_model_inputs = model.n_in
    self._layer = tl.Serial(model, tl.Branch(*metrics))
    trainers_lib.init_keeping(
        self._layer,
        shapes.signature(tuple(onp.asarray(x) for x in sample_batch)))
    self._metric_weights = self._layer.weights[1]
    self._metric_state = self._layer.state[1]
    self._rng = fastmath.random.get_prng(0)
    self._fn = fastmath.jit(self._run, jit_compile=jit_compile)

  def _run(self, batch, weights, state):
    if self._compute_dtype is not None:
      batch = _precision.cast_inputs(batch, self._n_model_inputs,
                                     self._compute_dtype)
      weights = _precision.cast_floats(weights, self._compute_dtype)
    out, _ = self._layer.pure_fn(batch, (weights, self._metric_weights),
                                 (state, self._metric_state), self._rng)
    return tuple(out) if isinstance(out, (list, tuple)) else (out,)

  def __call__(self, batch, weights, state):
    batch = tuple(tf.convert_to_tensor(x) for x in batch)
    as_tensors = lambda tree: fastmath.nested_map(tf.convert_to_tensor, tree)
    return self._fn(batch, as_tensors(weights), as_tensors(state))


class Evaluator:
  """Averages an EvalTask's metrics over `n_eval_batches` batches.

  Built as Trax builds it: the eval model gets the trained weights and the
  metric layers keep their own. `precision` is the Trainer's (see
  `MetricsFunction`), so evals see the numbers training computes.

  Attributes:
    stream: the `InputStream` of the task's batches (its position is
      checkpointed, so a resumed run reads the batches an uninterrupted
      one would).
  """

  def __init__(self, eval_model, eval_task, precision=None):
    self._task = eval_task
    # No metrics (Trax allows it): the batches are read, nothing computed.
    self._fn = MetricsFunction(eval_model, eval_task.metrics,
                               eval_task.sample_batch,
                               precision=precision) if eval_task.metrics else (
                                   lambda batch, weights, state: ())
    # Eval batches are read on the host and run unreplicated.
    self.stream = inputs_lib.InputStream(eval_task.labeled_data,
                                         tf.distribute.get_strategy())

  def evaluate(self, weights, state):
    """Returns {metric name: mean over the eval batches}."""
    sums = onp.zeros(len(self._task.metrics))
    for _ in range(self._task.n_eval_batches):
      try:
        batch = next(self.stream)
      except StopIteration as e:
        raise RuntimeError(
            f'EvalTask: the eval data ran out; it must yield '
            f'n_eval_batches={self._task.n_eval_batches} batches per eval '
            f'(e.g. make it repeat).') from e
      sums += onp.array([float(v) for v in self._fn(batch, weights, state)])
    return dict(zip(self._task.metric_names, sums / self._task.n_eval_batches))
