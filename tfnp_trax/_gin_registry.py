"""Gin registration of tfnp_trax objects under Trax's gin names.

Trax registers its layers, models, optimizers, schedules, data functions and
trainer pieces with gin under fixed module paths (`trax.layers.Relu`,
`trax.models.ReformerLM`, `trax.data.sequence_copy_inputs`, ...), and its
`.gin` files name them that way. `TRAX_GIN_NAMES` is that list, recorded from
Trax 1.4.1 (tests/testdata/trax_configs/record_trax_gin_names.py);
`ADDED_GIN_NAMES` lists the few tfnp_trax objects Trax lacks that are
registered the same way (`trax.supervised.callbacks.EarlyStopping`).

`register_all()` walks the list and registers, under Trax's name, every object
tfnp_trax has at the matching place: first `tfnp_trax.<gin module>.<name>`
(e.g. `tfnp_trax.layers.Relu`), else the module that defines it in Trax
(e.g. `tfnp_trax.data.inputs.batcher`). Names tfnp_trax lacks are remembered
(`missing_names()`) so a config that uses one gets an error naming it. The
walk is repeated on every parse, so names added to tfnp_trax later are
registered when they appear. `tfnp_trax.gin_config` (and the trainer)
import this module; `import tfnp_trax` does only when gin is already
imported, to register the `_IN_PLACE` names (`register_in_place`).

Trax wraps its objects with `gin.external_configurable`, and so does this
module: the objects themselves stay unchanged, and `gin.get_configurable(obj)`
gives the version with the bindings applied (as `trainer_lib.train` uses for
its defaults).
"""

import importlib
import inspect
import sys
import threading

import gin

from tfnp_trax import _trax_names

__all__ = ['TRAX_GIN_NAMES', 'ADDED_GIN_NAMES', 'TRAX_GIN_DENYLISTS', 'register_all',
           'register_in_place', 'missing_names', 'registered_names',
           'known_trax_modules',
           'find_missing', 'signature_of']

# Trax modules whose names register themselves with `@gin.configurable`
# when imported, as Trax's do (so the decorated function is the public one).
_SELF_REGISTERING = ('trax.supervised.trainer_lib', 'trax.rl.distributions',
                     'trax.rl.normalization')

# Trax names registered in place (`gin.configurable`, which wraps the
# class's `__init__`) instead of wrapped: a call from Python then sees the
# bindings, as a call of Trax's `tl.<name>` does. Trax's tests bind these
# from Python before any config is parsed, so their module registers them
# on import when gin is already imported (`register_in_place`).
_IN_PLACE = ('trax.layers.PureLSHSelfAttention',
             'trax.layers.PureLSHSelfAttentionWrapper',
             # Trax's train_rl calls `RLTask()` and relies on the config's
             # `RLTask.env = ...`.
             'trax.rl.task.RLTask')

# Names tfnp_trax adds beyond Trax's, registered the same way under the
# Trax module path where they live (a config writes
# `train.callbacks = [@EarlyStopping]`).
ADDED_GIN_NAMES = (
    ('trax.supervised.callbacks', 'trax.supervised.early_stopping', (
        'EarlyStopping',)),
)

# Recorded from Trax 1.4.1; see the module docstring.
TRAX_GIN_NAMES = (
    ('trax.data', 'trax.data.inputs', (
        'AddLossWeights', 'AppendValue', 'Batch', 'BucketByLength', 'CastTo',
        'ConcatenateToLMInput', 'CountAndSkip', 'Dup', 'FilterByLength',
        'FilterEmptyExamples', 'Log', 'MLM', 'PadToLength', 'Prefetch',
        'PrefixLM', 'Shuffle', 'TruncateToLength', 'UnBatch', 'UniformlySeek',
        'addition_input_stream', 'addition_inputs', 'batcher',
        'consume_noise_mask', 'generate_random_noise_mask',
        'generate_sequential_chunks', 'make_additional_stream', 'make_inputs',
        'make_parallel_stream', 'random_inputs', 'sequence_copy_inputs',
        'simple_sequence_copy_inputs', 'sine_inputs',)),
    ('trax.data', 'trax.data.tf_inputs', (
        'BertGlueEvalStream', 'BertGlueTrainStream',
        'BertNextSentencePredictionInputs', 'ConvertToUnicode',
        'CorpusToRandomChunks', 'CreateAnnotatedDropInputs',
        'CreateAquaInputs', 'CreateBertInputs', 'CreateDropInputs',
        'CreateMathQAInputs', 'SentencePieceTokenize', 'T5GlueEvalStream',
        'T5GlueEvalStreamsParallel', 'T5GlueEvalTasks', 'T5GlueTrainStream',
        'T5GlueTrainStreamsParallel', 'TFDS', 'Tokenize',
        'add_eos_to_output_features', 'bair_robot_pushing_hparams',
        'bair_robot_pushing_preprocess', 'c4_bare_preprocess_fn',
        'c4_preprocess', 'cifar10_augmentation_flatten_preprocess',
        'cifar10_augmentation_preprocess',
        'cifar10_no_augmentation_preprocess', 'concat_preprocess',
        'data_streams', 'downsampled_imagenet_flatten_bare_preprocess',
        'filter_dataset_on_len', 'generic_text_dataset_preprocess_fn',
        'get_t5_preprocessor_by_name', 'lm1b_preprocess',
        'lm_token_preprocessing', 'mask_random_tokens',
        'pad_dataset_to_length', 'squeeze_targets_preprocess',
        'truncate_dataset_on_len', 'wmt_concat_preprocess',
        'wmt_preprocess',)),
    ('trax.data.debug_data_pipeline', 'trax.data.debug_data_pipeline', (
        'debug_pipeline',)),
    ('trax.fastmath.ops', 'trax.fastmath.ops', (
        'backend',)),
    ('trax.layers', 'trax.layers.activation_fns', (
        'Exp', 'FastGelu', 'Gelu', 'HardSigmoid', 'HardTanh', 'Relu',
        'Sigmoid', 'Softplus', 'Tanh', 'ThresholdedLinearUnit',)),
    ('trax.layers', 'trax.layers.attention', (
        'Attention', 'CausalAttention', 'DotProductCausalAttention',
        'PositionalEncoding',)),
    ('trax.layers', 'trax.layers.core', (
        'LogSoftmax', 'Softmax',)),
    ('trax.layers', 'trax.layers.deconvolution', (
        'ConvTranspose',)),
    ('trax.layers', 'trax.layers.initializers', (
        'AtariConvInit',)),
    ('trax.layers', 'trax.layers.metrics', (
        'CategoryCrossEntropy', 'CrossEntropyLossWithLogSoftmax', 'L2Loss',
        'MacroAveragedFScore', 'SequenceAccuracy', 'WeightedCategoryAccuracy',
        'WeightedCategoryCrossEntropy', 'WeightedFScore',)),
    ('trax.layers', 'trax.layers.normalization', (
        'BatchNorm', 'FilterResponseNorm', 'LayerNorm',)),
    ('trax.layers', 'trax.layers.research.efficient_attention', (
        'EncDecAttention', 'LSHSelfAttention', 'MixedLSHSelfAttention',
        'PureLSHSelfAttention', 'PureLSHSelfAttentionWrapper',
        'SelfAttention',)),
    ('trax.layers', 'trax.layers.research.position_encodings', (
        'InfinitePositionalEncoding', 'TimeBinPositionalEncoding',)),
    ('trax.layers', 'trax.layers.research.rel_attention', (
        'RelativeAttentionLMLayer', 'RelativeAttentionLayer',
        'RelativeAttentionWrapper',)),
    ('trax.layers', 'trax.layers.research.resampling', (
        'AttentionResampling', 'AveragePooling', 'LinearPooling',
        'LinearUpsampling', 'NaiveUpsampling', 'NoUpsampling',)),
    ('trax.layers', 'trax.layers.research.rotary_positional_embedding', (
        'Rotate',)),
    ('trax.layers', 'trax.layers.research.sparsity', (
        'CausalFavor', 'CausalFavorAttention', 'ConvCausalAttention', 'Favor',
        'FavorAttention', 'LowRankCausalAttention', 'ModularCausalAttention',
        'MultiplicativeCausalAttention', 'MultiplicativeConvCausalAttention',
        'MultiplicativeModularCausalAttention',)),
    ('trax.layers', 'trax.layers.rnn', (
        'GRUCell', 'LSTMCell',)),
    ('trax.models', 'trax.models.atari_cnn', (
        'AtariCnn', 'AtariCnnBody', 'FrameStackMLP',)),
    ('trax.models', 'trax.models.mlp', (
        'MLP',)),
    ('trax.models', 'trax.models.neural_gpu', (
        'NeuralGPU',)),
    ('trax.models', 'trax.models.reformer.reformer', (
        'Reformer', 'ReformerLM', 'ReformerShortenLM',)),
    ('trax.models', 'trax.models.research.bert', (
        'BERT', 'BERTClassifierHead', 'BERTRegressionHead',)),
    ('trax.models', 'trax.models.research.configurable_transformer', (
        'ConfigurableTransformer', 'ConfigurableTransformerEncoder',
        'ConfigurableTransformerLM',)),
    ('trax.models', 'trax.models.research.hourglass', (
        'HourglassLM',)),
    ('trax.models', 'trax.models.research.layerdrop_transformer', (
        'EveryOtherLayerDropTransformerLM', 'LayerDropTransformerLM',
        'SkippingTransformerLM',)),
    ('trax.models', 'trax.models.research.rezero', (
        'ReZeroTransformer', 'ReZeroTransformerDecoder',
        'ReZeroTransformerEncoder', 'ReZeroTransformerLM',)),
    ('trax.models', 'trax.models.research.rse', (
        'ResidualShuffleExchange',)),
    ('trax.models', 'trax.models.research.terraformer', (
        'ConfigurableTerraformer',)),
    ('trax.models', 'trax.models.research.transformer2', (
        'Transformer2',)),
    ('trax.models', 'trax.models.resnet', (
        'Resnet50', 'WideResnet',)),
    ('trax.models', 'trax.models.rl', (
        'Policy', 'PolicyAndValue', 'Quality', 'Value',)),
    ('trax.models', 'trax.models.rnn', (
        'GRULM', 'LSTMSeq2SeqAttn', 'RNNLM',)),
    ('trax.models', 'trax.models.transformer', (
        'Transformer', 'TransformerDecoder', 'TransformerEncoder',
        'TransformerLM',)),
    ('trax.models.research.bert', 'trax.models.research.bert', (
        'BERTClassifierHead', 'BERTMLMHead', 'BERTPretrainingHead',
        'BERTPretrainingLoss', 'BERTRegressionHead',)),
    ('trax.optimizers', 'trax.optimizers.adafactor', (
        'Adafactor',)),
    ('trax.optimizers', 'trax.optimizers.adam', (
        'Adam',)),
    ('trax.optimizers', 'trax.optimizers.base', (
        'SGD',)),
    ('trax.optimizers', 'trax.optimizers.momentum', (
        'Momentum',)),
    ('trax.optimizers', 'trax.optimizers.rms_prop', (
        'RMSProp',)),
    ('trax.optimizers', 'trax.optimizers.sm3', (
        'SM3',)),
    ('trax.rl', 'trax.rl.actor_critic', (
        'A2C', 'AWR', 'LoopAWR', 'PPO', 'SamplingAWR', 'every',)),
    ('trax.rl', 'trax.rl.actor_critic_joint', (
        'A2CJoint', 'AWRJoint', 'PPOJoint',)),
    ('trax.rl', 'trax.rl.serialization_utils', (
        'TimeSeriesModel',)),
    ('trax.rl', 'trax.rl.training', (
        'DQN', 'ExpertIteration', 'PolicyGradient',)),
    ('trax.rl.advantages', 'trax.rl.advantages', (
        'gae', 'monte_carlo', 'td_k', 'td_lambda',)),
    ('trax.rl.distributions', 'trax.rl.distributions', (
        'Categorical', 'Gaussian',)),
    ('trax.rl.envs', 'trax.rl.envs.data_envs', (
        'SequenceDataEnv', 'copy_stream',)),
    ('trax.rl.normalization', 'trax.rl.normalization', (
        'LayerNormSquash', 'Normalize',)),
    ('trax.rl.space_serializer', 'trax.rl.space_serializer', (
        'BoxSpaceSerializer',)),
    ('trax.rl.task', 'trax.rl.task', (
        'RLTask',)),
    ('trax.rl.training', 'trax.rl.training', (
        'sharpened_network_policy',)),
    ('trax.supervised.callbacks', 'trax.supervised.callbacks', (
        'SerializedModelEvaluation',)),
    ('trax.supervised.lr_schedules', 'trax.supervised.lr_schedules', (
        'constant', 'multifactor', 'warmup', 'warmup_and_rsqrt_decay',)),
    ('trax.supervised.trainer_lib', 'trax.supervised.trainer_lib', (
        'named_stream', 'num_devices', 'train',)),
    ('trax.supervised.training', 'trax.supervised.training', (
        'EvalTask', 'TrainTask',)),
)

TRAX_GIN_DENYLISTS = {
    'trax.data.add_eos_to_output_features': ('dataset', 'training'),
    'trax.data.bair_robot_pushing_hparams': ('hparams',),
    'trax.data.bair_robot_pushing_preprocess': ('dataset', 'training'),
    'trax.data.c4_bare_preprocess_fn': ('dataset', 'training'),
    'trax.data.c4_preprocess': ('dataset', 'training'),
    'trax.data.cifar10_augmentation_flatten_preprocess': (
        'dataset', 'training'),
    'trax.data.cifar10_augmentation_preprocess': ('dataset', 'training'),
    'trax.data.cifar10_no_augmentation_preprocess': ('dataset', 'training'),
    'trax.data.concat_preprocess': ('dataset', 'training'),
    'trax.data.debug_data_pipeline.debug_pipeline': ('f',),
    'trax.data.downsampled_imagenet_flatten_bare_preprocess': (
        'dataset', 'training'),
    'trax.data.filter_dataset_on_len': ('dataset', 'training'),
    'trax.data.generic_text_dataset_preprocess_fn': ('dataset', 'training'),
    'trax.data.lm1b_preprocess': ('dataset', 'training'),
    'trax.data.lm_token_preprocessing': ('dataset', 'training'),
    'trax.data.pad_dataset_to_length': ('dataset', 'training'),
    'trax.data.squeeze_targets_preprocess': ('dataset', 'training'),
    'trax.data.truncate_dataset_on_len': ('dataset', 'training'),
    'trax.data.wmt_concat_preprocess': ('dataset', 'training'),
    'trax.data.wmt_preprocess': ('dataset', 'training'),
    'trax.layers.Attention': ('mode',),
    'trax.layers.CausalAttention': ('mode',),
    'trax.layers.CausalFavor': ('mode',),
    'trax.layers.CausalFavorAttention': ('mode',),
    'trax.layers.ConvCausalAttention': ('mode',),
    'trax.layers.DotProductCausalAttention': ('mode',),
    'trax.layers.EncDecAttention': ('mode',),
    'trax.layers.Favor': ('mode',),
    'trax.layers.FavorAttention': ('mode',),
    'trax.layers.InfinitePositionalEncoding': ('mode',),
    'trax.layers.LSHSelfAttention': ('mode',),
    'trax.layers.LowRankCausalAttention': ('mode',),
    'trax.layers.MixedLSHSelfAttention': ('mode',),
    'trax.layers.ModularCausalAttention': ('mode',),
    'trax.layers.MultiplicativeCausalAttention': ('mode',),
    'trax.layers.MultiplicativeConvCausalAttention': ('mode',),
    'trax.layers.MultiplicativeModularCausalAttention': ('mode',),
    'trax.layers.PositionalEncoding': ('mode',),
    'trax.layers.PureLSHSelfAttention': ('mode',),
    'trax.layers.PureLSHSelfAttentionWrapper': ('mode',),
    'trax.layers.SelfAttention': ('mode',),
    'trax.layers.TimeBinPositionalEncoding': ('mode',),
    'trax.rl.A2C': ('task', 'output_dir'),
    'trax.rl.A2CJoint': ('task', 'output_dir'),
    'trax.rl.AWR': ('task', 'output_dir'),
    'trax.rl.AWRJoint': ('task', 'output_dir'),
    'trax.rl.DQN': ('task', 'output_dir'),
    'trax.rl.ExpertIteration': ('task', 'output_dir'),
    'trax.rl.LoopAWR': ('task', 'output_dir'),
    'trax.rl.PPO': ('task', 'output_dir'),
    'trax.rl.PPOJoint': ('task', 'output_dir'),
    'trax.rl.PolicyGradient': ('task', 'output_dir'),
    'trax.rl.SamplingAWR': ('task', 'output_dir'),
    'trax.rl.advantages.gae': ('gamma', 'margin'),
    'trax.rl.advantages.monte_carlo': ('gamma', 'margin'),
    'trax.rl.advantages.td_k': ('gamma', 'margin'),
    'trax.rl.advantages.td_lambda': ('gamma', 'margin'),
    'trax.rl.distributions.Categorical': ('n_categories', 'shape'),
    'trax.rl.distributions.Gaussian': ('shape',),
    'trax.rl.normalization.LayerNormSquash': ('mode',),
    'trax.rl.normalization.Normalize': ('mode',),
    'trax.rl.space_serializer.BoxSpaceSerializer': ('space', 'vocab_size'),
    'trax.supervised.trainer_lib.train': ('output_dir',),
}


_LOCK = threading.RLock()
_REGISTERED = {}   # 'trax.layers.Relu' -> the tfnp_trax object.
_MISSING = set()   # 'trax.models.ConfigurableTerraformer', ...


def _import_if_present(module_name):
  """Imports a tfnp_trax module; None if it (or a parent) does not exist."""
  try:
    return importlib.import_module(module_name)
  except ModuleNotFoundError as e:
    # A missing dependency inside an existing module is a real error.
    if e.name and (module_name == e.name or
                   module_name.startswith(e.name + '.')):
      return None
    raise


def _find(gin_module, source, name):
  """The tfnp_trax object for Trax's `gin_module.name`, or None."""
  for trax_module in (gin_module, source):
    module = _import_if_present(_trax_names.tfnp_trax_name(trax_module))
    obj = getattr(module, name, None) if module is not None else None
    if obj is not None and not inspect.ismodule(obj):
      return obj
  return None


def signature_of(obj):
  """`inspect.signature(obj)`, or None where Python cannot give one."""
  try:
    return inspect.signature(obj)
  except (TypeError, ValueError):
    return None


def _denylist(selector, obj):
  """Trax's denylist for `selector`, kept to parameters `obj` accepts."""
  names = TRAX_GIN_DENYLISTS.get(selector, ())
  signature = signature_of(obj)
  if signature is None:
    return None
  kept = [n for n in names if n in signature.parameters]
  return kept or None


def _package_loaded(gin_module):
  """Whether the tfnp_trax package for `trax.<package>...` is imported.

  `import tfnp_trax` loads layers, models, optimizers, data and supervised.
  RL counts as loaded with supervised: Trax's `trax.supervised.callbacks`
  imports `trax.rl`, so in Trax the RL names are registered whenever
  `trax.supervised` is imported (a supervised config such as
  `transformer_srl_sine.gin` binds `TimeSeriesModel` without importing
  `trax.rl`). tfnp_trax's supervised package does not import rl, so the
  names are registered (and rl imported) when a config is parsed.
  """
  package = '.'.join(gin_module.split('.')[:2])
  for loaded in (package,) + _LOADED_WITH.get(package, ()):
    if _trax_names.tfnp_trax_name(loaded) in sys.modules:
      return True
  return False


# Trax packages that another Trax package imports (so their gin names are
# there whenever that package is): package -> the packages importing it.
_LOADED_WITH = {'trax.rl': ('trax.supervised',)}


def register_all():
  """Registers every Trax gin name tfnp_trax has; returns the new ones."""
  new = []
  with _LOCK:
    for gin_module, source, names in TRAX_GIN_NAMES + ADDED_GIN_NAMES:
      if not _package_loaded(gin_module):
        continue
      for name in names:
        selector = f'{gin_module}.{name}'
        if selector in _REGISTERED:
          continue
        if gin_module in _SELF_REGISTERING:
          module = _import_if_present(_trax_names.tfnp_trax_name(source))
          obj = getattr(module, name, None) if module is not None else None
          if obj is None:
            _MISSING.add(selector)
            continue
        else:
          obj = _find(gin_module, source, name)
          if obj is None:
            _MISSING.add(selector)
            continue
          if selector in _IN_PLACE:
            gin.configurable(name, module=gin_module,
                             denylist=_denylist(selector, obj))(obj)
          else:
            gin.external_configurable(obj, name=name, module=gin_module,
                                      denylist=_denylist(selector, obj))
        _REGISTERED[selector] = obj
        _MISSING.discard(selector)
        new.append(selector)
  return new


def register_in_place():
  """Registers the `_IN_PLACE` names now (once); returns the new ones."""
  new = []
  with _LOCK:
    for gin_module, source, names in TRAX_GIN_NAMES:
      for name in names:
        selector = f'{gin_module}.{name}'
        if selector not in _IN_PLACE or selector in _REGISTERED:
          continue
        obj = _find(gin_module, source, name)
        if obj is None:
          continue
        gin.configurable(name, module=gin_module,
                         denylist=_denylist(selector, obj))(obj)
        _REGISTERED[selector] = obj
        _MISSING.discard(selector)
        new.append(selector)
  return new


def registered_names():
  """Trax gin names registered so far, mapped to their tfnp_trax objects."""
  with _LOCK:
    return dict(_REGISTERED)


def missing_names():
  """Trax gin names (`module.name`) that tfnp_trax does not provide yet."""
  with _LOCK:
    return sorted(_MISSING)


def known_trax_modules():
  """Every Trax module path that holds (or whose children hold) a gin name."""
  modules = set()
  for gin_module, source, _ in TRAX_GIN_NAMES:
    for path in (gin_module, source):
      parts = path.split('.')
      modules.update('.'.join(parts[:i]) for i in range(1, len(parts) + 1))
  return modules


def find_missing(selector):
  """The missing Trax names a gin selector (e.g. 'models.Reformer') means.

  Gin matches a selector against the end of `module.name`, whole dotted
  components only; this does the same over the names tfnp_trax lacks.
  """
  selector = selector.lstrip('@').rstrip('()').rsplit('/', 1)[-1]
  with _LOCK:
    return sorted(m for m in _MISSING
                  if m == selector or m.endswith('.' + selector))
