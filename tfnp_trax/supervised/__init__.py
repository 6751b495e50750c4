"""supervised: training loops, tasks, checkpoints and learning-rate schedules."""

# The names `trax.supervised` binds (Trax's `Trainer` and `train` belong to
# its older trainer_lib, which tfnp_trax does not have).
from tfnp_trax.supervised import callbacks
from tfnp_trax.supervised import decoding
from tfnp_trax.supervised import lr_schedules
from tfnp_trax.supervised import reversible_trainer
from tfnp_trax.supervised import training
from tfnp_trax.supervised.training import EvalTask
from tfnp_trax.supervised.training import TrainTask

__all__ = ['callbacks', 'decoding', 'lr_schedules', 'reversible_trainer',
           'training', 'EvalTask', 'TrainTask']
