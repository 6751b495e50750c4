"""supervised: training loops, tasks, checkpoints and learning-rate schedules."""

# The names `trax.supervised` binds. `trainer_lib` with its `Trainer` and
# `train` (Trax's older training API) import lazily (below), so that
# `import tfnp_trax` does not import gin.
from tfnp_trax import _reexport
from tfnp_trax.supervised import callbacks
from tfnp_trax.supervised import decoding
from tfnp_trax.supervised import lr_schedules
from tfnp_trax.supervised import reversible_trainer
from tfnp_trax.supervised import training
from tfnp_trax.supervised.training import EvalTask
from tfnp_trax.supervised.training import TrainTask

__all__ = ['callbacks', 'decoding', 'lr_schedules', 'reversible_trainer',
           'training', 'EvalTask', 'TrainTask']


# Trax binds `trainer_lib` and its `train` here; resolving them on first
# use keeps gin out of `import tfnp_trax`.
__getattr__, __dir__ = _reexport.lazy_reexports(globals(), {
    'trainer_lib': 'tfnp_trax.supervised.trainer_lib',
    'train': 'tfnp_trax.supervised.trainer_lib',
    'Trainer': 'tfnp_trax.supervised.trainer_lib',
})
