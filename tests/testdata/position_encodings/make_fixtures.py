"""Records real Trax's research positional encodings as test fixtures.

NOT part of the test suite; CI never runs it (it needs Trax 1.4.1 on JAX).
Kept so the fixtures beside it can be regenerated and audited:

    JAX_PLATFORMS=cpu /work/trax_venv/bin/python \
        tests/testdata/position_encodings/make_fixtures.py

Writes `fixtures.npz` (arrays) and `cases.json` (constructor arguments and
printed names). Only deterministic computations are recorded: the threefry
functions, and the layers in 'eval'/'predict' mode (the 'train'-mode random
offsets depend on JAX's random bits, which tfnp_trax does not reproduce).
"""

import json
import os

os.environ.setdefault('JAX_PLATFORMS', 'cpu')
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

# pylint: disable=g-import-not-at-top,wrong-import-position
import warnings

warnings.filterwarnings('ignore')

import jax
import numpy as np
from trax import fastmath
from trax import shapes
import trax.layers as tl
from jax._src import prng as jax_prng

# JAX 0.4.30 (the version beside Trax 1.4.1 here) no longer exports
# jax.random.threefry_2x32, which Trax's threefry functions and
# InfinitePositionalEncoding call; the same function lives in jax._src.prng.
if not hasattr(jax.random, 'threefry_2x32'):
  jax.random.threefry_2x32 = jax_prng.threefry_2x32

OUT_DIR = os.path.dirname(os.path.abspath(__file__))


def _x(seed, shape):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


# name -> (class name, kwargs, input shape, predict_steps or None)
CASES = {
    'sincos_eval': ('SinCosPositionalEncoding', dict(mode='eval'),
                    (2, 5, 6), None),
    'sincos_predict': ('SinCosPositionalEncoding', dict(mode='predict'),
                       (2, 5, 6), (1, 2, 2)),
    'fixed_base_eval': ('FixedBasePositionalEncoding',
                        dict(bases=[3, 5], n_digits=2, mode='eval'),
                        (2, 6, 4), None),
    'fixed_base_default_eval': ('FixedBasePositionalEncoding',
                                dict(mode='eval'), (1, 20, 16), None),
    'fixed_base_predict': ('FixedBasePositionalEncoding',
                           dict(bases=[3, 5], n_digits=2, mode='predict'),
                           (2, 6, 4), (1, 2, 3)),
    'infinite_any': ('InfinitePositionalEncoding',
                     dict(affine=False, mode='eval'), (2, 5, 6), None),
    'infinite_diag_odd': ('InfinitePositionalEncoding',
                          dict(affine=False, transform='diag', mode='eval'),
                          (1, 9, 5), None),
    'infinite_none_time_bin': ('InfinitePositionalEncoding',
                               dict(affine=False, transform='none',
                                    time_bin_length=3, drift=0.1,
                                    mode='eval'), (2, 7, 6), None),
    'infinite_depth2': ('InfinitePositionalEncoding',
                        dict(affine=False, transform='none', mode='eval'),
                        (1, 4, 2), None),
    'time_bin_eval': ('TimeBinPositionalEncoding',
                      dict(time_bin_length=3, mode='eval'), (2, 7, 5), None),
    'time_bin_narrow': ('TimeBinPositionalEncoding',
                        dict(time_bin_length=2, mode='eval'), (1, 5, 2),
                        None),
    'time_bin_predict': ('TimeBinPositionalEncoding',
                         dict(time_bin_length=3, mode='predict'), (2, 7, 5),
                         (1, 1, 1, 1, 1, 1, 1)),
}


def main():
  arrays, cases = {}, {}
  # threefry: a few keys and counters.
  noise_key = jax.random.split(jax.random.PRNGKey(234234535))[0]
  arrays['threefry/noise_key'] = np.asarray(noise_key)
  key = np.array([0x12345678, 0x9ABCDEF0], np.uint32)
  x = np.random.default_rng(0).integers(0, 2**32, size=(3, 4, 2),
                                        dtype=np.uint64).astype(np.uint32)
  arrays['threefry/key'] = key
  arrays['threefry/x'] = x
  arrays['threefry/prf'] = np.asarray(
      tl.threefry_2x32_prf(jax.numpy.asarray(key), jax.numpy.asarray(x)))
  arrays['threefry/prange_3_11'] = np.asarray(
      tl.threefry_2x32_prange(jax.numpy.asarray(key), 3, 11))
  arrays['threefry/prange_noise_0_8'] = np.asarray(
      tl.threefry_2x32_prange(noise_key, 0, 8))

  for name, (cls, kwargs, shape, steps) in CASES.items():
    layer = getattr(tl, cls)(**kwargs)
    x = _x(len(arrays), shape)
    sig_shape = shape if steps is None else (shape[0], steps[0], shape[2])
    layer.init(shapes.ShapeDtype(sig_shape), rng=fastmath.random.get_prng(0))
    leaves = [np.asarray(w) for w in fastmath.tree_flatten(layer.weights)]
    arrays[f'{name}/x'] = x
    for i, w in enumerate(leaves):
      arrays[f'{name}/w{i}'] = w
    if steps is None:
      y = layer(x, rng=fastmath.random.get_prng(1))
    else:
      ys, start = [], 0
      for n in steps:
        ys.append(np.asarray(layer(x[:, start:start + n])))
        start += n
      y = np.concatenate(ys, 1)
      arrays[f'{name}/final_state'] = np.asarray(
          fastmath.tree_flatten(layer.state)[0])
    arrays[f'{name}/y'] = np.asarray(y)
    cases[name] = {'cls': cls, 'kwargs': kwargs, 'steps': steps,
                   'repr': str(layer), 'n_weights': len(leaves)}
    print(name, np.asarray(y).shape, len(leaves))
  with open(os.path.join(OUT_DIR, 'cases.json'), 'w') as f:
    json.dump({'generator': {'trax': '1.4.1', 'jax': jax.__version__,
                             'script': 'tests/testdata/position_encodings/'
                                       'make_fixtures.py'},
               'cases': cases}, f, indent=1, sort_keys=True)
  np.savez_compressed(os.path.join(OUT_DIR, 'fixtures.npz'), **arrays)


if __name__ == '__main__':
  main()
