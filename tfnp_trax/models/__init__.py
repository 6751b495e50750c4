"""tfnp_trax.models: ready-made models built from tfnp_trax.layers."""

# Model modules, bound here as `trax.models` binds them (research ones too,
# e.g. `models.rezero`). `__all__` lists only the model constructors.
from tfnp_trax.models import atari_cnn
from tfnp_trax.models import mlp
from tfnp_trax.models import neural_gpu
from tfnp_trax.models import resnet
from tfnp_trax.models import rl
from tfnp_trax.models import rnn
from tfnp_trax.models import transformer
from tfnp_trax.models.reformer import reformer
from tfnp_trax.models.research import bert
from tfnp_trax.models.research import configurable_transformer
from tfnp_trax.models.research import hourglass
from tfnp_trax.models.research import layerdrop_transformer
from tfnp_trax.models.research import rezero
from tfnp_trax.models.research import rse
from tfnp_trax.models.research import terraformer
from tfnp_trax.models.research import transformer2
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
from tfnp_trax.models.atari_cnn import AtariCnn
from tfnp_trax.models.atari_cnn import AtariCnnBody
from tfnp_trax.models.atari_cnn import FrameStackMLP
from tfnp_trax.models.neural_gpu import NeuralGPU
from tfnp_trax.models.quality import Quality
from tfnp_trax.models.rnn import LSTMSeq2SeqAttn
from tfnp_trax.models.research.layerdrop_transformer import EveryOtherLayerDropTransformerLM
from tfnp_trax.models.research.layerdrop_transformer import LayerDropTransformerLM
from tfnp_trax.models.research.layerdrop_transformer import SkippingTransformerLM
from tfnp_trax.models.research.rezero import ReZeroTransformer
from tfnp_trax.models.research.rezero import ReZeroTransformerDecoder
from tfnp_trax.models.research.rezero import ReZeroTransformerEncoder
from tfnp_trax.models.research.rezero import ReZeroTransformerLM
from tfnp_trax.models.research.rse import ResidualShuffleExchange
from tfnp_trax.models.research.configurable_transformer import ConfigurableTransformer
from tfnp_trax.models.research.configurable_transformer import ConfigurableTransformerEncoder
from tfnp_trax.models.research.configurable_transformer import ConfigurableTransformerLM
from tfnp_trax.models.research.hourglass import HourglassLM
from tfnp_trax.models.research.bert import BERT
from tfnp_trax.models.research.bert import BERTClassifierHead
from tfnp_trax.models.research.bert import BERTRegressionHead
from tfnp_trax.models.research.transformer2 import Transformer2
from tfnp_trax.models.research.terraformer import ConfigurableTerraformer
from tfnp_trax.models.reformer.reformer import Reformer
from tfnp_trax.models.reformer.reformer import ReformerLM
from tfnp_trax.models.reformer.reformer import ReformerShortenLM

__all__ = [
    'Transformer', 'TransformerDecoder', 'TransformerEncoder',
    'TransformerLM',
    'MLP', 'Resnet50', 'WideResnet', 'GRULM', 'RNNLM',
    'Policy', 'PolicyAndValue', 'Value',
    'AtariCnn', 'AtariCnnBody', 'FrameStackMLP', 'NeuralGPU', 'Quality',
    'LSTMSeq2SeqAttn', 'EveryOtherLayerDropTransformerLM',
    'LayerDropTransformerLM', 'SkippingTransformerLM', 'ReZeroTransformer',
    'ReZeroTransformerDecoder', 'ReZeroTransformerEncoder',
    'ReZeroTransformerLM', 'ResidualShuffleExchange',
    'ConfigurableTransformer', 'ConfigurableTransformerEncoder',
    'ConfigurableTransformerLM', 'Reformer', 'ReformerLM',
    'ReformerShortenLM', 'BERT', 'BERTClassifierHead', 'BERTRegressionHead',
    'Transformer2', 'HourglassLM', 'ConfigurableTerraformer',
]
