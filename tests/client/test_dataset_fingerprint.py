"""The dataset fingerprint a run records (and the leaderboard checks) names the rows, nothing else."""
import hashlib
import json

import pyarrow.parquet as pq

from tests.standins.fixtures import story_rows, write_dataset
from speedbench.client.data.workload import dataset_fingerprint, dataset_manifest_hash


def _independent_fingerprint(rows):
    # Recomputed here from the dataclasses, not from the parquet file the function reads.
    hashes = sorted(hashlib.sha256(json.dumps(r.to_dict(), sort_keys=True, ensure_ascii=False,
                                              separators=(",", ":")).encode()).hexdigest() for r in rows)
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()


def test_fingerprint_is_the_hash_of_the_rows(tmp_path):
    rows = story_rows(5)
    folder = write_dataset(tmp_path / "d", rows)
    assert dataset_fingerprint(folder, "tiny") == _independent_fingerprint(rows)


def test_fingerprint_ignores_other_configs_manifest_and_row_order(tmp_path):
    rows = story_rows(5)
    alone = dataset_fingerprint(write_dataset(tmp_path / "a", rows), "tiny")
    folder = write_dataset(tmp_path / "b", list(reversed(rows)))
    write_dataset(folder, story_rows(3), config="other")
    (folder / "manifest.json").write_text('{"built": "elsewhere"}')
    assert dataset_fingerprint(folder, "tiny") == alone
    assert dataset_manifest_hash(folder) == hashlib.sha256(b'{"built": "elsewhere"}').hexdigest()


def test_fingerprint_changes_when_a_prompt_changes(tmp_path):
    rows = story_rows(5)
    before = dataset_fingerprint(write_dataset(tmp_path / "a", rows), "tiny")
    rows[2].turns = [rows[2].turns[0] + " Then it rained."]
    after = dataset_fingerprint(write_dataset(tmp_path / "b", rows), "tiny")
    assert before != after
    assert pq.read_table(tmp_path / "b" / "data" / "tiny" / "test-00000-of-00001.parquet").num_rows == 5
