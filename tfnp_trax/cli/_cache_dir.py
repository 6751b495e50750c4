"""Where the commands write when no --output_dir is given: the user's cache.

Not the system temp folder, nor the home folder: a folder named
`tfnp_trax` in the directory a Python process starts in is imported as
the `tfnp_trax` package (the current directory comes first on
`sys.path`), hiding the installed library from every Python started in
/tmp or ~. The cache folder follows the XDG base-directory convention:
`$XDG_CACHE_HOME/tfnp_trax`, else `~/.cache/tfnp_trax`.
"""

import os

__all__ = ['cache_dir', 'default_output_dir']


def cache_dir(environ=None):
  """`$XDG_CACHE_HOME/tfnp_trax`, or `~/.cache/tfnp_trax` without it.

  A relative XDG_CACHE_HOME is ignored, as the XDG convention asks.
  """
  environ = os.environ if environ is None else environ
  base = environ.get('XDG_CACHE_HOME', '')
  if not os.path.isabs(base):
    base = os.path.join(os.path.expanduser('~'), '.cache')
  return os.path.join(base, 'tfnp_trax')


def default_output_dir(*parts, environ=None):
  """A run's default folder: `cache_dir()` joined with `parts`."""
  return os.path.join(cache_dir(environ), *parts)
