"""MathQA operations: their values, and the Python code Trax writes for them.

`compute_single_result` evaluates one operation of the MathQA language
(arXiv:1905.13319) as Trax 1.4.1 does, with its guards (safe division,
factorials capped at 15!, powers capped at 5, ...). `single_op_to_python_command`
returns the Python expression Trax emits for the same operation, comments
included, since those strings are training targets. In two operations
(`speed_in_still_water`, `stream_speed`) Trax's code text lacks the
parentheses its value has; both are kept as Trax has them.
"""

import math

import scipy.special

__all__ = ['OPERATIONS', 'compute_single_result', 'single_op_to_python_command']


def _min_inv(x):
  return min(x, 1 / x)


def _heron(a, b, c):
  s = (a + b + c) / 2
  return math.sqrt(max(0, s * (s - a) * (s - b) * (s - c)))


def _permutation(a, b):
  n, m = min(a, b), max(a, b)
  return math.factorial(int(m)) / math.factorial(int(m - n))


def _find_work(a, b):
  x, y = _min_inv(a), _min_inv(b)
  return 1 / (max(x, y) - min(x, y))


# name -> (value of the argument list `v`, Python code template).
_OPS = {
    'add': (lambda v: v[0] + v[1], '{0} + {1}'),
    'circle_arc': (lambda v: v[0] / 360 * math.pi * 2 * v[1],
                   '{0} / 360 * math.pi * 2 * {1}'),
    'circle_area': (lambda v: math.pi * v[0]**2, 'math.pi * {0}**2'),
    'circle_sector_area': (lambda v: v[1] / 360 * math.pi * (v[0]**2),
                           '{1} / 360 * math.pi * ({0}**2)'),
    'circumface': (lambda v: 2 * math.pi * v[0], '2 * math.pi * {0}'),
    'choose': (lambda v: scipy.special.comb(v[0], v[1]),
               'scipy.special.comb({0}, {1})'),
    'cosine': (lambda v: math.cos(v[0]), 'math.cos({0})'),
    'cube_edge_by_volume': (lambda v: v[0]**(1 / 3), '{0}**(1 / 3)'),
    'combined_work': (lambda v: 1 / (_min_inv(v[0]) + _min_inv(v[1])),
                      '1 / (min({0}, 1 / {0}) + min({1}, 1 / {1}))'),
    'count_interval': (lambda v: v[0] - v[1] + 1, '{0} - {1} + 1'),
    'diagonal': (lambda v: math.sqrt(v[0]**2 + v[1]**2),
                 'math.sqrt({0}**2 + {1}**2)'),
    'factorial': (lambda v: math.factorial(min(15, int(v[0]))),
                  'math.factorial(min(15, int({0})))'),
    'floor': (lambda v: math.floor(v[0]), 'math.floor({0})'),
    'find_work': (lambda v: _find_work(v[0], v[1]),
                  '1 / (max(min({0}, 1 / {0}), min({1}, 1 / {1})) - '
                  'min(min({0}, 1 / {0}), min({1}, 1 / {1})))'),
    'from_percent': (lambda v: v[0] / 100, '{0} / 100'),
    'gain_percent': (lambda v: 100 + v[0], '100 + {0}'),
    # Trax calls scipy.gcd/lcm, which SciPy no longer has; math's are equal.
    'gcd': (lambda v: math.gcd(int(v[0]), int(v[1])),
            'scipy.gcd(int({0}), int({1}))'),
    'lcm': (lambda v: math.lcm(int(v[0]), int(v[1])),
            'scipy.lcm(int({0}), int({1}))'),
    'log': (lambda v: math.log(max(1e-5, v[0]), 2),
            'math.log(max(1e-5, {0}), 2)'),
    'loss_percent': (lambda v: 100 - v[0], '100 - {0}'),
    'max': (lambda v: max(v[0], v[1]), 'max({0},{1})'),
    'multiply': (lambda v: v[0] * v[1], '{0} * {1}'),
    'negate_percent': (lambda v: 100 - v[0], '100 - {0}'),
    'negate': (lambda v: -v[0], '-{0}'),
    'original_price_before_loss': (
        lambda v: v[1] * 100 / (100 + 1e-5 - v[0]),
        '{1} * 100 / (100 + 1e-5 - {0})  # original price before loss'),
    'original_price_before_gain': (
        lambda v: v[1] * 100 / (100 + v[0]),
        '{1} * 100 / (100 + {0})  # original_price_before gain'),
    'permutation': (lambda v: _permutation(v[0], v[1]),
                    'math.factorial(int(max({0}, {1}))) / math.factorial('
                    'int(max({0}, {1}) - min({0}, {1})))  # find all '
                    'permutations'),
    'power': (lambda v: v[0]**min(v[1], 5), '{0}**min({1}, 5)'),
    'percent': (lambda v: v[0] / 100 * v[1], '{0} / 100 * {1}'),
    'price_after_gain': (lambda v: (1 + v[0] / 100) * v[1],
                         '(1 + {0} / 100) * {1}'),
    'price_after_loss': (lambda v: (1 - v[0] / 100) * v[1],
                         '(1 - {0} / 100) * {1}'),
    'quadrilateral_area': (lambda v: v[0] * (v[1] + v[2]) / 2,
                           '{0} * ({1} + {2}) / 2  # quadrilateral area'),
    'reminder': (lambda v: v[0] % v[1], '{0} % {1}'),
    'rectangle_area': (lambda v: v[0] * v[1],
                       '{0} * {1}  # area of rectangle'),
    'rectangle_perimeter': (lambda v: 2 * (v[0] + v[1]),
                            '2 * ({0} + {1})  # perimetere of rectangle'),
    'rhombus_area': (lambda v: v[0] * v[1] / 2, '{0} * {1} / 2'),
    'sine': (lambda v: math.sin(v[0]), 'math.sin({0})'),
    'sqrt': (lambda v: math.sqrt(max(0, v[0])), 'math.sqrt(max(0, {0}))'),
    'subtract': (lambda v: v[0] - v[1], '{0} - {1}'),
    'square_edge_by_perimeter': (
        lambda v: v[0] / 4, '{0} / 4. # square edge given perimeter'),
    'square_edge_by_area': (lambda v: math.sqrt(v[0]),
                            'math.sqrt({0})  # square edge given area'),
    'square_area': (lambda v: v[0]**2, '{0}**2'),
    'surface_cube': (lambda v: 6 * v[0]**2, '6 * {0}**2  # surface of a cube'),
    'surface_rectangular_prism': (
        lambda v: 2 * (v[0] * v[1] + v[0] * v[2] + v[1] * v[2]),
        '2 * ({0} * {1} + {0} * {2} + {1} * {2})  # surface of a rectangular '
        'prism'),
    'semi_circle_perimiter': (
        lambda v: math.pi * v[0] + 2 * v[0],
        'math.pi * {0} + 2 * {0}  # perimeter of a semi-circle'),
    'square_perimeter': (lambda v: 4 * v[0], '4 * {0}'),
    'surface_sphere': (lambda v: 4 * math.pi * v[0]**2,
                       '4 * math.pi * {0}**2'),
    'speed_ratio_steel_to_stream': (lambda v: (v[0] + v[1]) / (v[0] - v[1]),
                                    '({0} + {1}) / ({0} - {1})'),
    'speed_in_still_water': (lambda v: (v[0] + v[1]) / 2, '{0} + {1} / 2'),
    'stream_speed': (lambda v: (v[0] - v[1]) / 2, '{0} - {1} / 2'),
    'trapezium_area': (lambda v: v[0] * (v[1] + v[2]) / 2,
                       '{0} * ({1} + {2}) / 2'),
    'triangle_area': (lambda v: v[0] * v[1] / 2, '{0} * {1} / 2'),
    'triangle_perimeter': (lambda v: v[0] + v[1] + v[2],
                           '{0} + {1} + {2}  # perimeter of a triangle'),
    'triangle_area_three_edges': (
        lambda v: _heron(v[0], v[1], v[2]),
        '(lambda s, a, b, c: math.sqrt(max(0, s * (s - a) * (s - b) * (s - '
        "c))))(({0} + {1} + {2}) / 2, {0}, {1}, {2})  # Heron's formula"),
    'union_prob': (lambda v: v[0] + v[1] - v[2], '{0} + {1} - {2}'),
    'negate_prob': (lambda v: 1 - v[0], '1 - {0}'),
    'volume_cube': (lambda v: v[0]**3, '{0}**3'),
    'volume_cone': (lambda v: math.pi * v[0]**2 * v[1] / 3,
                    'math.pi * {0}**2 * {1} / 3'),
    'volume_cylinder': (lambda v: math.pi * v[0]**2 * v[1],
                        'math.pi * {0}**2 * {1}'),
    'volume_rectangular_prism': (lambda v: v[0] * v[1] * v[2],
                                 '{0} * {1} * {2}'),
    'volume_sphere': (lambda v: 4 / 3 * math.pi * v[0]**3,
                      '4 / 3 * math.pi * {0}**3'),
}
# Synonyms MathQA uses.
_OPS['p_after_gain'] = _OPS['price_after_gain']
_OPS['rhombus_perimeter'] = _OPS['square_perimeter']

OPERATIONS = tuple(sorted(_OPS) + ['divide', 'inverse', 'speed'])


def compute_single_result(op_name, num_args):
  """The value of MathQA operation `op_name` on numbers (None if unknown)."""
  if op_name in ('divide', 'speed'):
    return num_args[0] / num_args[1] if num_args[1] != 0 else 0
  if op_name == 'inverse':
    return 1 / num_args[0] if num_args[0] != 0 else 0
  if op_name not in _OPS:
    return None
  return _OPS[op_name][0](num_args)


def single_op_to_python_command(op_name, num_args):
  """Trax's Python expression for `op_name` on argument strings (or None).

  A division by an argument equal to the number 0 is written as `'0'`.
  """
  if op_name in ('divide', 'speed'):
    return f'{num_args[0]} / {num_args[1]}' if num_args[1] != 0 else '0'
  if op_name == 'inverse':
    return f'1 / {num_args[0]}' if num_args[0] != 0 else '0'
  if op_name not in _OPS:
    return None
  return _OPS[op_name][1].format(*num_args)
