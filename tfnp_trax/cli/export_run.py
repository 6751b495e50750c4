"""`tfnp-trax export`: a trained run's model as a SavedModel, ONNX or TFLite.

It rebuilds the model a `tfnp-trax train` run trained from the run's
`run.json` (`_run_record`), reads the weights of one of its checkpoints
(the newest, `--step N` or a named one such as `early_stopping_best`),
checked against the checkpoint's checksums and the model's shapes, and
writes them out. A SavedModel gets `serving_default` (the model's forward
pass, any batch size) and, for the sequence tasks, `generate`
(`export.generate_signature`: whole sequences in one call). No Python of
the user's is needed, and the files load without tfnp_trax. `--format onnx`
and `--format tflite` write the forward pass as `model.onnx` (for ONNX
Runtime) or `model.tflite` (for LiteRT).
"""

import os
import sys

import numpy as onp

from tfnp_trax.cli import _export_flags
from tfnp_trax.cli import _run_files
from tfnp_trax.cli import _run_record
from tfnp_trax.cli import _usage

__all__ = ['FLAGS', 'main']

FLAGS = _export_flags.FLAGS
_PROG = 'tfnp-trax export'
# What `tfnp-trax train` samples from: pylm starts at a newline.
_START_ID = {'pylm': ord('\n'), 'copy': 0}
_DEFAULT_LENGTH = {'pylm': 127, 'copy': 17}


def _checkpoint_path(ckpt_dir, step, name):
  """The checkpoint folder to export, or a ValueError saying what exists."""
  from tfnp_trax.supervised import checkpoints  # pylint: disable=g-import-not-at-top
  numbered = []
  if os.path.isdir(ckpt_dir):
    numbered = checkpoints.CheckpointManager(ckpt_dir, {}, {},
                                             writer=False).list()
  if name:
    path = os.path.join(ckpt_dir, name)
  elif step:
    path = next((info.path for info in numbered if info.step == step), None)
  else:
    path = numbered[-1].path if numbered else None
  if path is None or not os.path.isdir(path):
    have = ', '.join(os.path.basename(i.path) for i in numbered) or 'none'
    wanted = name or (f'step {step}' if step else 'any checkpoint')
    raise ValueError(f'{_PROG}: {ckpt_dir} holds no checkpoint for '
                     f'{wanted}; its numbered checkpoints: {have}.')
  return path


def _read_weights(model, path):
  """`(weights, state)` of `model`'s shape from checkpoint folder `path`."""
  from tfnp_trax import fastmath  # pylint: disable=g-import-not-at-top
  from tfnp_trax.supervised import checkpoints  # pylint: disable=g-import-not-at-top
  leaves = {'weights': fastmath.tree_flatten(model.weights),
            'state': fastmath.tree_flatten(model.state)}
  # The model's leaves lead the checkpoint's groups (the optimizer's slots
  # and the Loop's counters follow them).
  reader = checkpoints.CheckpointManager(os.path.dirname(path), {}, {},
                                         writer=False)
  try:
    read = reader.read_leading(path, {g: len(xs) for g, xs in leaves.items()})
  except (IOError, OSError, KeyError, ValueError) as e:
    raise ValueError(f'{_PROG}: checkpoint {path} is unusable: {e}') from e
  for group, xs in leaves.items():
    for i, (want, got) in enumerate(zip(xs, read[group])):
      if tuple(onp.shape(want)) != tuple(got.shape):
        raise ValueError(
            f'{_PROG}: checkpoint {path} holds {group} leaf {i} shaped '
            f'{tuple(got.shape)}, but the model run.json describes has '
            f'{tuple(onp.shape(want))}: the run.json and the checkpoints '
            f'are of different runs.')
  return (fastmath.tree_unflatten(read['weights'], model.weights)[0],
          fastmath.tree_unflatten(read['state'], model.state)[0])


def _build(record, mode):
  from tfnp_trax.cli import train  # pylint: disable=g-import-not-at-top
  shape = train.LMShape(record.n_layers, record.d_model, record.n_heads,
                        record.seq_len)
  return train.build(record.model, record.task, record.vocab, mode=mode,
                     shape=shape, max_len=record.max_len)


def _generate(record, max_length):
  from tfnp_trax import export  # pylint: disable=g-import-not-at-top
  length = max_length or min(_DEFAULT_LENGTH[record.task],
                             record.max_len)
  return export.generate_signature(
      _build(record, 'predict'), length, temperature=FLAGS.temperature,
      eos_id=-1, start_id=_START_ID[record.task],
      batch_size=FLAGS.batch_size), length


def main(argv):
  """Runs the export command; returns the process exit code."""
  error = _usage.parse(FLAGS, argv, _export_flags.validate)
  if error is not None:
    _usage.report(_PROG, error, f'Run `{_PROG} --help` for the flags.')
    return 2
  from tfnp_trax import shapes  # pylint: disable=g-import-not-at-top
  run_dir = os.path.expanduser(FLAGS.output_dir)
  export_dir = os.path.expanduser(FLAGS.export_dir)
  try:
    record = _run_record.read_record(run_dir)
    path = _checkpoint_path(os.path.join(run_dir, 'checkpoints'),
                            FLAGS.step, FLAGS.checkpoint)
    model = _build(record, 'eval')
    example = tuple(record.example_shape)
    model.init(shapes.ShapeDtype((1,) + example, record.example_dtype))
    weights, state = _read_weights(model, path)
    print(f'Exporting {record.model} ({record.task}) from {path}.',
          flush=True)
    if FLAGS.format in ('onnx', 'tflite'):
      _write_file(model, export_dir, example, record.example_dtype, weights,
                  state)
      return 0
    signatures, extra = None, ''
    if record.task in _START_ID:
      builder, length = _generate(record, FLAGS.max_length)
      signatures = {'generate': builder}
      extra = (f' and generate (inputs int32 [{FLAGS.batch_size}, any '
               f'length] -> outputs int32 [{FLAGS.batch_size}, {length}])')
    batch = _save(model, export_dir, example, record.example_dtype,
                  weights, state, signatures)
  except ValueError as e:
    message = str(e)
    if not message.startswith(_PROG):
      message = f'{_PROG}: {message}'
    print(message, file=sys.stderr, flush=True)
    return 1
  print(f'Wrote a SavedModel to {export_dir}: serving_default (inputs '
        f'{record.example_dtype} [{batch or "any batch"}, '
        f'{", ".join(map(str, example))}]){extra}.')
  return 0


def _write_file(model, export_dir, example, dtype, weights, state):
  """Writes model.onnx (any batch where the model allows) or model.tflite."""
  from tfnp_trax import export  # pylint: disable=g-import-not-at-top
  from tfnp_trax import shapes  # pylint: disable=g-import-not-at-top
  os.makedirs(export_dir, exist_ok=True)
  if FLAGS.format == 'tflite':
    target = os.path.join(export_dir, 'model.tflite')
    flatbuffer = export.to_tflite(
        model, shapes.ShapeDtype((1,) + example, dtype), weights=weights,
        state=state)
    _run_files.write_bytes(target, flatbuffer)
    print(f'Wrote {target} ({len(flatbuffer):,} bytes; input {dtype} '
          f'{(1,) + example}).')
    return
  target = os.path.join(export_dir, 'model.onnx')
  batch = _any_batch(lambda sig: export.to_onnx(
      model, target, sig, weights=weights, state=state), example, dtype)
  print(f'Wrote {target} ({os.path.getsize(target):,} bytes; input '
        f'`inputs` {dtype} [{batch or "any batch"}, '
        f'{", ".join(map(str, example))}], output `outputs`).')


def _any_batch(write, example, dtype):
  """`write(signature)` for any batch size where the model allows.

  Attention layers split heads with a static batch size, so a TransformerLM
  is written for `--batch_size` inputs instead.

  Returns:
    the batch size written for (None: any).
  """
  from tfnp_trax import layers as tl  # pylint: disable=g-import-not-at-top
  from tfnp_trax import shapes  # pylint: disable=g-import-not-at-top
  try:
    write(shapes.ShapeDtype((None,) + example, dtype))
    return None
  except tl.LayerError:
    write(shapes.ShapeDtype((FLAGS.batch_size,) + example, dtype))
    return FLAGS.batch_size


def _save(model, export_dir, example, dtype, weights, state, signatures):
  """Saves for any batch size where the model allows; returns the batch."""
  from tfnp_trax import export  # pylint: disable=g-import-not-at-top
  return _any_batch(lambda sig: export.save_model(
      model, export_dir, sig, weights=weights, state=state,
      signatures=signatures), example, dtype)
