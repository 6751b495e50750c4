"""Records reprs, names and stack sizes of Trax 1.4.1's reversible layers.

Run with the side Trax install (not part of CI):
  JAX_PLATFORMS=cpu /work/trax_venv/bin/python make_fixtures.py
It writes layers.json beside this file.
"""

import os
import json
import trax.layers as tl
cases = {
 'concat_pair': lambda: tl.ReversibleConcatenatePair(),
 'select_201': lambda: tl.ReversibleSelect([2, 0, 1]),
 'select_tuple': lambda: tl.ReversibleSelect((1, 0), n_in=2),
 'swap': lambda: tl.ReversibleSwap(),
 'reshape': lambda: tl.ReversibleReshape([2, 3], [6]),
 'reshape_tuple_n2': lambda: tl.ReversibleReshape((2, 3), (6,), n_in=2),
 'print_shape': lambda: tl.ReversiblePrintShape(n_in=2, msg='hi'),
 'print_shape1': lambda: tl.ReversiblePrintShape(),
 'half_residual': lambda: tl.ReversibleHalfResidual(tl.Dense(4), tl.Relu()),
 'half_residual_named': lambda: tl.ReversibleHalfResidual(tl.Dense(4), name='HR'),
 'half_residual_attn': lambda: tl.ReversibleHalfResidual(tl.LayerNorm(), attention_layer=tl.Dense(4)),
 'half_residual_2in': lambda: tl.ReversibleHalfResidual(tl.Add()),
 'serial': lambda: tl.ReversibleSerial(tl.ReversibleHalfResidual(tl.Dense(4)), tl.ReversibleSwap()),
 'serial_nested': lambda: tl.ReversibleSerial([tl.ReversibleSwap(), [tl.ReversibleHalfResidual(tl.Dense(4))]]),
}
out = {}
for k, f in cases.items():
  l = f()
  out[k] = {'repr': repr(l), 'n_in': l.n_in, 'n_out': l.n_out, 'name': l.name}
try:
  tl.ReversibleSerial(tl.Dense(3))
except Exception as e:
  out['err_serial'] = str(e)
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'layers.json')
with open(path, 'w') as f:
  json.dump(out, f, indent=1, sort_keys=True)
  f.write('\n')
