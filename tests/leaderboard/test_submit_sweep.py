"""``speedbench submit DIR`` with DIR a ``speedbench sweep`` folder: each of its bundles is checked
(--dry-run) or sent, with the metadata the sweep packed (issue 23 asked, the submit CLI is 24's)."""
from __future__ import annotations

import io
import json
import tarfile

from speedbench.cli import main
from speedbench.sweep.bundles import BUNDLES_DIR
from speedbench.sweep.state import STATE_NAME


def test_a_sweep_folder_s_bundles_are_each_checked(tmp_path, valid_bundle, stats_bundle, known_builds_dir,
                                                   monkeypatch, capsys, bundles):
    monkeypatch.setenv("SPEEDBENCH_KNOWN_BUILDS", str(known_builds_dir))
    sweep = tmp_path / "sweep"
    (sweep / BUNDLES_DIR).mkdir(parents=True)
    (sweep / STATE_NAME).write_text("")
    (sweep / BUNDLES_DIR / "a-eagle.tar.gz").write_bytes(valid_bundle)
    broken = bundles.unpack(stats_bundle)
    doc = json.loads(broken["submission.json"])
    doc["metadata"]["draft_length"] = 0
    broken["submission.json"] = json.dumps(doc).encode()
    (sweep / BUNDLES_DIR / "b-broken.tar.gz").write_bytes(bundles.repack(broken))
    assert main(["submit", str(sweep), "--dry-run"]) == 1
    out, err = capsys.readouterr()
    assert "a-eagle.tar.gz:\nmean AL" in out and "b-broken.tar.gz:" in out
    assert "rejected:" in err and "submission.draft_length" in err
    with tarfile.open(fileobj=io.BytesIO(valid_bundle), mode="r:gz") as tar:  # packed by the sweep, sent as is
        assert json.loads(tar.extractfile("submission.json").read())["metadata"]["gpu"] == "RTX 4090"
