"""Records token ids and preprocessor outputs from real Trax 1.4.1.

Run from the repository root with the side venv that has Trax installed:

  JAX_PLATFORMS=cpu /work/trax_venv/bin/python \
      tests/testdata/trax_data/make_trax_tokens.py

It writes `tokens.json`, `preprocessors.json` and `mathqa.json` beside this
file. The
vocabulary files are read from `tests/testdata/trax_vocab/` (Trax's own test
vocabularies). Nothing here runs in CI.
"""

import json
import os
import random
import sys
import tempfile

import numpy as np
import tensorflow as tf

from trax.data import text_encoder
from trax.data import tf_inputs

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB_DIR = os.path.join(HERE, '..', 'trax_vocab')

SENTENCES = [
    'Hello world.',
    "Dude - that's so cool.",
    'The quick brown fox jumps over the lazy dog!',
    'snake_case and back\\slash; 3.14 apples',
    '  two  spaces and trailing space ',
    'Ünïcödé naïve café, 東京 and emoji \U0001F600.',
    'tabs\tand\nnewlines',
    'UPPER lower MiXeD 1234567',
    '',
    'x',
]


def _ids(vocab_type, vocab_file, sentence, n_reserved_ids=0):
  out = next(tf_inputs.tokenize(iter([sentence]), vocab_type=vocab_type,
                                vocab_file=vocab_file, vocab_dir=VOCAB_DIR,
                                n_reserved_ids=n_reserved_ids))
  return [int(i) for i in np.asarray(out).reshape(-1)]


def _record_vocab(vocab_type, vocab_file, n_reserved_ids=0):
  cases = []
  for s in SENTENCES:
    ids = _ids(vocab_type, vocab_file, s, n_reserved_ids)
    case = {'text': s, 'ids': ids}
    try:
      case['detokenized'] = tf_inputs.detokenize(
          ids, vocab_type=vocab_type, vocab_file=vocab_file,
          vocab_dir=VOCAB_DIR, n_reserved_ids=n_reserved_ids)
    except Exception as e:  # pylint: disable=broad-except
      case['detokenize_error'] = type(e).__name__
    cases.append(case)
  size = tf_inputs.vocab_size(vocab_type=vocab_type, vocab_file=vocab_file,
                              vocab_dir=VOCAB_DIR,
                              n_reserved_ids=n_reserved_ids)
  return {'vocab_type': vocab_type, 'vocab_file': vocab_file,
          'n_reserved_ids': n_reserved_ids, 'vocab_size': size,
          'cases': cases}


def _record_sentencepiece():
  """Trax's own tf.data sentencepiece path: c4_preprocess(tokenization='spc').

  Trax's `Tokenize(vocab_type='sentencepiece')` needs the `t5` package, which
  does not install beside Trax 1.4.1; its `c4_preprocess` tokenizes with the
  same model through tensorflow_text, which is installed.
  """
  spm_path = os.path.join(VOCAB_DIR, 'sentencepiece.model')
  ds = tf.data.Dataset.from_tensor_slices(
      {'text': tf.constant(SENTENCES)}).map(lambda x: (x, x['text']))
  ds = tf_inputs.c4_preprocess(ds, True, tokenization='spc',
                               spm_path=spm_path)
  cases = []
  for s, (_, targets) in zip(SENTENCES, ds.as_numpy_iterator()):
    cases.append({'text': s, 'ids': [int(i) for i in targets]})
  return {'vocab_type': 'sentencepiece', 'vocab_file': 'sentencepiece.model',
          'source': 'trax/data/tf_inputs.py c4_preprocess(tokenization=spc)',
          'cases': cases}


def _record_structures():
  """`tokenize` on tuples and dicts with `keys` (which fields get encoded)."""
  kw = dict(vocab_type='char', vocab_dir=VOCAB_DIR)
  tup = next(tf_inputs.tokenize(iter([('ab', 'cd', 7)]), keys=[0, 1], **kw))
  dic = next(tf_inputs.tokenize(iter([{'a': 'xy', 'b': 'z'}]), keys=['a'],
                                **kw))
  return {'tuple_keys_0_1': [np.asarray(t).tolist() for t in tup],
          'dict_keys_a': {'a': np.asarray(dic['a']).tolist(), 'b': dic['b']}}


def _record_subword_build():
  corpus = ['the cat sat on the mat', 'the dog sat on the log',
            'cats and dogs, mats and logs!'] * 3
  enc = text_encoder.SubwordTextEncoder.build_from_generator(
      iter(corpus), target_size=40)
  counts = {'low': 5, 'lower': 2, 'newest': 6, 'widest': 3}
  enc2 = text_encoder.SubwordTextEncoder()
  enc2.build_from_token_counts(counts, min_count=2, num_iterations=3)
  return {'corpus': corpus, 'target_size': 40,
          'subtokens': list(enc.all_subtoken_strings),
          'encoded': enc.encode('the cats sat on logs'),
          'token_counts': counts, 'min_count': 2, 'num_iterations': 3,
          'subtokens_from_counts': list(enc2.all_subtoken_strings)}


def _ds(rows):
  return tf.data.Dataset.from_generator(
      lambda: iter(rows),
      output_signature=({'inputs': tf.TensorSpec([None], tf.int64)},
                        tf.TensorSpec([None], tf.int64)))


def _tolist(x):
  if isinstance(x, dict):
    return {k: _tolist(v) for k, v in sorted(x.items())}
  if isinstance(x, (tuple, list)):
    return [_tolist(v) for v in x]
  return np.asarray(x).tolist()


def _record_preprocessors():
  rows = [({'inputs': np.array([3, 4, 5])}, np.array([6, 7])),
          ({'inputs': np.array([8])}, np.array([9, 10, 11, 12]))]
  out = {}
  for name, fn, kw in [
      ('concat_preprocess', tf_inputs.concat_preprocess, {'pad_symbol': 2}),
      ('wmt_concat_preprocess', tf_inputs.wmt_concat_preprocess,
       {'max_length': 3}),
      ('wmt_preprocess', tf_inputs.wmt_preprocess, {'max_length': 3}),
      ('lm1b_preprocess', tf_inputs.lm1b_preprocess,
       {'max_target_length': 3}),
  ]:
    ds = fn(_ds(rows), True, **kw)
    out[name] = {'kwargs': kw, 'outputs': [_tolist(e)
                                           for e in ds.as_numpy_iterator()]}
  lm = tf.data.Dataset.from_tensors({'inputs': tf.constant([3, 4]),
                                     'targets': tf.constant([5, 6, 7])})
  out['lm_token_preprocessing'] = {'outputs': [
      _tolist(e) for e in
      tf_inputs.lm_token_preprocessing(lm, True).as_numpy_iterator()]}
  img = np.arange(2 * 2 * 3, dtype=np.uint8).reshape(2, 2, 3)
  ds = tf.data.Dataset.from_tensors(({'image': img}, np.int64(4)))
  out['cifar10_augmentation_flatten_preprocess_eval'] = {'outputs': [
      _tolist(e) for e in tf_inputs.cifar10_augmentation_flatten_preprocess(
          ds, False).as_numpy_iterator()]}
  return out


MATHQA_OPS = [
    'add', 'choose', 'circle_arc', 'circle_area', 'circle_sector_area',
    'circumface', 'combined_work', 'cosine', 'count_interval',
    'cube_edge_by_volume', 'diagonal', 'divide', 'factorial', 'find_work',
    'floor', 'from_percent', 'gain_percent', 'gcd', 'inverse', 'lcm', 'log',
    'loss_percent', 'max', 'multiply', 'negate', 'negate_percent',
    'negate_prob', 'original_price_before_gain', 'original_price_before_loss',
    'p_after_gain', 'percent', 'permutation', 'power', 'price_after_gain',
    'price_after_loss', 'quadrilateral_area', 'rectangle_area',
    'rectangle_perimeter', 'reminder', 'rhombus_area', 'rhombus_perimeter',
    'semi_circle_perimiter', 'sine', 'speed', 'speed_in_still_water',
    'speed_ratio_steel_to_stream', 'sqrt', 'square_area',
    'square_edge_by_area', 'square_edge_by_perimeter', 'square_perimeter',
    'stream_speed', 'subtract', 'surface_cube', 'surface_rectangular_prism',
    'surface_sphere', 'trapezium_area', 'triangle_area',
    'triangle_area_three_edges', 'triangle_perimeter', 'union_prob',
    'volume_cone', 'volume_cube', 'volume_cylinder',
    'volume_rectangular_prism', 'volume_sphere', 'not_an_op',
]

MATHQA = [
    {'Problem': 'what is 20 % of 50 ?', 'Rationale': '20 / 100 * 50 = 10',
     'options': 'a ) 5 , b ) 10 , c ) 15 , d ) 20 , e ) 25', 'correct': 'b',
     'linear_formula': 'divide(n0,const_100)|multiply(#0,n1)|',
     'category': 'gain'},
    {'Problem': 'a pipe fills a tank in 2 hours , another in 3 hours . '
                'how long together ?',
     'Rationale': '1 / ( 1 / 2 + 1 / 3 ) = 6 / 5',
     'options': 'a ) 6 / 5 , b ) 1 / 2 , c ) 2 , d ) 3 , e ) 5',
     'correct': 'a',
     'linear_formula': 'inverse(n0)|inverse(n1)|add(#0,#1)|inverse(#2)|',
     'category': 'physics'},
    {'Problem': 'what is 3 + 4 ?', 'Rationale': 'wrong on purpose',
     'options': 'a ) 1 , b ) 2 , c ) 15', 'correct': 'c',
     'linear_formula': 'add(n0,n1)', 'category': 'general'},
    {'Problem': 'pick 1 of 2', 'Rationale': 'none',
     'options': 'a ) none of these , b ) 2', 'correct': 'a',
     'linear_formula': 'add(n0,n1)', 'category': 'other'},
    {'Problem': 'a car goes 72 km in 2 hours . its speed in m / s ?',
     'Rationale': '36 km / h = 10 m / s',
     'options': 'a ) 10 , b ) 20 , c ) 4,000 , d ) 1 , e ) 2',
     'correct': 'a',
     'linear_formula': 'divide(n0,n1)|multiply(#0,const_1000)|'
                       'divide(#1,const_3600)|multiply(#2,const_0_5)|'
                       'multiply(#3,const_2)|',
     'category': 'physics'},
]

AQUA = [
    {'question': 'two plus three ?', 'options': ['A)5', 'B)6'],
     'rationale': 'add them\n2 + 3 = 5\nanswer A', 'correct': 'A'},
    {'question': 'ten minus one ?', 'options': ['A)8', 'B)9'],
     'rationale': '10 - 1 = 9', 'correct': 'B'},
]

ANNOTATED_DROP = [
    {'passage': 'In 1990 there were 1,200 people ; in 2000 , 1,500 .',
     'question': 'How many more in 2000 ?', 'answer': 300,
     'calculation': 'subtract(n3,n1)'},
    {'passage': 'In 1990 there were 1,200 people ; in 2000 , 1,500 .',
     'question': 'How many in both ?', 'answer': 2700,
     'calculation': 'add(n1,n3)'},
    {'input': 'drop annotated question: ready made n0 = 2', 'answer': 2,
     'calculation': 'add(n0,const_0)'},
]


def _call(fn, *args):
  try:
    value = fn(*args)
  except Exception as e:  # pylint: disable=broad-except
    return {'error': type(e).__name__}
  if isinstance(value, (np.floating, np.integer)):
    value = value.item()
  return {'value': value}


def _jsonable(x):
  if isinstance(x, np.ndarray):
    return {'array': x.tolist(), 'dtype': str(x.dtype)}
  if isinstance(x, (tuple, list)):
    return [_jsonable(v) for v in x]
  if isinstance(x, (np.floating, np.integer)):
    return x.item()
  return x


def _take(gen_fn, n):
  it = gen_fn()
  out = []
  for _ in range(n):
    try:
      out.append(_jsonable(next(it)))
    except Exception as e:  # pylint: disable=broad-except
      out.append({'error': type(e).__name__})
      break
  return out


def _record_mathqa():
  """MathQA helpers and the MathQA / AQuA / annotated-DROP streams."""
  out = {'ops': {}}
  for op in MATHQA_OPS:
    out['ops'][op] = {
        'result': _call(tf_inputs.compute_single_result, op, [3.0, 2.0, 4.0]),
        'command': _call(tf_inputs.single_op_to_python_command, op,
                         ['n0', 't1', '2.5'])}
  out['divide_by_zero'] = {
      'result': tf_inputs.compute_single_result('divide', [1.0, 0]),
      'inverse': tf_inputs.compute_single_result('inverse', [0]),
      'command': tf_inputs.single_op_to_python_command('divide', ['n0', 0])}
  out['examples'] = MATHQA
  out['processed'] = [_jsonable(tf_inputs.process_single_mathqa_example(e))
                      for e in MATHQA]
  out['dsl'] = tf_inputs.execute_mathqa_dsl_program(
      'what is it ? n0 = 2.0 n1 = 3.5', ['multiply(n0,n1)|add(#0,const_1)'])
  out['program'] = tf_inputs.execute_mathqa_program(
      None, ['t0 = 2 + 3', 'answer = t0 * 2'])
  out['program_error'] = tf_inputs.execute_mathqa_program(None, ['1 / 0'])
  tmp = tempfile.mkdtemp()
  for name in ('train', 'dev', 'test', 'challenge_test'):
    with open(os.path.join(tmp, name + '.json'), 'w') as f:
      json.dump(MATHQA, f)
  modes = {
      'default': {}, 'no_partial': {'partial_results': False},
      'dev': {'train': False}, 'qed': {'qed': True},
      'python_code': {'cumulative': False, 'python_code': True},
      'python_full_dict': {'cumulative': False, 'python_code': True,
                           'full_dict': True},
      'nlp_rationale': {'cumulative': False, 'nlp_rationale': True},
      'correct_answer': {'cumulative': False, 'correct_answer': True},
      'correct_answer_letter': {'cumulative': False, 'correct_answer': True,
                                'answer_in_mathqa_format': False},
      'given_reasoning': {'cumulative': False,
                          'correct_answer_given_reasoning': True},
      'category': {'cumulative': False, 'category': True},
      'order_prediction': {'cumulative': False, 'order_prediction': True},
      'order_prediction_full': {'cumulative': False, 'order_prediction': True,
                                'reduced_operation_name': False},
      'full_calculation': {'cumulative': False},
  }
  out['mathqa_inputs'] = {}
  for mode, kw in modes.items():
    np.random.seed(0)
    random.seed(0)
    out['mathqa_inputs'][mode] = {'kwargs': kw, 'outputs': _take(
        tf_inputs.CreateMathQAInputs(dataset_path=tmp, **kw), 12)}
  for name in ('train', 'dev'):
    with open(os.path.join(tmp, name + '.json'), 'w') as f:
      f.write('\n'.join(json.dumps(e) for e in AQUA))
  out['aqua'] = AQUA
  out['aqua_inputs'] = {}
  for mode in ('cumulative', 'rationale', 'correct_answer',
               'correct_answer_given_reasoning', 'order_prediction', 'none'):
    kw = {} if mode == 'none' else {mode: True}
    np.random.seed(0)
    random.seed(0)
    out['aqua_inputs'][mode] = {'kwargs': kw, 'outputs': _take(
        tf_inputs.CreateAquaInputs(dataset_path=tmp, **kw), 6)}
  with open(os.path.join(tmp, 'train_annotated.json'), 'w') as f:
    f.write('\n'.join(json.dumps(e) for e in ANNOTATED_DROP))
  out['annotated_drop'] = ANNOTATED_DROP
  out['annotated_drop_inputs'] = {}
  for mode, kw in {'default': {}, 'unique': {'unique': True},
                   'total_1': {'total_number_of_samples': 1}}.items():
    out['annotated_drop_inputs'][mode] = {'kwargs': kw, 'outputs': _take(
        tf_inputs.CreateAnnotatedDropInputs(dataset_path=tmp, **kw), 5)}
  return out


def main():
  tokens = {
      'trax_version': '1.4.1',
      'sentences': SENTENCES,
      'subword': _record_vocab('subword', 'en_8k.subword'),
      'subword_reserved': _record_vocab('subword', 'en_8k.subword', 3),
      'char': _record_vocab('char', None),
      'char_reserved': _record_vocab('char', None, 2),
      'bert': _record_vocab('bert', 'bert_uncased_vocab.txt'),
      'bert_lowercase': _record_vocab('bert-lowercase',
                                      'bert_uncased_vocab.txt'),
      'sentencepiece': _record_sentencepiece(),
      'structures': _record_structures(),
      'subword_build': _record_subword_build(),
  }
  with open(os.path.join(HERE, 'tokens.json'), 'w') as f:
    json.dump(tokens, f, indent=1, ensure_ascii=False)
  with open(os.path.join(HERE, 'preprocessors.json'), 'w') as f:
    json.dump(_record_preprocessors(), f, indent=1)
  with open(os.path.join(HERE, 'mathqa.json'), 'w') as f:
    json.dump(_record_mathqa(), f, indent=1)
  print('wrote fixtures', file=sys.stderr)


if __name__ == '__main__':
  main()
