"""`speedbench fit-isl` on a row that cannot fit its bucket: one clear error naming config, file and row."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from speedbench.cli import main as cli_main


def test_instruction_longer_than_the_bucket_is_an_error_not_a_traceback(tmp_path, models_dir, capsys):
    # 8,000 CJK characters: the kept tail (the last 2,000 characters, where an instruction sits)
    # alone is ~6,000 byte-fallback tokens of stories260K, far over the 1k bucket.
    path = tmp_path / "ds" / "data" / "throughput_1k" / "test.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"question_id": "too-long-1", "category": "throughput_1k",
                                          "sub_category": "x", "turns": ["中" * 8000], "source": "s",
                                          "src_id": "1"}]), path)
    code = cli_main(["fit-isl", str(tmp_path / "ds"), "--tokenizer", str(models_dir), "--out", str(tmp_path / "out"),
                     "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert f"speedbench fit-isl: throughput_1k: {path}: row too-long-1:" in err
    assert "1000" in err and not (tmp_path / "out").exists()
