"""Text streams from local MathQA, AQuA and annotated DROP json files.

Each `Create*Inputs` returns a function yielding endless
`(input_text, target_text, weights)` examples (weights: ones, one per
target character), read from json files in a local directory.
"""

import json
import math
import os
import random

from absl import logging
import numpy as np

from tfnp_trax.data import _mathqa

__all__ = ['CreateAnnotatedDropInputs', 'CreateAquaInputs',
           'CreateMathQAInputs']


def _example(inputs, targets, dtype=None):
  return inputs, targets, np.array([1] * len(targets), dtype=dtype)


def _read_json(path):
  with open(path, encoding='utf-8') as f:
    return json.load(f)


def _read_json_lines(path):
  with open(path, encoding='utf-8') as f:
    return [json.loads(line) for line in f]


def _mathqa_python_target(list_num, program):
  """The Python program target: imports, numbers, steps, `answer = ...`."""
  text = ''
  if any('math' in line for line in program):
    text += 'import math\n'
  if any('scipy' in line for line in program):
    text += 'import scipy\n'
  text += ''.join(f'n{i} = {n}\n' for i, n in enumerate(list_num))
  text += '\n'.join(program[:-1])
  return text + f"\nanswer ={program[-1].split('=')[1]}"


def CreateMathQAInputs(dataset_path=None, train=True, test=False,  # pylint: disable=invalid-name
                       challenge=False, tolerance=0.01, cumulative=True,
                       python_code=False, full_dict=False,
                       partial_results=True, nlp_rationale=False,
                       correct_answer=False, answer_in_mathqa_format=True,
                       correct_answer_given_reasoning=False, category=False,
                       order_prediction=False, reduced_operation_name=True,
                       qed=False):
  """MathQA examples whose program reproduces the declared answer.

  Reads `train.json`, `test.json`, `challenge_test.json` or `dev.json`
  from the local directory `dataset_path`. Examples whose executed
  operations miss the declared answer by more than `tolerance` (relative)
  are skipped. The first true flag among `cumulative`, `python_code`,
  `nlp_rationale`, `correct_answer`, `correct_answer_given_reasoning`,
  `category` and `order_prediction` picks the task; with none, the target
  is the whole linear formula. See Trax's `CreateMathQAInputs` for each
  task's text format, which this follows exactly.

  Returns:
    A function `gen(generator=None)` returning the endless example iterator.
  """
  name = ('train' if train else 'test' if test else
          'challenge_test' if challenge else 'dev')
  dataset = _read_json(os.path.join(dataset_path, f'{name}.json'))

  def examples(example):
    result = _mathqa.process_single_mathqa_example(example)
    if not result:
      return
    answer_num, python_result, program, list_op, list_num = result
    if not answer_num or not python_result[-1]:
      return
    if qed:
      list_op.append('qed')
    if not math.isclose(answer_num, python_result[-1], rel_tol=tolerance):
      return
    prefix = example['Problem'] + ''.join(
        f' n{i} = {n}' for i, n in enumerate(list_num))
    if cumulative:
      for i, op in enumerate(list_op):
        yield _example(prefix, op)
        prefix += ' ' + op
        if partial_results:
          prefix += f' #{i} = {answer_num}'
    elif python_code:
      target = _mathqa_python_target(list_num, program)
      namespace = {}
      exec(target, _mathqa._exec_globals(), namespace)  # pylint: disable=exec-used,protected-access
      if math.isclose(answer_num, namespace['answer'], rel_tol=tolerance):
        if full_dict:
          yield ('# ' + prefix, target, example['linear_formula'],
                 example['Rationale'])
        else:
          yield _example('# ' + prefix, target)
    elif nlp_rationale:
      yield _example('infer full rationale: ' + prefix, example['Rationale'])
    elif correct_answer:
      target = (_mathqa.convert_to_subtract(
          _mathqa.convert_float_to_mathqa(str(answer_num)))
                if answer_in_mathqa_format else example['correct'])
      yield _example(f"infer correct answer: {prefix} {example['options']}",
                     target)
    elif correct_answer_given_reasoning:
      yield _example(
          f"infer correct answer given reasoning: {prefix} "
          f"{' '.join(list_op)} {example['options']}", example['correct'])
    elif category:
      yield _example('infer category: ' + prefix, example['category'])
    elif order_prediction:
      target = 'ordered'
      if np.random.uniform() < 0.5 and len(list_op) >= 2:
        i, j = random.sample(range(len(list_op)), 2)
        list_op[i], list_op[j] = list_op[j], list_op[i]
        target = 'not_ordered'
      if reduced_operation_name:
        list_op = [op.split('(')[0] for op in list_op]
      yield _example(f"order prediction: {prefix} {' '.join(list_op)}",
                     target)
    else:
      yield _example('infer full calculation: ' + prefix,
                     example['linear_formula'])

  def mathqa_yield_examples(generator=None):
    del generator
    while True:
      for example in dataset:
        yield from examples(example)

  return mathqa_yield_examples


def CreateAquaInputs(dataset_path=None, train=True, cumulative=False,  # pylint: disable=invalid-name
                     rationale=False, correct_answer=False,
                     correct_answer_given_reasoning=False,
                     partial_reasoning=True, order_prediction=False):
  """AQuA-RAT examples from the json-lines `train.json` / `dev.json`.

  The first true flag among `cumulative`, `rationale`, `correct_answer`,
  `correct_answer_given_reasoning` and `order_prediction` picks the task.

  Raises:
    ValueError: (when iterated) if no task flag is set.
  """
  dataset = _read_json_lines(
      os.path.join(dataset_path, 'train.json' if train else 'dev.json'))

  def examples(example):
    prefix = example['question']
    steps = example['rationale'].split('\n')
    options = ' '.join(example['options'])
    if cumulative:
      for step in steps:
        yield _example('infer cumulative rationale: ' + prefix, step)
        prefix += ' ' + step
    elif rationale:
      yield _example('infer full rationale: ' + prefix, example['rationale'])
    elif correct_answer:
      yield _example(f'infer correct answer: {prefix} {options}',
                     example['correct'])
    elif correct_answer_given_reasoning:
      if partial_reasoning:
        # Trax draws a random prefix of the rationale but then uses the
        # whole rationale; the draw is kept so random streams stay aligned.
        np.random.randint(0, len(steps))
      yield _example(f'infer correct answer given reasoning: {prefix} '
                     f"{example['rationale']} {options}", example['correct'])
    elif order_prediction:
      target = 'ordered'
      if np.random.uniform() < 0.5 and len(steps) >= 2:
        i, j = random.sample(range(len(steps)), 2)
        steps[i], steps[j] = steps[j], steps[i]
        target = 'not_ordered'
      yield _example('order prediction: ' + prefix + ' ' + '\n'.join(steps),
                     target)
    else:
      raise ValueError('CreateAquaInputs: one of the boolean parameters of '
                       'the Aqua generator must be set to True.')

  def aqua_yield_examples(generator=None):
    del generator
    while True:
      for example in dataset:
        yield from examples(example)

  return aqua_yield_examples


def CreateAnnotatedDropInputs(dataset_path=None, train=True, single_file=True,  # pylint: disable=invalid-name
                              unique=False, total_number_of_samples=None,
                              percentile=1.):
  """DROP questions annotated with a MathQA-style `calculation`.

  Reads json lines from `train_annotated.json` / `dev_annotated.json` (or,
  with `single_file=False`, every json file of the `dataset_path`
  directory), reloading them after each pass.

  Args:
    dataset_path: local directory (or file directory) of the data.
    train: training data, else dev.
    single_file: read one file (else all json files of the directory).
    unique: at most one question per passage.
    total_number_of_samples: reload after this many distinct examples.
    percentile: fraction of the loaded examples to use.
  """
  if not train:
    dataset_path = os.path.join(dataset_path, 'dev_annotated.json')
  elif single_file:
    dataset_path = os.path.join(dataset_path, 'train_annotated.json')

  def load_dataset():
    if single_file:
      rows = _read_json_lines(dataset_path)
    else:
      rows = []
      for filename in sorted(os.listdir(dataset_path)):
        if 'json' in filename:
          rows += _read_json_lines(os.path.join(dataset_path, filename))
    logging.info('CreateAnnotatedDropInputs: %d examples', len(rows))
    return rows[:int(len(rows) * percentile)]

  def drop_annotated_yield_examples(generator=None):
    del generator
    while True:
      passages, seen = set(), set()
      for example in load_dataset():
        if total_number_of_samples and len(seen) >= total_number_of_samples:
          break
        if 'input' in example:
          question = example['input']
          question = question[question.find(':') + 2:]  # Drop the prompt.
        else:
          if unique and example['passage'] in passages:
            continue
          passages.add(example['passage'])
          question = example['passage'] + ' ' + example['question']
          nums = [float(n.replace(',', '').rstrip('.').lstrip('.'))
                  for n in _mathqa.NUMBER_RE.findall(question)]
          question += ''.join(f' n{i} = {n}' for i, n in enumerate(nums))
        inputs = 'drop annotated question: ' + question
        seen.add((inputs, example['calculation']))
        yield _example(inputs, example['calculation'], np.int32)

  return drop_annotated_yield_examples
