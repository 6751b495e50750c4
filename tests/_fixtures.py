"""Reads the fixtures under tests/testdata/: files recorded from real Trax.

Every test reads tests/testdata/ through this module, so the folder's place
and the way its files are decoded live in one spot:

* `path('trax_vocab')` names a file or folder in it (for code that opens
  the file itself: vocabularies, gin configs, weight files);
* `json_file('trax_data', 'tokens.json')` and
  `arrays('bert', 'cases.npz')` decode a JSON or npz file;
* `Recording` reads the recordings made by the generator scripts beside the
  files: a JSON file whose `cases` map a case name to its record (printout,
  n_in/n_out, weight shapes, ...) and an npz file whose arrays are named
  `<case>/<prefix><i>`: the case's inputs (`x0, x1, ...`), weight leaves
  (`w0, ...`) and outputs (`y0, ...`).

Each call reads the file afresh, so no test sees another's in-place edits.
The README.md in each folder says how its files were made.
"""

import json
import pathlib

import numpy as np

__all__ = ['TESTDATA', 'path', 'json_file', 'arrays', 'Recording']

TESTDATA = pathlib.Path(__file__).resolve().parent / 'testdata'


def path(*parts):
  """`tests/testdata/<parts...>` as a `pathlib.Path` (it must exist)."""
  found = TESTDATA.joinpath(*parts)
  if not found.exists():
    raise FileNotFoundError(
        f'no fixture {found}: tests/testdata/ holds '
        f'{sorted(p.name for p in TESTDATA.iterdir())}')
  return found


def json_file(*parts):
  """The decoded JSON file `tests/testdata/<parts...>`."""
  return json.loads(path(*parts).read_text(encoding='utf-8'))


def arrays(*parts):
  """Every array of the npz file `tests/testdata/<parts...>`, by name."""
  with np.load(path(*parts)) as npz:
    return dict(npz)


class Recording:
  """One recording: `records[name]` and the numbered arrays of each case."""

  def __init__(self, folder, json_name, npz_name):
    self.records = json_file(folder, json_name)['cases']
    self.arrays = arrays(folder, npz_name)

  def numbered(self, name, prefix):
    """The arrays `<name>/<prefix>0`, `<name>/<prefix>1`, ... in order."""
    out = []
    while f'{name}/{prefix}{len(out)}' in self.arrays:
      out.append(self.arrays[f'{name}/{prefix}{len(out)}'])
    return out
