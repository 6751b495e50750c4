"""Prints one of the README's two opening commands, exactly as written.

`python .ci/readme_command.py main` prints the first (install and run the
main job), `... test` the second (install and run the test suite). `.ci/run`
executes the second, so CI can never drift from what the README tells a
new user to type.
"""

import pathlib
import re
import sys

_BLOCK = re.compile(r'^```bash\n(.*?)\n```', re.M | re.S)


def readme_commands(text):
  """The first two ```bash blocks of `text`, each a one-line command."""
  blocks = _BLOCK.findall(text)[:2]
  if len(blocks) != 2 or any('\n' in b.strip() for b in blocks):
    raise SystemExit('README.md must open with two one-line ```bash blocks '
                     f'(main job, then tests); found {blocks!r}')
  return {'main': blocks[0].strip(), 'test': blocks[1].strip()}


if __name__ == '__main__':
  which = sys.argv[1] if len(sys.argv) > 1 else 'test'
  readme = pathlib.Path(__file__).resolve().parent.parent / 'README.md'
  print(readme_commands(readme.read_text())[which])
