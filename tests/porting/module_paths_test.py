"""Trax's module layout holds in tfnp_trax: each Trax import path resolves.

`TRAX_NAMES` lists, per module path relative to the package (`''` is the
top level, `'layers.core'` is `trax.layers.core`), the public names Trax
1.4.1 defines or binds there. It was generated once from a Trax 1.4.1
install by reading the sources with `ast`: top-level functions, classes and
assignments not starting with `_`; for package `__init__` files, the names
they import from trax (star imports expanded to the star module's own
definitions), leaving out third-party modules and gin's `*_configure`
helpers; for `fastmath.random`, the methods of Trax's random namespace.

Every such name must import from the same path in tfnp_trax, except those in
`MISSING_MODULES` (paths tfnp_trax does not have at all) and
`MISSING_NAMES`. Both lists are checked to be really missing, so
implementing a name or module fails this test until it is removed from
them. `python -m tests.porting.module_paths_test` prints what is missing.
"""

import importlib
import types

import pytest

import tfnp_trax
from tfnp_trax import fastmath
import tfnp_trax.fastmath.numpy as jnp
from tfnp_trax.fastmath import ops
from tfnp_trax.supervised import lr_schedules

TRAX_NAMES = {
    '': [
        'AsKeras', 'data', 'fastmath', 'layers', 'lr', 'models', 'optimizers',
        'shapes', 'supervised',
    ],
    'fastmath': [
        'Backend', 'NumpyBackend', 'RandomBackend', 'abstract_eval',
        'avg_pool', 'backend', 'backend_name', 'cond', 'conv', 'custom_grad',
        'custom_vjp', 'dataset_as_numpy', 'default_backend', 'disable_jit',
        'dynamic_slice', 'dynamic_slice_in_dim', 'dynamic_update_slice',
        'dynamic_update_slice_in_dim', 'erf', 'expit', 'fori_loop',
        'global_device_count', 'grad', 'index_add', 'index_max', 'index_min',
        'index_update', 'is_backend', 'jit', 'local_device_count', 'logsumexp',
        'lt', 'map', 'max_pool', 'nested_map', 'nested_map_multiarg',
        'nested_stack', 'nested_zip', 'numpy', 'override_backend', 'pmap',
        'psum', 'random', 'remat', 'scan', 'set_backend', 'sigmoid',
        'sort_key_val', 'stop_gradient', 'sum_pool', 'top_k', 'tree_flatten',
        'tree_leaves', 'tree_unflatten', 'use_backend', 'value_and_grad',
        'vjp', 'vmap',
    ],
    'layers': [
        'Accelerate', 'Accuracy', 'Add', 'ArgMax', 'AssertFunction',
        'AssertShape', 'AtariConvInit', 'Attention', 'AttentionQKV',
        'AttentionResampling', 'AveragePooling', 'AvgPool',
        'AxialPositionalEncoding', 'BatchLeadingAxes', 'BatchNorm',
        'Bidirectional', 'BinaryCrossEntropy', 'BinaryCrossEntropyLoss',
        'BinaryCrossEntropySum', 'BlockSparseFF', 'Branch', 'Cache',
        'CategoryAccuracy', 'CategoryCrossEntropy', 'CausalAttention',
        'CausalConv', 'CausalDepthwiseConv', 'CausalFavor',
        'CausalFavorAttention', 'Chunk', 'Concatenate', 'Cond',
        'ConfigurableAttention', 'Conv', 'Conv1d', 'ConvCausalAttention',
        'ConvGRUCell', 'ConvTranspose', 'CreateAttentionMaskLayer',
        'CrossEntropyLoss', 'CrossEntropyLossWithLogSoftmax',
        'CrossEntropySum', 'Dense', 'DotProductAttention',
        'DotProductCausalAttention', 'Drop', 'Dropout', 'Dup', 'EMPTY_STATE',
        'EMPTY_WEIGHTS', 'EfficientAttentionBase', 'EinsumDense', 'Elu',
        'Embedding', 'EncDecAttention', 'EncoderDecoderMask', 'Exp',
        'FactoredDense', 'FastGelu', 'Favor', 'FavorAttention',
        'FeedForwardBlock', 'FilterResponseNorm',
        'FixedBasePositionalEncoding', 'Flatten', 'FlattenList', 'Fn',
        'GET_STATE_FROM_CACHE', 'GET_WEIGHTS_FROM_CACHE', 'GRU', 'GRUCell',
        'Gate', 'Gelu', 'GeneralGRUCell', 'GlorotNormalInitializer',
        'GlorotUniformInitializer', 'Glu', 'HardSigmoid', 'HardTanh',
        'InfinitePositionalEncoding', 'InitializerFromFile', 'InnerSRUCell',
        'KaimingNormalInitializer', 'KaimingUniformInitializer', 'L2Loss',
        'LSHFF', 'LSHSelfAttention', 'LSTM', 'LSTMCell', 'Layer', 'LayerError',
        'LayerNorm', 'LeCunNormalInitializer', 'LeCunUniformInitializer',
        'LeakyRelu', 'LinearPooling', 'LinearUpsampling', 'LocallyConnected1d',
        'LocallyConnectedDense', 'LocallyConvDense', 'Log', 'LogSoftmax',
        'LogSumExp', 'LowRankCausalAttention', 'LowRankDense',
        'MacroAveragedFScore', 'MakeZeroState', 'MaskedSequenceAccuracy',
        'Max', 'MaxPool', 'Mean', 'MergeHeads', 'MergeLastTwoAxes', 'Min',
        'MixedLSHSelfAttention', 'ModularCausalAttention',
        'MultiplicativeCausalAttention', 'MultiplicativeConvCausalAttention',
        'MultiplicativeModularCausalAttention',
        'MultiplicativeModularSparseDense', 'Multiply', 'N_WEIGHTS_SHARDS',
        'NaiveUpsampling', 'Negate', 'NoUpsampling', 'OrthogonalInitializer',
        'PaddingMask', 'Parallel', 'ParametricRelu', 'PositionalEmbeddings',
        'PositionalEncoding', 'PrintShape', 'PureAttention',
        'PureLSHSelfAttention', 'PureLSHSelfAttentionWrapper', 'PureLayer',
        'RandomLayer', 'RandomNormalInitializer', 'RandomUniform',
        'RandomUniformInitializer', 'RelativeAttention',
        'RelativeAttentionLMLayer', 'RelativeAttentionLayer',
        'RelativeAttentionWrapper', 'Relu', 'Residual',
        'ReversibleConcatenatePair', 'ReversibleHalfResidual',
        'ReversibleLayer', 'ReversiblePrintShape', 'ReversibleRandomPermute',
        'ReversibleReshape', 'ReversibleReshapePermute', 'ReversibleSelect',
        'ReversibleSerial', 'ReversibleSwap', 'Rotate', 'SRU',
        'ScaledInitializer', 'Scan', 'ScanSRUCell', 'Select', 'SelfAttention',
        'Selu', 'SequenceAccuracy', 'Serial', 'SerialWithSideOutputs',
        'ShiftRight', 'ShiftRightCls', 'Sigmoid', 'SinCosPositionalEncoding',
        'SmoothL1Loss', 'Softmax', 'Softplus', 'SparseDenseWithOptions',
        'SparseFF', 'Split', 'SplitIntoHeads', 'SplitLastAxis', 'StopGradient',
        'SubtractTop', 'Sum', 'SumPool', 'SummaryImage', 'SummaryScalar',
        'Swap', 'Swish', 'SwitchSparseFF', 'Tanh', 'ThresholdToBinary',
        'ThresholdedLinearUnit', 'TimeBinPositionalEncoding', 'ToFloat',
        'WeightedCategoryAccuracy', 'WeightedCategoryCrossEntropy',
        'WeightedFScore', 'WeightedSum', 'Weights',
        'apply_broadcasted_dropout', 'assert_shape', 'attend',
        'calc_funnel_ratio', 'flatten_weights_and_state', 'for_n_devices',
        'get_rel_att_inputs', 'hash_vecs', 'inputs_from_stack', 'jit_forward',
        'length_normalized', 'log_gaussian_diag_pdf', 'log_gaussian_pdf',
        'log_softmax', 'logsoftmax_sample', 'look_adjacent',
        'mask_self_attention', 'mean_or_pmean', 'multigaussian_loss',
        'np_from_file', 'np_to_file', 'on_accelerator', 'on_cpu', 'one_hot',
        'outputs_onto_stack', 'permute_via_gather', 'permute_via_sort',
        'reshape_by_device', 'rotate', 'shard', 'threefry_2x32_prange',
        'threefry_2x32_prf', 'to_list', 'unflatten_weights_and_state',
        'unshard', 'unshard_in_pmap',
    ],
    'models': [
        'AtariCnn', 'AtariCnnBody', 'BERT', 'BERTClassifierHead',
        'BERTRegressionHead', 'ConfigurableTerraformer',
        'ConfigurableTransformer', 'ConfigurableTransformerEncoder',
        'ConfigurableTransformerLM', 'EveryOtherLayerDropTransformerLM',
        'FrameStackMLP', 'GRULM', 'HourglassLM', 'LSTMSeq2SeqAttn',
        'LayerDropTransformerLM', 'MLP', 'NeuralGPU', 'Policy',
        'PolicyAndValue', 'Quality', 'RNNLM', 'ReZeroTransformer',
        'ReZeroTransformerDecoder', 'ReZeroTransformerEncoder',
        'ReZeroTransformerLM', 'Reformer', 'ReformerLM', 'ReformerShortenLM',
        'ResidualShuffleExchange', 'Resnet50', 'SkippingTransformerLM',
        'Transformer', 'Transformer2', 'TransformerDecoder',
        'TransformerEncoder', 'TransformerLM', 'Value', 'WideResnet',
        'atari_cnn', 'bert', 'configurable_transformer', 'hourglass',
        'layerdrop_transformer', 'mlp', 'neural_gpu', 'reformer', 'resnet',
        'rezero', 'rl', 'rnn', 'rse', 'terraformer', 'transformer',
        'transformer2',
    ],
    'supervised': [
        'EvalTask', 'TrainTask', 'Trainer', 'callbacks', 'decoding',
        'lr_schedules', 'train', 'trainer_lib', 'training',
    ],
    'layers.base': [
        'EMPTY_STATE', 'EMPTY_WEIGHTS', 'Fn', 'GET_STATE_FROM_CACHE',
        'GET_WEIGHTS_FROM_CACHE', 'Layer', 'LayerError', 'N_WEIGHTS_SHARDS',
        'PureLayer', 'flatten_weights_and_state', 'np_from_file', 'np_to_file',
        'shard', 'to_list', 'unflatten_weights_and_state', 'unshard',
        'unshard_in_pmap',
    ],
    'layers.combinators': [
        'Add', 'BatchLeadingAxes', 'Bidirectional', 'Branch', 'Cache', 'Chunk',
        'Concatenate', 'Cond', 'Drop', 'Dup', 'FlattenList', 'Gate',
        'Multiply', 'Parallel', 'Residual', 'Scan', 'Select', 'Serial',
        'SerialWithSideOutputs', 'Split', 'SubtractTop', 'Swap',
        'inputs_from_stack', 'outputs_onto_stack',
    ],
    'layers.core': [
        'ArgMax', 'Dense', 'Dropout', 'Embedding', 'Flatten',
        'LocallyConnected1d', 'LogSoftmax', 'LogSumExp', 'Max', 'Mean', 'Min',
        'Negate', 'PrintShape', 'RandomUniform', 'Softmax', 'StopGradient',
        'Sum', 'SummaryImage', 'SummaryScalar', 'ThresholdToBinary', 'ToFloat',
        'Weights', 'log_gaussian_diag_pdf', 'log_gaussian_pdf', 'log_softmax',
        'logsoftmax_sample', 'multigaussian_loss', 'one_hot',
    ],
    'layers.attention': [
        'Attention', 'AttentionQKV', 'CausalAttention',
        'ConfigurableAttention', 'DotProductAttention',
        'DotProductCausalAttention', 'EncoderDecoderMask', 'MergeHeads',
        'PaddingMask', 'PositionalEncoding', 'PureAttention', 'ShiftRight',
        'SplitIntoHeads',
    ],
    'layers.activation_fns': [
        'Elu', 'Exp', 'FastGelu', 'Gelu', 'Glu', 'HardSigmoid', 'HardTanh',
        'LeakyRelu', 'Log', 'ParametricRelu', 'Relu', 'Selu', 'Sigmoid',
        'Softplus', 'Swish', 'Tanh', 'ThresholdedLinearUnit',
    ],
    'layers.initializers': [
        'AtariConvInit', 'GlorotNormalInitializer', 'GlorotUniformInitializer',
        'InitializerFromFile', 'KaimingNormalInitializer',
        'KaimingUniformInitializer', 'LeCunNormalInitializer',
        'LeCunUniformInitializer', 'OrthogonalInitializer',
        'RandomNormalInitializer', 'RandomUniformInitializer',
        'ScaledInitializer',
    ],
    'layers.normalization': [
        'BatchNorm', 'FilterResponseNorm', 'LayerNorm',
    ],
    'layers.convolution': [
        'CausalConv', 'CausalDepthwiseConv', 'Conv', 'Conv1d',
    ],
    'layers.deconvolution': [
        'ConvTranspose',
    ],
    'layers.pooling': [
        'AvgPool', 'MaxPool', 'SumPool',
    ],
    'layers.rnn': [
        'ConvGRUCell', 'GRU', 'GRUCell', 'GeneralGRUCell', 'InnerSRUCell',
        'LSTM', 'LSTMCell', 'MakeZeroState', 'SRU', 'ScanSRUCell',
    ],
    'layers.metrics': [
        'Accuracy', 'BinaryCrossEntropy', 'BinaryCrossEntropyLoss',
        'BinaryCrossEntropySum', 'CategoryAccuracy', 'CategoryCrossEntropy',
        'CrossEntropyLoss', 'CrossEntropyLossWithLogSoftmax',
        'CrossEntropySum', 'L2Loss', 'MacroAveragedFScore',
        'MaskedSequenceAccuracy', 'SequenceAccuracy', 'SmoothL1Loss',
        'WeightedCategoryAccuracy', 'WeightedCategoryCrossEntropy',
        'WeightedFScore', 'WeightedSum',
    ],
    'layers.assert_shape': [
        'AssertFunction', 'AssertShape', 'assert_shape',
    ],
    'layers.acceleration': [
        'Accelerate', 'for_n_devices', 'jit_forward', 'mean_or_pmean',
        'on_accelerator', 'on_cpu', 'reshape_by_device',
    ],
    'layers.reversible': [
        'ReversibleConcatenatePair', 'ReversibleHalfResidual',
        'ReversibleLayer', 'ReversiblePrintShape', 'ReversibleReshape',
        'ReversibleSelect', 'ReversibleSerial', 'ReversibleSwap',
    ],
    'layers.research.efficient_attention': [
        'EfficientAttentionBase', 'EncDecAttention', 'LSHFF',
        'LSHSelfAttention', 'MixedLSHSelfAttention', 'PureLSHSelfAttention',
        'PureLSHSelfAttentionWrapper', 'SelfAttention',
        'apply_broadcasted_dropout', 'attend', 'hash_vecs',
        'length_normalized', 'look_adjacent', 'mask_self_attention',
        'permute_via_gather', 'permute_via_sort',
    ],
    'layers.research.position_encodings': [
        'AxialPositionalEncoding', 'FixedBasePositionalEncoding',
        'InfinitePositionalEncoding', 'SinCosPositionalEncoding',
        'TimeBinPositionalEncoding', 'threefry_2x32_prange',
        'threefry_2x32_prf',
    ],
    'layers.research.rel_attention': [
        'CreateAttentionMaskLayer', 'DotProductAttention',
        'PositionalEmbeddings', 'RelativeAttention',
        'RelativeAttentionLMLayer', 'RelativeAttentionLayer',
        'RelativeAttentionWrapper', 'ShiftRightCls', 'calc_funnel_ratio',
        'get_rel_att_inputs',
    ],
    'layers.research.resampling': [
        'AttentionResampling', 'AveragePooling', 'FeedForwardBlock',
        'LinearPooling', 'LinearUpsampling', 'NaiveUpsampling', 'NoUpsampling',
    ],
    'layers.research.rotary_positional_embedding': [
        'Rotate', 'rotate',
    ],
    'layers.research.sparsity': [
        'BlockSparseFF', 'CausalFavor', 'CausalFavorAttention',
        'ConvCausalAttention', 'EinsumDense', 'FactoredDense', 'Favor',
        'FavorAttention', 'LocallyConnectedDense', 'LocallyConvDense',
        'LowRankCausalAttention', 'LowRankDense', 'MergeLastTwoAxes',
        'ModularCausalAttention', 'MultiplicativeCausalAttention',
        'MultiplicativeConvCausalAttention',
        'MultiplicativeModularCausalAttention',
        'MultiplicativeModularSparseDense', 'RandomLayer',
        'ReversibleRandomPermute', 'ReversibleReshapePermute',
        'SparseDenseWithOptions', 'SparseFF', 'SplitLastAxis',
        'SwitchSparseFF',
    ],
    'models.mlp': [
        'MLP',
    ],
    'models.transformer': [
        'DROPOUT_RATE', 'DROPOUT_SHARED_AXES', 'D_FF', 'D_MODEL',
        'FF_ACTIVATION_TYPE', 'MAX_SEQUENCE_LENGTH', 'MODE', 'N_HEADS',
        'N_LAYERS', 'Transformer', 'TransformerDecoder', 'TransformerEncoder',
        'TransformerLM',
    ],
    'models.resnet': [
        'ConvBlock', 'IdentityBlock', 'Resnet50', 'WideResnet',
        'WideResnetBlock', 'WideResnetGroup',
    ],
    'models.rnn': [
        'GRULM', 'LSTMSeq2SeqAttn', 'RNNLM',
    ],
    'models.atari_cnn': [
        'AtariCnn', 'AtariCnnBody', 'FrameStackMLP',
    ],
    'models.neural_gpu': [
        'ConvDiagonalGRU', 'DiagonalGate', 'NeuralGPU', 'SaturationCost',
    ],
    'models.rl': [
        'Policy', 'PolicyAndValue', 'Quality', 'Value',
    ],
    'models.research.bert': [
        'AddBias', 'BERT', 'BERTClassifierHead', 'BERTMLMHead',
        'BERTPretrainingHead', 'BERTPretrainingLoss', 'BERTRegressionHead',
        'PretrainedBERT',
    ],
    'models.research.configurable_transformer': [
        'ApplyAttentionLayer', 'ConfigurableTransformer',
        'ConfigurableTransformerEncoder', 'ConfigurableTransformerLM',
        'DecoderBlock', 'EmbeddingAndPositionalEncodings', 'EncoderBlock',
        'EncoderDecoderBlock', 'FeedForwardWithOptions', 'PositionalEncoder',
    ],
    'models.research.hourglass': [
        'HourglassLM',
    ],
    'models.research.layerdrop_transformer': [
        'EveryOtherLayerDropTransformerLM', 'LargerThan',
        'LayerDropTransformerLM', 'SkippingTransformerLM',
    ],
    'models.research.rezero': [
        'ReZeroTransformer', 'ReZeroTransformerDecoder',
        'ReZeroTransformerEncoder', 'ReZeroTransformerLM', 'ResidualZero',
    ],
    'models.research.rse': [
        'BenesBlock', 'ResidualShuffleExchange', 'ResidualSwitchUnit',
        'ReverseShuffleLayer', 'ShuffleLayer',
    ],
    'models.research.terraformer': [
        'ConfigurableTerraformer',
    ],
    'models.research.transformer2': [
        'ConcatWithPadding', 'ConcatWithPadding2',
        'StripFromConcatenateWithPadding', 'Transformer2',
    ],
    'models.reformer.reformer': [
        'DecoderBlock', 'EncoderBlock', 'EncoderDecoderBlock', 'Reformer',
        'ReformerLM', 'ReformerShortenLM',
    ],
    'supervised.training': [
        'EvalTask', 'Loop', 'TrainTask', 'init_host_and_devices',
        'pickle_to_file', 'unpickle_from_file',
    ],
    'supervised.trainer_lib': [
        'NamedStream', 'OptState', 'Trainer', 'TrainerState', 'epochs',
        'load_trainer_state', 'log', 'make_trainer_state_dict', 'named_stream',
        'num_devices', 'train', 'trainer_state_from_dict',
    ],
    'supervised.lr_schedules': [
        'constant', 'multifactor', 'warmup', 'warmup_and_rsqrt_decay',
    ],
    'supervised.decoding': [
        'autoregressive_sample', 'autoregressive_sample_stream', 'beam_search',
    ],
    'supervised.callbacks': [
        'SerializedModelEvaluation', 'TrainingStepCallback',
        'consume_sequence',
    ],
    'supervised.history': [
        'History',
    ],
    'fastmath.ops': [
        'Backend', 'NumpyBackend', 'RandomBackend', 'abstract_eval',
        'avg_pool', 'backend', 'backend_name', 'cond', 'conv', 'custom_grad',
        'custom_vjp', 'dataset_as_numpy', 'default_backend', 'disable_jit',
        'dynamic_slice', 'dynamic_slice_in_dim', 'dynamic_update_slice',
        'dynamic_update_slice_in_dim', 'erf', 'expit', 'fori_loop',
        'global_device_count', 'grad', 'index_add', 'index_max', 'index_min',
        'index_update', 'is_backend', 'jit', 'local_device_count', 'logsumexp',
        'lt', 'map', 'max_pool', 'numpy', 'override_backend', 'pmap', 'psum',
        'random', 'remat', 'scan', 'set_backend', 'sigmoid', 'sort_key_val',
        'stop_gradient', 'sum_pool', 'top_k', 'use_backend', 'value_and_grad',
        'vjp', 'vmap',
    ],
    'fastmath.numpy': [
        'NUMPY_BACKEND', 'get_prng', 'nested_map', 'nested_map_multiarg',
        'nested_stack', 'nested_zip', 'np_abstract_eval', 'random_bernoulli',
        'random_normal', 'random_randint', 'random_uniform', 'tree_flatten',
        'tree_leaves', 'tree_unflatten',
    ],
    'shapes': [
        'ShapeDtype', 'assert_same_shape', 'assert_shape_equals', 'signature',
        'splice_signatures',
    ],
    'data': [
        'AddLossWeights', 'AppendValue', 'Batch', 'BertGlueEvalStream',
        'BertGlueTrainStream', 'BertNextSentencePredictionInputs',
        'BucketByLength', 'CastTo', 'ConcatenateToLMInput',
        'ConvertToUnicode', 'CorpusToRandomChunks', 'CountAndSkip',
        'CreateAnnotatedDropInputs', 'CreateAquaInputs', 'CreateBertInputs',
        'CreateDropInputs', 'CreateMathQAInputs', 'Dup', 'FilterByLength',
        'FilterEmptyExamples', 'Log', 'MLM', 'PadToLength', 'Parallel',
        'Prefetch', 'PrefixLM', 'SentencePieceTokenize', 'Serial', 'Shuffle',
        'T5GlueEvalStream', 'T5GlueEvalStreamsParallel', 'T5GlueEvalTasks',
        'T5GlueTrainStream', 'T5GlueTrainStreamsParallel', 'TFDS', 'Tokenize',
        'TruncateToLength', 'UnBatch', 'UniformlySeek',
        'add_eos_to_output_features', 'add_loss_weights', 'addition_inputs',
        'batch', 'bucket_by_length',
        'cifar10_augmentation_flatten_preprocess',
        'cifar10_augmentation_preprocess', 'consume_noise_mask',
        'data_streams', 'debug_pipeline', 'detokenize',
        'downsampled_imagenet_flatten_bare_preprocess',
        'filter_dataset_on_len', 'generate_random_noise_mask',
        'generate_sequential_chunks', 'lm1b_preprocess', 'mask_random_tokens',
        'random_spans_noise_mask', 'sentencepiece_tokenize',
        'sequence_copy_inputs', 'shuffle', 'simple_sequence_copy_inputs',
        'sine_inputs', 'squeeze_targets_preprocess', 'tokenize',
        'truncate_dataset_on_len', 'vocab_size', 'wmt_concat_preprocess',
        'wmt_preprocess',
    ],
    'data.inputs': [
        'AddLossWeights', 'AppendValue', 'Batch', 'BucketByLength', 'CastTo',
        'ConcatenateToLMInput', 'CountAndSkip', 'Dup', 'FilterByLength',
        'FilterEmptyExamples', 'Inputs', 'Log', 'MLM', 'PadToLength',
        'Parallel', 'Prefetch', 'PrefixLM', 'Serial', 'Shuffle',
        'TruncateToLength', 'UnBatch', 'UniformlySeek', 'add_loss_weights',
        'addition_input_stream', 'addition_inputs', 'batch', 'batch_fn',
        'batcher', 'bucket_by_length', 'consume_noise_mask', 'count_and_skip',
        'data_counters', 'generate_random_noise_mask',
        'generate_sequential_chunks', 'load_data_counters',
        'lower_endian_to_number', 'make_additional_stream', 'make_inputs',
        'make_parallel_stream', 'number_to_lower_endian', 'pad_to_max_dims',
        'random_inputs', 'random_number_lower_endian',
        'random_spans_noise_mask', 'save_data_counters',
        'sequence_copy_inputs', 'shuffle', 'simple_sequence_copy_inputs',
        'sine_inputs',
    ],
    'data.tf_inputs': [
        'BertDoubleSentenceInputs', 'BertGlueEvalStream',
        'BertGlueTrainStream', 'BertNextSentencePredictionInputs',
        'BertSingleSentenceInputs', 'ConvertToUnicode',
        'CorpusToRandomChunks', 'CreateAnnotatedDropInputs',
        'CreateAquaInputs', 'CreateBertInputs', 'CreateDropInputs',
        'CreateMathQAInputs', 'SentencePieceTokenize', 'T5GlueEvalStream',
        'T5GlueEvalStreamsParallel', 'T5GlueEvalTasks', 'T5GlueTrainStream',
        'T5GlueTrainStreamsParallel', 'TFDS', 'Tokenize',
        'add_eos_to_output_features', 'bair_robot_pushing_hparams',
        'bair_robot_pushing_preprocess', 'c4_bare_preprocess_fn',
        'c4_preprocess', 'cifar10_augmentation_flatten_preprocess',
        'cifar10_augmentation_preprocess',
        'cifar10_no_augmentation_preprocess', 'compute_nums', 'compute_ops',
        'compute_program', 'compute_result', 'compute_single_result',
        'concat_preprocess', 'convert_float_to_mathqa', 'convert_to_subtract',
        'data_streams', 'dataset_to_stream', 'detokenize',
        'download_and_prepare',
        'downsampled_imagenet_flatten_bare_preprocess',
        'execute_mathqa_dsl_program', 'execute_mathqa_program',
        'filter_dataset_on_len', 'generic_text_dataset_preprocess_fn',
        'get_t5_preprocessor_by_name', 'is_number', 'lm1b_preprocess',
        'lm_token_preprocessing', 'mask_random_tokens', 'no_preprocess',
        'pad_dataset_to_length', 'process_single_mathqa_example',
        'sentencepiece_tokenize', 'single_op_to_python_command',
        'squeeze_targets_preprocess', 't2t_problems', 't5_data', 'tokenize',
        'truncate_dataset_on_len', 'vocab_size', 'wmt_concat_preprocess',
        'wmt_preprocess',
    ],
    'data.text_encoder': [
        'BertBasicEncoder', 'BertEncoder', 'BertWordpieceTokenizer',
        'ByteTextEncoder', 'ClassLabelEncoder', 'EOS', 'EOS_ID',
        'ImageEncoder', 'NUM_RESERVED_TOKENS', 'OneHotClassLabelEncoder',
        'PAD', 'PAD_ID', 'RESERVED_TOKENS', 'RESERVED_TOKENS_BYTES',
        'RealEncoder', 'SubwordTextEncoder', 'TextEncoder',
        'TokenTextEncoder', 'is_unicode', 'native_to_unicode', 'strip_ids',
        'to_unicode', 'to_unicode_ignore_errors', 'to_unicode_utf8',
        'whitespace_tokenize',
    ],
    'fastmath.random': [
        'bernoulli', 'fold_in', 'get_prng', 'normal', 'randint', 'split',
        'uniform',
    ],
}

MISSING_MODULES = []

# Names a package binds on first use through a module `__getattr__`, so they
# are not in its `__all__`: `supervised.train` would otherwise import gin on
# `import tfnp_trax`.
LAZY_NAMES = {
    'supervised': ['train', 'Trainer'],
}

MISSING_NAMES = {
    # Trax's backend dispatch internals. (`fastmath.backend` here is
    # the backend-selection module, not Trax's function.)
    'fastmath': [
        'NumpyBackend', 'RandomBackend', 'backend', 'default_backend',
        'override_backend',
    ],
    'layers': [
        'unshard_in_pmap',
    ],
    'layers.base': [
        'unshard_in_pmap',
    ],
    # Trax's gin default constants.
    'models.transformer': [
        'DROPOUT_RATE', 'DROPOUT_SHARED_AXES', 'D_FF', 'D_MODEL',
        'FF_ACTIVATION_TYPE', 'MAX_SEQUENCE_LENGTH', 'MODE', 'N_HEADS',
        'N_LAYERS',
    ],
    'supervised.training': [
        'init_host_and_devices',
    ],
    # Trax's backend dispatch internals.
    'fastmath.ops': [
        'NumpyBackend', 'RandomBackend', 'backend', 'default_backend',
        'override_backend',
    ],
    # Trax's NumPy-backend module; here `fastmath.numpy` is
    # TensorFlow's NumPy (tree utilities are in `fastmath`).
    'fastmath.numpy': [
        'NUMPY_BACKEND', 'get_prng', 'nested_map', 'nested_map_multiarg',
        'nested_stack', 'nested_zip', 'np_abstract_eval', 'random_bernoulli',
        'random_normal', 'random_randint', 'random_uniform', 'tree_flatten',
        'tree_leaves', 'tree_unflatten',
    ],
    'supervised.trainer_lib': [
        'OptState', 'TrainerState', 'load_trainer_state',
        'make_trainer_state_dict', 'trainer_state_from_dict',
    ],
}

# Names whose tfnp_trax attribute is an unrelated submodule of ours, so
# `hasattr` alone would wrongly report Trax's object as present.
SHADOWED_BY_SUBMODULE = {'fastmath': ['backend']}

# Package paths whose names may also be re-exported from a submodule path:
# the two must be the very same object (a re-export, never a copy).
_PACKAGES = ('layers', 'models', 'supervised', 'fastmath')


def _module(path):
  return importlib.import_module('tfnp_trax' + ('.' + path if path else ''))


def _present_paths():
  return [p for p in TRAX_NAMES if p not in MISSING_MODULES]


def missing_summary():
  """One line per module path: what tfnp_trax lacks there."""
  lines = [f'{p}: (module missing)' for p in MISSING_MODULES]
  lines += [f'{p}: {", ".join(names)}' for p, names in MISSING_NAMES.items()]
  return '\n'.join(lines)


def test_missing_lists_name_only_trax_names():
  for path in MISSING_MODULES:
    assert path in TRAX_NAMES, path
    assert path not in MISSING_NAMES, f'{path} is listed as a missing module'
  for path, names in MISSING_NAMES.items():
    assert path in TRAX_NAMES, path
    assert sorted(names) == names and len(set(names)) == len(names), path
    unknown = sorted(set(names) - set(TRAX_NAMES[path]))
    assert not unknown, f'{path}: not Trax names: {unknown}'
  for path, names in SHADOWED_BY_SUBMODULE.items():
    assert set(names) <= set(MISSING_NAMES[path]), path


@pytest.mark.parametrize('path', _present_paths())
def test_trax_names_import_from_the_trax_path(path):
  module = _module(path)
  skip = set(MISSING_NAMES.get(path, ()))
  absent = [n for n in TRAX_NAMES[path]
            if n not in skip and not hasattr(module, n)]
  assert not absent, (f'tfnp_trax.{path} lacks {absent}: re-export them, or '
                      f'list them in MISSING_NAMES')
  exported = getattr(module, '__all__', None)
  if exported is not None:
    skip |= set(LAZY_NAMES.get(path, ()))
    # Submodules bound in a package need not be listed (`models.__all__`
    # holds just the model constructors).
    unlisted = [n for n in TRAX_NAMES[path] if n not in skip and
                n not in exported and
                not isinstance(getattr(module, n), types.ModuleType)]
    assert not unlisted, f'tfnp_trax.{path}.__all__ lacks {unlisted}'


@pytest.mark.parametrize('path', sorted(MISSING_NAMES))
def test_missing_names_are_really_missing(path):
  module = _module(path)
  shadowed = SHADOWED_BY_SUBMODULE.get(path, ())
  found = [n for n in MISSING_NAMES[path] if hasattr(module, n) and not (
      n in shadowed and isinstance(getattr(module, n), types.ModuleType))]
  assert not found, (f'tfnp_trax.{path} now has {found}: remove them from '
                     f'MISSING_NAMES')


@pytest.mark.parametrize('path', MISSING_MODULES)
def test_missing_modules_are_really_missing(path):
  with pytest.raises(ModuleNotFoundError):
    _module(path)


# Submodule names that are deliberately not the package's object. In Trax,
# `from rel_attention import *` in trax/layers/__init__.py rebinds
# `tl.DotProductAttention` to rel_attention's helper function by accident;
# here `tl.DotProductAttention` stays the attention layer and the helper is
# reachable as `rel_attention.DotProductAttention`.
_NOT_REEXPORTED = {('layers.research.rel_attention', 'DotProductAttention')}


@pytest.mark.parametrize('package', _PACKAGES)
def test_submodule_paths_reexport_the_package_objects(package):
  pkg = _module(package)
  for path in _present_paths():
    if not path.startswith(package + '.'):
      continue
    module = _module(path)
    for name in TRAX_NAMES[path]:
      if (name in MISSING_NAMES.get(path, ()) or
          name in MISSING_NAMES.get(package, ()) or not hasattr(pkg, name)
          or (path, name) in _NOT_REEXPORTED):
        continue
      assert getattr(module, name) is getattr(pkg, name), f'{path}.{name}'


def test_trax_spellings_of_aliases():
  # `import trax.fastmath.numpy as jnp` and `trax.lr` work as in Trax.
  assert jnp is fastmath.numpy is ops.numpy
  assert ops.random is fastmath.random
  assert tfnp_trax.lr is lr_schedules
  supervised = tfnp_trax.supervised
  assert supervised.TrainTask is supervised.training.TrainTask


if __name__ == '__main__':
  print(missing_summary())
