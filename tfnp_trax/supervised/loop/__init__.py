"""The parts of `training.Loop`, Trax's training loop.

`tfnp_trax.supervised.training` is Trax's face (`Loop`, `TrainTask`,
`EvalTask`); this package holds what the Loop is built from, one part per
module. Read them in this order:

* `tasks`: `TrainTask` and `EvalTask`, what to train and evaluate.
* `inputs`: `InputStream`, a task's batches, counted so a resumed run
  skips what it already read (batches are placed on replicas by
  `supervised._batches`).
* `task_trainers`: one `Trainer` per TrainTask over the shared model body
  (`TaskTrainers`), or one reversible trainer (`ReversibleTaskTrainers`),
  behind one interface; `init_keeping` builds `Serial(model, loss)` as
  Trax does.
* `evals`: `MetricsFunction` (model then metric layers, compiled once) and
  the `Evaluator` of an EvalTask; RL's metrics use `MetricsFunction` too.
* `progress`: the running sums of training values between logs.
* `logs`: the log lines and the summary folders of each task.
* `bookkeeping`: `RunBookkeeping`, the step counter, History, summaries,
  checkpoint manager, chief-only rule and preemption (`preemption`), which
  RL's trainers share.
* `checkpointing`: what a Loop checkpoint holds and how Trax's checkpoint
  names map onto the atomic `supervised.checkpoints.CheckpointManager`.
* `resume`: `load_checkpoint`, given the parts it restores.
* `stopping`: an early stop (`Loop.request_stop`) and the callbacks'
  state, as checkpoints keep them.

Nothing here is imported by `import tfnp_trax.supervised.loop` itself: each
part loads with the module that needs it.
"""

__all__ = []
