"""distribute: tf.distribute in place of JAX's pmap/psum (TensorFlow only)."""

from distribute.collectives import all_gather
from distribute.collectives import num_replicas
from distribute.collectives import pmax
from distribute.collectives import pmean
from distribute.collectives import psum

__all__ = ['all_gather', 'num_replicas', 'pmax', 'pmean', 'psum']
