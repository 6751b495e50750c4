"""Trax's efficient attention (trax.layers.research.efficient_attention).

Memory-efficient multi-head self-attention (`SelfAttention`, optionally
chunked), LSH attention (`LSHSelfAttention`, `PureLSHSelfAttention` and its
wrappers), encoder-decoder attention (`EncDecAttention`), the LSH
feed-forward block (`LSHFF`), and the functions they are built from. The
code lives in private modules, one concept each; this module re-exports it
under Trax's import path.
"""

import sys

from tfnp_trax.layers.research._attention_functions import apply_broadcasted_dropout
from tfnp_trax.layers.research._attention_functions import attend
from tfnp_trax.layers.research._attention_functions import hash_vecs
from tfnp_trax.layers.research._attention_functions import length_normalized
from tfnp_trax.layers.research._attention_functions import look_adjacent
from tfnp_trax.layers.research._attention_functions import mask_self_attention
from tfnp_trax.layers.research._attention_functions import permute_via_gather
from tfnp_trax.layers.research._attention_functions import permute_via_sort
from tfnp_trax.layers.research._chunked_attention import SelfAttention
from tfnp_trax.layers.research._efficient_attention_base import EfficientAttentionBase
from tfnp_trax.layers.research._enc_dec_attention import EncDecAttention
from tfnp_trax.layers.research._lsh_self_attention import LSHSelfAttention
from tfnp_trax.layers.research._lsh_wrappers import MixedLSHSelfAttention
from tfnp_trax.layers.research._lsh_wrappers import PureLSHSelfAttentionWrapper
from tfnp_trax.layers.research._lshff import LSHFF
from tfnp_trax.layers.research._pure_lsh import PureLSHSelfAttention

__all__ = [
    'EfficientAttentionBase', 'EncDecAttention', 'LSHFF', 'LSHSelfAttention',
    'MixedLSHSelfAttention', 'PureLSHSelfAttention',
    'PureLSHSelfAttentionWrapper', 'SelfAttention',
    'apply_broadcasted_dropout', 'attend', 'hash_vecs', 'length_normalized',
    'look_adjacent', 'mask_self_attention', 'permute_via_gather',
    'permute_via_sort',
]

# Trax's layers/__init__.py makes these two gin configurables under
# `trax.layers` (denylist 'mode') on import, and its tests bind their
# parameters from Python: `gin.bind_parameter('PureLSHSelfAttention.chunk_len',
# 2)`, then a model built with `tl.PureLSHSelfAttentionWrapper` gets that
# chunk length. tfnp_trax imports gin only when it is used, so they are
# registered here when gin is already imported, else with the other Trax
# names when a config is parsed (`tfnp_trax._gin_registry`). Gin wraps their
# `__init__` in place: the classes stay the same objects, and a call without
# bindings is unchanged.
if 'gin' in sys.modules:
  from tfnp_trax import _gin_registry  # pylint: disable=g-import-not-at-top
  _gin_registry.register_in_place()
