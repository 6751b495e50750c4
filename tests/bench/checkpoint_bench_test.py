"""bench/checkpoint_bench.py --small runs and prints its table."""

import json
import os
import subprocess
import sys

from tests import _subprocess


def test_small_checkpoint_bench_runs_and_prints_the_table():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=_subprocess.REPO + os.pathsep +
             os.environ.get('PYTHONPATH', ''))
  out = subprocess.run(
      [sys.executable, os.path.join('bench', 'checkpoint_bench.py'),
       '--small'], cwd=_subprocess.REPO, env=env, capture_output=True,
      text=True, timeout=240, check=False)
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  lines = out.stdout.splitlines()
  rows = [json.loads(line) for line in lines if line.startswith('{')]
  assert [(r['trax_files'], r['async_checkpoints']) for r in rows] == [
      (True, False), (True, True), (False, False), (False, True)]
  # TransformerLM(32, d_model=16, d_ff=32, 1 layer, max_len 8): embedding
  # 32*16, positions 8*16, 3 layer norms 3*32, attention 4*(16*16+16),
  # feed-forward 16*32+32 + 32*16+16, output 16*32+32.
  assert rows[0]['n_params'] == (512 + 128 + 96 + 1088 + 1072 + 544)
  for r in rows:
    assert r['blocking_s'] > 0 and r['total_s'] > 0
    assert len(r['blocking_all_s']) == 2
  assert rows[1]['first_async_save_s'] is not None
  table = [line for line in lines if line.startswith('| ')]
  assert len(table) == 6 and table[2].startswith('| on | sync |')
  assert any(line.startswith('machine: ') for line in lines)
