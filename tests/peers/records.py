"""Hand-built records for the peer tests: every time and count chosen so results can be worked out by hand."""
from __future__ import annotations

import json
from pathlib import Path

from speedbench.records import EngineSpecStats, RunManifest, TurnRecord

S = 1_000_000_000  # ns per second


def record(qid: str, category: str = "writing", turn: int = 0, *, send: float = 0.0, chunks=(), tokens=(),
           end: float | None = None, finish: str = "length", accepted=None, drafted=None, steps=None,
           histogram=None, raw=None, point: str = "c1", warmup: bool = False, error: str | None = None,
           text: str = "") -> TurnRecord:
    """One request-turn: ``chunks`` are arrival times in seconds, ``tokens`` the tokens of each chunk."""
    stats = None
    if accepted is not None:
        stats = EngineSpecStats(source="test", verify_steps=steps, draft_tokens=drafted, accepted_tokens=accepted,
                                acceptance_histogram=histogram, drafted_steps=steps, raw=dict(raw or {}))
    last = chunks[-1] if chunks else send
    return TurnRecord(
        record_key=f"{point}/{qid}/{turn}", run_point=point, load_shape="closed", requested_concurrency=1,
        request_rate=None, question_id=qid, category=category, sub_category="", turn_index=turn, num_turns=turn + 1,
        warmup=warmup, worker=0, prompt_tokens=5, prompt_sha256="0" * 64, scheduled_ns=round(send * S),
        send_ns=round(send * S), end_ns=round((end if end is not None else last) * S), started_unix_s=0.0,
        chunk_ns=[round(t * S) for t in chunks], chunk_tokens=list(tokens), chunks_are_steps=True,
        output_tokens=sum(tokens), output_text=text, finish_reason=None if error else finish, engine_stats=stats,
        error=error, error_kind="http_5xx" if error else None)


def write_run(folder: Path, records: list[TurnRecord], engine: str = "vllm", counters: list[dict] | None = None,
              draft_length: int | None = 3) -> Path:
    """A run folder as ``speedbench run`` writes it: manifest.json, records.jsonl, counters.jsonl."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = RunManifest(engine=engine, url="http://127.0.0.1:1", model_id="m", engine_version="test", server={},
                           dataset_dir=str(folder), dataset_config="qualitative", dataset_config_sha256="0" * 64,
                           dataset_manifest_sha256="", num_rows=len(records), tokenizer_path=str(folder / "none"),
                           tokenizer_sha256="", chat_template=False, prompt_mode="completion",
                           options={"points": sorted({r.run_point for r in records}), "draft_length": draft_length},
                           client_version="test", python_version="3", created_unix_s=0.0)
    (folder / "manifest.json").write_text(json.dumps(manifest.to_dict()))
    (folder / "records.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records))
    (folder / "counters.jsonl").write_text("".join(json.dumps(c) + "\n" for c in counters or []))
    return folder
