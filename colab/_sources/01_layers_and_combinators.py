# %% [markdown]
# # Layers and combinators
#
# tfnp_trax is Trax's layer API on TensorFlow NumPy. This notebook walks
# through the pieces every model is made of:
#
# * a **layer** is a function with weights and state: `init` creates them
#   from an input signature, calling the layer runs it;
# * **combinators** (`Serial`, `Branch`, `Residual`, `Select`, ...) build
#   bigger layers from smaller ones, passing values on a *data stack*;
# * `pure_fn` is the pure core of every layer, and `fastmath.grad`
#   differentiates through it;
# * a **custom layer** needs only `forward` (and `init_weights_and_state` if
#   it has weights).
#
# At the end we train a small model by hand with `fastmath.grad` and plot
# its loss.

# %%
# Setup: installs tfnp_trax on Colab; does nothing where it is installed.
import importlib.util
import os

if importlib.util.find_spec('tfnp_trax') is None:
  get_ipython().run_line_magic('pip', 'install -q "tfnp-trax[notebooks]"')

# The automated tests set TFNP_TRAX_NOTEBOOK_SMALL=1 so that the notebook
# runs in seconds; unset, it does full-size work.
SMALL = os.environ.get('TFNP_TRAX_NOTEBOOK_SMALL') == '1'
get_ipython().run_line_magic('matplotlib', 'inline')

# %% [markdown]
# The imports are Trax's, with `trax` replaced by `tfnp_trax`.
# `jnp` is `tf.experimental.numpy` with NumPy behaviour switched on.

# %%
import numpy as np
import matplotlib.pyplot as plt

from tfnp_trax import fastmath, shapes
from tfnp_trax.fastmath import numpy as jnp
import tfnp_trax.layers as tl

# %% [markdown]
# ## A single layer
#
# `Dense(3)` maps the last axis to 3 units. Its weights do not exist until
# `init` is given an input signature (shapes and dtypes). `init` returns
# `(weights, state)`; the layer also keeps them, so it can be called
# directly afterwards.

# %%
x = np.arange(8, dtype=np.float32).reshape(2, 4)
dense = tl.Dense(3)
weights, state = dense.init(shapes.signature(x))
w, b = weights
print('signature:', shapes.signature(x))
print('weights:', w.shape, b.shape, ' state:', state)

y = dense(x)
print('y =', np.asarray(y))
# A Dense layer is x @ W + b; check it against NumPy.
np.testing.assert_allclose(y, x @ np.asarray(w) + np.asarray(b), rtol=1e-5)

# %% [markdown]
# ## Serial and the data stack
#
# `Serial` runs its sublayers one after the other. Each layer takes `n_in`
# values from the top of a stack and puts back `n_out` values, so layers
# with several inputs or outputs compose without any wiring code.
# Printing a layer shows its structure, with `_inN` / `_outN` where a layer
# takes or gives more than one value.

# %%
model = tl.Serial(
    tl.Dense(16),
    tl.Relu(),
    tl.Dense(4),
    tl.LogSoftmax(),
)
print(model)

x = np.random.default_rng(0).normal(size=(8, 5)).astype(np.float32)
weights, state = model.init(shapes.signature(x))
print('output signature:', model.output_signature(shapes.signature(x)))
print('rows sum to one:', np.exp(np.asarray(model(x))).sum(axis=-1))

# %% [markdown]
# ## Branch, Residual and Select
#
# * `Branch(f, g)` gives each of `f` and `g` a copy of the inputs and
#   leaves both outputs on the stack (`n_out == 2`).
# * `Residual(f)` computes `x + f(x)`.
# * `Select(indices)` reorders, copies or drops stack values: `[0, 0]`
#   duplicates the top, `[1, 0]` swaps the top two.

# %%
branch = tl.Branch(tl.Dense(3), tl.Serial(tl.Dense(2), tl.Relu()))
branch.init(shapes.signature(x))
left, right = branch(x)
print(branch)
print('n_in', branch.n_in, 'n_out', branch.n_out, '->', left.shape,
      right.shape)

# %%
inner = tl.Dense(5)
residual = tl.Residual(inner)
residual.init(shapes.signature(x))
inner_w, inner_b = inner.weights  # The sublayer holds its own weights.
expected = x + (x @ np.asarray(inner_w) + np.asarray(inner_b))
np.testing.assert_allclose(residual(x), expected, rtol=1e-5, atol=1e-5)
print(residual)
print('Residual(Dense) equals x + Dense(x)')

# %%
a = np.ones((2, 3), np.float32)
c = np.zeros((2, 1), np.float32)
swap = tl.Select([1, 0])
top, second = swap((a, c))
print('Select([1, 0]) swaps:', top.shape, second.shape)
dup = tl.Select([0, 0], n_in=1)
print('Select([0, 0], n_in=1) copies:', [t.shape for t in dup(a)])

# %% [markdown]
# ## Weights are nested tuples
#
# A combinator's weights are a tuple with one entry per sublayer; layers
# without weights contribute an empty tuple. `fastmath.nested_map` applies a
# function to every array in such a tree.

# %%
print(fastmath.nested_map(lambda w: tuple(w.shape), model.weights))
n_params = sum(int(np.prod(w.shape))
               for w in fastmath.tree_leaves(model.weights))
print('parameters:', n_params)

# %% [markdown]
# ## `pure_fn`: the layer as a pure function
#
# `pure_fn(x, weights, state, rng)` returns `(outputs, new_state)` and
# touches nothing else. This is what training code differentiates and
# compiles. With the layer's own weights it gives the same result as
# calling the layer.

# %%
rng = fastmath.random.get_prng(0)
out, new_state = model.pure_fn(x, model.weights, model.state, rng)
np.testing.assert_allclose(out, model(x), rtol=1e-6)
print('pure_fn == __call__:', out.shape)

# %% [markdown]
# ## A custom layer
#
# Subclass `tl.Layer`, create weights in `init_weights_and_state` from the
# input signature, and compute in `forward` from `self.weights`. Weightless
# layers are one line with `tl.Fn`.

# %%
class ScaleAndShift(tl.Layer):
  """Learns a per-feature scale and shift: y = x * scale + shift."""

  def init_weights_and_state(self, input_signature):
    n = input_signature.shape[-1]
    self.weights = (jnp.ones((n,), dtype=jnp.float32),
                    jnp.zeros((n,), dtype=jnp.float32))

  def forward(self, x):
    scale, shift = self.weights
    return x * scale + shift


def Cube():  # Layer constructors are CamelCase, as in Trax.
  return tl.Fn('Cube', lambda x: x ** 3)

layer = tl.Serial(ScaleAndShift(), Cube())
layer.init(shapes.signature(x))
np.testing.assert_allclose(layer(x), x ** 3, rtol=1e-5)
print(layer)

# %% [markdown]
# ## Gradients with `fastmath.grad`
#
# We fit `sin(x)` on [-3, 3] with a small MLP that starts with our custom
# layer. The loss calls `pure_fn`, `fastmath.grad` differentiates it with
# respect to the weight tree, and `fastmath.jit` compiles the update (with
# `tf.function`). Plain gradient descent is written out with `nested_map`.

# %%
xs = np.linspace(-3, 3, 128, dtype=np.float32)[:, None]
ys = np.sin(xs)

net = tl.Serial(ScaleAndShift(), tl.Dense(32), tl.Tanh(), tl.Dense(32),
                tl.Tanh(), tl.Dense(1))
net_weights, net_state = net.init(shapes.signature(xs),
                                  rng=fastmath.random.get_prng(1))


def loss_fn(weights, x, y):
  pred, _ = net.pure_fn(x, weights, net_state, fastmath.random.get_prng(0))
  return jnp.mean((pred - y) ** 2)


@fastmath.jit
def train_step(weights, x, y, learning_rate):
  loss, grads = fastmath.value_and_grad(loss_fn)(weights, x, y)
  new_weights = fastmath.nested_map_multiarg(
      lambda w, g: w - learning_rate * g, weights, grads)
  return new_weights, loss


n_steps = 60 if SMALL else 2000
losses = []
for step in range(n_steps):
  net_weights, loss = train_step(net_weights, xs, ys, np.float32(0.05))
  losses.append(float(loss))
print(f'loss: {losses[0]:.4f} -> {losses[-1]:.4f} after {n_steps} steps')

# %% tags=["plot"]
fig, (ax_loss, ax_fit) = plt.subplots(1, 2, figsize=(10, 3.5))
ax_loss.plot(losses)
ax_loss.set(xlabel='step', ylabel='mean squared error', yscale='log',
            title='Training loss')
pred, _ = net.pure_fn(xs, net_weights, net_state, fastmath.random.get_prng(0))
ax_fit.plot(xs[:, 0], ys[:, 0], label='sin(x)')
ax_fit.plot(xs[:, 0], np.asarray(pred)[:, 0], '--', label='model')
ax_fit.set(xlabel='x', title='Fit')
ax_fit.legend()
plt.show()
