"""Atomic, verifiable training checkpoints on tf.train.Checkpoint.

Each checkpoint is a directory `ckpt-<step>` (or `ckpt-<step>-permanent`)
holding a tf.train.Checkpoint of the training variables and a manifest with
the step, the weight names and shapes, and a SHA-256 of every file. It is
written into a temporary directory and renamed into place, so a crash
mid-write never leaves a half-written checkpoint under a final name. On
restore, a checkpoint whose files do not match their manifest is skipped
with a warning and the previous good one is used.
"""

import hashlib
import json
import os
import re
import shutil
import uuid
import warnings

from absl import logging
import tensorflow as tf

__all__ = ['CheckpointManager', 'CheckpointMismatchError',
           'NoValidCheckpointError']

_NAME = re.compile(r'^ckpt-(\d+)(-permanent)?$')
_MANIFEST = 'manifest.json'


class CheckpointMismatchError(ValueError):
  """The checkpoint's weights do not fit the model being restored."""


class NoValidCheckpointError(RuntimeError):
  """Checkpoints exist but none could be read."""


def _sha256(path):
  h = hashlib.sha256()
  with open(path, 'rb') as f:
    for chunk in iter(lambda: f.read(1 << 20), b''):
      h.update(chunk)
  return h.hexdigest()


def _warn(message):
  logging.warning(message)
  warnings.warn(message, RuntimeWarning, stacklevel=3)


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
  """

  def __init__(self, directory, variables, shapes_manifest, keep=3):
    self._dir = directory
    self._variables = variables
    self._shapes = shapes_manifest
    self._keep = keep
    tf.io.gfile.makedirs(directory)
    self._ckpt = tf.train.Checkpoint(**{
        k: _VarList(v) for k, v in variables.items()})

  def list(self):
    """(step, path, permanent) of finished checkpoints, oldest first."""
    found = []
    for name in tf.io.gfile.listdir(self._dir):
      m = _NAME.match(name.rstrip('/'))
      if m:
        found.append((int(m.group(1)), os.path.join(self._dir, m.group(0)),
                      bool(m.group(2))))
    return sorted(found)

  def save(self, step, extra=None, permanent=False):
    """Writes checkpoint `step` atomically; prunes old ones. Returns path."""
    name = f'ckpt-{step}' + ('-permanent' if permanent else '')
    final = os.path.join(self._dir, name)
    tmp = os.path.join(self._dir, f'.tmp-{name}-{uuid.uuid4().hex[:8]}')
    try:
      os.makedirs(tmp)
      self._ckpt.write(os.path.join(tmp, 'state'))
      files = sorted(f for f in os.listdir(tmp))
      manifest = {
          'step': int(step),
          'extra': extra or {},
          'shapes': self._shapes,
          'sha256': {f: _sha256(os.path.join(tmp, f)) for f in files},
      }
      with open(os.path.join(tmp, _MANIFEST), 'w') as f:
        json.dump(manifest, f)
        f.flush()
        os.fsync(f.fileno())
      for f in files:
        with open(os.path.join(tmp, f), 'rb+') as fh:
          os.fsync(fh.fileno())
      if os.path.exists(final):
        shutil.rmtree(final)
      os.rename(tmp, final)  # Atomic on POSIX: the checkpoint appears whole.
      _fsync_dir(self._dir)
    finally:
      if os.path.exists(tmp):
        shutil.rmtree(tmp, ignore_errors=True)
    self._prune()
    return final

  def _prune(self):
    recent = [c for c in self.list() if not c[2]]
    for _, path, _ in recent[:-self._keep] if self._keep else []:
      shutil.rmtree(path, ignore_errors=True)

  def _verify(self, path):
    with open(os.path.join(path, _MANIFEST)) as f:
      manifest = json.load(f)
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

  def restore_latest(self):
    """Restores the newest good checkpoint; returns its manifest or None.

    Corrupt or unreadable checkpoints are skipped with a warning. A model
    mismatch raises CheckpointMismatchError at once.
    """
    candidates = self.list()
    failures = []
    for step, path, _ in reversed(candidates):
      try:
        manifest = self._verify(path)
      except (IOError, OSError, ValueError, KeyError) as e:
        _warn(f'Checkpoint {path} is unusable ({e}); resuming from the '
              f'previous checkpoint instead.')
        failures.append(f'{path}: {e}')
        continue
      self._check_shapes(path, manifest['shapes'])
      try:
        self._ckpt.read(os.path.join(path, 'state')).assert_consumed()
      except (tf.errors.OpError, AssertionError, ValueError) as e:
        _warn(f'Checkpoint {path} could not be read ({e}); resuming from '
              f'the previous checkpoint instead.')
        failures.append(f'{path}: {e}')
        continue
      manifest['path'] = path
      manifest['step'] = step
      return manifest
    if candidates:
      raise NoValidCheckpointError(
          'No usable checkpoint in ' + self._dir + ':\n' + '\n'.join(failures))
    return None


class _VarList(tf.Module):
  """A trackable list of variables with stable names v0, v1, ..."""

  def __init__(self, variables):
    super().__init__()
    for i, v in enumerate(variables):
      setattr(self, f'v{i}', v)
