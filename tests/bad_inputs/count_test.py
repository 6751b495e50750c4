"""The catalogue holds at least 60 bad-input rows, with distinct names."""

from tests.bad_inputs import io_test
from tests.bad_inputs import layers_test
from tests.bad_inputs import training_test

_TABLES = (layers_test.CASES, training_test.CASES, io_test.CASES)


def test_catalogue_has_at_least_60_cases():
  rows = [case for table in _TABLES for case in table]
  names = [case.name for case in rows]
  assert len(names) == len(set(names)), 'row names must be unique'
  assert len(rows) >= 60, f'only {len(rows)} bad-input rows'


def test_every_row_pins_a_message():
  for table in _TABLES:
    for case in table:
      assert isinstance(case.error, type) and issubclass(
          case.error, BaseException), case.name
      assert len(case.match) >= 10, f'{case.name}: match too vague'
