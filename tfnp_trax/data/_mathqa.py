"""MathQA helpers of `trax.data.tf_inputs`: parse and run solutions.

MathQA (arXiv:1905.13319) writes a solution as operations such as
`divide(n0,const_100)|multiply(#0,n1)`, where `nK` is the K-th number of
the problem text, `#K` the K-th intermediate result and `const_X_Y` the
constant X.Y.
"""

import math
import re

from tfnp_trax.data import _mathqa_ops as _ops

__all__ = ['compute_nums', 'compute_ops', 'compute_program', 'compute_result',
           'convert_float_to_mathqa', 'convert_to_subtract',
           'execute_mathqa_dsl_program', 'execute_mathqa_program', 'is_number',
           'process_single_mathqa_example']

# A number as MathQA texts write it: sign, thousands commas, decimals and
# exponent, e.g. '-4,000.5e3'.
NUMBER_RE = re.compile(r'[-+]?[.]?[\d]+(?:,\d\d\d)*[\.]?\d*(?:[eE][-+]?\d+)?')


def compute_nums(question):
  """The numbers in `question`, as floats, thousands commas removed."""
  return [float(n.replace(',', '')) for n in NUMBER_RE.findall(question)]


def compute_ops(linear_formula):
  """Splits a `|`-separated formula, dropping a trailing empty operation."""
  ops = linear_formula.split('|')
  if not ops[-1]:
    ops = ops[:-1]
  return ops


def convert_float_to_mathqa(number):
  """`3.13` -> `'const_3_13'`, `2.0` -> `'const_2'` (MathQA constants)."""
  floor = int(float(number))
  if floor == number:
    return f'const_{floor}'
  return f'const_{floor}_{str(number)[len(str(floor)) + 1:]}'


def convert_to_subtract(const_string):
  """Wraps a constant as the operation `subtract(<const>,const_0)`."""
  return f'subtract({const_string},const_0)'


def is_number(s):
  """Whether `float(s)` succeeds."""
  try:
    float(s)
    return True
  except (TypeError, ValueError):
    return False


def _parse_op(op):
  """`'divide(n0,#1)'` -> `('divide', ['n0', '#1'])`."""
  name = op.split('(')[0]
  args = op[op.find('(') + 1:op.find(')')].split(',')
  return name, args


def _first_int(arg):
  return int(NUMBER_RE.findall(arg)[0])


def _constant(arg):
  """Value of `const_pi`, `const_deg_to_rad`, `const_100`, `const_3_6`..."""
  if arg == 'const_pi':
    return math.pi
  if arg == 'const_deg_to_rad':
    return math.pi / 180
  digits = NUMBER_RE.findall(arg)
  if len(digits) == 1:
    return float(digits[0])
  return float(digits[0]) + float('0.' + digits[1])


def compute_result(list_op, list_num):
  """Runs MathQA operations; returns every intermediate result (last: answer).

  `#k` arguments read result k, `nk` read `list_num[k]`, `const_*` are
  constants; other arguments are dropped, as in Trax.
  """
  results = []
  for op in list_op:
    name, args = _parse_op(op)
    values = []
    for arg in args:
      if arg[0] == '#':
        values.append(results[_first_int(arg)])
      elif arg[0] == 'n':
        values.append(list_num[_first_int(arg)])
      elif arg[0] == 'c':
        values.append(_constant(arg))
    results.append(_ops.compute_single_result(name, values))
  return results


def compute_program(list_op):
  """MathQA operations as Python lines `t<k> = <expression>`."""
  lines = []
  for k, op in enumerate(list_op):
    name, args = _parse_op(op)
    values = []
    for arg in args:
      if arg[0] == '#':
        values.append(f't{_first_int(arg)}')
      elif arg[0] == 'n':
        values.append(arg)
      elif arg[0] == 'c':
        values.append(str(_constant(arg)))
    lines.append(f't{k} = {_ops.single_op_to_python_command(name, values)}')
  return lines


def process_single_mathqa_example(example):
  """Executes one MathQA example to check its declared answer.

  Args:
    example: a MathQA dict with `Problem`, `options` (`'a ) 5 , b ) ...'`),
      `correct` (a letter) and `linear_formula`.

  Returns:
    `(answer_num, python_result, python_program, list_op, list_num)`: the
    declared answer as a float (fractions `x / y` divided out), all
    intermediate results, the Python program, the operations and the
    problem's numbers; None when the correct option is not a number.
  """
  list_num = compute_nums(example['Problem'])
  list_op = compute_ops(example['linear_formula'])
  answers = example['options']
  start = answers.find(f"{example['correct']} )")
  found = NUMBER_RE.findall(answers[start:])
  if not found:
    return None
  answer_num = float(found[0].replace(',', ''))
  end = start + len(str(answer_num)) + 3
  if end < len(answers) and answers[end] == '/':
    answer_num /= float(NUMBER_RE.findall(answers[end:])[0].replace(',', ''))
  return (answer_num, compute_result(list_op, list_num),
          compute_program(list_op), list_op, list_num)


def execute_mathqa_dsl_program(problem, dsl_code):
  """Value of the first line of `dsl_code` on the `n0 = ..` numbers.

  Returns None when the operations fail.
  """
  # 'n0 = 2.0 n1 = 3.0' yields [0, 2, 1, 3]: keep every second number.
  nums = compute_nums(problem[problem.find('n0'):])
  if len(nums) % 2:
    raise ValueError('execute_mathqa_dsl_program: expected "nK = value" '
                     f'pairs after n0 in the problem, got numbers {nums}.')
  try:
    return compute_result(compute_ops(dsl_code[0]), nums[1::2])[-1]
  except Exception:  # pylint: disable=broad-except
    return None


def execute_mathqa_program(problem, program):
  """Runs Python `program` lines and returns its float `answer`, or None.

  The program is executed as is (like Trax, with `math` and `scipy` in
  scope): run only programs you trust.
  """
  del problem
  namespace = {}
  try:
    exec('\n'.join(program), _exec_globals(), namespace)  # pylint: disable=exec-used
  except Exception:  # pylint: disable=broad-except
    return None
  answer = namespace.get('answer')
  return float(answer) if is_number(answer) else None


def _exec_globals():
  import numpy as np  # pylint: disable=g-import-not-at-top
  import scipy  # pylint: disable=g-import-not-at-top
  import scipy.special  # pylint: disable=g-import-not-at-top,unused-import
  return {'math': math, 'np': np, 'scipy': scipy}
