"""What rebuilds a `tfnp-trax train` run's model: `<output_dir>/run.json`.

`tfnp-trax train` writes the record as it starts (the task, the model and
its shape, the vocabulary and the input each example is), so `tfnp-trax
export` can rebuild the same model from the folder alone and load any of
its checkpoints into it. Written atomically with `_run_files`.
"""

from typing import NamedTuple, Tuple

from tfnp_trax.cli import _run_files

__all__ = ['RUN_FILE', 'RunRecord', 'write_record', 'read_record']

RUN_FILE = 'run.json'


class RunRecord(NamedTuple):
  """A run's model, as `train.build` makes it.

  Attributes:
    task: the --task value ('pylm', 'digits', 'copy').
    model: the --model value.
    vocab: the vocabulary size (or the number of classes).
    n_layers, d_model, n_heads, seq_len: the TransformerLM's shape (kept for
      every model; only the TransformerLM reads them).
    max_len: the positions the TransformerLM holds.
    example_shape: the shape of one input example, without the batch.
    example_dtype: its dtype name ('int32' token ids, 'float32' images).
  """
  task: str
  model: str
  vocab: int
  n_layers: int
  d_model: int
  n_heads: int
  seq_len: int
  max_len: int
  example_shape: Tuple[int, ...]
  example_dtype: str


def write_record(output_dir, record):
  """Writes `record` to `<output_dir>/run.json` atomically."""
  return _run_files.write_json(output_dir, RUN_FILE, record._asdict())


def _parse(value):
  fields = {name: value[name] for name in RunRecord._fields}
  fields['example_shape'] = tuple(int(d) for d in fields['example_shape'])
  for name in ('vocab', 'n_layers', 'd_model', 'n_heads', 'seq_len',
               'max_len'):
    fields[name] = int(fields[name])
  return RunRecord(**fields)


def read_record(output_dir):
  """The RunRecord of a run folder, or None where it has none.

  Raises:
    ValueError: the file is damaged (the message names it).
  """
  return _run_files.read_json(output_dir, RUN_FILE, _parse,
                              'is not a run record',
                              'the model `tfnp-trax export` rebuilds')
