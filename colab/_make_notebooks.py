"""Writes the Colab notebooks in this folder from their sources in _sources/.

Each source is a Python file in "percent" format: a line `# %%` starts a code
cell and `# %% [markdown]` a markdown cell whose lines are comments (`# `
prefixes are stripped). `# %% tags=["plot"]` starts a code cell with cell
tags; the tests check that cells tagged "plot" display an image. Plain
Python sources are easy to review and diff; the .ipynb files are what users
open in Colab.

Usage (from the repository root):
  python colab/_make_notebooks.py          # rewrite the notebooks
  python colab/_make_notebooks.py --check  # fail if any is out of date
"""

import json
import pathlib
import sys

import nbformat

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = HERE / '_sources'
_MARKDOWN = '# %% [markdown]'
_TAGS = '# %% tags='


def _markdown_text(lines):
  out = []
  for line in lines:
    if line.strip() in ('', '#'):
      out.append('')
    elif line.startswith('# '):
      out.append(line[2:])
    else:
      raise ValueError(f'markdown line is not a comment: {line!r}')
  return '\n'.join(out).strip('\n')


def cells_from_source(text):
  """The notebook cells of one percent-format source text."""
  cells, kind, tags, lines = [], None, [], []

  def flush():
    if kind == 'markdown':
      cells.append(nbformat.v4.new_markdown_cell(_markdown_text(lines)))
    elif kind == 'code':
      cell = nbformat.v4.new_code_cell('\n'.join(lines).strip('\n'))
      if tags:
        cell.metadata['tags'] = tags
      cells.append(cell)

  for line in text.splitlines():
    header = line.strip()
    if header == _MARKDOWN:
      flush()
      kind, tags, lines = 'markdown', [], []
    elif header == '# %%' or header.startswith(_TAGS):
      flush()
      kind, lines = 'code', []
      tags = json.loads(header[len(_TAGS):]) if header != '# %%' else []
    elif kind is not None:
      lines.append(line)
  flush()
  return cells


def notebook_from_source(path):
  """A notebook (nbformat v4) built from the source file at `path`."""
  nb = nbformat.v4.new_notebook()
  nb.cells = cells_from_source(path.read_text())
  # Stable cell ids, so regenerating an unchanged source changes nothing.
  for i, cell in enumerate(nb.cells):
    cell['id'] = f'{path.stem[:2]}-cell-{i:02d}'
  nb.metadata = {
      'kernelspec': {'name': 'python3', 'display_name': 'Python 3',
                     'language': 'python'},
      'language_info': {'name': 'python'},
      'colab': {'name': path.stem + '.ipynb', 'provenance': []},
  }
  return nb


def render(path):
  return nbformat.writes(notebook_from_source(path)) + '\n'


def main(argv):
  check = '--check' in argv[1:]
  stale = []
  for source in sorted(SOURCES.glob('[0-9]*.py')):
    target = HERE / (source.stem + '.ipynb')
    text = render(source)
    if target.exists() and target.read_text() == text:
      continue
    stale.append(target.name)
    if not check:
      target.write_text(text)
  if check and stale:
    print('out of date: ' + ', '.join(stale) +
          '; run python colab/_make_notebooks.py')
    return 1
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
