"""tfnp_trax.rl.envs: RL environments built from supervised data.

`data_envs.SequenceDataEnv` plays examples of sequence data as episodes
that reward the policy's answers; `data_envs.copy_stream` makes the data
of the copy task. Gin configs name them `trax.rl.envs.SequenceDataEnv` and
`trax.rl.envs.copy_stream` once they `import trax.rl.envs`;
`configure_rl_env` registers further objects under that gin module.
"""

import gin

from tfnp_trax.rl.envs import data_envs
from tfnp_trax.rl.envs.data_envs import SequenceDataEnv
from tfnp_trax.rl.envs.data_envs import copy_stream

__all__ = ['data_envs', 'SequenceDataEnv', 'copy_stream', 'configure_rl_env']


def configure_rl_env(*args, **kwargs):
  """`gin.external_configurable` under gin module `trax.rl.envs`.

  Example:
    >>> def doc_stream(length=3):
    ...   return copy_stream(length)
    >>> doc_stream = configure_rl_env(doc_stream, name='doc_copy_stream')
    >>> _ = gin.parse_config('trax.rl.envs.doc_copy_stream.length = 5')
    >>> next(doc_stream())[0].shape
    (5,)
    >>> gin.clear_config()

  Args:
    *args: `gin.external_configurable`'s arguments: the function or class,
      then optionally its name.
    **kwargs: its keyword arguments; `module` is always `'trax.rl.envs'`.

  Returns:
    The configurable version of the object.
  """
  kwargs['module'] = 'trax.rl.envs'
  return gin.external_configurable(*args, **kwargs)
