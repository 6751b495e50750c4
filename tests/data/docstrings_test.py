"""Runs the `Example:` sections of the tokenizer and text-encoder docstrings."""

import doctest
import os

import pytest

from tfnp_trax.data import _bert_tokenizer
from tfnp_trax.data import _subword
from tfnp_trax.data import _tokenize
from tfnp_trax.data import text_encoder
from tfnp_trax.data import tf_inputs

REPO = os.path.join(os.path.dirname(__file__), '..', '..')
_MODULES = [_bert_tokenizer, _subword, _tokenize, text_encoder, tf_inputs]


@pytest.mark.parametrize('module', _MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module, monkeypatch):
  # The examples name vocabulary files relative to the repository root.
  monkeypatch.chdir(REPO)
  names = {n: getattr(text_encoder, n) for n in text_encoder.__all__}
  result = doctest.testmod(module, extraglobs=names)
  assert result.attempted > 0
  assert result.failed == 0
