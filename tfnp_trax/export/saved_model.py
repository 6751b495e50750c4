"""Saves a layer as a TensorFlow SavedModel that loads without tfnp_trax.

The SavedModel holds the weights and state as variables and a
`serving_default` signature with named inputs and outputs, so it can be
served (TF Serving, `saved_model_cli`) or loaded with `tf.saved_model.load`
in a process that has only TensorFlow.
"""

import tensorflow as tf

from tfnp_trax.export import _args
from tfnp_trax.export import _module
from tfnp_trax.export import _trees

__all__ = ['save_model', 'serving_function']


def serving_function(model, module, input_signature, input_names=None,
                     output_names=None, signature_name='serving_default'):
  """A tf.function running `model` on `module`'s variables.

  Its inputs take the signature's rank and dtype; sizes are checked in the
  graph against `input_signature` (None sizes accept anything), so a wrong
  shape fails with a message naming the model, the input and both shapes.

  Args:
    model: the layer to run (its `pure_fn` is traced once).
    module: a `LayerModule` holding the weights and state.
    input_signature: a ShapeDtype, or a tuple of them for several inputs.
    input_names: names of the inputs (default 'inputs' or 'inputs_0', ...).
    output_names: names of the outputs (default 'outputs' or 'outputs_0',
      ...).
    signature_name: the signature's name, used in error messages.

  Returns:
    A tf.function with a fixed input_signature, returning a dict of outputs.
  """
  _args.check_layer(model, 'serving_function')
  if not isinstance(module, _module.LayerModule):
    raise TypeError(f'serving_function: module must be the LayerModule that '
                    f'holds the weights (LayerModule(model, weights, '
                    f'state)), got {type(module).__name__}.')
  where = f'{model.name} ({signature_name})'
  sigs, names = _module.input_specs(model, input_signature, input_names,
                                    'save_model')

  def serve(*xs):
    xs = [_module.checked_input(x, s, n, where)
          for x, s, n in zip(xs, sigs, names)]
    return _module.run_layer(model, xs, module.read_weights(),
                             module.read_state(), output_names, where)

  specs = [_module.relaxed_spec(s, n) for s, n in zip(sigs, names)]
  return tf.function(serve, input_signature=specs, autograph=False)


def _check_signature_builders(signatures):
  """Raises unless `signatures` is None or a dict name -> callable."""
  if signatures is None:
    return
  if not isinstance(signatures, dict):
    raise TypeError(f'save_model: signatures must be a dict from signature '
                    f'name to builder (e.g. decode_signatures(model)), got '
                    f'{type(signatures).__name__}.')
  for name, builder in signatures.items():
    if name == 'serving_default':
      raise ValueError("save_model: signatures may not replace "
                       "'serving_default', which serves the model itself; "
                       'give the extra signature another name.')
    if not callable(builder):
      raise TypeError(
          f'save_model: signatures[{name!r}] must be a builder, a callable '
          f'taking the LayerModule and returning a tf.function, got '
          f'{type(builder).__name__} ({builder!r:.60}).')


def save_model(model, path, input_signature, weights=None, state=None,
               signatures=None, input_names=None, output_names=None):
  """Writes `model` with its weights to `path` as a SavedModel.

  The forward pass uses the state as it is (nothing is updated), with the
  fixed rng `fastmath.random.get_prng(0)`, so export models built with
  `mode='eval'` (or 'predict').

  Example:
    >>> model = models.MLP(layer_widths=(8, 3))
    >>> sig = shapes.ShapeDtype((2, 4))
    >>> _ = model.init(sig)
    >>> _ = save_model(model, export_dir, sig)
    >>> loaded = tf.saved_model.load(export_dir)
    >>> out = loaded.signatures['serving_default'](inputs=tf.ones((2, 4)))
    >>> tuple(out['outputs'].shape)
    (2, 3)

  Args:
    model: an initialized layer (or any layer, if `weights` is given).
    path: the directory to write.
    input_signature: ShapeDtype (or tuple of them) of the inputs; a size may
      be None (e.g. the batch) where the model's code allows it.
    weights: the weight tree to save; `model.weights` by default.
    state: the state tree to save; `model.state` by default.
    signatures: optional dict of further signatures: name -> builder, a
      callable taking the `LayerModule` and returning a tf.function with an
      input_signature (see `decode_signatures`).
    input_names: names of the serving inputs.
    output_names: names of the serving outputs.

  Returns:
    `path`.

  Raises:
    ValueError: if the model is not initialized and no weights are given,
      the signature does not fit the model, or names are not distinct.
    TypeError: if the model is not a layer, or a signature entry, a
      signatures builder or `path` has the wrong type.
    NotADirectoryError: if `path` (or a folder above it) is a file.
    PermissionError: if `path` would be created in a read-only directory.
  """
  _args.check_layer(model, 'save_model')
  path = _args.check_export_dir(path, 'save_model')
  if output_names is not None:
    _args.check_names((output_names,) if isinstance(output_names, str)
                      else tuple(output_names), 'output_names', 'save_model')
  _check_signature_builders(signatures)
  weights, state = _trees.weights_and_state(model, weights, state,
                                            'save_model')
  module = _module.LayerModule(model, weights, state)
  functions = {'serving_default': serving_function(
      model, module, input_signature, input_names, output_names)}
  for name, builder in (signatures or {}).items():
    functions[name] = builder(module)
    if not hasattr(functions[name], 'get_concrete_function'):
      raise TypeError(
          f'save_model: signatures[{name!r}] returned '
          f'{type(functions[name]).__name__}; a builder must return a '
          f'tf.function with an input_signature (see decode_signatures).')
  concrete = {name: fn.get_concrete_function()
              for name, fn in functions.items()}
  # The traced functions are also attributes (`loaded.serve(x)`). Attaching
  # the concrete functions rather than the tf.functions keeps saving from
  # tracing every model a second time.
  module.serve = concrete['serving_default']
  for name in functions:
    if name != 'serving_default':
      setattr(module, name, concrete[name])
  tf.saved_model.save(module, path, signatures=concrete)
  return path
