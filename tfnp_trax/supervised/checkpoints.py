"""Atomic, verifiable training checkpoints on tf.train.Checkpoint.

Each checkpoint is a directory `ckpt-<step>` (or `ckpt-<step>-permanent`)
holding a tf.train.Checkpoint of the training variables and a manifest with
the step, the weight names and shapes, and a SHA-256 of every file. It is
written into a temporary directory and renamed into place, so a crash
mid-write never leaves a half-written checkpoint under a final name. On
restore, a checkpoint whose files do not match their manifest is skipped
with a warning and the previous good one is used.

A write that fails (a full disk, an I/O error, a read-only folder) raises
`CheckpointWriteError` naming the folder and the OS error; it leaves no
partial checkpoint under a final name and deletes no earlier checkpoint.

A writer killed mid-write (SIGKILL, a power cut) leaves at most a hidden
`.tmp-*` folder, a hidden `.old-*` folder (a named checkpoint being
replaced) or a hidden manifest temp file. They never match a checkpoint
name; the folder's writer removes them when it starts (a `.old-*` folder
whose checkpoint vanished is put back, as the complete previous version).
The manifest carries a SHA-256 of itself, so a damaged manifest is caught
on read like a damaged data file.
"""

import errno
import hashlib
import json
import os
import re
import shutil
from typing import NamedTuple
import uuid
import warnings

from absl import logging
import tensorflow as tf

__all__ = ['CheckpointInfo', 'CheckpointManager', 'CheckpointMismatchError',
           'CheckpointWriteError', 'NoValidCheckpointError']

_NAME = re.compile(r'^ckpt-(\d+)(-permanent)?$')
_MANIFEST = 'manifest.json'
# Hidden leftovers of an interrupted writer (see the module docstring).
_TMP_PREFIX = '.tmp-'
_OLD = re.compile(r'^\.old-(.+)-[0-9a-f]{8}$')
_MANIFEST_TMP = re.compile(r'^\.' + re.escape(_MANIFEST) + r'\.[0-9a-f]{8}$')
_CHECKSUM = 'manifest_sha256'


class CheckpointMismatchError(ValueError, IndexError):
  """The checkpoint's weights do not fit the model being restored.

  Also an `IndexError`: Trax's Loop signals the same failure (weights left
  unmatched by shape) with one, and programs written for Trax catch it.
  """


class NoValidCheckpointError(RuntimeError):
  """Checkpoints exist but none could be read."""


class CheckpointWriteError(OSError):
  """A checkpoint could not be written (disk full, I/O error, read-only).

  Attributes:
    directory: the checkpoint folder.
    name: the checkpoint that was being written (e.g. 'ckpt-10').
    cause: the OS or TensorFlow error, as text.
  """

  def __init__(self, message, directory, name, cause, error_number=None):
    super().__init__(error_number, message)
    self.directory = directory
    self.name = name
    self.cause = cause

  def __str__(self):
    return self.strerror


class CheckpointInfo(NamedTuple):
  """A finished numbered checkpoint, as `CheckpointManager.list` gives it."""
  step: int
  path: str
  permanent: bool


def _describe_error(e):
  """The OS error in `e` (an OSError or a TensorFlow OpError) as text."""
  if isinstance(e, OSError):
    code = errno.errorcode.get(e.errno, '') if e.errno else ''
    text = e.strerror or str(e)
    return (f'[{code}] {text}' if code else text), e.errno
  message = getattr(e, 'message', None) or str(e)
  return f'{type(e).__name__}: {message.strip().splitlines()[0]}', None


def _sha256(path):
  h = hashlib.sha256()
  with open(path, 'rb') as f:
    for chunk in iter(lambda: f.read(1 << 20), b''):
      h.update(chunk)
  return h.hexdigest()


def _warn(message):
  logging.warning(message)
  warnings.warn(message, RuntimeWarning, stacklevel=3)


def _fsync_file(path):
  with open(path, 'rb') as f:
    os.fsync(f.fileno())


def _digest(manifest):
  """SHA-256 of `manifest` without its own checksum, in a canonical form."""
  body = {k: v for k, v in manifest.items() if k != _CHECKSUM}
  return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _write_manifest(path, manifest):
  """Writes `manifest` with its checksum to `path` and fsyncs it."""
  manifest = dict(manifest)
  manifest[_CHECKSUM] = _digest(manifest)
  with open(path, 'w') as f:
    json.dump(manifest, f)
    f.flush()
    os.fsync(f.fileno())


def _fsync_dir(path):
  fd = os.open(path, os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


class CheckpointManager:
  """Writes and restores checkpoints of a dict of variable lists.

  Args:
    directory: where checkpoints live.
    variables: dict name -> list of tf.Variables (saved and restored).
    shapes_manifest: dict name -> list of (weight_name, shape) describing
      the model, checked on restore so a mismatch names the weight.
    keep: how many recent non-permanent checkpoints to keep.
    writer: whether this process is the folder's one writer (the chief
      under several workers). The writer removes what an interrupted
      earlier writer left behind (see `clean_stale`) as it starts; a
      reader leaves the folder alone, since its writer may be running.
  """

  def __init__(self, directory, variables, shapes_manifest, keep=3,
               writer=True):
    self._dir = directory
    self._variables = variables
    self._shapes = shapes_manifest
    self._keep = keep
    tf.io.gfile.makedirs(directory)
    # What the checkpoint object graph holds: the variables as given now.
    self._tracked = {k: list(v) for k, v in variables.items()}
    self._ckpt = self.checkpoint_of(self._tracked)
    if writer:
      self.clean_stale()

  @property
  def directory(self):
    return self._dir

  @property
  def tracked_variables(self):
    """dict group -> list of the variables this manager saves/restores."""
    return {k: list(v) for k, v in self._tracked.items()}

  @staticmethod
  def checkpoint_of(variables):
    """A tf.train.Checkpoint of `variables` (dict group -> list).

    Its object graph (and so its keys) depends only on the group names and
    the list positions, so a checkpoint of other variables of the same
    layout (e.g. copies of them) is written and read as this manager's.
    """
    return tf.train.Checkpoint(**{
        k: _VarList(v) for k, v in variables.items()})

  def list(self):
    """The finished numbered checkpoints, oldest first.

    Returns:
      A list of `CheckpointInfo(step, path, permanent)`.
    """
    found = []
    for name in tf.io.gfile.listdir(self._dir):
      m = _NAME.match(name.rstrip('/'))
      if m:
        found.append(CheckpointInfo(
            int(m.group(1)), os.path.join(self._dir, m.group(0)),
            bool(m.group(2))))
    return sorted(found)

  def path(self, name):
    """The folder of the checkpoint called `name` (numbered or named)."""
    return os.path.join(self._dir, name)

  def clean_stale(self):
    """Removes what a writer killed mid-write left; returns what it did.

    `.tmp-*` folders (unfinished checkpoints) and manifest temp files are
    deleted. A `.old-<name>-*` folder is a complete checkpoint that was
    being replaced: it is deleted when `<name>` exists, else renamed back
    to `<name>` (the kill came between the two renames). Only the folder's
    one writer may call this: a running writer's temp files look the same.

    Returns:
      A list of `(action, path)`, action 'removed' or 'restored'.
    """
    done = []
    for entry in sorted(os.listdir(self._dir)):
      path = os.path.join(self._dir, entry)
      old = _OLD.match(entry)
      if entry.startswith(_TMP_PREFIX):
        shutil.rmtree(path, ignore_errors=True)
        done.append(('removed', path))
      elif old and os.path.exists(os.path.join(self._dir, old.group(1))):
        shutil.rmtree(path, ignore_errors=True)
        done.append(('removed', path))
      elif old:
        os.rename(path, os.path.join(self._dir, old.group(1)))
        done.append(('restored', os.path.join(self._dir, old.group(1))))
      elif os.path.isdir(path) and not entry.startswith('.'):
        for inner in os.listdir(path):
          if _MANIFEST_TMP.match(inner):
            os.remove(os.path.join(path, inner))
            done.append(('removed', os.path.join(path, inner)))
    if done:
      _fsync_dir(self._dir)
      logging.info('CheckpointManager: cleaned up after an interrupted '
                   'writer in %s: %s', self._dir, done)
    return done

  def copy(self, path, permanent=False, name=None):
    """Atomically copies the verified checkpoint at `path`; returns the copy.

    The copy is what `save` would have written from the same variables:
    used to make a permanent checkpoint that a kill prevented from the
    rotating checkpoint of the same step.

    Args:
      path: a checkpoint folder; its files must match its manifest.
      permanent: name the copy `ckpt-<step>-permanent`.
      name: or name it `name` (see `save`).

    Raises:
      IOError: `path` is missing or corrupt.
      CheckpointWriteError: the copy could not be written.
    """
    manifest = self._verify(path)
    name = name or f'ckpt-{manifest["step"]}' + (
        '-permanent' if permanent else '')
    def fill(tmp):
      for f in list(manifest['sha256']) + [_MANIFEST]:
        shutil.copyfile(os.path.join(path, f), os.path.join(tmp, f))
        _fsync_file(os.path.join(tmp, f))
      self._verify(tmp)  # The copy is checked before it gets its name.
    return self._write_folder(name, fill)

  def _write_folder(self, name, fill):
    """Writes folder `name` atomically: `fill(tmp)`, then a rename.

    A failure leaves no partial folder (the temporary one is removed) and
    is raised as the manager's write error; a kill leaves at most a
    temporary folder, which the next writer removes.
    """
    final = os.path.join(self._dir, name)
    tmp = os.path.join(self._dir, f'{_TMP_PREFIX}{name}-{uuid.uuid4().hex[:8]}')
    try:
      os.makedirs(tmp)
      fill(tmp)
      _replace_dir(tmp, final)
      _fsync_dir(self._dir)
    except (OSError, tf.errors.OpError) as e:
      raise self._write_error(name, e) from e
    finally:
      if os.path.exists(tmp):
        shutil.rmtree(tmp, ignore_errors=True)
    return final

  def name_for(self, step, permanent=False, name=None):
    """The folder name `save(step, permanent=..., name=...)` writes."""
    if name is not None and (_NAME.match(name) or not _is_plain_name(name)):
      raise ValueError(f'CheckpointManager.save: name {name!r} must be a '
                       f'plain folder name not of the form ckpt-<step>.')
    return name or f'ckpt-{step}' + ('-permanent' if permanent else '')

  def save(self, step, extra=None, permanent=False, name=None,
           checkpoint=None):
    """Writes checkpoint `step` atomically; prunes old ones. Returns path.

    Args:
      step: the training step the variables belong to.
      extra: a JSON-able dict stored in the manifest.
      permanent: keep this numbered checkpoint when pruning.
      name: write a named checkpoint `name` instead of `ckpt-<step>`; it
        replaces any earlier one of that name and is never pruned.
      checkpoint: what to write instead of the tracked variables: a
        `checkpoint_of` variables of the same layout (the asynchronous
        writer's copies of them).
    """
    name = self.name_for(step, permanent, name)
    source = self._ckpt if checkpoint is None else checkpoint

    def fill(tmp):
      source.write(os.path.join(tmp, 'state'))
      files = sorted(f for f in os.listdir(tmp))
      for f in files:
        _fsync_file(os.path.join(tmp, f))
      manifest = {
          'step': int(step),
          'extra': extra or {},
          'shapes': self._shapes,
          'sha256': {f: _sha256(os.path.join(tmp, f)) for f in files},
      }
      _write_manifest(os.path.join(tmp, _MANIFEST), manifest)
    final = self._write_folder(name, fill)
    self._prune()
    return final

  def _write_error(self, name, e):
    cause, number = _describe_error(e)
    good = [c.path for c in self.list()] if os.path.isdir(self._dir) else []
    return CheckpointWriteError(
        f'Writing checkpoint {name} into {self._dir} failed: {cause}. No '
        f'partial checkpoint was left under that name and earlier '
        f'checkpoints are kept (newest: '
        f'{good[-1] if good else "none written yet"}).',
        self._dir, name, cause, number)

  def _prune(self):
    recent = [c for c in self.list() if not c.permanent]
    for old in recent[:-self._keep] if self._keep else []:
      shutil.rmtree(old.path, ignore_errors=True)

  def _verify(self, path):
    with open(os.path.join(path, _MANIFEST)) as f:
      try:
        manifest = json.load(f)
      except ValueError as e:  # JSONDecodeError, or bytes that are not text.
        # An IOError, so restore_latest falls back to an older checkpoint.
        raise IOError(f'manifest {path}/{_MANIFEST} is corrupt or truncated '
                      f'({e})') from e
    # Manifests written before the self-checksum existed have none.
    if _CHECKSUM in manifest and manifest[_CHECKSUM] != _digest(manifest):
      raise IOError(f'manifest {path}/{_MANIFEST} does not match its '
                    f'checksum (corrupt)')
    manifest.pop(_CHECKSUM, None)
    for fname, digest in manifest['sha256'].items():
      fpath = os.path.join(path, fname)
      if not os.path.exists(fpath):
        raise IOError(f'file {fname} is missing')
      if _sha256(fpath) != digest:
        raise IOError(f'file {fname} does not match its checksum (corrupt or '
                      f'truncated)')
    return manifest

  def _check_shapes(self, path, saved):
    for group, entries in self._shapes.items():
      old = saved.get(group, [])
      if len(old) != len(entries):
        raise CheckpointMismatchError(
            f'Checkpoint {path} holds {len(old)} {group} arrays but the model '
            f'has {len(entries)}: it was written for a different model. Use '
            f'a fresh output_dir or the matching model.')
      for (name, shape), (old_name, old_shape) in zip(entries, old):
        if list(shape) != list(old_shape):
          raise CheckpointMismatchError(
              f'Checkpoint {path}: {group} "{name}" has shape '
              f'{tuple(old_shape)} in the checkpoint (saved as "{old_name}") '
              f'but {tuple(shape)} in the model. Use a fresh output_dir or '
              f'the matching model.')

  def restore(self, path):
    """Restores the checkpoint in folder `path`; returns its manifest.

    Raises:
      IOError: the checkpoint is missing, corrupt or unreadable.
      CheckpointMismatchError: it was written for a different model.
    """
    if not os.path.isdir(path):
      raise IOError(f'no checkpoint folder {path}')
    manifest = self._verify(path)
    self._check_shapes(path, manifest['shapes'])
    try:
      self._ckpt.read(os.path.join(path, 'state')).assert_consumed()
    except (tf.errors.OpError, AssertionError, ValueError) as e:
      raise IOError(f'could not be read ({e})') from e
    manifest['path'] = path
    return manifest

  def read(self, path, groups):
    """Reads variable groups of the checkpoint at `path`, restoring nothing.

    Args:
      path: a checkpoint folder of this manager.
      groups: names of variable groups (e.g. ['weights', 'state']).

    Returns:
      {group: list of NumPy arrays}, in the order of the group's variables.

    Raises:
      IOError: the checkpoint is missing or corrupt.
      CheckpointMismatchError: it was written for a different model.
    """
    if not os.path.isdir(path):
      raise IOError(f'no checkpoint folder {path}')
    manifest = self._verify(path)
    self._check_shapes(path, manifest['shapes'])
    return _read_groups(path, {g: len(self._variables[g]) for g in groups})

  def read_leading(self, path, counts):
    """The first arrays of variable groups at `path`, restoring nothing.

    For a reader that knows only part of a run's variables: a model's
    leaves lead its Loop's `weights` and `state` groups, so the model
    alone can be read from a training checkpoint. The files are verified
    against the manifest's checksums; the caller checks the shapes.

    Args:
      path: a checkpoint folder.
      counts: dict group -> how many of its arrays to read.

    Returns:
      {group: list of NumPy arrays}.

    Raises:
      IOError: the checkpoint is missing, corrupt, or holds fewer arrays.
    """
    if not os.path.isdir(path):
      raise IOError(f'no checkpoint folder {path}')
    self._verify(path)
    return _read_groups(path, counts)

  def restore_latest(self):
    """Restores the newest good checkpoint; returns its manifest or None.

    Corrupt or unreadable checkpoints are skipped with a warning. A model
    mismatch raises CheckpointMismatchError at once.
    """
    candidates = self.list()
    failures = []
    for step, path, _ in reversed(candidates):
      try:
        manifest = self.restore(path)
      except (IOError, OSError, ValueError, KeyError) as e:
        if isinstance(e, CheckpointMismatchError):
          raise
        _warn(f'Checkpoint {path} is unusable ({e}); resuming from the '
              f'previous checkpoint instead.')
        failures.append(f'{path}: {e}')
        continue
      manifest['step'] = step
      return manifest
    if candidates:
      raise NoValidCheckpointError(
          'No usable checkpoint in ' + self._dir + ':\n' + '\n'.join(failures))
    return None


def _read_groups(path, counts):
  """{group: its first counts[group] arrays} of the checkpoint at `path`."""
  try:
    reader = tf.train.load_checkpoint(os.path.join(path, 'state'))
    return {g: [reader.get_tensor(f'{g}/v{i}/.ATTRIBUTES/VARIABLE_VALUE')
                for i in range(n)] for g, n in counts.items()}
  except (tf.errors.OpError, ValueError) as e:
    raise IOError(f'could not be read ({str(e).splitlines()[0]})') from e


def _is_plain_name(name):
  return bool(name) and os.sep not in name and not name.startswith('.')


def _replace_dir(tmp, final):
  """Moves folder `tmp` to `final`, replacing an existing one.

  A new checkpoint appears whole (rename is atomic on POSIX). When `final`
  exists it is first renamed aside, so a crash never leaves a mix of old and
  new files under `final`'s name (between the two renames the old one waits
  under a hidden `.old-` name).
  """
  if os.path.exists(final):
    old = os.path.join(os.path.dirname(final),
                       f'.old-{os.path.basename(final)}-{uuid.uuid4().hex[:8]}')
    os.rename(final, old)
    try:
      os.rename(tmp, final)
    except OSError:
      os.rename(old, final)  # Put the previous checkpoint back.
      raise
    shutil.rmtree(old, ignore_errors=True)
  else:
    os.rename(tmp, final)


class _VarList(tf.Module):
  """A trackable list of variables with stable names v0, v1, ..."""

  def __init__(self, variables):
    super().__init__()
    for i, v in enumerate(variables):
      setattr(self, f'v{i}', v)
