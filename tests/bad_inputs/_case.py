"""The catalogue's row type and helpers shared by its files.

Each file under tests/bad_inputs/ holds a table `CASES` of `Case`s: a
malformed call, the exception type it must raise and a regex its message
must match (the component, what it expected, what it got). One
parametrized test per file runs the table; `count_test.py` adds them up.

A row whose library error is unclear today, in code this catalogue's owner
may not change, is marked `xfail(strict=True)` with the fix it needs.
"""

import contextlib
import inspect
import io
import textwrap
from typing import Callable, NamedTuple, Optional

import pytest

from tests import _multi_device

__all__ = ['Case', 'params', 'check', 'CliExit', 'call_cli',
           'SubprocessError', 'subprocess_results', 'reraise']


class Case(NamedTuple):
  name: str
  call: Callable[[], object]
  error: type
  match: str
  xfail: Optional[str] = None  # Why the library's error is unclear today.


def params(cases):
  """`pytest.param`s for a table of cases, with ids and xfail marks."""
  names = [c.name for c in cases]
  assert len(names) == len(set(names)), 'case names must be unique'
  return [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(
      strict=True, reason=c.xfail)] if c.xfail else []) for c in cases]


def check(case, tmp_path=None):
  """Runs one row: its call must raise `case.error` matching `case.match`.

  A call that takes one argument gets `tmp_path` (for files it writes).
  """
  args = (tmp_path,) if inspect.signature(case.call).parameters else ()
  with pytest.raises(case.error, match=case.match):
    case.call(*args)


class CliExit(Exception):
  """A command-line entry point returned a non-zero exit code.

  Raised by `call_cli` so that a usage error (exit 2 with a message on
  stderr, no traceback) is pinned like any other row: the message is what
  the user saw on stderr.
  """

  def __init__(self, code, stderr):
    super().__init__(f'exit {code}: {stderr}')
    self.code = code


def call_cli(main, argv):
  """Runs `main(argv)` in-process; raises CliExit for a non-zero exit code."""
  err = io.StringIO()
  with contextlib.redirect_stderr(err), contextlib.redirect_stdout(
      io.StringIO()):
    code = main(argv)
  if code:
    raise CliExit(code, err.getvalue())
  return code


class SubprocessError(Exception):
  """An exception raised in a subprocess, re-raised here by type name."""


_BUILTIN_ERRORS = {e.__name__: e for e in (ValueError, TypeError, OSError,
                                           RuntimeError, FloatingPointError)}


def subprocess_results(code, n_devices, timeout=240):
  """Runs `code` on `n_devices` logical CPUs; returns its dict of outcomes.

  `code` runs in a fresh interpreter (see tests/_multi_device.py) and
  defines a dict `results` mapping a name to `(error type name, message)` or
  None, which is sent back when it ends.
  """
  return _multi_device.run(textwrap.dedent(code) + '\nreport(results)\n',
                           n_devices=n_devices, timeout=timeout)


def reraise(outcome):
  """Raises the exception a subprocess reported (None: nothing happened)."""
  if outcome is None:
    return
  name, message = outcome
  raise _BUILTIN_ERRORS.get(name, SubprocessError)(f'{name}: {message}')
