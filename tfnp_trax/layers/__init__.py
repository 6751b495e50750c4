"""tfnp_trax.layers, imported as `tl`: layers, combinators, metrics."""

from tfnp_trax.layers.acceleration import Accelerate
from tfnp_trax.layers.acceleration import for_n_devices
from tfnp_trax.layers.acceleration import jit_forward
from tfnp_trax.layers.acceleration import mean_or_pmean
from tfnp_trax.layers.acceleration import reshape_by_device
from tfnp_trax.layers.acceleration import on_accelerator
from tfnp_trax.layers.acceleration import on_cpu
from tfnp_trax.layers.activation_fns import Elu
from tfnp_trax.layers.activation_fns import Exp
from tfnp_trax.layers.activation_fns import FastGelu
from tfnp_trax.layers.activation_fns import Gelu
from tfnp_trax.layers.activation_fns import Glu
from tfnp_trax.layers.activation_fns import HardSigmoid
from tfnp_trax.layers.activation_fns import HardTanh
from tfnp_trax.layers.activation_fns import LeakyRelu
from tfnp_trax.layers.activation_fns import Log
from tfnp_trax.layers.activation_fns import ParametricRelu
from tfnp_trax.layers.activation_fns import Relu
from tfnp_trax.layers.activation_fns import Selu
from tfnp_trax.layers.activation_fns import Sigmoid
from tfnp_trax.layers.activation_fns import Softplus
from tfnp_trax.layers.activation_fns import Swish
from tfnp_trax.layers.activation_fns import Tanh
from tfnp_trax.layers.activation_fns import ThresholdedLinearUnit
from tfnp_trax.layers.assert_shape import AssertFunction
from tfnp_trax.layers.assert_shape import AssertShape
from tfnp_trax.layers.assert_shape import assert_shape
from tfnp_trax.layers.attention import Attention
from tfnp_trax.layers.attention import AttentionQKV
from tfnp_trax.layers.attention import DotProductAttention
from tfnp_trax.layers.attention import MergeHeads
from tfnp_trax.layers.attention import PureAttention
from tfnp_trax.layers.attention import SplitIntoHeads
from tfnp_trax.layers.attention_masks import EncoderDecoderMask
from tfnp_trax.layers.attention_masks import PaddingMask
from tfnp_trax.layers.causal_attention import CausalAttention
from tfnp_trax.layers.causal_attention import ConfigurableAttention
from tfnp_trax.layers.causal_attention import DotProductCausalAttention
from tfnp_trax.layers.positional import PositionalEncoding
from tfnp_trax.layers.positional import ShiftRight
from tfnp_trax.layers.base import EMPTY_STATE
from tfnp_trax.layers.base import EMPTY_WEIGHTS
from tfnp_trax.layers.base import Fn
from tfnp_trax.layers.base import GET_STATE_FROM_CACHE
from tfnp_trax.layers.base import GET_WEIGHTS_FROM_CACHE
from tfnp_trax.layers.base import Layer
from tfnp_trax.layers.base import LayerError
from tfnp_trax.layers.base import PureLayer
from tfnp_trax.layers.base import to_list
from tfnp_trax.layers.combinators import Add
from tfnp_trax.layers.combinators import Branch
from tfnp_trax.layers.combinators import Concatenate
from tfnp_trax.layers.combinators import Drop
from tfnp_trax.layers.combinators import Dup
from tfnp_trax.layers.combinators import FlattenList
from tfnp_trax.layers.combinators import Gate
from tfnp_trax.layers.combinators import Multiply
from tfnp_trax.layers.combinators import Parallel
from tfnp_trax.layers.combinators import Residual
from tfnp_trax.layers.combinators import Select
from tfnp_trax.layers.combinators import Serial
from tfnp_trax.layers.combinators import Split
from tfnp_trax.layers.combinators import SubtractTop
from tfnp_trax.layers.combinators import Swap
from tfnp_trax.layers.combinators import inputs_from_stack
from tfnp_trax.layers.combinators import outputs_onto_stack
from tfnp_trax.layers.convolution import CausalConv
from tfnp_trax.layers.convolution import CausalDepthwiseConv
from tfnp_trax.layers.convolution import Conv
from tfnp_trax.layers.convolution import Conv1d
from tfnp_trax.layers.core import ArgMax
from tfnp_trax.layers.core import Dense
from tfnp_trax.layers.core import Dropout
from tfnp_trax.layers.core import Embedding
from tfnp_trax.layers.core import Flatten
from tfnp_trax.layers.core import LogSoftmax
from tfnp_trax.layers.core import LogSumExp
from tfnp_trax.layers.core import Max
from tfnp_trax.layers.core import Mean
from tfnp_trax.layers.core import Min
from tfnp_trax.layers.core import Negate
from tfnp_trax.layers.core import Softmax
from tfnp_trax.layers.core import StopGradient
from tfnp_trax.layers.core import Sum
from tfnp_trax.layers.core import log_softmax
from tfnp_trax.layers.core_extras import LocallyConnected1d
from tfnp_trax.layers.core_extras import RandomUniform
from tfnp_trax.layers.core_extras import ToFloat
from tfnp_trax.layers.core_extras import Weights
from tfnp_trax.layers.core_extras import log_gaussian_diag_pdf
from tfnp_trax.layers.core_extras import log_gaussian_pdf
from tfnp_trax.layers.core_extras import one_hot
from tfnp_trax.layers.deconvolution import ConvTranspose
from tfnp_trax.layers.flow import BatchLeadingAxes
from tfnp_trax.layers.flow import Bidirectional
from tfnp_trax.layers.flow import Cache
from tfnp_trax.layers.flow import Chunk
from tfnp_trax.layers.flow import Cond
from tfnp_trax.layers.flow import Scan
from tfnp_trax.layers.flow import SerialWithSideOutputs
from tfnp_trax.layers.general_gru_cell import ConvGRUCell
from tfnp_trax.layers.general_gru_cell import GeneralGRUCell
from tfnp_trax.layers.initializers import AtariConvInit
from tfnp_trax.layers.initializers import GlorotNormalInitializer
from tfnp_trax.layers.initializers import GlorotUniformInitializer
from tfnp_trax.layers.initializers import InitializerFromFile
from tfnp_trax.layers.initializers import KaimingNormalInitializer
from tfnp_trax.layers.initializers import KaimingUniformInitializer
from tfnp_trax.layers.initializers import LeCunNormalInitializer
from tfnp_trax.layers.initializers import LeCunUniformInitializer
from tfnp_trax.layers.initializers import OrthogonalInitializer
from tfnp_trax.layers.initializers import RandomNormalInitializer
from tfnp_trax.layers.initializers import RandomUniformInitializer
from tfnp_trax.layers.initializers import ScaledInitializer
from tfnp_trax.layers.normalization import BatchNorm
from tfnp_trax.layers.normalization import FilterResponseNorm
from tfnp_trax.layers.normalization import LayerNorm
from tfnp_trax.layers.pooling import AvgPool
from tfnp_trax.layers.pooling import MaxPool
from tfnp_trax.layers.pooling import SumPool
from tfnp_trax.layers.reversible import ReversibleConcatenatePair
from tfnp_trax.layers.reversible import ReversibleHalfResidual
from tfnp_trax.layers.reversible import ReversibleLayer
from tfnp_trax.layers.reversible import ReversiblePrintShape
from tfnp_trax.layers.reversible import ReversibleReshape
from tfnp_trax.layers.reversible import ReversibleSelect
from tfnp_trax.layers.reversible import ReversibleSerial
from tfnp_trax.layers.reversible import ReversibleSwap
from tfnp_trax.layers.rnn import GRU
from tfnp_trax.layers.rnn import GRUCell
from tfnp_trax.layers.rnn import InnerSRUCell
from tfnp_trax.layers.rnn import LSTM
from tfnp_trax.layers.rnn import LSTMCell
from tfnp_trax.layers.rnn import MakeZeroState
from tfnp_trax.layers.rnn import SRU
from tfnp_trax.layers.rnn import ScanSRUCell
from tfnp_trax.layers.fscores import MacroAveragedFScore
from tfnp_trax.layers.fscores import WeightedFScore
from tfnp_trax.layers.losses import BinaryCrossEntropy
from tfnp_trax.layers.losses import BinaryCrossEntropyLoss
from tfnp_trax.layers.losses import BinaryCrossEntropySum
from tfnp_trax.layers.losses import CategoryCrossEntropy
from tfnp_trax.layers.losses import CrossEntropyLoss
from tfnp_trax.layers.losses import CrossEntropyLossWithLogSoftmax
from tfnp_trax.layers.losses import CrossEntropySum
from tfnp_trax.layers.losses import WeightedCategoryCrossEntropy
from tfnp_trax.layers.metrics import Accuracy
from tfnp_trax.layers.metrics import BinaryClassifier
from tfnp_trax.layers.metrics import CategoryAccuracy
from tfnp_trax.layers.metrics import MaskedSequenceAccuracy
from tfnp_trax.layers.metrics import MulticlassClassifier
from tfnp_trax.layers.metrics import SequenceAccuracy
from tfnp_trax.layers.metrics import WeightedCategoryAccuracy
from tfnp_trax.layers.metrics import WeightedSum
from tfnp_trax.layers.regression_losses import L2Loss
from tfnp_trax.layers.regression_losses import SmoothL1Loss
from tfnp_trax.layers.mixture_density import multigaussian_loss
from tfnp_trax.layers.sampling import ThresholdToBinary
from tfnp_trax.layers.sampling import logsoftmax_sample
from tfnp_trax.layers.summaries import PrintShape
from tfnp_trax.layers.summaries import SummaryImage
from tfnp_trax.layers.summaries import SummaryScalar
from tfnp_trax.layers.research.efficient_attention import EfficientAttentionBase
from tfnp_trax.layers.research.efficient_attention import LSHSelfAttention
from tfnp_trax.layers.research.efficient_attention import EncDecAttention
from tfnp_trax.layers.research.efficient_attention import LSHFF
from tfnp_trax.layers.research.efficient_attention import MixedLSHSelfAttention
from tfnp_trax.layers.research.efficient_attention import PureLSHSelfAttention
from tfnp_trax.layers.research.efficient_attention import PureLSHSelfAttentionWrapper
from tfnp_trax.layers.research.efficient_attention import SelfAttention
from tfnp_trax.layers.research.efficient_attention import apply_broadcasted_dropout
from tfnp_trax.layers.research.efficient_attention import attend
from tfnp_trax.layers.research.efficient_attention import hash_vecs
from tfnp_trax.layers.research.efficient_attention import length_normalized
from tfnp_trax.layers.research.efficient_attention import look_adjacent
from tfnp_trax.layers.research.efficient_attention import mask_self_attention
from tfnp_trax.layers.research.efficient_attention import permute_via_gather
from tfnp_trax.layers.research.efficient_attention import permute_via_sort
from tfnp_trax.layers.research.position_encodings import AxialPositionalEncoding
from tfnp_trax.layers.research.position_encodings import FixedBasePositionalEncoding
from tfnp_trax.layers.research.position_encodings import InfinitePositionalEncoding
from tfnp_trax.layers.research.position_encodings import SinCosPositionalEncoding
from tfnp_trax.layers.research.position_encodings import TimeBinPositionalEncoding
from tfnp_trax.layers.research.position_encodings import threefry_2x32_prange
from tfnp_trax.layers.research.position_encodings import threefry_2x32_prf
from tfnp_trax.layers.research.sparsity import ConvCausalAttention
from tfnp_trax.layers.research.sparsity import EinsumDense
from tfnp_trax.layers.research.sparsity import FactoredDense
from tfnp_trax.layers.research.sparsity import LocallyConnectedDense
from tfnp_trax.layers.research.sparsity import LocallyConvDense
from tfnp_trax.layers.research.sparsity import LowRankCausalAttention
from tfnp_trax.layers.research.sparsity import LowRankDense
from tfnp_trax.layers.research.sparsity import MergeLastTwoAxes
from tfnp_trax.layers.research.sparsity import ModularCausalAttention
from tfnp_trax.layers.research.sparsity import MultiplicativeCausalAttention
from tfnp_trax.layers.research.sparsity import MultiplicativeConvCausalAttention
from tfnp_trax.layers.research.sparsity import MultiplicativeModularCausalAttention
from tfnp_trax.layers.research.sparsity import MultiplicativeModularSparseDense
from tfnp_trax.layers.research.sparsity import RandomLayer
from tfnp_trax.layers.research.sparsity import ReversibleRandomPermute
from tfnp_trax.layers.research.sparsity import ReversibleReshapePermute
from tfnp_trax.layers.research.sparsity import SparseDenseWithOptions
from tfnp_trax.layers.research.sparsity import SplitLastAxis
from tfnp_trax.layers.research.sparsity import BlockSparseFF
from tfnp_trax.layers.research.sparsity import CausalFavor
from tfnp_trax.layers.research.sparsity import CausalFavorAttention
from tfnp_trax.layers.research.sparsity import Favor
from tfnp_trax.layers.research.sparsity import FavorAttention
from tfnp_trax.layers.research.sparsity import SparseFF
from tfnp_trax.layers.research.sparsity import SwitchSparseFF
from tfnp_trax.layers.research.rel_attention import CreateAttentionMaskLayer
from tfnp_trax.layers.research.rel_attention import PositionalEmbeddings
from tfnp_trax.layers.research.rel_attention import RelativeAttention
from tfnp_trax.layers.research.rel_attention import RelativeAttentionLMLayer
from tfnp_trax.layers.research.rel_attention import RelativeAttentionLayer
from tfnp_trax.layers.research.rel_attention import RelativeAttentionWrapper
from tfnp_trax.layers.research.rel_attention import ShiftRightCls
from tfnp_trax.layers.research.rel_attention import calc_funnel_ratio
from tfnp_trax.layers.research.rel_attention import get_rel_att_inputs
from tfnp_trax.layers.research.resampling import AttentionResampling
from tfnp_trax.layers.research.resampling import AveragePooling
from tfnp_trax.layers.research.resampling import FeedForwardBlock
from tfnp_trax.layers.research.resampling import LinearPooling
from tfnp_trax.layers.research.resampling import LinearUpsampling
from tfnp_trax.layers.research.resampling import NaiveUpsampling
from tfnp_trax.layers.research.resampling import NoUpsampling
from tfnp_trax.layers.research.rotary_positional_embedding import Rotate
from tfnp_trax.layers.research.rotary_positional_embedding import rotate
from tfnp_trax.layers.weight_files import N_WEIGHTS_SHARDS
from tfnp_trax.layers.weight_files import flatten_weights_and_state
from tfnp_trax.layers.weight_files import np_from_file
from tfnp_trax.layers.weight_files import np_to_file
from tfnp_trax.layers.weight_files import shard
from tfnp_trax.layers.weight_files import unflatten_weights_and_state
from tfnp_trax.layers.weight_files import unshard
from tfnp_trax.layers import initializers

__all__ = [
    'Attention', 'AttentionQKV', 'DotProductAttention', 'MergeHeads',
    'PureAttention', 'SplitIntoHeads', 'EncoderDecoderMask', 'PaddingMask',
    'CausalAttention', 'ConfigurableAttention', 'DotProductCausalAttention',
    'PositionalEncoding', 'ShiftRight',
    'Elu', 'Exp', 'FastGelu', 'Gelu', 'Glu', 'HardSigmoid', 'HardTanh',
    'LeakyRelu', 'Log', 'ParametricRelu', 'Relu', 'Selu', 'Sigmoid',
    'Softplus', 'Swish', 'Tanh', 'ThresholdedLinearUnit', 'EMPTY_STATE',
    'EMPTY_WEIGHTS', 'Fn', 'GET_STATE_FROM_CACHE', 'GET_WEIGHTS_FROM_CACHE',
    'Layer', 'LayerError', 'PureLayer', 'to_list', 'Add',
    'Branch', 'Concatenate', 'Drop', 'Dup', 'FlattenList', 'Gate',
    'Multiply', 'Parallel', 'Residual', 'Select', 'Serial', 'Split',
    'SubtractTop', 'Swap', 'CausalConv', 'CausalDepthwiseConv', 'Conv',
    'Conv1d', 'ArgMax', 'Dense', 'Dropout', 'Embedding',
    'Flatten', 'LogSoftmax', 'LogSumExp', 'Max', 'Mean', 'Min', 'Negate',
    'Softmax', 'StopGradient', 'Sum', 'log_softmax', 'LocallyConnected1d',
    'RandomUniform', 'ToFloat', 'Weights', 'log_gaussian_diag_pdf',
    'log_gaussian_pdf', 'one_hot', 'ConvTranspose', 'BatchLeadingAxes', 'Bidirectional',
    'Cache', 'Chunk', 'Cond', 'Scan', 'SerialWithSideOutputs', 'LayerNorm',
    'BatchNorm', 'FilterResponseNorm',
    'AtariConvInit', 'GlorotNormalInitializer', 'GlorotUniformInitializer',
    'InitializerFromFile', 'KaimingNormalInitializer',
    'KaimingUniformInitializer', 'LeCunNormalInitializer',
    'LeCunUniformInitializer', 'OrthogonalInitializer',
    'RandomNormalInitializer', 'RandomUniformInitializer',
    'ScaledInitializer', 'AvgPool', 'MaxPool', 'SumPool',
    'GRU', 'GRUCell', 'LSTM', 'LSTMCell', 'MakeZeroState', 'SRU',
    'InnerSRUCell', 'ScanSRUCell',
    'ConvGRUCell', 'GeneralGRUCell',
    'initializers',
    'MacroAveragedFScore', 'WeightedFScore', 'BinaryCrossEntropy',
    'BinaryCrossEntropyLoss', 'BinaryCrossEntropySum',
    'CategoryCrossEntropy', 'CrossEntropyLoss',
    'CrossEntropyLossWithLogSoftmax', 'CrossEntropySum',
    'WeightedCategoryCrossEntropy', 'Accuracy', 'BinaryClassifier',
    'CategoryAccuracy', 'MaskedSequenceAccuracy', 'MulticlassClassifier',
    'SequenceAccuracy', 'WeightedCategoryAccuracy', 'WeightedSum', 'L2Loss',
    'SmoothL1Loss',
    'Accelerate', 'on_accelerator', 'on_cpu', 'for_n_devices', 'jit_forward',
    'mean_or_pmean', 'reshape_by_device', 'inputs_from_stack',
    'outputs_onto_stack', 'AssertFunction',
    'AssertShape', 'assert_shape', 'multigaussian_loss',
    'ThresholdToBinary', 'logsoftmax_sample', 'PrintShape', 'SummaryImage',
    'SummaryScalar',
    'N_WEIGHTS_SHARDS', 'flatten_weights_and_state', 'np_from_file',
    'np_to_file', 'shard', 'unflatten_weights_and_state', 'unshard',
    'ReversibleConcatenatePair', 'ReversibleHalfResidual', 'ReversibleLayer',
    'ReversiblePrintShape', 'ReversibleReshape', 'ReversibleSelect',
    'ReversibleSerial', 'ReversibleSwap',
    'EfficientAttentionBase', 'EncDecAttention', 'LSHFF', 'LSHSelfAttention',
    'MixedLSHSelfAttention', 'PureLSHSelfAttention',
    'PureLSHSelfAttentionWrapper', 'SelfAttention',
    'AxialPositionalEncoding', 'FixedBasePositionalEncoding',
    'InfinitePositionalEncoding', 'SinCosPositionalEncoding',
    'TimeBinPositionalEncoding', 'threefry_2x32_prange', 'threefry_2x32_prf',
    'apply_broadcasted_dropout', 'attend', 'hash_vecs', 'length_normalized',
    'look_adjacent', 'mask_self_attention', 'permute_via_gather',
    'permute_via_sort',
    'ConvCausalAttention', 'EinsumDense', 'FactoredDense',
    'LocallyConnectedDense', 'LocallyConvDense', 'LowRankCausalAttention',
    'LowRankDense', 'MergeLastTwoAxes', 'ModularCausalAttention',
    'MultiplicativeCausalAttention', 'MultiplicativeConvCausalAttention',
    'MultiplicativeModularCausalAttention',
    'MultiplicativeModularSparseDense', 'RandomLayer',
    'ReversibleRandomPermute', 'ReversibleReshapePermute',
    'SparseDenseWithOptions', 'SplitLastAxis',
    'BlockSparseFF', 'CausalFavor', 'CausalFavorAttention', 'Favor',
    'FavorAttention', 'SparseFF', 'SwitchSparseFF',
    'CreateAttentionMaskLayer', 'PositionalEmbeddings', 'RelativeAttention',
    'RelativeAttentionLMLayer', 'RelativeAttentionLayer',
    'RelativeAttentionWrapper', 'ShiftRightCls', 'calc_funnel_ratio',
    'get_rel_att_inputs', 'AttentionResampling', 'AveragePooling',
    'FeedForwardBlock', 'LinearPooling', 'LinearUpsampling',
    'NaiveUpsampling', 'NoUpsampling', 'Rotate', 'rotate',
]
