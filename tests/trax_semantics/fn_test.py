"""`tl.Fn` argument checks, following trax/layers/base.py `Fn` (Trax 1.4.1).

Trax reads `f`'s argument spec: each positional parameter is one input, and
a default value, `*args` or `**kwargs` raises ValueError ('Function has
default arguments / keyword arguments / variable args (not allowed).'),
checked in that order. Keyword-only parameters are not inputs and are not
checked. Our messages keep Trax's key phrases and add what was given and how
to fix it.
"""

import functools

import numpy as np
import pytest

import tfnp_trax.layers as tl


def _two_with_default(x, scale=2.):
  return x * scale


def _scaled(x, scale):
  return x * scale


REJECTED = [
    # (id, function, key phrase, what was given)
    ('default_arg', lambda x, y=1: x + y, 'default arg', 'y'),
    ('named_default', _two_with_default, 'default arg', 'scale'),
    ('var_args', lambda *args: args[0], 'variable arg', '*args'),
    ('var_kwargs', lambda x, **kwargs: x, 'keyword arg', '**kwargs'),
    # Trax checks **kwargs before *args, and defaults before both.
    ('var_args_and_kwargs', lambda *args, **kwargs: args[0], 'keyword arg',
     '**kwargs'),
    ('default_and_var_kwargs', lambda x=1, **kwargs: x, 'default arg', 'x'),
    # functools.partial binding positionally leaves h's default in place.
    ('partial_keeps_default', functools.partial(_two_with_default, 1.),
     'default arg', 'scale'),
]


@pytest.mark.parametrize('f,phrase,given', [c[1:] for c in REJECTED],
                         ids=[c[0] for c in REJECTED])
def test_fn_rejects_what_trax_rejects(f, phrase, given):
  with pytest.raises(ValueError) as info:
    tl.Fn('F', f)
  msg = str(info.value)
  assert msg.startswith('Fn F: function has ')
  assert phrase in msg and '(not allowed)' in msg
  assert given in msg  # Names what was given ...
  if phrase != 'variable arg':  # ... and how to bind it instead.
    assert 'functools.partial' in msg and 'lambda' in msg
  else:
    assert 'one positional parameter per input' in msg


ACCEPTED = [
    # (id, function, n_in, str) -- what Trax gives for Fn('f', function).
    ('plain_two_args', lambda x, y: x + y, 2, 'f_in2'),
    ('no_args', lambda: 1, 0, 'f_in0'),
    ('keyword_only', lambda x, *, y: x, 1, 'f'),
    ('keyword_only_default', lambda x, *, y=2: x, 1, 'f'),
    ('builtin', abs, 1, 'f'),
    ('partial_binds_keyword', functools.partial(_scaled, scale=3.), 1, 'f'),
    ('partial_binds_position', functools.partial(_scaled, 3.), 1, 'f'),
]


@pytest.mark.parametrize('f,n_in,want_str', [c[1:] for c in ACCEPTED],
                         ids=[c[0] for c in ACCEPTED])
def test_fn_accepts_what_trax_accepts(f, n_in, want_str):
  layer = tl.Fn('f', f)
  assert (layer.n_in, layer.n_out, str(layer)) == (n_in, 1, want_str)


@pytest.mark.parametrize('f,want', [
    (functools.partial(_scaled, scale=3.), [3., 6.]),
    (lambda x: _two_with_default(x, scale=.5), [.5, 1.]),
    (lambda x, *, scale=2.: x * scale, [2., 4.]),
])
def test_the_suggested_fixes_compute(f, want):
  # The fixes the error messages suggest: bind the extra parameters.
  got = tl.Fn('f', f)(np.array([1., 2.], np.float32))
  np.testing.assert_allclose(np.asarray(got), np.array(want, np.float64))


def test_required_keyword_only_fails_when_called():
  # Trax builds the layer; the call then fails in Python, as a LayerError.
  layer = tl.Fn('f', lambda x, *, y: x)
  with pytest.raises(tl.LayerError, match=r"missing 1 required keyword-only "
                     r"argument: 'y'"):
    layer(np.ones(2, np.float32))


@pytest.mark.parametrize('name,want', [('', 'Fn'), (None, 'Fn'),
                                       ('Mine', 'Mine')])
def test_fn_name_defaults_to_fn(name, want):
  # trax/layers/base.py Fn: `name = name or 'Fn'`.
  assert tl.Fn(name, lambda x: x).name == want
