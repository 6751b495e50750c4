"""BERT inputs, GLUE streams and the functions that use t5's preprocessors.

The BERT input builders and `mask_random_tokens` are plain NumPy. The GLUE,
C4 and next-sentence streams call `t5.data` preprocessors, as Trax does:
they need the optional `t5` package (`pip install t5`, which works offline
once installed) and the TFDS datasets prepared in a local data_dir.
"""

import functools
import itertools

import numpy as np

from tfnp_trax.data import _preprocessors
from tfnp_trax.data import _tfds

__all__ = [
    'BertDoubleSentenceInputs', 'BertGlueEvalStream', 'BertGlueTrainStream',
    'BertNextSentencePredictionInputs', 'BertSingleSentenceInputs',
    'CorpusToRandomChunks', 'CreateBertInputs', 'CreateDropInputs',
    'T5GlueEvalStream', 'T5GlueEvalStreamsParallel', 'T5GlueEvalTasks',
    'T5GlueTrainStream', 'T5GlueTrainStreamsParallel', 'c4_bare_preprocess_fn',
    'generic_text_dataset_preprocess_fn', 'get_t5_preprocessor_by_name',
    'mask_random_tokens', 't2t_problems', 't5_data',
]

GLUE_KEYS = {
    'cola': ('sentence',), 'sst2': ('sentence',),
    'mrpc': ('sentence1', 'sentence2'), 'qqp': ('question1', 'question2'),
    'stsb': ('sentence1', 'sentence2'), 'mnli': ('premise', 'hypothesis'),
    'qnli': ('question', 'sentence'), 'rte': ('sentence1', 'sentence2'),
    'wnli': ('sentence1', 'sentence2'),
}

# Label words of each GLUE task in the T5 paper (arXiv:1910.10683).
GLUE_LABELS = {
    'cola': ('unacceptable', 'acceptable'), 'sst2': ('negative', 'positive'),
    'mrpc': ('not_equivalent', 'equivalent'),
    'qqp': ('not_duplicate', 'duplicate'),
    'stsb': ('sentence1', 'sentence2'),
    'mnli': ('entailment', 'neutral', 'contradiction'),
    'qnli': ('entailment', 'not_entailment'),
    'rte': ('entailment', 'not_entailment'),
    'wnli': ('sentence1', 'sentence2'),
}


def t5_data():
  """The `t5.data` module, or an ImportError saying how to get it."""
  try:
    import t5.data  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(
        "This function uses t5's preprocessors and task registry "
        '(`t5.data`), which are not installed. Install them with '
        '`pip install t5` (no network is needed once installed); the '
        'datasets must also be prepared in a local TFDS data_dir.') from e
  return t5.data


def t2t_problems():
  """Trax's tensor2tensor problem registry: not supported here."""
  raise ImportError('t2t_problems: tensor2tensor datasets are not supported '
                    'by tfnp_trax (tensor2tensor does not run on TF 2); use a '
                    'TFDS dataset prepared in a local data_dir instead.')


def BertSingleSentenceInputs(batch, labeled=True, cls_id=101, sep_id=102):  # pylint: disable=invalid-name
  """`[CLS] s [SEP]` with zero segment ids (and label, weight 1)."""
  for row in batch:
    sentence = row[0]
    ids = np.concatenate(([cls_id], sentence, [sep_id]))
    segments = np.zeros(sentence.shape[0] + 2, dtype=np.int32)
    if labeled:
      yield ids, segments, segments, row[1], np.int32(1)
    else:
      yield ids, segments, segments


def BertDoubleSentenceInputs(batch, labeled=True, cls_id=101, sep_id=102):  # pylint: disable=invalid-name
  """`[CLS] s1 [SEP] s2 [SEP]`, segment 1 from s2 on (and label, weight)."""
  for row in batch:
    first, second = row[0], row[1]
    ids = np.concatenate(([cls_id], first, [sep_id], second, [sep_id]))
    segments = np.zeros(first.shape[0] + second.shape[0] + 3, dtype=np.int32)
    segments[first.shape[0] + 2:] = 1
    if labeled:
      yield ids, segments, segments, row[2], np.int32(1)
    else:
      yield ids, segments, segments


def CreateBertInputs(double_sentence=True, labeled=True, cls_id=101,  # pylint: disable=invalid-name
                     sep_id=102):
  """Returns the single- or double-sentence BERT input builder."""
  fn = BertDoubleSentenceInputs if double_sentence else BertSingleSentenceInputs
  return functools.partial(fn, labeled=labeled, cls_id=cls_id, sep_id=sep_id)


def mask_random_tokens(batch, explicit_vocab_size=30522, masking_prob=0.15,
                       cls_id=101, sep_id=102, mask_id=103,
                       vocab_start_id=999):
  """BERT masked-LM inputs, drawn with NumPy's global random state.

  Of each row's tokens that are not CLS, SEP or padding (0),
  `round(masking_prob * n)` are chosen; each chosen one becomes `mask_id`
  with probability 0.8, a random id in `[vocab_start_id,
  explicit_vocab_size)` with 0.1, or stays. Rows with none to choose are
  skipped.

  Yields:
    `(masked_ids, *rest_of_row, original_ids, weights)`, weights `1/k` on
    the `k` chosen positions and 0 elsewhere.
  """
  for token_ids, *rest in batch:
    original = token_ids.copy()
    special = (token_ids == cls_id) | (token_ids == sep_id) | (token_ids == 0)
    candidates = np.arange(token_ids.shape[0])[~special]
    k = round(masking_prob * candidates.shape[0])
    if k == 0:
      continue
    chosen = np.random.choice(candidates, k, replace=False)
    weights = np.zeros(token_ids.shape)
    weights[chosen] = 1 / chosen.shape[0]
    u = np.random.random(chosen.shape)
    token_ids[chosen[u < 0.8]] = mask_id
    randomized = chosen[(0.8 <= u) & (u < 0.9)]
    token_ids[randomized] = np.random.randint(
        vocab_start_id, explicit_vocab_size, randomized.shape[0])
    yield (token_ids, *rest, original, weights)


def BertNextSentencePredictionInputs(dataset_name, data_dir=None,  # pylint: disable=invalid-name
                                     text_key='text', train=True,
                                     shuffle_size=50000):
  """`(sentence1, sentence2, is_next)` from t5's next-sentence task (needs t5)."""
  stream = _tfds.TFDS(
      dataset_name, data_dir=data_dir,
      tfds_preprocess_fn=functools.partial(
          t5_data().preprocessors.next_sentence_prediction,
          text_key=text_key, label_sentences=True, buffer_size=shuffle_size),
      keys=['inputs', 'targets'], train=train)

  def split_stream(generator=None):
    for text, target in stream(generator):
      # str() of the bytes, without the closing quote, as Trax splits it.
      parts = str(text)[:-1].split('sentence1: ')[1].split(' sentence2: ')
      if len(parts) == 2:
        yield parts[0], parts[1], target == 'next'

  return split_stream


def CorpusToRandomChunks(dataset_name, num_tokens=512, train=True):  # pylint: disable=invalid-name
  """Text cut into random chunks of at most `num_tokens` words (needs t5)."""
  return _tfds.TFDS(
      dataset_name,
      tfds_preprocess_fn=functools.partial(
          t5_data().preprocessors.random_split_text,
          max_words_per_segment=num_tokens),
      train=train, keys=['text'])


def _eval_suffix(benchmark):
  return benchmark if benchmark.endswith(('_e', '_e2')) else benchmark + '_e'


def _inputs():
  from tfnp_trax.data import inputs  # pylint: disable=g-import-not-at-top
  return inputs


def _tokenize_step():
  from tfnp_trax.data import _tokenize  # pylint: disable=g-import-not-at-top
  return _tokenize.Tokenize()


def _bert_glue_stream(benchmark_id):
  benchmark, split = _eval_suffix(benchmark_id).rsplit('_', 1)
  source = _tfds.TFDS(f'glue/{benchmark}', keys=GLUE_KEYS[benchmark],
                      train=split == 't', use_alt_eval=split == 'e2')
  inputs = _inputs()
  return inputs.Serial(source, _tokenize_step(), CreateBertInputs(),
                       inputs.Shuffle(), inputs.PadToLength(),
                       inputs.TruncateToLength(), inputs.Batch())


def BertGlueTrainStream(benchmark):  # pylint: disable=invalid-name
  """BERT-preprocessed train stream of a GLUE task, e.g. `'mnli'`."""
  return _bert_glue_stream(benchmark + '_t')


def BertGlueEvalStream(benchmark):  # pylint: disable=invalid-name
  """BERT-preprocessed eval stream; `'mnli_e2'` selects mismatched."""
  return _bert_glue_stream(_eval_suffix(benchmark))


def _glue_benchmark_and_split(benchmark_id):
  benchmark, mode = benchmark_id.rsplit('_', 1)
  if mode == 't':
    return benchmark, 'train'
  if benchmark == 'mnli':
    return benchmark, ('validation_mismatched' if mode == 'e2'
                       else 'validation_matched')
  return benchmark, 'validation'


def _t5_glue_examples(benchmark_id, data_dir=None):
  """Endless `(inputs, targets, weights)` text examples via t5's `glue`."""
  t5d = t5_data()
  benchmark, split = _glue_benchmark_and_split(benchmark_id)
  name = f'glue/{benchmark}'
  builder = _tfds.load_local_builder(
      name, _tfds.download_and_prepare(name, data_dir), caller='T5Glue')
  dataset = t5d.preprocessors.glue(builder.as_dataset(split=split),
                                   benchmark_name=benchmark,
                                   label_names=GLUE_LABELS[benchmark])

  def stream(generator=None):
    del generator
    for example in itertools.cycle(dataset.as_numpy_iterator()):
      targets = example['targets']
      yield example['inputs'], targets, np.ones(len(targets), np.int32)

  return stream


def _t5_glue_stream(benchmark_id):
  inputs = _inputs()
  return inputs.Serial(_t5_glue_examples(benchmark_id), _tokenize_step(),
                       inputs.Shuffle(), inputs.PadToLength(),
                       inputs.TruncateToLength(), inputs.Batch())


def T5GlueTrainStream(benchmark):  # pylint: disable=invalid-name
  """T5-preprocessed train stream of a GLUE task (needs t5)."""
  return _t5_glue_stream(benchmark + '_t')


def T5GlueEvalStream(benchmark):  # pylint: disable=invalid-name
  """T5-preprocessed eval stream of a GLUE task (needs t5)."""
  return _t5_glue_stream(_eval_suffix(benchmark))


def T5GlueTrainStreamsParallel(benchmark_list, counters=None,  # pylint: disable=invalid-name
                               reweight_by_minimum=False,
                               gradually_reweight=False):
  """Train streams of several GLUE tasks mixed by `inputs.Parallel`."""
  streams = [T5GlueTrainStream(b) for b in benchmark_list]
  return _inputs().Parallel(streams, counters=counters,
                            reweight_by_minimum=reweight_by_minimum,
                            gradually_reweight=gradually_reweight)()


def T5GlueEvalStreamsParallel(benchmark_list):  # pylint: disable=invalid-name
  """Eval streams of several GLUE tasks mixed by `inputs.Parallel`."""
  return _inputs().Parallel([T5GlueEvalStream(b) for b in benchmark_list])()


def T5GlueEvalTasks(benchmark_list):  # pylint: disable=invalid-name
  """An accuracy `EvalTask` per GLUE benchmark id (e.g. `'mnli_e2'`)."""
  from tfnp_trax import layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import training  # pylint: disable=g-import-not-at-top
  tasks = []
  for benchmark_id in benchmark_list:
    stream = T5GlueEvalStream(benchmark_id)
    benchmark, split = _eval_suffix(benchmark_id).rsplit('_', 1)
    if benchmark == 'cola':
      title = 'Cola'
    elif benchmark == 'mnli':
      title = 'MNLI_matched' if split == 'e' else 'MNLI_mismatched'
    else:
      title = benchmark.upper()
    tasks.append(training.EvalTask(
        stream(), [tl.WeightedCategoryAccuracy(), tl.SequenceAccuracy()],
        metric_names=[f'{title} accuracy', f'{title} sequence accuracy']))
  return tasks


def get_t5_preprocessor_by_name(name=None, fn_kwargs=None):
  """`fn(dataset, training)` calling t5's preprocessor `name` (needs t5)."""
  if name is None:
    raise ValueError('get_t5_preprocessor_by_name: name is required.')
  fn = getattr(t5_data().preprocessors, name)
  if fn_kwargs is not None:
    fn = functools.partial(fn, **fn_kwargs)
  return lambda dataset, unused_training: fn(dataset)


def _spm_vocabulary(spm_path):
  from tfnp_trax.data import _tokenize  # pylint: disable=g-import-not-at-top
  t5d = t5_data()
  return t5d.SentencePieceVocabulary(
      sentencepiece_model_file=spm_path or _tokenize.T5_DEFAULT_SPM_PATH,
      extra_ids=0)


def generic_text_dataset_preprocess_fn(dataset, training=True,
                                       text_preprocess_fns=None,
                                       token_preprocess_fns=None,
                                       spm_path=None, copy_pretokenized=False,
                                       debug_print_examples=False,
                                       debug_print_examples_rate=0.01):
  """Text preprocessors, t5 SentencePiece tokenization, token preprocessors.

  Needs t5. `debug_print_examples` is accepted and ignored.
  """
  del debug_print_examples, debug_print_examples_rate
  for fn in text_preprocess_fns or ():
    dataset = fn(dataset, training)
  t5d = t5_data()
  feature = t5d.Feature(_spm_vocabulary(spm_path))
  dataset = t5d.preprocessors.tokenize(
      dataset, {'inputs': feature, 'targets': feature},
      copy_pretokenized=copy_pretokenized)
  for fn in token_preprocess_fns or ():
    dataset = fn(dataset, training)
  return dataset


def c4_bare_preprocess_fn(dataset, training=True, spm_path=None,
                          copy_pretokenized=True, sequence_length=None):
  """C4 text to t5's unsupervised span-corruption examples (needs t5)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  t5d = t5_data()
  dataset = t5d.preprocessors.rekey(
      dataset, key_map={'targets': 'text', 'inputs': None})
  feature = t5d.Feature(_spm_vocabulary(spm_path))
  features = {'targets': feature, 'inputs': feature}

  def encode(x):
    out = {}
    for k, v in x.items():
      if k in features and v.dtype == tf.string:
        if copy_pretokenized:
          out[f'{k}_pretokenized'] = v
        v = tf.cast(features[k].vocabulary.encode_tf(v), tf.int64)
      out[k] = v
    return out

  dataset = dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE)
  dataset = t5d.preprocessors.unsupervised(
      dataset, sequence_length=sequence_length, output_features=features)
  dataset = _preprocessors.add_eos_to_output_features(dataset, training)
  dataset = _preprocessors.truncate_dataset_on_len(
      dataset, training, sequence_length, True)
  return _preprocessors.pad_dataset_to_length(dataset, training,
                                              sequence_length)


def CreateDropInputs(train=True, mathqa_format=False, data_dir=None):  # pylint: disable=invalid-name
  """`('drop question: passage question', answer, weights)` from TFDS drop.

  Args:
    train: the train split, else `dev`.
    mathqa_format: write numeric answers as MathQA's
      `subtract(const_X,const_0)`.
    data_dir: local TFDS data_dir holding `drop` (tfnp_trax addition).
  """
  from tfnp_trax.data import _mathqa  # pylint: disable=g-import-not-at-top
  builder = _tfds.load_local_builder(
      'drop', _tfds.download_and_prepare('drop', data_dir),
      caller='CreateDropInputs')
  dataset = builder.as_dataset(split='train' if train else 'dev')

  def drop_yield_examples(generator=None):
    del generator
    for example in itertools.cycle(dataset.as_numpy_iterator()):
      question = ('drop question: ' + example['passage'].decode('utf-8') +
                  ' ' + example['question'].decode('utf-8'))
      answer = example['answer'].decode('utf-8')
      if not answer:
        continue  # Empty answers would tokenize to an empty float array.
      if mathqa_format and answer.replace('.', '', 1).isdigit():
        answer = _mathqa.convert_to_subtract(
            _mathqa.convert_float_to_mathqa(answer))
      yield question, answer, np.ones(len(answer), dtype=np.int32)

  return drop_yield_examples
