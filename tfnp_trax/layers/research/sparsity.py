"""Trax's sparsity research layers (`trax.layers.research.sparsity`).

Cheaper stand-ins for `Dense` and the causal attentions built on them, plus
fixed reversible permutations of the embedding axis. The layers live in
private modules; this module re-exports them under Trax's names.
"""

from tfnp_trax.layers.research._block_sparse_ff import BlockSparseFF
from tfnp_trax.layers.research._block_sparse_ff import SwitchSparseFF
from tfnp_trax.layers.research._conv_attention import MultiplicativeConvCausalAttention
from tfnp_trax.layers.research._favor import CausalFavor
from tfnp_trax.layers.research._favor import CausalFavorAttention
from tfnp_trax.layers.research._favor import Favor
from tfnp_trax.layers.research._favor import FavorAttention
from tfnp_trax.layers.research._local_conv import LocallyConvDense
# Trax's Terraformer patches `sparsity._RememberPad.monkey_patched_mask`.
from tfnp_trax.layers.research._local_conv import _RememberPad
from tfnp_trax.layers.research._permute_layers import MergeLastTwoAxes
from tfnp_trax.layers.research._permute_layers import ReversibleRandomPermute
from tfnp_trax.layers.research._permute_layers import ReversibleReshapePermute
from tfnp_trax.layers.research._permute_layers import SplitLastAxis
from tfnp_trax.layers.research._sparse_attention import ConvCausalAttention
from tfnp_trax.layers.research._sparse_attention import LowRankCausalAttention
from tfnp_trax.layers.research._sparse_attention import ModularCausalAttention
from tfnp_trax.layers.research._sparse_attention import MultiplicativeCausalAttention
from tfnp_trax.layers.research._sparse_attention import MultiplicativeModularCausalAttention
from tfnp_trax.layers.research._sparse_dense import EinsumDense
from tfnp_trax.layers.research._sparse_dense import FactoredDense
from tfnp_trax.layers.research._sparse_dense import LocallyConnectedDense
from tfnp_trax.layers.research._sparse_dense import LowRankDense
from tfnp_trax.layers.research._sparse_dense import MultiplicativeModularSparseDense
from tfnp_trax.layers.research._sparse_dense import RandomLayer
from tfnp_trax.layers.research._sparse_dense import SparseDenseWithOptions
from tfnp_trax.layers.research._sparse_ff import SparseFF
from tfnp_trax.layers.research._sparse_ff import _RecallQuantMaskInReverse
from tfnp_trax.layers.research._sparse_ff import _RememberInReverse
from tfnp_trax.layers.research._sparse_ff import _SparseFFController
from tfnp_trax.layers.research._sparse_ff import _SparseFFMain

__all__ = [
    'ReversibleReshapePermute', 'ReversibleRandomPermute', 'SplitLastAxis',
    'MergeLastTwoAxes', 'LocallyConnectedDense', 'ModularCausalAttention',
    'LocallyConvDense', 'ConvCausalAttention', 'LowRankDense', 'EinsumDense',
    'RandomLayer', 'SparseDenseWithOptions', 'LowRankCausalAttention',
    'FactoredDense', 'MultiplicativeModularSparseDense',
    'MultiplicativeCausalAttention', 'MultiplicativeModularCausalAttention',
    'MultiplicativeConvCausalAttention',
    'FavorAttention', 'Favor', 'CausalFavorAttention', 'CausalFavor',
    'SparseFF', 'BlockSparseFF', 'SwitchSparseFF',
]
