"""The catalogue holds at least 310 bad-input rows, with distinct names."""

from tests.bad_inputs import cli_test
from tests.bad_inputs import data_test
from tests.bad_inputs import decoding_export_test
from tests.bad_inputs import io_test
from tests.bad_inputs import layers_test
from tests.bad_inputs import loop_test
from tests.bad_inputs import training_test
from tests.bad_inputs import weight_files_test

_TABLES = (layers_test.CASES, training_test.CASES, io_test.CASES,
           weight_files_test.CASES, loop_test.CASES, cli_test.CASES,
           data_test.CASES, decoding_export_test.CASES)


def test_catalogue_has_at_least_310_cases():
  rows = [case for table in _TABLES for case in table]
  names = [case.name for case in rows]
  duplicates = sorted({n for n in names if names.count(n) > 1})
  assert not duplicates, f'row names must be unique: {duplicates}'
  assert len(rows) >= 310, f'only {len(rows)} bad-input rows'


def test_every_row_pins_a_message():
  for table in _TABLES:
    for case in table:
      assert isinstance(case.error, type) and issubclass(
          case.error, BaseException), case.name
      assert len(case.match) >= 10, f'{case.name}: match too vague'
