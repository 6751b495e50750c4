"""A Loop run's stop, and its callbacks' state, kept in checkpoints.

A callback (or user code) asks the run to stop with `Loop.request_stop`;
the Loop finishes the step, records the stop (`Stop`) in the manifest
`extra` of that step's checkpoint under `KEY`, and a Loop restored from it
trains no further until `clear_stop()`. Callbacks that have `state_dict()`
and `load_state_dict(d)` (e.g. `EarlyStopping`) get their state saved in
every checkpoint under `CALLBACKS_KEY`, keyed by position and class name,
so a resumed run's callbacks go on from where the checkpointed ones were
and decide as an uninterrupted run would. Both are JSON, as the running
sums (`progress`) are.
"""

from typing import NamedTuple

from tfnp_trax.supervised.loop import logs

__all__ = ['Stop', 'KEY', 'CALLBACKS_KEY', 'HISTORY_NAME', 'stop_to_dict',
           'stop_from_dict', 'callback_states', 'load_callback_states']

KEY = 'loop_stop'
CALLBACKS_KEY = 'loop_callbacks'
# The History entry (mode 'train') of a stop: the step it stopped after.
HISTORY_NAME = 'loop/stopped_at'


class Stop(NamedTuple):
  """Why and after which step a run stopped."""
  reason: str
  step: int


def stop_to_dict(stop):
  """A JSON-able form of a `Stop` (or None)."""
  return None if stop is None else {'reason': stop.reason, 'step': stop.step}


def stop_from_dict(saved):
  """The `Stop` saved by `stop_to_dict`, or None."""
  if not saved:
    return None
  return Stop(str(saved['reason']), int(saved['step']))


def _key(index, callback):
  return f'{index}:{type(callback).__name__}'


def callback_states(callbacks):
  """{'<position>:<class name>': state_dict()} of the callbacks that have
  one."""
  return {_key(i, cb): cb.state_dict() for i, cb in enumerate(callbacks)
          if callable(getattr(cb, 'state_dict', None))}


def load_callback_states(callbacks, saved):
  """Gives each callback its saved state (matched by position and class).

  Saved states without a matching callback (the callbacks changed since
  the checkpoint) are logged and left out.
  """
  saved = dict(saved or {})
  for i, callback in enumerate(callbacks):
    state = saved.pop(_key(i, callback), None)
    if state is not None and callable(
        getattr(callback, 'load_state_dict', None)):
      callback.load_state_dict(state)
  if saved:
    logs.log(f'Loop.load_checkpoint: the checkpoint holds the state of '
             f'callbacks this Loop does not have ({sorted(saved)}); they '
             f'are left out.', stdout=False)
