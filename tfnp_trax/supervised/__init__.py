"""supervised: training loops, tasks, checkpoints and learning-rate schedules."""

# The names `trax.supervised` binds. Trax's `Trainer` belongs to its older
# trainer_lib API, which tfnp_trax does not have; `trainer_lib` and `train`
# import lazily (below), so `import tfnp_trax` does not import gin.
from tfnp_trax.supervised import callbacks
from tfnp_trax.supervised import decoding
from tfnp_trax.supervised import lr_schedules
from tfnp_trax.supervised import reversible_trainer
from tfnp_trax.supervised import training
from tfnp_trax.supervised.training import EvalTask
from tfnp_trax.supervised.training import TrainTask

__all__ = ['callbacks', 'decoding', 'lr_schedules', 'reversible_trainer',
           'training', 'EvalTask', 'TrainTask']


def __getattr__(name):
  # Trax binds `trainer_lib` and its `train` here; resolving them on first
  # use keeps gin out of `import tfnp_trax`.
  if name in ('trainer_lib', 'train'):
    import importlib  # pylint: disable=g-import-not-at-top
    module = importlib.import_module('tfnp_trax.supervised.trainer_lib')
    return module if name == 'trainer_lib' else module.train
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
