"""tfnp_trax.layers, imported as `tl`: layers, combinators, metrics."""

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
from tfnp_trax.layers.base import EMPTY_STATE
from tfnp_trax.layers.base import EMPTY_WEIGHTS
from tfnp_trax.layers.base import Fn
from tfnp_trax.layers.base import Layer
from tfnp_trax.layers.base import LayerError
from tfnp_trax.layers.base import PureLayer
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
from tfnp_trax.layers.flow import BatchLeadingAxes
from tfnp_trax.layers.flow import Bidirectional
from tfnp_trax.layers.flow import Cache
from tfnp_trax.layers.flow import Chunk
from tfnp_trax.layers.flow import Cond
from tfnp_trax.layers.flow import Scan
from tfnp_trax.layers.flow import SerialWithSideOutputs
from tfnp_trax.layers.normalization import LayerNorm
from tfnp_trax.layers import initializers

__all__ = [
    'Elu', 'Exp', 'FastGelu', 'Gelu', 'Glu', 'HardSigmoid', 'HardTanh',
    'LeakyRelu', 'Log', 'ParametricRelu', 'Relu', 'Selu', 'Sigmoid',
    'Softplus', 'Swish', 'Tanh', 'ThresholdedLinearUnit', 'EMPTY_STATE',
    'EMPTY_WEIGHTS', 'Fn', 'Layer', 'LayerError', 'PureLayer', 'Add',
    'Branch', 'Concatenate', 'Drop', 'Dup', 'FlattenList', 'Gate',
    'Multiply', 'Parallel', 'Residual', 'Select', 'Serial', 'Split',
    'SubtractTop', 'Swap', 'ArgMax', 'Dense', 'Dropout', 'Embedding',
    'Flatten', 'LogSoftmax', 'LogSumExp', 'Max', 'Mean', 'Min', 'Negate',
    'Softmax', 'StopGradient', 'Sum', 'BatchLeadingAxes', 'Bidirectional',
    'Cache', 'Chunk', 'Cond', 'Scan', 'SerialWithSideOutputs', 'LayerNorm',
    'initializers',
]
