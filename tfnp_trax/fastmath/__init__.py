"""fastmath: the one seam between tfnp_trax and TensorFlow.

Layers import `from tfnp_trax.fastmath import numpy as jnp` and use the
transforms, ops, random keys and tree utilities re-exported here.
"""

import sys as _sys

from distribute.collectives import all_gather
from distribute.collectives import pmax
from distribute.collectives import pmean
from distribute.collectives import psum
from tfnp_trax.fastmath._numpy import numpy
from tfnp_trax.fastmath import checks
from tfnp_trax.fastmath import in_place
from tfnp_trax.fastmath import linalg
from tfnp_trax.fastmath import random
from tfnp_trax.fastmath.abstract import abstract_eval
from tfnp_trax.fastmath.backend import Backend
from tfnp_trax.fastmath.backend import backend_name
from tfnp_trax.fastmath.backend import set_backend
from tfnp_trax.fastmath.backend import use_backend
from tfnp_trax.fastmath.control_flow import after
from tfnp_trax.fastmath.control_flow import cond
from tfnp_trax.fastmath.control_flow import fori_loop
from tfnp_trax.fastmath.control_flow import scan
from tfnp_trax.fastmath.control_flow import vmap
from tfnp_trax.fastmath.devices import device_count
from tfnp_trax.fastmath.devices import device_put
from tfnp_trax.fastmath.devices import local_device_count
from tfnp_trax.fastmath.dtypes import canonicalize_array
from tfnp_trax.fastmath.dtypes import canonicalize_dtype
from tfnp_trax.fastmath.dtypes import promote_args
from tfnp_trax.fastmath.dtypes import result_type
from tfnp_trax.fastmath.nn_ops import avg_pool
from tfnp_trax.fastmath.nn_ops import conv
from tfnp_trax.fastmath.nn_ops import layer_norm
from tfnp_trax.fastmath.nn_ops import linear
from tfnp_trax.fastmath.nn_ops import matmul_transposed
from tfnp_trax.fastmath.nn_ops import relu
from tfnp_trax.fastmath.nn_ops import softmax
from tfnp_trax.fastmath.nn_ops import sparse_softmax_cross_entropy
from tfnp_trax.fastmath.nn_ops import max_pool
from tfnp_trax.fastmath.nn_ops import sum_pool
from tfnp_trax.fastmath.norms import ordered_after
from tfnp_trax.fastmath.norms import sums_of_squares
from tfnp_trax.fastmath.ops import dynamic_slice
from tfnp_trax.fastmath.ops import dynamic_slice_in_dim
from tfnp_trax.fastmath.ops import dynamic_update_slice
from tfnp_trax.fastmath.ops import dynamic_update_slice_in_dim
from tfnp_trax.fastmath.ops import erf
from tfnp_trax.fastmath.ops import expit
from tfnp_trax.fastmath.ops import index_add
from tfnp_trax.fastmath.ops import index_max
from tfnp_trax.fastmath.ops import index_min
from tfnp_trax.fastmath.ops import index_update
from tfnp_trax.fastmath.ops import is_float
from tfnp_trax.fastmath.ops import logsumexp
from tfnp_trax.fastmath.ops import one_hot
from tfnp_trax.fastmath.ops import qr
from tfnp_trax.fastmath.ops import cast_like
from tfnp_trax.fastmath.ops import dataset_as_numpy
from tfnp_trax.fastmath.ops import disable_jit
from tfnp_trax.fastmath.ops import global_device_count
from tfnp_trax.fastmath.ops import is_backend
from tfnp_trax.fastmath.ops import lt
from tfnp_trax.fastmath.ops import map  # pylint: disable=redefined-builtin
from tfnp_trax.fastmath.ops import nested_stack
from tfnp_trax.fastmath.ops import nested_zip
from tfnp_trax.fastmath.ops import pmap
from tfnp_trax.fastmath.ops import remat
from tfnp_trax.fastmath.ops import sigmoid
from tfnp_trax.fastmath.ops import sort_key_val
from tfnp_trax.fastmath.ops import top_k
from tfnp_trax.fastmath.transforms import custom_grad
from tfnp_trax.fastmath.transforms import custom_vjp
from tfnp_trax.fastmath.transforms import grad
from tfnp_trax.fastmath.transforms import in_xla
from tfnp_trax.fastmath.transforms import jit
from tfnp_trax.fastmath.transforms import recompute_grad
from tfnp_trax.fastmath.transforms import stop_gradient
from tfnp_trax.fastmath.transforms import value_and_grad
from tfnp_trax.fastmath.transforms import vjp
from tfnp_trax.fastmath.trees import nested_map
from tfnp_trax.fastmath.trees import nested_map_multiarg
from tfnp_trax.fastmath.trees import tree_flatten
from tfnp_trax.fastmath.trees import tree_leaves
from tfnp_trax.fastmath.trees import tree_unflatten

__all__ = [
    'numpy', 'checks', 'in_place', 'linalg', 'random', 'abstract_eval',
    'Backend',
    'backend_name', 'set_backend', 'use_backend', 'after', 'cond',
    'fori_loop', 'scan', 'vmap',
    'device_count', 'device_put', 'local_device_count', 'avg_pool', 'conv',
    'linear',
    'layer_norm', 'matmul_transposed', 'relu', 'softmax',
    'sparse_softmax_cross_entropy',
    'max_pool',
    'sum_pool', 'dynamic_slice', 'dynamic_slice_in_dim',
    'dynamic_update_slice', 'dynamic_update_slice_in_dim', 'erf', 'expit',
    'index_add', 'index_max', 'index_min', 'index_update', 'is_float',
    'logsumexp', 'one_hot', 'qr', 'cast_like', 'sort_key_val', 'top_k', 'custom_grad',
    'custom_vjp', 'grad', 'jit', 'stop_gradient', 'value_and_grad', 'vjp',
    'nested_map', 'nested_map_multiarg', 'tree_flatten', 'tree_leaves',
    'tree_unflatten', 'psum', 'pmean', 'pmax', 'all_gather',
    'canonicalize_array', 'canonicalize_dtype', 'promote_args',
    'result_type', 'dataset_as_numpy', 'disable_jit', 'global_device_count',
    'is_backend', 'lt', 'map', 'nested_stack', 'nested_zip', 'pmap', 'remat',
    'sigmoid', 'in_xla', 'recompute_grad', 'ordered_after', 'sums_of_squares',
]

# Trax code also writes `import trax.fastmath.numpy as jnp`. `numpy` here is
# an attribute (TensorFlow's NumPy module), not a file, so give the import
# system an entry for that dotted name.
_sys.modules.setdefault(__name__ + '.numpy', numpy)
