"""Tests for distribute._multiworker's timeout settings.

Forming real clusters is tested in launch_test.py.
"""

import pytest

from distribute import _multiworker


def test_timeout_argument_wins(monkeypatch):
  monkeypatch.setenv('TFNP_COLLECTIVE_TIMEOUT', '9')
  assert _multiworker.collective_timeout(4) == 4.0


def test_timeout_from_environment(monkeypatch):
  monkeypatch.setenv('TFNP_COLLECTIVE_TIMEOUT', '2.5')
  assert _multiworker.collective_timeout() == 2.5
  monkeypatch.delenv('TFNP_COLLECTIVE_TIMEOUT')
  assert _multiworker.collective_timeout() is None


def test_bad_environment_value_error(monkeypatch):
  monkeypatch.setenv('TFNP_COLLECTIVE_TIMEOUT', 'soon')
  with pytest.raises(ValueError,
                     match=r"TFNP_COLLECTIVE_TIMEOUT must be a number of "
                     r"seconds, got 'soon'\."):
    _multiworker.collective_timeout()


def test_non_positive_timeout_error():
  with pytest.raises(ValueError,
                     match=r'collective timeout must be > 0 seconds, got 0'):
    _multiworker.collective_timeout(0)
