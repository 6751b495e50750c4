"""Checks that Trax 1.4.1 itself parses every .gin file in this folder.

Run with a Trax 1.4.1 install: `JAX_PLATFORMS=cpu python check_with_trax.py`.
Prints OK or FAIL per file (all six printed OK when the files were copied).
"""

import os

import gin
# Importing these runs Trax's gin registrations.
import trax  # pylint: disable=unused-import
import trax.supervised.trainer_lib  # pylint: disable=unused-import


def main():
  here = os.path.dirname(os.path.abspath(__file__))
  gin.add_config_file_search_path(here)
  for name in sorted(os.listdir(here)):
    if not name.endswith('.gin'):
      continue
    gin.clear_config()
    try:
      gin.parse_config_file(os.path.join(here, name))
      print('OK', name)
    except Exception as e:  # pylint: disable=broad-except
      print('FAIL', name, type(e).__name__, e)


if __name__ == '__main__':
  main()
