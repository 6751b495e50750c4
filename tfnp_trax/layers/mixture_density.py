"""The log-likelihood of targets under a predicted mixture of Gaussians."""

from tfnp_trax import fastmath
from tfnp_trax.fastmath import numpy as jnp
from tfnp_trax.layers import core_extras

__all__ = ['multigaussian_loss']


def multigaussian_loss(preds, targets, ngauss=1):  # pylint: disable=invalid-name
  """log p(targets) under the diagonal Gaussian mixture that `preds` encodes.

  Each row of `preds` holds, for `ngauss` components over `d` dimensions,
  the `ngauss` mixture logits, then the `ngauss * d` means (component-major)
  and then `ngauss * d` scales `s`, whose variances are `s * s + 1e-6`.
  As in Trax the value is the log-likelihood (higher is better), despite
  the name; negate it to minimize. (Trax's own version cannot run: it
  calls the integer `ngauss` when slicing out the scales; this reads them
  from where the means end.)

  Example:
    >>> preds = jnp.array([[0.0, 0.0, 1.0]])  # 1 component, d=1: mu=0, s=1.
    >>> round(float(multigaussian_loss(preds, jnp.array([[0.0]]))[0]), 4)
    -0.9189

  Args:
    preds: [batch, ngauss * (2 * d + 1)] mixture parameters.
    targets: [batch, d] points.
    ngauss: the number of mixture components.

  Returns:
    [batch] log-densities of the targets.
  """
  ndims = targets.shape[-1]
  logits = preds[:, :ngauss]
  mus = preds[:, ngauss:ngauss * (ndims + 1)]
  scales = preds[:, ngauss * (ndims + 1):]
  variances = scales * scales + 1e-6  # Positive whatever the prediction.
  log_weights = logits - fastmath.logsumexp(logits, axis=-1, keepdims=True)
  mus = jnp.reshape(mus, [-1, ngauss, ndims])
  variances = jnp.reshape(variances, [-1, ngauss, ndims])
  targets = jnp.reshape(targets, [-1, 1, ndims])
  component_log_probs = core_extras.log_gaussian_diag_pdf(targets, mus,
                                                          variances)
  return fastmath.logsumexp(log_weights + component_log_probs, axis=-1)
