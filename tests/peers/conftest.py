"""Fixtures of the peer tests."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def target_tokenizer(models_dir):
    from speedbench.tokenization.target import TargetTokenizer

    return TargetTokenizer.from_folder(models_dir)
