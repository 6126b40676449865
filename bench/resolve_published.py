"""Resolve time and rows per source for published-format placeholder rows, offline from the mirror.

Two fixtures in the published nvidia/SPEED-Bench format are written from the mirror (never the
published files, which this machine cannot fetch): the full Qualitative split's shape (880 rows,
494 placeholders spread over the sources the reference resolves; the other 386 rows full text)
and a 32k Throughput bucket (1,536 rows: the mixed tier's 512 as HLE and StackSelect
placeholders, 256 BAMBOO high-entropy placeholders, 768 full-text rows). Each source's rows are
resolved as one batch and timed; the figures printed are measured, per source: rows, exact, may
differ, unresolved, seconds, rows/s. The whole file is then resolved once more through
``speedbench resolve`` (the CLI path, one pass over every source) and timed.

    .venv/bin/python bench/resolve_published.py [--sources ../shared/sources] [--out bench/output/resolve]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from speedbench.dataset_builder.published import SourceTables  # noqa: E402
from speedbench.dataset_builder.redistribution import resolve_rows, rows_from_table  # noqa: E402
from speedbench.schema import PLACEHOLDER_PREFIX as PH  # noqa: E402

SCHEMA = pa.schema([
    ("question_id", pa.string()), ("category", pa.string()), ("sub_category", pa.string()),
    ("turns", pa.list_(pa.string())), ("source", pa.string()), ("src_id", pa.string()),
    ("difficulty", pa.string()), ("multiturn", pa.bool_())])
MTB = "https://huggingface.co/datasets/mtbench101/mt-bench-101/raw/main/mtbench101.jsonl"
COSER = "https://github.com/Neph0s/CoSER/tree/main/data"
ROLES = "https://huggingface.co/datasets/ZenMoore/RoleBench/tree/a57ed54/rolebench-eng"
BAMBOO = "https://huggingface.co/datasets/RUCAIBox/BAMBOO/resolve/main/showspred_16k.jsonl"
STACK = "https://huggingface.co/datasets/AdaLEval/stackselect/resolve/main/stackselect_1k.json"


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def row(n: int, category: str, source: str, src_id: str, turns: list[str]) -> dict:
    return {"question_id": f"{n:032x}", "category": category, "sub_category": "math" if "MMLU" in source else "x",
            "turns": turns, "source": source, "src_id": src_id, "difficulty": "", "multiturn": len(turns) > 1}


def qualitative_fixture(sources: Path) -> list[dict]:
    hle = [h["id"] for h in jsonl(sources / "benchfortir" / "hle" / "top.json")][:208]
    lcb = [p["question_id"] for p in jsonl(sources / "livecodebench" / "problems.jsonl")][:40]
    contests = [json.loads(line)["meta_data"] for line in
                (sources / "code_contests" / "CodeContests_zeroshot_for_test_case_generation.jsonl").read_text().splitlines()]
    rows, n = [], 0
    plan = ([("stem", "cais/hle", i, [PH]) for i in hle]
            + [("stem", "TIGER-Lab/MMLU-Pro", f"range({70 + 3 * i}, {70 + 3 * i + 1 + i % 3})", [PH] * (1 + i % 3))
               for i in range(100)]
            + [("qa", MTB, f"mtbench101_{i * 17}", [PH]) for i in range(60)]
            + [("roleplay", ROLES, f"rolebench_instruction-generalization_{3 * i}_{3 * i + 1}",
                [PH + "\n\nYou are {role_name}. {role_description_and_catchphrases}", PH]) for i in range(40)]
            + [("roleplay", COSER, f"coser_{i * 6}", [PH]) for i in range(30)]
            + [("coding", "livecodebench/code_generation_lite", q, [PH + "\n\n{question}\n\n{starter_code}"]) for q in lcb]
            + [("coding", "deepmind/code_contests", m["task_name"], [PH + "\n\n{question}"]) for m in contests[:16]])
    for category, source, src_id, turns in plan:
        rows.append(row(n, category, source, src_id, turns))
        n += 1
    while len(rows) < 880:
        rows.append(row(n, "writing", "inline", str(n), [f"Write a short poem about the number {n}."]))
        n += 1
    return rows


def throughput_fixture(sources: Path) -> list[dict]:
    hle = [h["id"] for h in jsonl(sources / "benchfortir" / "hle" / "top.json")][:256]
    stack = [q["question_id"] for q in json.loads((sources / "adaleval" / "stackselect_1k.json").read_text())][:256]
    rows = [row(i, "mixed", "cais/hle", h, [PH]) for i, h in enumerate(hle)]
    rows += [row(256 + i, "mixed", STACK, q, [PH]) for i, q in enumerate(stack)]
    rows += [row(512 + i, "high_entropy", BAMBOO, f"bamboo_{i % 100}_{(i * 7 + 1) % 100}", [PH]) for i in range(256)]
    rows += [row(768 + i, "low_entropy", "inline", str(i), ["Some full text. " * 50]) for i in range(768)]
    return rows


def per_source(rows: list[dict], sources: Path, config: str) -> list[str]:
    tables = SourceTables(sources)
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["source"], []).append(r)
    lines = []
    for source, members in groups.items():
        started = time.perf_counter()
        _, report = resolve_rows(rows_from_table(pa.Table.from_pylist(members, schema=SCHEMA)), sources, config,
                                 tables=tables)
        seconds = time.perf_counter() - started
        counts = next(iter(report.per_source.values()), {"exact": 0, "differs": 0, "unresolved": 0})
        label = next(iter(report.per_source), "(full text)")
        lines.append(f"| {config} | {label} | {len(members)} | "
                     f"{counts['exact']} | {counts['differs']} | {counts['unresolved']} | "
                     f"{report.already_complete} | {seconds:.2f} | {len(members) / seconds:.0f} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, default=Path(os.environ.get("SPEEDBENCH_SOURCES", "../shared/sources")))
    parser.add_argument("--out", type=Path, default=Path("bench/output/resolve"))
    args = parser.parse_args()
    from speedbench.cli import main as cli
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print("| config | source | rows | exact | may differ | unresolved | full text | seconds | rows/s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for config, rows in (("qualitative", qualitative_fixture(args.sources)),
                         ("throughput_32k", throughput_fixture(args.sources))):
        for line in per_source(rows, args.sources, config):
            print(line, flush=True)
        path = args.out / f"{config}.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
        started = time.perf_counter()
        code = cli(["resolve", str(path), "--config", config, "--out", str(args.out / f"{config}.resolved.parquet"),
                    "--sources", str(args.sources), "--allow-unresolved"])
        print(f"speedbench resolve {config}: exit {code}, {time.perf_counter() - started:.1f} s for {len(rows)} rows")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
