"""Loads original TensorFlow BERT checkpoints into `BERT`'s weight layout.

Google's BERT checkpoints name variables `bert/embeddings/...`,
`bert/encoder/layer_<i>/...` and `bert/pooler/...`, with attention
projections as (d_model, d_model) matrices. Trax's `SelfAttention` keeps
them per head, so query/key/value kernels become (heads, d_model, d_head)
and the output kernel (heads, d_head, d_model). The number of layers and
the head width are read from the model's own weights, so any BERT size
loads (Trax 1.4.1 assumes bert-base's 12 layers of 64-wide heads).
"""

import os
import shutil
import urllib.request
import zipfile

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.models.research import _bert_tf_bundle

__all__ = ['MODEL_LINKS', 'checkpoint_variable_names', 'load_weights',
           'download_model']

MODEL_LINKS = {
    'bert-base-uncased':
        'https://storage.googleapis.com/bert_models/2018_10_18/'
        'uncased_L-12_H-768_A-12.zip',
}

# Leaves of `PretrainedBERT`'s weights before and after the encoder blocks,
# and in each block.
_N_EMBEDDING_LEAVES = 5
_N_POOLER_LEAVES = 2
_N_BLOCK_LEAVES = 16


def _block_names(i):
  """Checkpoint names of block i, in the order of the block's leaves."""
  layer = f'bert/encoder/layer_{i}'
  attention = f'{layer}/attention'
  return ([f'{attention}/self/{p}/kernel' for p in ('query', 'key', 'value')]
          + [f'{attention}/output/dense/kernel']
          + [f'{attention}/self/{p}/bias' for p in ('query', 'key', 'value')]
          + [f'{attention}/output/dense/bias',
             f'{attention}/output/LayerNorm/gamma',
             f'{attention}/output/LayerNorm/beta',
             f'{layer}/intermediate/dense/kernel',
             f'{layer}/intermediate/dense/bias',
             f'{layer}/output/dense/kernel', f'{layer}/output/dense/bias',
             f'{layer}/output/LayerNorm/gamma',
             f'{layer}/output/LayerNorm/beta'])


def checkpoint_variable_names(n_layers):
  """The checkpoint variables BERT reads, in the order of its weight leaves."""
  names = ['bert/embeddings/word_embeddings',
           'bert/embeddings/token_type_embeddings',
           'bert/embeddings/position_embeddings',
           'bert/embeddings/LayerNorm/gamma',
           'bert/embeddings/LayerNorm/beta']
  for i in range(n_layers):
    names += _block_names(i)
  return names + ['bert/pooler/dense/kernel', 'bert/pooler/dense/bias']


def _to_trax_layout(name, x, d_head):
  """Reshapes one checkpoint array to the shape of its weight leaf."""
  # Position embeddings stay (max_len, d_model), the shape of
  # PositionalEncoding's weight. (Trax 1.4.1's loader adds a leading axis
  # that its PositionalEncoding no longer has, so its shape check fails.)
  if '/attention/self/' in name and name.endswith('kernel'):
    # (d_model, heads * d_head) -> (heads, d_model, d_head)
    return x.reshape((x.shape[0], -1, d_head)).swapaxes(0, 1)
  if '/attention/self/' in name:  # A bias: (heads * d_head) -> (heads, d_head)
    return x.reshape((-1, d_head))
  if name.endswith('attention/output/dense/kernel'):
    # (heads * d_head, d_model) -> (heads, d_head, d_model)
    return x.reshape((-1, d_head, x.shape[-1]))
  return x


def load_weights(checkpoint, weights):
  """`weights` (PretrainedBERT's tree) with values from a TF BERT checkpoint.

  Args:
    checkpoint: the checkpoint prefix, e.g. `.../bert_model.ckpt`.
    weights: the initialized weight tree, giving structure, shapes, dtypes.

  Returns:
    A weight tree of the same structure holding the checkpoint's values.

  Raises:
    ValueError: if the weights are not BERT's, or a checkpoint array does
      not fit its weight (different max_len, d_model, vocab or depth).
  """
  leaves = fastmath.tree_leaves(weights)
  n_blocks, extra = divmod(len(leaves) - _N_EMBEDDING_LEAVES -
                           _N_POOLER_LEAVES, _N_BLOCK_LEAVES)
  if extra or n_blocks < 0:
    raise ValueError(
        f'BERT checkpoint loading: the model has {len(leaves)} weight '
        f'leaves, which is not a BERT layout (5 + 16 per layer + 2).')
  d_head = leaves[_N_EMBEDDING_LEAVES].shape[-1] if n_blocks else 1
  names = checkpoint_variable_names(n_blocks)
  arrays = _bert_tf_bundle.read_tensor_bundle(checkpoint, names)
  new_leaves = []
  for name, leaf in zip(names, leaves):
    try:
      value = _to_trax_layout(name, arrays[name], d_head)
    except ValueError as e:  # NumPy cannot split it into heads.
      raise ValueError(
          f'BERT checkpoint {checkpoint}: variable {name} of shape '
          f'{tuple(arrays[name].shape)} does not split into heads of width '
          f'{d_head}; build BERT with the checkpoint\'s d_model and '
          f'n_heads.') from e
    if tuple(value.shape) != tuple(leaf.shape):
      shape = tuple(arrays[name].shape)
      if tuple(value.shape) != shape:
        shape = f'{shape} ({tuple(value.shape)} per head)'
      raise ValueError(
          f'BERT checkpoint {checkpoint}: variable {name} has shape '
          f'{shape}, but the model\'s weight has shape '
          f'{tuple(leaf.shape)}; build BERT '
          f'with the checkpoint\'s sizes (d_model, vocab_size, max_len, '
          f'type_vocab_size, n_heads, d_ff, n_layers).')
    new_leaves.append(jnp.asarray(value, dtype=leaf.dtype))
  return fastmath.tree_unflatten(new_leaves, weights)[0]


def _find_checkpoint(directory):
  """Walks down single-folder nesting; returns (dir, '<name>.ckpt')."""
  while True:
    entries = os.listdir(directory)
    if len(entries) != 1 or not os.path.isdir(
        os.path.join(directory, entries[0])):
      break
    directory = os.path.join(directory, entries[0])
  for name in sorted(entries):
    if '.ckpt' in name:
      return directory, name.split('.ckpt')[0] + '.ckpt'
  raise FileNotFoundError(f'{directory} contains no .ckpt files')


def download_model(model_name):
  """`(model_dir, checkpoint_file_prefix)` of a named model, fetched once.

  The model is kept in `~/trax/<model_name>`, as Trax keeps it; if that
  folder holds files it is used as is (put an unzipped checkpoint there
  to work offline).

  Raises:
    KeyError: if `model_name` is not in `MODEL_LINKS`.
  """
  if model_name not in MODEL_LINKS:
    raise KeyError(
        f'BERT: unknown model name {model_name!r}; known names are '
        f'{sorted(MODEL_LINKS)}. A checkpoint path must contain '
        f'{os.path.sep!r}.')
  directory = os.path.expanduser(os.path.join('~', 'trax', model_name))
  if os.path.isdir(directory) and os.listdir(directory):
    return _find_checkpoint(directory)
  os.makedirs(directory, exist_ok=True)
  archive = os.path.join(directory, 'model_temp')
  link = MODEL_LINKS[model_name]
  print(f'Downloading model from {link} to {directory}')
  try:
    urllib.request.urlretrieve(link, archive)
    with zipfile.ZipFile(archive) as z:
      z.extractall(directory)
  except Exception:
    # Leave no partial folder: the next call would take it for a model.
    shutil.rmtree(directory, ignore_errors=True)
    raise
  os.remove(archive)
  return _find_checkpoint(directory)
