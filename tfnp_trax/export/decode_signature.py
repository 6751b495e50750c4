"""SavedModel signatures for token-by-token decoding with a cache.

A 'predict'-mode sequence model (e.g. `TransformerLM(..., mode='predict')`)
keeps its key/value cache in its layer state. `decode_signatures` exports
that state as explicit tensors, so a server holding only TensorFlow can
sample: call `init_cache`, then `decode_step` once per token, feeding back
the cache it returns.
"""

import numpy as onp
import tensorflow as tf

from tfnp_trax import fastmath
from tfnp_trax import shapes
from tfnp_trax.export import _args
from tfnp_trax.export import _module
from tfnp_trax.export import _predict_model
from tfnp_trax.layers import forward_only

__all__ = ['decode_signatures']


def decode_signatures(predict_model, batch_size=1, token_dtype=onp.int32):
  """`decode_step` and `init_cache` signature builders for `save_model`.

  For one-input language models in 'predict' mode, such as TransformerLM.

  `decode_step` takes `tokens` (batch_size, 1) and the cache tensors
  `cache_0`, `cache_1`, ... (the predict model's state, flattened) and
  returns `logits` (batch_size, 1, vocab) and the updated `cache_*`.
  `init_cache` takes a scalar int32 `batch_size` and returns the empty
  cache. Both run at the fixed `batch_size` given here (attention layers
  need a static batch size), so export once per batch size served; calling
  them with another batch size fails with a message that says so.

  Example:
    >>> lm = models.TransformerLM(16, d_model=8, d_ff=16, n_layers=1,
    ...                           n_heads=2, max_len=8, mode='eval')
    >>> _ = lm.init(shapes.ShapeDtype((1, 8), jnp.int32))
    >>> lm_predict = models.TransformerLM(16, d_model=8, d_ff=16,
    ...                                   n_layers=1, n_heads=2, max_len=8,
    ...                                   mode='predict')
    >>> _ = save_model(lm, export_dir,
    ...                shapes.ShapeDtype((1, 8), jnp.int32),
    ...                signatures=decode_signatures(lm_predict))

  Args:
    predict_model: the same architecture as the exported model, built with
      `mode='predict'`; its weights are taken from the exported model.
    batch_size: the number of sequences decoded together.
    token_dtype: dtype of the token ids.

  Returns:
    A dict name -> builder, for `save_model(..., signatures=...)`.
  """
  _args.check_layer(predict_model, 'decode_signatures')
  _args.check_count(batch_size, 'batch_size', 'decode_signatures')
  if not onp.issubdtype(onp.dtype(token_dtype), onp.integer):
    raise TypeError(f'decode_signatures: token_dtype must be an integer '
                    f'dtype (token ids, e.g. np.int32), got {token_dtype!r}.')
  if predict_model.n_in != 1:
    raise ValueError(
        f'decode_signatures: {predict_model.name} takes {predict_model.n_in} '
        f'inputs; decode_step serves one-input language models such as '
        f'TransformerLM (feed an encoder-decoder its source through a '
        f'separate signature).')
  token_sig = shapes.ShapeDtype((batch_size, 1), token_dtype)
  cache = _predict_model.empty_cache(predict_model, token_sig)
  template = fastmath.nested_map(lambda _: 0, cache)
  flat_cache = [tf.convert_to_tensor(c) for c in fastmath.tree_flatten(cache)]
  cache_sigs = [shapes.ShapeDtype(tuple(c.shape), c.dtype)
                for c in flat_cache]
  names = [f'cache_{i}' for i in range(len(flat_cache))]
  where = f'{predict_model.name} (decode_step)'

  def decode_step_builder(module):
    _predict_model.check_weights_fit(module, predict_model,
                                     'decode_signatures')

    def step(tokens, *cache_in):
      tokens = _module.checked_input(tokens, token_sig, 'tokens', where)
      cache_in = [_module.checked_input(c, s, n, where)
                  for c, s, n in zip(cache_in, cache_sigs, names)]
      state = fastmath.tree_unflatten(list(cache_in), template)[0]
      with forward_only.forward_only():
        logits, new_state = predict_model.pure_fn(
            tokens, module.read_weights(), state,
            fastmath.random.get_prng(0))
      outputs = {'logits': tf.convert_to_tensor(logits)}
      for name, value in zip(names, fastmath.tree_flatten(new_state)):
        outputs[name] = tf.convert_to_tensor(value)
      return outputs
    specs = [_module.relaxed_spec(token_sig, 'tokens')] + [
        _module.relaxed_spec(s, n) for s, n in zip(cache_sigs, names)]
    return tf.function(step, input_signature=specs, autograph=False)

  def init_cache_builder(module):
    del module
    message = (f'{predict_model.name} (init_cache): this SavedModel decodes '
               f'batches of exactly {batch_size} sequences; got batch_size')

    def init_cache(batch_size_in):
      tf.debugging.Assert(tf.equal(batch_size_in, batch_size),
                          [message, batch_size_in])
      gate = tf.debugging.check_numerics(
          tf.where(tf.equal(batch_size_in, batch_size), 0.0, float('nan')),
          message + ' of another value')
      # The gate makes every output depend on the check (see checked_input).
      return {n: tf.identity(c) + tf.cast(gate, c.dtype)
              for n, c in zip(names, flat_cache)}
    spec = tf.TensorSpec((), tf.int32, name='batch_size')
    return tf.function(init_cache, input_signature=[spec], autograph=False)

  return {'decode_step': decode_step_builder,
          'init_cache': init_cache_builder}
