"""Fixtures of the client tests: a tiny dataset folder and the target tokenizer."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.standins.fixtures import story_rows, write_dataset


@pytest.fixture()
def tiny_dataset(tmp_path) -> Path:
    return write_dataset(tmp_path / "dataset", story_rows(6, multiturn_every=3))


@pytest.fixture(scope="session")
def target_tokenizer(models_dir):
    from speedbench.tokenization.target import TargetTokenizer

    return TargetTokenizer.from_folder(models_dir)
