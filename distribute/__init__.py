"""distribute: tf.distribute in place of JAX's pmap/psum (TensorFlow only).

* `get_strategy`, `split_cpu`, `replica_devices`: pick a strategy (TPU, many
  workers, GPUs, CPU) and lay out devices.
* `pmap`, `psum`, `pmean`, `pmax`, `all_gather`, `mean_or_pmean`: run per
  replica and reduce on device.
* `for_n_devices`, `reshape_by_device`, `shard_batch`: per-device layouts.
* `jit_forward`: data-parallel prediction.
* `python -m distribute.launch --workers N -- CMD`: local multi-worker runs.
"""

from distribute.agreement import any_worker
from distribute.agreement import barrier
from distribute.averaging import mean_or_pmean
from distribute.chief import is_chief
from distribute.chief import worker_count
from distribute.collectives import all_gather
from distribute.collectives import num_replicas
from distribute.collectives import pmax
from distribute.collectives import pmean
from distribute.collectives import psum
from distribute.devices import replica_devices
from distribute.devices import split_cpu
from distribute.forward import jit_forward
from distribute.mapping import default_strategy
from distribute.mapping import pmap
from distribute.replica_shapes import per_replica_shape
from distribute.sharding import for_n_devices
from distribute.sharding import reshape_by_device
from distribute.sharding import shard_batch
from distribute.strategy import get_strategy
from distribute.strategy import KINDS

__all__ = [
    'mean_or_pmean', 'all_gather', 'num_replicas', 'pmax', 'pmean', 'psum',
    'replica_devices', 'split_cpu', 'jit_forward', 'default_strategy', 'pmap',
    'for_n_devices', 'reshape_by_device', 'shard_batch', 'get_strategy',
    'KINDS', 'any_worker', 'barrier', 'is_chief', 'worker_count',
    'per_replica_shape',
]
