"""Exports a training Loop's model as a SavedModel."""

from absl import logging

from tfnp_trax import shapes
from tfnp_trax.export import _args
from tfnp_trax.export import saved_model

__all__ = ['export_loop']


def _input_signatures(loop, n_in):
  """ShapeDtypes of the model inputs in a Loop training batch."""
  sigs = loop.input_signature
  sigs = tuple(sigs) if isinstance(sigs, (list, tuple)) else (sigs,)
  return sigs[:max(n_in, 1)]


def _with_batch(sigs, batch):
  return tuple(shapes.ShapeDtype((batch,) + tuple(s.shape[1:]), s.dtype)
               for s in sigs)


def export_loop(loop, path, batch_polymorphic=True, use_ema=None):
  """Saves `loop.eval_model` with its trained weights to `path`.

  The input signature is taken from the Loop's training data: the first
  `n_in` arrays of a batch. With `batch_polymorphic`, the batch size is
  exported as None when the model's code allows it; otherwise (or if
  tracing with an unknown batch fails) it is the training batch size.

  Args:
    loop: a `tfnp_trax.supervised.training.Loop` (trained or not).
    path: the SavedModel directory to write.
    batch_polymorphic: try an unknown batch size first.
    use_ema: write the moving average of the weights (a Loop built with
      `ema_decay`) instead of the trained weights. None (the default) does
      so when the Loop evaluates with it (`eval_with_ema`); True without
      an average raises.

  Returns:
    The input signature used (a tuple of ShapeDtypes).
  """
  if not (hasattr(loop, 'eval_model') and hasattr(loop, 'model')):
    raise TypeError(f'export_loop: expected a training.Loop (it holds the '
                    f'trained model), got {type(loop).__name__} '
                    f'({loop!r:.60}); to save a layer use save_model.')
  path = _args.check_export_dir(path, 'export_loop')
  model = loop.eval_model
  if model.initialized:
    weights, state = model.weights, model.state
  else:  # A separate eval model is given its weights only after training.
    weights, state = loop.model.weights, loop.model.state
  ema = getattr(loop, 'ema_weights', None)
  if use_ema and ema is None:
    raise ValueError('export_loop: use_ema=True, but the Loop keeps no '
                     'moving average of the weights; build it with '
                     'ema_decay=... or pass use_ema=None.')
  if use_ema is None:
    use_ema = ema is not None and getattr(loop, 'eval_with_ema', False)
  if use_ema:
    weights = ema
  elif ema is not None:  # The trained weights, which the model layer holds.
    weights = loop.model.weights
  sigs = _input_signatures(loop, model.n_in)
  candidates = [_with_batch(sigs, None), sigs] if batch_polymorphic else [sigs]
  for i, candidate in enumerate(candidates):
    signature = candidate[0] if len(candidate) == 1 else candidate
    try:
      saved_model.save_model(model, path, signature, weights=weights,
                             state=state)
      return candidate
    except Exception as e:  # pylint: disable=broad-except
      if i == len(candidates) - 1:
        raise
      logging.info('export_loop: %s does not trace with an unknown batch '
                   'size (%s); exporting batch size %d.', model.name,
                   str(e).splitlines()[-1][:200], sigs[0].shape[0])
  return None
