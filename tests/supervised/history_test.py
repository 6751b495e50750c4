"""History: Trax's API and its dict round trip."""

import json

import numpy as np

from tfnp_trax.supervised import history as history_lib


def test_append_get_modes_and_metrics():
  h = history_lib.History()
  h.append('train', 'metrics/accuracy', 1, 0.04)
  h.append('train', 'metrics/accuracy', 1000, np.float32(0.5))
  h.append('eval', 'metrics/loss', 1000, 2.0)
  assert h.get('train', 'metrics/accuracy') == [(1, 0.04), (1000, 0.5)]
  assert h.get('nope', 'metrics/accuracy') == []
  assert h.get('train', 'nope') == []
  assert h.modes == ['eval', 'train']
  assert h.metrics_for_mode('train') == ['metrics/accuracy']
  assert h.metrics_for_mode('nope') == []
  assert h.last('eval', 'metrics/loss') == 2.0
  assert str(h) == ("{'train': {'metrics/accuracy': [(1, 0.04), (1000, 0.5)]"
                    "}, 'eval': {'metrics/loss': [(1000, 2.0)]}}")


def test_to_dict_has_trax_layout_and_survives_json():
  h = history_lib.History()
  h.append('train', 'metrics/loss', 2, 0.25)
  d = h.to_dict()
  assert d == {'_values': {'train': {'metrics/loss': [(2, 0.25)]}}}
  back = history_lib.History.from_dict(json.loads(json.dumps(d)))
  assert back.get('train', 'metrics/loss') == [(2, 0.25)]
  back.append('train', 'metrics/new', 3, 1.0)  # Still appendable.
  assert back.metrics_for_mode('train') == ['metrics/loss', 'metrics/new']


def test_from_dict_reads_older_plain_layout():
  back = history_lib.History.from_dict({'eval': {'acc': [[5, 0.75]]}})
  assert back.get('eval', 'acc') == [(5, 0.75)]
