"""Converts inference models to ONNX, through tf2onnx.

The layer's forward pass is traced once with its weights and state frozen
into constants, and tf2onnx turns that graph into an ONNX model that ONNX
Runtime (or any ONNX runtime supporting the opset) runs without TensorFlow.
tf2onnx and onnxruntime are in the `export` extra:
`pip install 'tfnp-trax[export]'`.
"""

import hashlib
import os

import tensorflow as tf
# The one public-by-use way to freeze a concrete function's variables and
# captured tensors into constants; tf2onnx and TFLite use it too.
from tensorflow.python.framework import convert_to_constants

from tfnp_trax import atomic_files
from tfnp_trax import fastmath
from tfnp_trax.export import _args
from tfnp_trax.export import _module
from tfnp_trax.export import _tf2onnx_compat
from tfnp_trax.export import _trees

__all__ = ['to_onnx', 'DEFAULT_OPSET']

# Opset 17 has LayerNormalization as one op and is read by every ONNX
# Runtime release since 1.12 (2022).
DEFAULT_OPSET = 17
_MIN_OPSET = 13


def to_onnx(model, path, input_signature, weights=None, state=None,
            opset=DEFAULT_OPSET, input_names=None, output_names=None,
            large_model=False):
  """Writes `model` with its weights to `path` as an ONNX model.

  The ONNX graph's inputs and outputs carry the names a SavedModel's
  `serving_default` uses ('inputs' or 'inputs_0', ...; 'outputs' or
  'outputs_0', ...). Sizes given as None (e.g. the batch) stay dynamic;
  ONNX Runtime rejects inputs whose fixed sizes differ, naming the input.
  The forward pass runs as `save_model`'s does: the state as it is and the
  fixed rng `fastmath.random.get_prng(0)`, so export models built with
  `mode='eval'`.

  Example:
    >>> import onnxruntime
    >>> model = models.MLP(layer_widths=(8, 3))
    >>> _ = model.init(shapes.ShapeDtype((2, 4)))
    >>> os.makedirs(export_dir, exist_ok=True)
    >>> path = to_onnx(model, os.path.join(export_dir, 'mlp.onnx'),
    ...                shapes.ShapeDtype((None, 4)))
    >>> session = onnxruntime.InferenceSession(path)
    >>> session.run(None, {'inputs': onp.ones((5, 4), onp.float32)})[0].shape
    (5, 3)

  Args:
    model: an initialized inference layer (or any layer, with `weights`).
    path: the `.onnx` file to write (replaced atomically).
    input_signature: ShapeDtype (or tuple of them, one per input).
    weights: the weight tree; `model.weights` by default.
    state: the state tree; `model.state` by default.
    opset: the ONNX opset to target (13 or above).
    input_names: names of the ONNX inputs.
    output_names: names of the ONNX outputs.
    large_model: write the weights to a data file beside `path`
      (`<name>.<hash>.data`, referenced from the model), which models
      over ONNX's 2 GB protobuf limit need.

  Returns:
    `path`.

  Raises:
    ImportError: if tf2onnx is not installed.
    ValueError: if the model is not initialized, the signature does not fit
      it, `opset` is out of range, or the model uses TensorFlow ops that
      have no ONNX conversion (the error names them).
    TypeError: if the model is not a layer or `path` is not a file path.
  """
  _args.check_layer(model, 'to_onnx')
  path = _check_file_path(path)
  tf2onnx = _tf2onnx_compat.load('to_onnx')
  opset = _check_opset(opset, tf2onnx)
  if output_names is not None:
    _args.check_names((output_names,) if isinstance(output_names, str)
                      else tuple(output_names), 'output_names', 'to_onnx')
  weights, state = _trees.weights_and_state(model, weights, state, 'to_onnx')
  sigs, names = _module.input_specs(model, input_signature, input_names,
                                    'to_onnx')
  # Constants the trace captures; freezing turns them into Const ops.
  weights, state = [fastmath.nested_map(tf.constant, tree)
                    for tree in (weights, state)]

  def forward(*xs):
    return _module.run_layer(model, list(xs), weights, state, output_names,
                             'to_onnx')
  specs = [tf.TensorSpec(s.shape, s.dtype, name=n)
           for s, n in zip(sigs, names)]
  concrete = tf.function(forward, input_signature=specs,
                         autograph=False).get_concrete_function()
  graph_def = _frozen_graph_def(concrete, large_model, tf2onnx)
  inputs = [t.name for t in concrete.inputs[:len(specs)]]
  # The traced outputs come in tf.nest's order of the returned dict (its
  # sorted keys); the ONNX outputs keep the layer's order.
  traced = dict(zip(sorted(concrete.structured_outputs),
                    (t.name for t in concrete.outputs)))
  outputs = {n: traced[n] for n in concrete.structured_outputs}
  renames = dict(zip(inputs, names))
  renames.update({t: n for n, t in outputs.items()})
  with _tf2onnx_compat.optimizing_with_one_backup(tf2onnx):
    proto, storage = tf2onnx.convert.from_graph_def(
        graph_def, name=_graph_name(model), input_names=inputs,
        output_names=list(outputs.values()), opset=opset,
        custom_op_handlers=_tf2onnx_compat.OP_HANDLERS,
        large_model=large_model, tensors_to_rename=renames)
  _check_converted(proto, model, opset)
  if large_model:
    data = _externalize(proto, storage, path)
  atomic_files.write_atomically(path, proto.SerializeToString())
  if large_model:
    _remove_stale_data(path, data)
  return path


def _graph_name(model):
  name = ''.join(c if c.isalnum() else '_' for c in model.name)
  return name or 'model'


def _frozen_graph_def(concrete, large_model, tf2onnx):
  """The traced graph with weights, state and captured tensors as Consts.

  Nested function calls (custom gradients, reversible blocks) are inlined:
  ONNX has no function-call op. Over 2 GB, TensorFlow's GraphDef cannot be
  serialized, so tf2onnx's large-model freezing builds it instead.
  """
  if large_model:
    return tf2onnx.tf_loader.convert_variables_to_constants_large_model(
        concrete)
  options = dict(lower_control_flow=False, aggressive_inlining=True)
  try:
    # The GraphDef alone: the public function below also rebuilds (and
    # prunes) a concrete function from it, which takes longer than the
    # freezing and is not needed here.
    # pylint: disable=protected-access
    data = convert_to_constants._FunctionConverterDataInEager(
        func=concrete, **options)
    graph_def, _ = convert_to_constants._replace_variables_by_constants(
        converter_data=data)
    # pylint: enable=protected-access
  except AttributeError:  # Those names moved: the public, slower way.
    graph_def = convert_to_constants.convert_variables_to_constants_v2(
        concrete, **options).graph.as_graph_def()
  return graph_def


def _check_file_path(path):
  if not isinstance(path, (str, os.PathLike)):
    raise TypeError(f'to_onnx: path must be a file path (str or '
                    f'os.PathLike), got {type(path).__name__} ({path!r}).')
  path = os.fspath(path)
  if os.path.isdir(path):
    raise IsADirectoryError(
        f'to_onnx: path {path} is a directory, but an ONNX model is one '
        f'file. Pass a file path such as {os.path.join(path, "model.onnx")}.')
  parent = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(parent):
    raise FileNotFoundError(f'to_onnx: the folder {parent} of {path} does '
                            f'not exist; create it first.')
  if not os.access(parent, os.W_OK):
    raise PermissionError(f'to_onnx: cannot write {path}: folder {parent} '
                          f'is not writable.')
  return path


def _check_opset(opset, tf2onnx):
  newest = max(tf2onnx.constants.OPSET_TO_IR_VERSION)
  if (isinstance(opset, bool) or not isinstance(opset, int)
      or not _MIN_OPSET <= opset <= newest):
    raise ValueError(f'to_onnx: opset must be an int from {_MIN_OPSET} to '
                     f'{newest} (the newest this tf2onnx writes), got '
                     f'{opset!r}. The default is {DEFAULT_OPSET}.')
  return opset


def _graphs(graph):
  """`graph` and every subgraph (loop and branch bodies) inside it."""
  yield graph
  for node in graph.node:
    for attr in node.attribute:
      if attr.HasField('g'):
        yield from _graphs(attr.g)
      for g in attr.graphs:
        yield from _graphs(g)


def _check_converted(proto, model, opset):
  """Raises if tf2onnx left TensorFlow ops it has no conversion for."""
  import onnx  # pylint: disable=g-import-not-at-top
  left = sorted({n.op_type for g in _graphs(proto.graph) for n in g.node
                 if n.domain in ('', 'ai.onnx')
                 and not onnx.defs.has(n.op_type, n.domain)})
  if left:
    raise ValueError(
        f'to_onnx: {model.name} uses TensorFlow ops that tf2onnx cannot '
        f'express in ONNX opset {opset}: {", ".join(left)}. Try a newer '
        f'opset, or export a model without the layers that use them '
        f'(save_model and to_tflite take every op).')


def _tensors(graph):
  for g in _graphs(graph):
    yield from g.initializer
    for node in g.node:
      for attr in node.attribute:
        if attr.HasField('t'):
          yield attr.t
        yield from attr.tensors


def _externalize(proto, storage, path):
  """Points `proto`'s large tensors at one data file; writes it.

  tf2onnx leaves them as references into `storage` by name; they become
  (offset, length) ranges of `<path>.<hash>.data`, named by its contents so
  that a new model never reads an old model's data file.

  Returns:
    the data file's path.
  """
  blobs, refs = [], []
  for tensor in _tensors(proto.graph):
    if tensor.data_location == tensor.EXTERNAL:
      entries = {e.key: e.value for e in tensor.external_data}
      blobs.append(storage.name_to_tensor_data[entries['location']])
      refs.append(tensor)
  data = b''.join(blobs)
  name = (f'{os.path.basename(path)}.'
          f'{hashlib.sha256(data).hexdigest()[:12]}.data')
  offset = 0
  for tensor, blob in zip(refs, blobs):
    del tensor.external_data[:]
    for key, value in (('location', name), ('offset', offset),
                       ('length', len(blob))):
      entry = tensor.external_data.add()
      entry.key, entry.value = key, str(value)
    offset += len(blob)
  data_path = os.path.join(os.path.dirname(path), name)
  atomic_files.write_atomically(data_path, data)
  return data_path


def _remove_stale_data(path, keep):
  """Removes data files of models written to `path` before this one."""
  folder = os.path.dirname(path) or '.'
  prefix = os.path.basename(path) + '.'
  kept = os.path.basename(keep)
  for name in os.listdir(folder):
    if (name.startswith(prefix) and name.endswith('.data') and name != kept
        and len(name) == len(kept)):
      os.remove(os.path.join(folder, name))
