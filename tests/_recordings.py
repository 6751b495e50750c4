"""Cases recorded from a real Trax install, for the tests to compare with.

Each recording is a JSON file whose `cases` map a case name to its record
(printout, n_in/n_out, weight shapes, ...) and an npz file whose arrays are
named `<case>/<prefix><i>`: the case's inputs (`x0, x1, ...`), weight leaves
(`w0, ...`) and outputs (`y0, ...`). The generator scripts beside the files
in `tests/testdata/` write them in the Trax side environment.
"""

import json
import pathlib

import numpy as np

__all__ = ['Recording']

_TESTDATA = pathlib.Path(__file__).resolve().parent / 'testdata'


class Recording:
  """One recording: `records[name]` and the numbered arrays of each case."""

  def __init__(self, folder, json_name, npz_name):
    directory = _TESTDATA / folder
    self.records = json.loads((directory / json_name).read_text())['cases']
    self.arrays = dict(np.load(directory / npz_name))

  def numbered(self, name, prefix):
    """The arrays `<name>/<prefix>0`, `<name>/<prefix>1`, ... in order."""
    out = []
    while f'{name}/{prefix}{len(out)}' in self.arrays:
      out.append(self.arrays[f'{name}/{prefix}{len(out)}'])
    return out
