"""Tests for distribute.tf_config."""

import json

import pytest

from distribute import tf_config


def test_read_unset_and_empty():
  assert tf_config.read({}) is None
  assert tf_config.read({'TF_CONFIG': '  '}) is None


def test_make_then_read_round_trip():
  text = tf_config.make(['h:1', 'h:2'], 1)
  config = tf_config.read({'TF_CONFIG': text})
  assert config == {'cluster': {'worker': ['h:1', 'h:2']},
                    'task': {'type': 'worker', 'index': 1}}


def test_task_count_counts_chief_and_workers_only():
  config = {'cluster': {'chief': ['a:1'], 'worker': ['b:1', 'c:1'],
                        'ps': ['d:1'], 'evaluator': ['e:1']}}
  assert tf_config.task_count(config) == 3
  assert tf_config.coordinated_jobs(config) == {'chief': 1, 'worker': 2}
  assert tf_config.task_count(None) == 0


def test_bad_json_error():
  with pytest.raises(ValueError, match=r"TF_CONFIG is not valid JSON \(.*\): "
                     r"'\{cluster'"):
    tf_config.read({'TF_CONFIG': '{cluster'})


def test_not_an_object_error():
  with pytest.raises(ValueError,
                     match=r"TF_CONFIG must be a JSON object, got '\[1\]'"):
    tf_config.read({'TF_CONFIG': json.dumps([1])})
