"""One step of decoding a 'predict'-mode model: pure functions of tensors.

The samplers in `supervised.decoding` call these from a Python loop, one
compiled call per token; the SavedModel signatures in `export` call the
same functions inside a `tf.while_loop`, so a served model decodes exactly
as the library does.
"""

import math
import numbers
from typing import NamedTuple

import numpy as np

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import causal_attention
from tfnp_trax.layers import positional

__all__ = ['LengthBound', 'walk', 'modes', 'length_limit',
           'check_temperature', 'sample_token',
           'sample_step', 'batch_major', 'gather_rows', 'repeat_rows',
           'beam_step']


class LengthBound(NamedTuple):
  """The sequence-length limit a model's layer puts on decoding.

  Attributes:
    layer_name: name of the layer that sets the limit (for error messages).
    limit: how many positions that layer supports in all.
    position: how many of those positions its state already holds.
  """
  layer_name: str
  limit: int
  position: int

  @property
  def room(self):
    """Positions still free."""
    return self.limit - self.position


def walk(layer):
  """`layer` and every layer below it, depth first."""
  yield layer
  for sub in layer.sublayers:
    yield from walk(sub)


def modes(model):
  """The modes ('train', 'eval', 'predict') of `model`'s mode-aware layers."""
  return {layer.mode for layer in walk(model)
          if isinstance(getattr(type(layer), 'mode', None), property)}


def _int_or_none(x):
  try:
    return int(x)
  except (TypeError, ValueError):
    return None


def length_limit(model, eval_mode):
  """The tightest sequence-length bound on decoding `model`, a LengthBound.

  When decoding with the cache, only 'predict'-mode layers bound the length
  and the position is how many positions their state already holds; in eval
  mode every positional encoding bounds it, from position 0. None if no
  layer bounds the length.
  """
  best = None
  for layer in walk(model):
    if isinstance(layer, positional.PositionalEncoding):
      if eval_mode:
        found = LengthBound(layer.name, layer.max_len, 0)
      elif layer.mode == 'predict':
        found = LengthBound(layer.name, layer.max_len,
                            _int_or_none(layer.state))
      else:
        continue
    elif (isinstance(layer, causal_attention.DotProductCausalAttention)
          and not eval_mode and layer.mode == 'predict'):
      state = layer.state
      # The attention cache is (keys, values, index): the index counts the
      # positions already written.
      found = LengthBound(
          layer.name, layer.max_inference_length,
          _int_or_none(state[2]) if isinstance(state, tuple) else None)
    else:
      continue
    if found.position is None:  # Not initialized yet: sets no bound.
      continue
    if best is None or found.room < best.room:
      best = found
  return best


def check_temperature(temperature, fn_name):
  """Raises unless `temperature` is a number >= 0 (0: greedy; not NaN)."""
  if isinstance(temperature, np.ndarray) and temperature.ndim == 0:
    temperature = temperature.item()  # A 0-d array holds one number.
  if isinstance(temperature, bool) or not isinstance(temperature,
                                                     numbers.Real):
    raise TypeError(f'{fn_name}: temperature must be a number >= 0 (0.0 is '
                    f'greedy), got {temperature!r} '
                    f'({type(temperature).__name__}).')
  # +inf is allowed: Trax documents it as sampling every token alike.
  if math.isnan(temperature) or temperature < 0:
    raise ValueError(f'{fn_name}: temperature must be >= 0, got '
                     f'{temperature}. Use 0.0 for greedy decoding, 1.0 to '
                     f'sample from the model\'s distribution.')


def sample_token(out, index, key, temperature):
  """A token per sequence from a model's logits at position `index`.

  Args:
    out: the model's output: logits (batch, length, vocab), or a tuple whose
      first entry holds them.
    index: int32 scalar, the position whose logits are sampled.
    key: the rng key for sampling (unused at temperature 0).
    temperature: a Python float; 0.0 takes the argmax.

  Returns:
    int32 (batch,) token ids.
  """
  logits = out[0] if isinstance(out, (list, tuple)) else out
  logits = jnp.take(jnp.asarray(logits), index, axis=1).astype(jnp.float32)
  log_probs = logits - fastmath.logsumexp(logits, axis=-1, keepdims=True)
  if temperature == 0.0:
    return jnp.argmax(log_probs, axis=-1).astype(jnp.int32)
  return fastmath.random.categorical(key, log_probs * (1.0 / temperature))


def sample_step(model, x, weights, state, rng, index, temperature):
  """Runs `model` on `x` and samples the token after position `index`.

  The rng is split in three: one key for the model, one for the sample and
  one carried to the next step.

  Returns:
    `(tokens (batch,), new_state, next_rng)`.
  """
  keys = fastmath.random.split(rng, 3)
  out, new_state = model.pure_fn(x, weights, state, keys[0])
  return sample_token(out, index, keys[1], temperature), new_state, keys[2]


def batch_major(leaf, batch):
  """Whether a state leaf's leading axis runs over the batch.

  Batch-major leaves are [batch, ...] or, as attention caches are,
  [batch * heads, ...]; scalars (positions) are shared by every row.
  """
  shape = tuple(np.shape(leaf))
  return bool(shape) and shape[0] % batch == 0


def gather_rows(leaf, rows, n_rows):
  """Rows of a batch-major leaf, `rows` indexing its first n_rows-sized axis."""
  shape = tuple(leaf.shape)
  grouped = jnp.reshape(leaf, (n_rows, shape[0] // n_rows) + shape[1:])
  return jnp.reshape(jnp.take(grouped, rows, axis=0), shape)


def repeat_rows(flat_state, batch_size, n_beams, major):
  """The cache for beam search: beam k of sequence b copies b's rows."""
  return [
      jnp.reshape(jnp.repeat(jnp.reshape(
          leaf, (batch_size, -1) + tuple(leaf.shape[1:])), n_beams, axis=0),
                  (-1,) + tuple(leaf.shape[1:])) if is_major else leaf
      for leaf, is_major in zip(flat_state, major)]


def beam_step(model, x, t, weights, state, log_probs_sum, finished, lengths,
              n_beams, eos_id, alpha, major):
  """One step of beam search over `batch * n_beams` cache rows.

  Row `b * n_beams + k` is beam k of sequence b. Every row is fed its newest
  token, every one-token extension is scored by log p / ((5 + length) / 6)
  ** alpha, and the best `n_beams` of each sequence survive; a finished beam
  competes as itself, unchanged. The cache rows are reordered to follow
  their beams.

  Args:
    model: the 'predict'-mode layer.
    x: its input for this step: tokens (batch * n_beams, T), or (source,
      tokens) for two-input models.
    t: int32 scalar, the number of tokens each beam will hold after this
      step (1 for the first).
    weights: the model's weights.
    state: its state (the cache), a tree.
    log_probs_sum: float32 (batch, n_beams), each beam's log-probability.
    finished: bool (batch, n_beams), beams that produced `eos_id`.
    lengths: int32 (batch, n_beams), the length of each finished beam.
    n_beams: beams per sequence.
    eos_id: the id that finishes a beam (-1: none).
    alpha: the length-penalty exponent.
    major: per leaf of `fastmath.tree_flatten(state)`, whether it is
      batch-major (see `batch_major`).

  Returns:
    `(token, parent, sums, finished, lengths, scores, flat_state)`: each
    surviving beam's new token (0 after eos) and the beam it extends
    (batch, n_beams), the updated sums, flags and lengths, the beams'
    length-normalized scores (best first) and the reordered flat state.
  """
  batch_size = log_probs_sum.shape[0]
  n_rows = batch_size * n_beams
  out, new_state = model.pure_fn(x, weights, state,
                                 fastmath.random.get_prng(0))
  logits = out[0] if isinstance(out, (list, tuple)) else out
  logits = logits[:, -1, :].astype(jnp.float32)
  vocab = logits.shape[-1]
  if n_beams > vocab:
    raise ValueError(
        f'beam_search: n_beams={n_beams} is larger than the vocabulary: '
        f'the model scores {vocab} tokens, so at most {vocab} beams can '
        f'differ after the first step. Use n_beams <= {vocab}.')
  log_probs = logits - fastmath.logsumexp(logits, axis=-1, keepdims=True)
  log_probs = jnp.reshape(log_probs, (batch_size, n_beams, vocab))
  done = finished[:, :, None]
  # A finished beam has one candidate, itself (in column 0), unchanged.
  only_first = jnp.arange(vocab) == 0
  neg_inf = jnp.asarray(-np.inf, jnp.float32)
  kept = jnp.where(only_first, log_probs_sum[:, :, None], neg_inf)
  raw = jnp.where(done, kept, log_probs_sum[:, :, None] + log_probs)
  t_float = jnp.asarray(t).astype(jnp.float32)
  penalty_alive = ((5.0 + t_float) / 6.0) ** alpha
  penalty_done = ((5.0 + lengths.astype(jnp.float32)) / 6.0) ** alpha
  score = jnp.where(done, raw / penalty_done[:, :, None],
                    raw / penalty_alive)
  best, index = fastmath.top_k(
      jnp.reshape(score, (batch_size, n_beams * vocab)), n_beams)
  parent = index // vocab
  token = (index % vocab).astype(jnp.int32)
  new_sum = jnp.take_along_axis(
      jnp.reshape(raw, (batch_size, n_beams * vocab)), index, axis=1)
  parent_done = jnp.take_along_axis(finished, parent, axis=1)
  parent_length = jnp.take_along_axis(lengths, parent, axis=1)
  token = jnp.where(parent_done, 0, token)  # Padding after eos.
  new_finished = parent_done | (token == eos_id)
  new_lengths = jnp.where(parent_done, parent_length, t)
  rows = jnp.reshape(
      jnp.arange(batch_size)[:, None] * n_beams + parent, (n_rows,))
  flat_new = [gather_rows(leaf, rows, n_rows) if is_major else leaf
              for leaf, is_major in zip(fastmath.tree_flatten(new_state),
                                        major)]
  return (token, parent.astype(jnp.int32), new_sum, new_finished,
          new_lengths, best, flat_new)
