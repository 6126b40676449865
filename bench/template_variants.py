"""Template variants: how many the LSH proposal finds, by prompt length and template length, and the time.

The verdict of ``dataset_builder/selection/template_dups.py`` is exact, but a pair is judged only
if MinHash LSH proposes it. This measures that recall on real prompts: distinct first turns of
MT-Bench-101 dialogues (cut into length bands) each followed by one variant (a courtesy prefix or
suffix of 20, 40 or 80 characters), for LSH thresholds 0.2, 0.3 and 0.5; it prints the
share of variants found per band and the wall time of each run. It also runs the rule over the real
BIG-Bench-Hard files (6,511 items sharing templates) at each threshold and prints how many it
merges and how long that takes (more proposals to verify at a lower threshold).

    .venv/bin/python bench/template_variants.py [--sources ../shared/sources]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from speedbench.dataset_builder.selection import template_dups  # noqa: E402

BANDS = ((20, 40), (40, 80), (80, 160), (160, 400))
THRESHOLDS = (0.2, 0.3, 0.5)
DEFAULT = template_dups.LSH_THRESHOLD
TEMPLATE = "Thank you so much for taking the time to help me with this, I really appreciate it!!"


def prompts(sources: Path) -> list[str]:
    seen, out = set(), []
    for line in (sources / "mtbench101" / "mtbench101.jsonl").read_text(encoding="utf-8").splitlines():
        text = " ".join(json.loads(line)["history"][0]["user"].split())
        if text.lower() not in seen:
            seen.add(text.lower())
            out.append(text)
    return out


def recall(bases: list[str], extra: int) -> tuple[float, float]:
    """(share of variants found, seconds) for bases each followed by a variant with ``extra`` characters more."""
    decoration = TEMPLATE[:extra - 1]
    texts: list[str] = []
    for index, base in enumerate(bases):           # prefix and suffix in turn
        texts += [base, f"{decoration} {base}" if index % 2 else f"{base} {decoration}"]
    started = time.perf_counter()
    found = template_dups.template_duplicates(texts)
    seconds = time.perf_counter() - started
    hits = sum(found.kept_for.get(2 * i + 1) == 2 * i for i in range(len(bases)))
    return hits / max(1, len(bases)), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, default=Path(os.environ.get(
        "SPEEDBENCH_SOURCES", Path(__file__).resolve().parents[2] / "shared" / "sources")))
    args = parser.parse_args()
    every = prompts(args.sources)
    print(f"{len(every)} distinct MT-Bench-101 first turns; load average {os.getloadavg()[0]:.2f}")
    print("| LSH threshold | prompt length (characters) | prompts | found with +20 | +40 | +80 | seconds (+80) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for threshold in THRESHOLDS:
        template_dups.LSH_THRESHOLD = threshold
        for low, high in BANDS:
            bases = [t for t in every if low <= len(t) < high]
            shares, seconds = [], 0.0
            for extra in (20, 40, 80):
                share, seconds = recall(bases, extra)
                shares.append(share)
            print(f"| {threshold} | {low}-{high - 1} | {len(bases)} | "
                  + " | ".join(f"{s:.1%}" for s in shares) + f" | {seconds:.1f} |")
    from speedbench.dataset_builder.sources import SourceFiles, bbh
    rows = bbh.candidates(SourceFiles(args.sources))
    for threshold in THRESHOLDS:
        template_dups.LSH_THRESHOLD = threshold
        started = time.perf_counter()
        found = template_dups.template_duplicates([r.turns for r in rows])
        print(f"BIG-Bench-Hard, LSH threshold {threshold}: {len(rows)} items, {found.count} merged as template "
              f"variants (equal but for case and spacing), {time.perf_counter() - started:.1f} s; "
              f"load average {os.getloadavg()[0]:.2f}")
    template_dups.LSH_THRESHOLD = DEFAULT


if __name__ == "__main__":
    main()
