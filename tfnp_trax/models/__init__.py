"""tfnp_trax.models: ready-made models built from tfnp_trax.layers."""

from tfnp_trax.models.transformer import Transformer
from tfnp_trax.models.transformer import TransformerDecoder
from tfnp_trax.models.transformer import TransformerEncoder
from tfnp_trax.models.transformer import TransformerLM
from tfnp_trax.models.mlp import MLP
from tfnp_trax.models.resnet import Resnet50
from tfnp_trax.models.resnet import WideResnet
from tfnp_trax.models.rnn import GRULM
from tfnp_trax.models.rnn import RNNLM
from tfnp_trax.models.rl import Policy
from tfnp_trax.models.rl import PolicyAndValue
from tfnp_trax.models.rl import Value

__all__ = [
    'Transformer', 'TransformerDecoder', 'TransformerEncoder',
    'TransformerLM',
    'MLP', 'Resnet50', 'WideResnet', 'GRULM', 'RNNLM',
    'Policy', 'PolicyAndValue', 'Value',
]
