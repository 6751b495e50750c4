"""Research models: Transformer variants and other experimental networks."""

from tfnp_trax.models.research.layerdrop_transformer import EveryOtherLayerDropTransformerLM
from tfnp_trax.models.research.layerdrop_transformer import LayerDropTransformerLM
from tfnp_trax.models.research.layerdrop_transformer import SkippingTransformerLM
from tfnp_trax.models.research.rezero import ReZeroTransformer
from tfnp_trax.models.research.rezero import ReZeroTransformerDecoder
from tfnp_trax.models.research.rezero import ReZeroTransformerEncoder
from tfnp_trax.models.research.rezero import ReZeroTransformerLM
from tfnp_trax.models.research.rse import ResidualShuffleExchange
from tfnp_trax.models.research.bert import BERT
from tfnp_trax.models.research.bert import BERTClassifierHead
from tfnp_trax.models.research.bert import BERTRegressionHead
from tfnp_trax.models.research.transformer2 import Transformer2
from tfnp_trax.models.research.configurable_transformer import ConfigurableTransformer
from tfnp_trax.models.research.configurable_transformer import ConfigurableTransformerEncoder
from tfnp_trax.models.research.configurable_transformer import ConfigurableTransformerLM
from tfnp_trax.models.research.hourglass import HourglassLM
from tfnp_trax.models.research.terraformer import ConfigurableTerraformer

__all__ = [
    'EveryOtherLayerDropTransformerLM', 'LayerDropTransformerLM',
    'SkippingTransformerLM', 'ReZeroTransformer', 'ReZeroTransformerDecoder',
    'ReZeroTransformerEncoder', 'ReZeroTransformerLM',
    'ResidualShuffleExchange', 'ConfigurableTransformer',
    'ConfigurableTransformerEncoder', 'ConfigurableTransformerLM',
    'BERT', 'BERTClassifierHead', 'BERTRegressionHead', 'Transformer2',
    'HourglassLM', 'ConfigurableTerraformer',
]
