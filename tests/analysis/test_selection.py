"""The one rule choosing the records behind the acceptance figures (speedbench.analysis.selection),
checked on hand-built run folders whose expected records are listed by hand."""
from __future__ import annotations

from speedbench.analysis.run_folder import RunFolder
from speedbench.analysis.selection import acceptance_records, acceptance_runs
from speedbench.records import RunManifest, TurnRecord


def _manifest(config: str) -> RunManifest:
    return RunManifest(engine="llamacpp", url="http://127.0.0.1:1", model_id="m", engine_version="b0", server={},
                       dataset_dir="d", dataset_config=config, dataset_config_sha256="0" * 64,
                       dataset_manifest_sha256="0" * 64, num_rows=1, tokenizer_path="t", tokenizer_sha256="0" * 64,
                       chat_template=False, prompt_mode="completion", options={}, client_version="test",
                       python_version="3.11", created_unix_s=0.0)


def _record(key: str, point: str = "c1", *, warmup: bool = False, error: str | None = None) -> TurnRecord:
    return TurnRecord(record_key=key, run_point=point, load_shape="closed", requested_concurrency=int(point[1:]),
                      request_rate=None, question_id=key, category="coding", sub_category="", turn_index=0,
                      num_turns=1, warmup=warmup, worker=0, prompt_tokens=10, prompt_sha256="0" * 64, scheduled_ns=0,
                      send_ns=0, end_ns=2, started_unix_s=0.0, chunk_ns=[] if error else [1, 2],
                      chunk_tokens=[] if error else [1, 3], chunks_are_steps=True, output_tokens=0 if error else 4,
                      output_text="", finish_reason=None if error else "length", response_id=key, error=error,
                      error_kind="http_5xx" if error else None)


def _run(path: str, config: str, role: str | None, keys: list[str]) -> RunFolder:
    records = []
    for key in keys:  # "<point>:<name>", a leading "w" warmup, "x" failed
        point, name = key.split(":")
        records.append(_record(f"{path}/{name}", point, warmup=name.startswith("w"),
                               error="HTTP 503" if name.startswith("x") else None))
    return RunFolder(path=path, manifest=_manifest(config), all_records=records, role=role)


def _keys(records) -> list[str]:
    return [r.record_key for r in records]


def test_the_qualitative_sd_runs_give_the_records_warmup_and_failures_left_out():
    qualitative = _run("q", "qualitative", "sd", ["c1:a", "c1:w1", "c2:b", "c1:x1"])
    throughput = _run("t", "throughput_1k", "sd", ["c1:c"])
    baseline = _run("b", "qualitative", "baseline", ["c1:d"])
    runs = [baseline, throughput, qualitative]
    assert acceptance_runs(runs) == [qualitative]
    assert _keys(acceptance_records(runs)) == ["q/a", "q/b"]
    assert _keys(acceptance_records(runs, point="c2")) == ["q/b"]


def test_without_a_qualitative_run_every_sd_run_counts_and_a_baseline_never():
    one, two = _run("t1", "throughput_1k", "sd", ["c1:a"]), _run("t2", "throughput_8k", "sd", ["c1:b", "c1:w"])
    baseline = _run("b", "throughput_1k", "baseline", ["c1:c"])
    assert _keys(acceptance_records([one, baseline, two])) == ["t1/a", "t2/b"]
    assert acceptance_records([baseline]) == []


def test_a_local_folder_without_a_role_is_taken_as_given():
    local = _run("run", "throughput_1k", None, ["c1:a", "c2:w", "c2:b", "c2:x"])
    assert _keys(acceptance_records(local)) == ["run/a", "run/b"]
    assert _keys(acceptance_records(local, point="c2")) == ["run/b"]
    assert _keys(local.records) == ["run/a", "run/b"]  # RunFolder.records: the same rule's last step
