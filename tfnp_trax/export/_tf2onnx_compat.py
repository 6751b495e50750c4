"""Loads tf2onnx, and fills the gaps it has with NumPy 2 and some TF ops.

tf2onnx 1.17 still calls `np.product`, which NumPy 2 removed, when it
moves large tensors out of the model (`large_model=True`). Rather than
touch NumPy itself, the `np` name inside tf2onnx's graph module is pointed
at a view of NumPy that also answers `product`.

It also has no conversion for `Expm1` and `Log1p`, which Elu, Selu,
Softplus and the binary cross-entropy use; `OP_HANDLERS` rewrites them into
ONNX's Exp/Log with Sub/Add, for `tf2onnx.convert`'s `custom_op_handlers`.

And its ONNX graph optimizer copies the whole graph before each of its
passes, to fall back when a pass fails: most of a conversion's time for a
model of a few hundred ops. `optimizing_with_one_backup` copies it once
per round, runs the passes without copies, and if one fails goes back to
the copy and runs the others.
"""

import contextlib
import copy
import logging
import types

import numpy as np

__all__ = ['load', 'OP_HANDLERS', 'numpy_view', 'optimizing_with_one_backup']

_INSTALL = "pip install 'tfnp-trax[export]' (or tf2onnx and onnxruntime)"


class _NumpyView(types.ModuleType):
  """NumPy, plus the names NumPy 2 removed that tf2onnx still calls."""

  product = staticmethod(np.prod)

  def __getattr__(self, name):
    return getattr(np, name)


def numpy_view():
  return _NumpyView('numpy')


def load(caller):
  """Imports tf2onnx (patched for NumPy 2); clear ImportError without it."""
  try:
    import tf2onnx  # pylint: disable=g-import-not-at-top
    from tf2onnx import graph as tf2onnx_graph
  except ImportError as e:
    raise ImportError(f'{caller} needs tf2onnx, which is not installed '
                      f'({e}). Install it with: {_INSTALL}.') from e
  if not hasattr(tf2onnx_graph.np, 'product'):
    tf2onnx_graph.np = numpy_view()
  return tf2onnx


class _PassFailed(Exception):
  """One of tf2onnx's optimizer passes raised."""

  def __init__(self, name):
    super().__init__(name)
    self.name = name


def _tagged(name, factory):
  """`factory`, making passes whose errors say which pass raised."""
  def make():
    opt = factory()
    run = opt.optimize

    def optimize(graph, iteration):
      try:
        return run(graph, iteration)
      except Exception as e:  # pylint: disable=broad-except
        raise _PassFailed(name) from e
    opt.optimize = optimize
    return opt
  return make


@contextlib.contextmanager
def optimizing_with_one_backup(tf2onnx):
  """Within this context tf2onnx's graph optimizer keeps one backup.

  The passes run without copies; if one raises, the graph goes back to the
  backup and the passes run again without that one. As with tf2onnx's
  careful way (a copy before every pass), a failing pass costs only its own
  rewrites, never the conversion.
  """
  optimizer = tf2onnx.optimizer
  careful = optimizer.optimize_graph

  def optimize_graph(graph, catch_errors=True, optimizers=None):
    if not catch_errors:
      return careful(graph, False, optimizers)
    passes = dict(optimizers if optimizers is not None else
                  optimizer._get_optimizers())  # pylint: disable=protected-access
    while True:
      backup = copy.deepcopy(graph)
      try:
        return careful(graph, False, {n: _tagged(n, f)
                                      for n, f in passes.items()})
      except _PassFailed as e:
        logging.getLogger('tf2onnx').info(
            'Skipping the ONNX optimizer pass %s, which failed here.', e.name)
        del passes[e.name]
        graph = backup

  optimizer.optimize_graph = optimize_graph
  try:
    yield
  finally:
    optimizer.optimize_graph = careful


def _one_like(ctx, node):
  # A scalar 1 of the dtype of `node`'s input, as an ONNX constant.
  from tf2onnx import utils  # pylint: disable=g-import-not-at-top
  dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
  return ctx.make_const(utils.make_name(f'{node.name}_one'),
                        np.array(1, dtype)).output[0]


def _expm1(ctx, node, name, args):
  """Expm1(x) as Sub(Exp(x), 1)."""
  del name, args
  exp = ctx.make_node('Exp', [node.input[0]]).output[0]
  one = _one_like(ctx, node)
  node.type = 'Sub'
  ctx.replace_inputs(node, [exp, one])


def _log1p(ctx, node, name, args):
  """Log1p(x) as Log(Add(x, 1))."""
  del name, args
  one = _one_like(ctx, node)
  shifted = ctx.make_node('Add', [node.input[0], one]).output[0]
  node.type = 'Log'
  ctx.replace_inputs(node, [shifted])


OP_HANDLERS = {'Expm1': (_expm1, []), 'Log1p': (_log1p, [])}
