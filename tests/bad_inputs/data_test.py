"""Bad inputs to data pipeline steps, tokenizers and vocabularies.

A step whose error depends on the data is run on both stream kinds, a
Python iterator and a `tf.data.Dataset`, and must say the same on each.
Vocabulary files are written into the row's `tmp_path`.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests import _fixtures
from tests.bad_inputs import _case
from tfnp_trax import data
from tfnp_trax.data import text_encoder

Case = _case.Case


def _pairs(n=4):
  return iter([(np.ones(3, np.int32), np.ones(3, np.int32))] * n)


def _dicts():
  return iter([{'inputs': np.ones(3, np.int32)}] * 3)


def _dict_dataset():
  return tf.data.Dataset.from_tensors(
      {'inputs': tf.ones(3, tf.int32)}).repeat(3)


def _arrays():
  return iter([np.ones(3, np.int32)] * 3)


def _array_dataset():
  return tf.data.Dataset.from_tensors(tf.ones(3, tf.int32)).repeat(3)


def _first(make_step, stream=_pairs):
  """Builds a data step and pulls one example through it."""
  return lambda: next(iter(make_step()(stream())))


def _through_serial(make_step, stream):
  """The step inside `Serial`, after a Dataset source (the blocks path)."""
  return lambda: next(iter(data.Serial(lambda _: stream(), make_step())()))


def _vocab_file(name, content, **kwargs):
  """Tokenize with a vocabulary file holding `content` (bytes)."""
  def call(tmp_path):
    (tmp_path / name).write_bytes(content)
    return data.Tokenize(vocab_dir=str(tmp_path), vocab_file=name, **kwargs)
  return call


def _bert_decode(ids):
  def call(tmp_path):
    (tmp_path / 'vocab.txt').write_bytes(b'[PAD]\n[UNK]\nhello\n')
    return text_encoder.BertEncoder(str(tmp_path / 'vocab.txt')).decode(ids)
  return call


def _bert_encode_without_unk(tmp_path):
  (tmp_path / 'vocab.txt').write_bytes(b'[PAD]\nhello\n')
  return text_encoder.BertEncoder(str(tmp_path / 'vocab.txt')).encode(
      'hello stranger')


_DICT_MESSAGE = (r'expected tuple examples \(length_keys \[0, 1\] are '
                 r"positions\) or arrays, got a dict with keys \['inputs'\]. "
                 r'Turn dicts into tuples first')

CASES = [
    # -- Length steps ---------------------------------------------------------
    Case('data_pad_negative_length',
         lambda: data.PadToLength(len_map={0: -3}), ValueError,
         r'PadToLength: len_map\[0\] is the length to pad to and must be >= '
         r'0, got -3'),
    Case('data_pad_multiple_of_zero',
         lambda: data.PadToLength(len_map={0: 0}, multiple=True), ValueError,
         r'PadToLength: with multiple=True, len_map\[0\] is the multiple to '
         r'pad to and must be >= 1, got 0'),
    Case('data_pad_float_length',
         lambda: data.PadToLength(len_map={0: 2.5}), TypeError,
         r'PadToLength: len_map\[0\] must be an int length, got 2.5 '
         r'\(float\)'),
    Case('data_pad_len_map_not_a_dict',
         lambda: data.PadToLength(len_map=[8]), TypeError,
         r'PadToLength: len_map must be a dict from example position to '
         r'length, e.g. \{0: 256\}, got list'),
    Case('data_pad_value_missing_a_key',
         lambda: data.PadToLength(len_map={0: 8, 1: 8}, pad_value={0: 0}),
         ValueError, r'PadToLength: pad_value is a dict without key 1 of '
         r'len_map'),
    Case('data_pad_bare_arrays_without_key_0',
         _first(lambda: data.PadToLength(len_map={1: 8}), _arrays),
         ValueError, r'PadToLength: a bare array example is padded to '
         r'len_map\[0\], but len_map has only keys \[1\]'),
    Case('data_pad_bare_arrays_without_key_0_dataset',
         _first(lambda: data.PadToLength(len_map={1: 8}), _array_dataset),
         ValueError, r'PadToLength: a bare array example is padded to '
         r'len_map\[0\], but len_map has only keys \[1\]'),
    Case('data_pad_dict_examples',
         _first(lambda: data.PadToLength(len_map={0: 8}), _dicts),
         ValueError, r"PadToLength: example isn't a tuple or an ndarray: a "
         r"dict .*len_map keys are positions of tuple examples"),
    Case('data_pad_dict_examples_dataset',
         _first(lambda: data.PadToLength(len_map={0: 8}), _dict_dataset),
         ValueError, r"PadToLength: example isn't a tuple or an ndarray: a "
         r"dict .*len_map keys are positions of tuple examples"),
    Case('data_truncate_dict_examples',
         _first(lambda: data.TruncateToLength({0: (2,)}), _dicts),
         ValueError, r'TruncateToLength: unknown example type dict: .*len_map '
         r'keys are positions of tuple examples'),
    Case('data_truncate_dict_examples_dataset',
         _first(lambda: data.TruncateToLength({0: (2,)}), _dict_dataset),
         ValueError, r'TruncateToLength: unknown example type dict: .*len_map '
         r'keys are positions of tuple examples'),
    Case('data_filter_dict_examples',
         _first(lambda: data.FilterByLength(max_length=8), _dicts),
         TypeError, r'FilterByLength: ' + _DICT_MESSAGE),
    Case('data_filter_dict_examples_dataset',
         _first(lambda: data.FilterByLength(max_length=8), _dict_dataset),
         TypeError, r'FilterByLength: ' + _DICT_MESSAGE),
    Case('data_filter_dict_examples_in_serial',
         _through_serial(lambda: data.FilterByLength(max_length=8),
                         _dict_dataset),
         TypeError, r'FilterByLength: ' + _DICT_MESSAGE),
    Case('data_bucket_dict_examples',
         _first(lambda: data.BucketByLength([4], [2, 2]), _dicts),
         TypeError, r'BucketByLength: ' + _DICT_MESSAGE),
    Case('data_bucket_dict_examples_dataset',
         _first(lambda: data.BucketByLength([4], [2, 2]), _dict_dataset),
         TypeError, r'BucketByLength: ' + _DICT_MESSAGE),
    Case('data_filter_length_keys_a_string',
         lambda: data.FilterByLength(8, length_keys='inputs'), TypeError,
         r"FilterByLength: length_keys must be a list of example positions "
         r"\(ints\), e.g. \[0\] or \[0, 1\], got 'inputs'"),
    Case('data_bucket_length_keys_an_int',
         lambda: data.BucketByLength([4], [2, 2], length_keys=1), TypeError,
         r'BucketByLength: length_keys must be a list of example positions'),
    Case('data_truncate_negative_size',
         lambda: data.TruncateToLength({0: (-2,)}), ValueError,
         r'TruncateToLength: len_map\[0\] is \(-2,\); its sizes must be '
         r'ints >= 0'),
    Case('data_truncate_len_map_a_list',
         lambda: data.TruncateToLength([(256,)]), TypeError,
         r'TruncateToLength: len_map must be a dict from example position to '
         r'shape'),
    # -- Batching dicts --------------------------------------------------------
    Case('data_batch_dicts_with_different_keys',
         _first(lambda: data.Batch(2),
                lambda: iter([{'a': np.ones(2)}, {'b': np.ones(2)}])),
         ValueError, r"Batch: example 1 has keys \['b'\], but example 0 has "
         r"\['a'\]; dicts batched together need the same keys"),
    Case('data_batch_dicts_and_tuples',
         _first(lambda: data.Batch(2),
                lambda: iter([{'a': np.ones(2)}, (np.ones(2),)])),
         ValueError, r"Batch: examples 0..1 mix kinds \['dict', 'tuple'\]; "
         r"batch either dicts or tuples"),
    Case('data_unbatch_a_list',
         _first(lambda: data.UnBatch(), lambda: iter([[np.ones((2, 3))]])),
         ValueError, r'UnBatch: batch 0 is a list, expected a tuple \(or '
         r'dict\) of arrays'),
    # -- Other steps -----------------------------------------------------------
    Case('data_log_every_zero_examples', lambda: data.Log(0), ValueError,
         r'Log: n_steps_per_example must be positive, got 0'),
    Case('data_append_value_key_out_of_range',
         _first(lambda: data.AppendValue({5: [1]})), ValueError,
         r'AppendValue: val has key 5, but examples have 2 value\(s\)'),
    Case('data_append_value_key_out_of_range_dataset',
         _first(lambda: data.AppendValue({5: [1]}),
                lambda: data.to_dataset(_pairs())), ValueError,
         r'AppendValue: val has key 5, but examples have 2 value\(s\)'),
    Case('data_prefix_lm_zero_lengths', lambda: data.PrefixLM(0, 0),
         ValueError, r'PrefixLM: input_length and output_length are both 0, '
         r'so each pair would be empty and never advance'),
    Case('data_prefix_lm_negative_length', lambda: data.PrefixLM(-1, 5),
         ValueError, r'PrefixLM: input_length must be >= 0, got -1'),
    Case('data_prefetch_zero', lambda: data.Prefetch(0), ValueError,
         r'Prefetch: n_prefetch must be positive, got 0'),
    Case('data_parallel_counter_string',
         lambda: data.Parallel([_pairs, _pairs], counters=['1', 2]),
         TypeError, r"Parallel: counters\[0\] is '1'; counters are numbers"),
    Case('data_parallel_counters_never_complete',
         lambda: data.Parallel([_pairs, _pairs], counters=[1.5, 1]),
         ValueError, r'Parallel: counters \[1.5, 1\] draw from no stream once '
         r'the first 3 examples are out, so the mix would hang'),
    Case('data_parallel_stream_not_callable',
         lambda: data.Parallel([_pairs, 3]), TypeError,
         r'Parallel: stream 1 must be a stream function .*got 3'),
    Case('data_cast_to_unknown_dtype', lambda: data.CastTo('int33'),
         TypeError, r"CastTo: dtype must be a NumPy dtype \(e.g. np.int32\), "
         r"got 'int33'"),
    Case('data_add_loss_weights_id_a_string',
         lambda: data.AddLossWeights(id_to_mask='<pad>'), TypeError,
         r"AddLossWeights: id_to_mask must be the int id of padding \(e.g. "
         r"0\) or None, got '<pad>'"),
    # -- Shuffle ---------------------------------------------------------------
    Case('data_shuffle_float_queue', lambda: data.Shuffle(2.5), TypeError,
         r'Shuffle: queue_size must be an int number of examples \(>= 1\), '
         r'got 2.5 \(float\)'),
    Case('data_shuffle_float_queue_generator',
         lambda: next(data.shuffle(_pairs(), 2.5)), TypeError,
         r'Shuffle: queue_size must be an int number of examples'),
    # -- Vocabularies ----------------------------------------------------------
    Case('data_sentencepiece_corrupt_model',
         _vocab_file('bad.model', b'not a model', vocab_type='sentencepiece'),
         ValueError, r'SentencePieceVocabulary: .*bad.model is not a '
         r'SentencePiece model .*expected the binary .model file'),
    Case('data_subword_empty_vocab',
         _vocab_file('empty.subword', b'', vocab_type='subword'), ValueError,
         r'SubwordTextEncoder: vocabulary file .*empty.subword holds no '
         r'subtokens \(0 line\(s\), all empty\)'),
    Case('data_subword_blank_lines_vocab',
         _vocab_file('blank.subword', b'\n\n', vocab_type='subword'),
         ValueError, r'SubwordTextEncoder: vocabulary file .*blank.subword '
         r'holds no subtokens \(2 line\(s\), all empty\)'),
    Case('data_subword_not_utf8',
         _vocab_file('latin1.subword', b"'caf\xe9_'\n", vocab_type='subword'),
         ValueError, r"SubwordTextEncoder: vocabulary file .*latin1.subword "
         r"is not UTF-8 text \(byte 4 is b'\\xe9'\)"),
    Case('data_subword_given_a_sentencepiece_model',
         _vocab_file('x.subword', b'\x0a\x8f\xff\x00', vocab_type='subword'),
         ValueError, r'SubwordTextEncoder: vocabulary file .*x.subword is not '
         r'UTF-8 text'),
    Case('data_bert_empty_vocab',
         _vocab_file('vocab.txt', b'', vocab_type='bert'), ValueError,
         r'BertEncoder: vocabulary file .*vocab.txt is empty; expected a '
         r'BERT vocab.txt'),
    Case('data_bert_not_utf8',
         _vocab_file('vocab.txt', b'[PAD]\ncaf\xe9\n', vocab_type='bert'),
         ValueError, r"BertEncoder: vocabulary file .*vocab.txt is not UTF-8 "
         r"text \(byte 9 is b'\\xe9'\)"),
    Case('data_vocab_file_is_a_directory',
         lambda tmp_path: data.Tokenize(vocab_type='subword',
                                        vocab_dir=str(tmp_path.parent),
                                        vocab_file=tmp_path.name),
         IsADirectoryError, r"Tokenize: vocabulary file .* for "
         r"vocab_type='subword' is a directory; vocab_file names a file"),
    Case('data_vocab_missing_file',
         lambda tmp_path: data.vocab_size(vocab_type='bert',
                                          vocab_dir=str(tmp_path),
                                          vocab_file='nope.txt'),
         FileNotFoundError, r"vocab_size: vocabulary file .*nope.txt for "
         r"vocab_type='bert' does not exist"),
    Case('data_bert_encoder_missing_file',
         lambda tmp_path: text_encoder.BertEncoder(str(tmp_path / 'v.txt')),
         FileNotFoundError, r'BertEncoder: vocabulary file .*v.txt does not '
         r'exist; give the path of a BERT vocab.txt'),
    Case('data_subword_encoder_given_a_directory',
         lambda tmp_path: text_encoder.SubwordTextEncoder(str(tmp_path)),
         ValueError, r'SubwordTextEncoder: .* is a directory; give the path '
         r'of a .subword vocabulary file'),
    Case('data_detokenize_unknown_vocab_type',
         lambda: data.detokenize([1, 2], vocab_type='wordpiece'), ValueError,
         r'detokenize: vocab_type must be "subword", "char", .* but got '
         r'wordpiece'),
    Case('data_tokenize_a_number_field',
         _first(lambda: data.Tokenize(keys=[1], vocab_type='char'),
                lambda: iter([('hi', np.ones(3))])), ValueError,
         r'Tokenize: a field chosen for tokenizing holds ndarray .*only text '
         r'\(str or bytes\) can be tokenized. Choose the text fields with '
         r'keys='),
    Case('data_tokenize_a_number_field_dataset',
         _first(lambda: data.Tokenize(keys=[1], vocab_type='char'),
                lambda: tf.data.Dataset.from_tensors(('hi', 3.0))),
         ValueError, r"Tokenize: field 1 of the dataset has dtype float32; "
         r"only tf.string fields can be tokenized. Choose the text fields "
         r"with keys="),
    Case('data_tokenize_invalid_utf8',
         _first(lambda: data.Tokenize(vocab_type='char'),
                lambda: iter([(b'caf\xe9',)])), ValueError,
         r'Tokenize: a text is not valid UTF-8, so it has no characters to '
         r'tokenize'),
    Case('data_tokenize_invalid_utf8_dataset',
         _first(lambda: data.Tokenize(vocab_type='char'),
                lambda: tf.data.Dataset.from_tensors((b'caf\xe9',))),
         tf.errors.InvalidArgumentError, r'Tokenize: a text is not valid '
         r'UTF-8, so it has no characters to tokenize'),
    # -- Ids outside a vocabulary ---------------------------------------------
    Case('data_char_detokenize_id_beyond_bytes',
         lambda: data.detokenize([104, 300], vocab_type='char'), ValueError,
         r'ByteTextEncoder: id 300 is not a byte id: expected ids in '
         r'\[0, 256\)'),
    Case('data_char_detokenize_below_reserved_ids',
         lambda: data.detokenize([1], vocab_type='char', n_reserved_ids=2),
         ValueError, r'ByteTextEncoder: id -1 is not a byte id'),
    Case('data_sentencepiece_detokenize_negative_id',
         lambda: data.detokenize([3], vocab_type='sentencepiece',
                                 vocab_dir=str(_fixtures.path('trax_vocab')),
                                 vocab_file='sentencepiece.model',
                                 n_reserved_ids=5), ValueError,
         r'SentencePieceVocabulary: cannot decode id -2: piece ids are >= 0'),
    Case('data_bert_decode_id_beyond_vocab', _bert_decode([2, 7]),
         ValueError, r'BertEncoder.decode: id 7 is not in the vocabulary of '
         r'3 tokens \(ids 0..2\)'),
    Case('data_bert_vocab_without_unk', _bert_encode_without_unk, ValueError,
         r"BertEncoder: a word of 'hello stranger' is not in the vocabulary "
         r"and the vocabulary has no '\[UNK\]' token"),
]


@pytest.mark.parametrize('case', _case.params(CASES))
def test_bad_input_raises_clear_error(case, tmp_path):
  _case.check(case, tmp_path)
