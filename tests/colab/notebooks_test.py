"""Runs each Colab notebook top to bottom in a fresh kernel, at small sizes.

The kernel is this interpreter (a temporary `python3` kernelspec pointing at
`sys.executable` comes first on JUPYTER_PATH, so a `python3` kernelspec from
another installation cannot be picked up). It inherits the environment set
here: TFNP_TRAX_NOTEBOOK_SMALL=1 makes every notebook do a few steps only,
and temporary files go to the test's tmp_path.
"""

import importlib.util
import json
import os
import pathlib
import sys

import nbclient
import nbformat
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
COLAB = REPO / 'colab'
NOTEBOOKS = [
    '01_layers_and_combinators',
    '02_training_with_loop',
    '03_distributed_training',
    '04_keras_interop_and_savedmodel',
    '05_rl_cartpole_ppo',
]
# Generous per-cell limit: CI machines can be slow and busy. Each notebook
# takes well under a minute when the machine is idle.
_CELL_TIMEOUT_S = 300


def _write_kernelspec(root):
  spec_dir = root / 'kernels' / 'python3'
  spec_dir.mkdir(parents=True)
  spec = {'argv': [sys.executable, '-m', 'ipykernel_launcher', '-f',
                   '{connection_file}'],
          'display_name': 'Python 3 (tests)', 'language': 'python'}
  (spec_dir / 'kernel.json').write_text(json.dumps(spec))


@pytest.fixture
def notebook_env(tmp_path, monkeypatch):
  """The kernel's environment; it is read when the kernel starts."""
  jupyter = tmp_path / 'jupyter'
  _write_kernelspec(jupyter)
  monkeypatch.setenv('JUPYTER_PATH', os.pathsep.join(
      [str(jupyter)] + [p for p in [os.environ.get('JUPYTER_PATH')] if p]))
  monkeypatch.setenv('TFNP_TRAX_NOTEBOOK_SMALL', '1')
  monkeypatch.setenv('MPLBACKEND', 'Agg')
  monkeypatch.setenv('TF_CPP_MIN_LOG_LEVEL', '2')
  monkeypatch.setenv('PYTHONPATH', os.pathsep.join(
      [str(REPO)] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
  work = tmp_path / 'work'
  work.mkdir()
  monkeypatch.setenv('TMPDIR', str(work))
  return tmp_path


def _errors(nb):
  return [(i, out.get('ename'), out.get('evalue'))
          for i, cell in enumerate(nb.cells)
          for out in cell.get('outputs', []) if out.output_type == 'error']


@pytest.mark.parametrize('name', NOTEBOOKS)
def test_notebook_runs_and_plots(name, notebook_env):
  nb = nbformat.read(COLAB / f'{name}.ipynb', as_version=4)
  client = nbclient.NotebookClient(
      nb, timeout=_CELL_TIMEOUT_S, kernel_name='python3',
      resources={'metadata': {'path': str(REPO)}})
  try:
    client.execute()
  except nbclient.exceptions.CellExecutionError as e:
    nbformat.write(nb, notebook_env / f'{name}.executed.ipynb')
    pytest.fail(f'{name}: a cell failed:\n{e}')
  assert not _errors(nb)
  plot_cells = [c for c in nb.cells
                if 'plot' in c.metadata.get('tags', [])]
  assert plot_cells, f'{name}: no cell is tagged "plot"'
  for cell in plot_cells:
    images = [out for out in cell.outputs
              if 'image/png' in out.get('data', {})]
    assert images, f'{name}: the plot cell showed no image:\n{cell.source}'


def test_notebooks_match_their_sources():
  spec = importlib.util.spec_from_file_location(
      'make_notebooks', COLAB / '_make_notebooks.py')
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  sources = sorted(p.stem for p in module.SOURCES.glob('[0-9]*.py'))
  assert sources == NOTEBOOKS
  for name in NOTEBOOKS:
    expected = module.render(module.SOURCES / f'{name}.py')
    assert (COLAB / f'{name}.ipynb').read_text() == expected, (
        f'{name}.ipynb is out of date; run python colab/_make_notebooks.py')


def test_notebooks_have_no_outputs():
  # The committed notebooks are clean: Colab users run them themselves.
  for name in NOTEBOOKS:
    nb = nbformat.read(COLAB / f'{name}.ipynb', as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
      if cell.cell_type == 'code':
        assert not cell.outputs and cell.execution_count is None, name
