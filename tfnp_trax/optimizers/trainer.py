"""The trainers under Trax's path `trax.optimizers.trainer`.

Trax defines `Trainer` and `ReversibleSerialTrainer` in its optimizers
package. This library builds its compiled, replicated trainers in
`tfnp_trax.supervised`; this module gives them Trax's names and, for
`Trainer`, Trax's calling convention (see `Trainer` below).
"""

from tfnp_trax.supervised import trainer as _supervised_trainer
from tfnp_trax.supervised.reversible_trainer import extract_reversible_blocks
from tfnp_trax.supervised.reversible_trainer import init_reversible_blocks
from tfnp_trax.supervised.reversible_trainer import ReversibleSerialTrainer

__all__ = ['Trainer', 'ReversibleSerialTrainer', 'extract_reversible_blocks',
           'init_reversible_blocks']


class Trainer(_supervised_trainer.Trainer):
  """Trax's `optimizers.Trainer`: one training step at a time, in place.

  The same compiled step as `tfnp_trax.supervised.trainer.Trainer`, with
  Trax's contract (trax/optimizers/trainer.py): `one_step(batch, rng)`
  defaults to step 0, and after each step `model_with_loss` holds the new
  weights and state and the optimizer holds the new slots, so code that
  reads `layer.weights` sees the trained values.

  Example:
    >>> import numpy as np
    >>> from tfnp_trax import fastmath, optimizers
    >>> import tfnp_trax.layers as tl
    >>> batch = (np.ones((4, 1), np.float32), np.zeros((4, 1), np.float32),
    ...          np.ones((4, 1), np.float32))
    >>> model_with_loss = tl.Serial(tl.Dense(1), tl.L2Loss())
    >>> _ = model_with_loss.init(batch)
    >>> trainer = optimizers.Trainer(model_with_loss, optimizers.SGD(0.1))
    >>> before = np.asarray(model_with_loss.weights[0][1])
    >>> _ = trainer.one_step(batch, fastmath.random.get_prng(0))
    >>> bool(np.any(np.asarray(model_with_loss.weights[0][1]) != before))
    True
  """

  def __init__(self, model_with_loss, optimizer, n_devices=None,
               adasum=False, **kwargs):
    """Creates the trainer.

    Args:
      model_with_loss: an initialized layer mapping a batch to a scalar loss.
      optimizer: a tfnp_trax optimizer.
      n_devices: optional; if given, must equal the strategy's replicas.
      adasum: Trax's Adasum gradient merge; only available here with one
        replica, where it is the identity, as in Trax.
      **kwargs: further arguments of the supervised `Trainer` (`strategy`,
        `jit_compile`, `fused_update`, `precision`).
    """
    super().__init__(model_with_loss, optimizer, **kwargs)
    n_replicas = self.strategy.num_replicas_in_sync
    if n_devices is not None and n_devices != n_replicas:
      raise ValueError(
          f'Trainer: n_devices={n_devices} but the strategy '
          f'{type(self.strategy).__name__} has {n_replicas} replicas; pass '
          f'n_devices=None or a strategy over {n_devices} devices.')
    if adasum and n_replicas > 1:
      raise NotImplementedError(
          f'Trainer: adasum=True is not available with {n_replicas} '
          'replicas (gradients are averaged); use adasum=False, or '
          'ReversibleSerialTrainer, which merges with Adasum.')

  @property
  def model_with_loss(self):
    return self._model

  @property
  def optimizer(self):
    return self._optimizer

  def one_step(self, batch, rng, step=0, learning_rate=None, **kwargs):
    """Runs one training step; returns `(loss, stats)`.

    Args:
      batch: a tuple of arrays (inputs, targets[, weights]).
      rng: an int32 [2] key.
      step: the 0-based step number (Trax's default: 0).
      learning_rate: optional learning rate for this step.
      **kwargs: `opt_params`, as in the supervised `Trainer`.
    """
    out = super().one_step(batch, rng, step, learning_rate=learning_rate,
                           **kwargs)
    self._model.weights = self._weights.read()
    self._model.state = self._state.read()
    self._optimizer.slots = self._slots.read()
    return out
