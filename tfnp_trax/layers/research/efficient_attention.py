"""Trax's efficient attention (trax.layers.research.efficient_attention).

Memory-efficient multi-head self-attention (`SelfAttention`, optionally
chunked), LSH attention (`LSHSelfAttention`, `PureLSHSelfAttention` and its
wrappers), encoder-decoder attention (`EncDecAttention`), the LSH
feed-forward block (`LSHFF`), and the functions they are built from. The
code lives in private modules, one concept each; this module re-exports it
under Trax's import path.
"""

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

# Trax's layers/__init__.py makes PureLSHSelfAttention and
# PureLSHSelfAttentionWrapper gin configurables on import; tfnp_trax does so
# at the end of `import tfnp_trax` when gin is already imported (see
# tfnp_trax/__init__.py), else when a config is parsed.
