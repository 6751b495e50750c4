"""Records Trax 1.4.1's efficient-attention outputs for tests (not run in CI).

Run with a Trax 1.4.1 install:
  JAX_PLATFORMS=cpu python make_fixtures.py
Writes fixtures.npz beside this file: for each case, the inputs, the
layer's weights (per-head stacks) and its output. The cases avoid the
random parts (hashing with more than one chunk, dropout), so tfnp_trax
must reproduce them exactly given the same weights.
"""

import json
import os

import numpy as np
from trax import fastmath
from trax import shapes
from trax.layers.research import efficient_attention as ea

CASES = {
    'sa_chunked_causal': (
        'SelfAttention', dict(n_heads=2, d_qk=3, d_v=4, causal=True,
                              chunk_len=4, n_chunks_before=1), (2, 16, 6),
        None),
    'sa_shared_masked': (
        'SelfAttention', dict(n_heads=2, d_qk=3, d_v=4, share_qk=True,
                              masked=True, chunk_len=4, n_chunks_before=1,
                              n_chunks_after=1), (2, 16, 6), 'mask'),
    'lsh_one_chunk': (
        'LSHSelfAttention', dict(n_heads=2, d_qk=3, d_v=4, causal=True,
                                 chunk_len=8, n_chunks_before=0, n_hashes=1,
                                 n_buckets=4), (2, 8, 6), None),
    'encdec_masked': (
        'EncDecAttention', dict(n_heads=2, d_qk=3, d_v=4, masked=True),
        (2, 3, 6), 'encoder'),
}


def main():
  rs = np.random.RandomState(0)
  arrays, configs = {}, {}
  for name, (cls, kw, shape, extra) in CASES.items():
    x = rs.normal(size=shape).astype(np.float32)
    if extra == 'mask':
      mask = np.ones(shape[:2], bool)
      mask[1, 10:] = False
      inputs = (x, mask)
    elif extra == 'encoder':
      kv = rs.normal(size=(shape[0], 5, 4)).astype(np.float32)
      mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
      inputs = (x, kv, mask)
    else:
      inputs = x
    layer = getattr(ea, cls)(mode='eval', use_reference_code=True, **kw)
    layer.init(shapes.signature(inputs), rng=fastmath.random.get_prng(7))
    y = layer(inputs)
    for i, a in enumerate(inputs if isinstance(inputs, tuple) else (inputs,)):
      arrays[f'{name}/input{i}'] = np.asarray(a)
    for i, w in enumerate(layer.weights):
      arrays[f'{name}/weight{i}'] = np.asarray(w)
    arrays[f'{name}/output'] = np.asarray(y)
    configs[name] = [cls, kw]
  reprs = {
      'SelfAttention(masked=True)': str(ea.SelfAttention(masked=True)),
      'LSHSelfAttention()': str(ea.LSHSelfAttention()),
      'EncDecAttention()': str(ea.EncDecAttention()),
      'PureLSHSelfAttention(masked=True)': str(
          ea.PureLSHSelfAttention(masked=True)),
      'MixedLSHSelfAttention(causal=True)': str(
          ea.MixedLSHSelfAttention(causal=True)),
      'PureLSHSelfAttentionWrapper(n_heads=2)': str(
          ea.PureLSHSelfAttentionWrapper(
              n_heads=2, pure_lsh_implementation=ea.PureLSHSelfAttention)),
      'LSHFF(8, 4)': str(ea.LSHFF(8, 4)),
  }
  here = os.path.dirname(os.path.abspath(__file__))
  np.savez_compressed(os.path.join(here, 'fixtures.npz'), **arrays)
  with open(os.path.join(here, 'configs.json'), 'w') as f:
    json.dump({'cases': configs, 'reprs': reprs}, f, indent=1,
              sort_keys=True)


if __name__ == '__main__':
  main()
