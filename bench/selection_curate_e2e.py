"""`speedbench curate` end to end on real prompts from the mirror, cold and warm embedding cache.

Assembles ``--n`` distinct real prompts from the mirror (default 100,000), in this fixed order, each
exact duplicate (same turns) kept once, until ``--n`` are reached:

1. every candidate of the Qualitative pools (every adapter, uncapped: 45,088 prompts), grouped by
   their category;
2. FLORES-200 devtest single-sentence translation prompts (38 languages x 1,012 sentences; a
   non-English sentence into English, an English one into a language chosen round-robin), group
   ``translation_flores``;
3. Tatoeba single-sentence translation prompts (each language's sentence into English), taken
   round-robin over the languages (sentence 0 of every language, then sentence 1, ...), group
   ``translation_tatoeba``.

It writes them as JSONL (``id``, ``turns``, ``category``, ``language``) to ``--work`` (an ignored
folder, never the repository), prints exactly how many came from where, then runs ``speedbench
curate`` twice in subprocesses with a fresh embedding cache: cold (everything embedded) and warm
(nothing embedded). Prints wall time, texts embedded per second (embedded / wall time of the whole
run), memory (the ``curate`` process's own VmHWM, and the peak PSS summed over it and its
embedding worker processes, sampled every 0.5 s) and whether both runs wrote identical parquet
bytes.

    .venv/bin/python bench/selection_curate_e2e.py [--n 100000] [--per-group 80] [--sources ../shared/sources]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

FLORES_INSTRUCTION = "Translate the following {src} sentence into {tgt}.\n\n{text}"
TATOEBA_INSTRUCTION = "Translate this {src} sentence into English.\n\n{text}"
TATOEBA_UNNAMED = "Translate this sentence (ISO 639-3 language code {src}) into English.\n\n{text}"


def pool_prompts(sources: Path):
    """(id, turns, group, language, origin) for every Qualitative candidate the mirror yields."""
    from speedbench.dataset_builder.qualitative.pools import collect_candidates
    from speedbench.dataset_builder.sources import SourceFiles

    candidates = collect_candidates(SourceFiles(sources))
    for category in sorted(candidates):
        for row in candidates[category]:
            yield row.question_id, list(row.turns), category, row.language or "und", f"pools/{category}"


def _language(code: str) -> tuple[str, str]:
    from speedbench.dataset_builder.sources.languages import LANGUAGES

    return LANGUAGES.get(code.split("_")[0], (code, code))


def flores_prompts(sources: Path):
    """One prompt per FLORES sentence and language: into English, or (English) into a round-robin target."""
    from speedbench.dataset_builder.sources._read import read_lines

    paths = sorted((sources / "flores200_devtest").glob("*.devtest"))
    codes = [path.name.split(".")[0] for path in paths]
    others = [code for code in codes if code != "eng_Latn"]
    for path, code in zip(paths, codes):
        iso1, name = _language(code)
        for i, sentence in enumerate(read_lines(path)):
            if not sentence.strip():
                continue
            target = "English" if code != "eng_Latn" else _language(others[i % len(others)])[1]
            text = FLORES_INSTRUCTION.format(src=name, tgt=target, text=sentence.strip())
            yield f"flores/{code}/{i}", [text], "translation_flores", iso1, f"flores/{code}"


def tatoeba_prompts(sources: Path):
    """One prompt per Tatoeba non-English sentence (into English), round-robin over the languages."""
    from speedbench.dataset_builder.sources._read import read_lines

    lines = {}
    for path in sorted((sources / "laser_tatoeba").glob("tatoeba.*-eng.*")):
        code = path.name.split(".")[1].split("-")[0]
        if path.suffix == f".{code}" and code != "eng":
            lines[code] = read_lines(path)
    for i in range(max(len(v) for v in lines.values())):
        for code in sorted(lines):
            if i < len(lines[code]) and lines[code][i].strip():
                iso1, name = _language(code)
                template = TATOEBA_INSTRUCTION if name != code else TATOEBA_UNNAMED
                text = template.format(src=name, text=lines[code][i].strip())
                yield f"tatoeba/{code}/{i}", [text], "translation_tatoeba", iso1, f"tatoeba/{code}"


def write_prompts(sources: Path, n: int, path: Path) -> tuple[Counter, Counter, int]:
    """Write the first ``n`` distinct prompts; (per origin, per group, exact duplicates skipped)."""
    seen: set[tuple[str, ...]] = set()
    origins, groups, duplicates = Counter(), Counter(), 0
    with path.open("w", encoding="utf-8") as handle:
        for generator in (pool_prompts, flores_prompts, tatoeba_prompts):
            for prompt_id, turns, group, language, origin in generator(sources):
                if sum(groups.values()) == n:
                    return origins, groups, duplicates
                if tuple(turns) in seen:
                    duplicates += 1
                    continue
                seen.add(tuple(turns))
                origins[origin] += 1
                groups[group] += 1
                handle.write(json.dumps({"id": prompt_id, "turns": turns, "category": group, "language": language},
                                        ensure_ascii=False) + "\n")
    return origins, groups, duplicates


def _proc_kib(pid: int, name: str, field: str) -> int:
    """One ``field:`` value (KiB) of /proc/PID/NAME; 0 if the process is gone."""
    try:
        with open(f"/proc/{pid}/{name}") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def _tree(root: int) -> list[int]:
    """``root`` and its descendants (the embedding worker processes of ``curate``)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += parents.get(pid, [])
    return out


class MemorySampler(threading.Thread):
    """Every 0.5 s: the PSS summed over ``curate`` and its worker processes (shared pages
    counted once), and the ``curate`` process's own VmHWM. Why not ``ru_maxrss``: on Linux a
    child's ``ru_maxrss`` starts from its parent's RSS at fork (kept across exec), so it would
    report this script's own memory (the assembled prompts) instead of the child's."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.stop, self.peak_tree_pss_kib, self.main_hwm_kib, self.workers = pid, threading.Event(), 0, 0, 0

    def run(self) -> None:
        while not self.stop.wait(0.5):
            pids = _tree(self.pid)
            pss = sum(_proc_kib(pid, "smaps_rollup", "Pss") for pid in pids)
            self.peak_tree_pss_kib = max(self.peak_tree_pss_kib, pss)
            self.main_hwm_kib = max(self.main_hwm_kib, _proc_kib(self.pid, "status", "VmHWM"))
            self.workers = max(self.workers, len(pids) - 1)


def curate(prompts: Path, out: Path, cache: Path, per_group: int) -> dict:
    command = [sys.executable, "-m", "speedbench", "curate", str(prompts), "--text-field", "turns",
               "--group-by", "category", "--id-field", "id", "--language-field", "language",
               "--per-group", str(per_group), "--config", "mine", "--out", str(out),
               "--embedding-cache", str(cache), "--no-progress"]
    log = out.with_suffix(".log")
    start = time.perf_counter()
    with log.open("w") as handle:
        child = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, text=True)
        sampler = MemorySampler(child.pid)
        sampler.start()
        child.wait()
        sampler.stop.set()
        sampler.join()
    seconds = time.perf_counter() - start
    output = log.read_text()
    if child.returncode != 0:
        raise SystemExit(f"curate failed ({log}):\n{output[-3000:]}")
    embedded = next(int(line.split()[1]) for line in output.splitlines() if line.startswith("embedded "))
    parquet = (out / "data" / "mine" / "test-00000-of-00001.parquet").read_bytes()
    return {"seconds": seconds, "embedded": embedded, "tree_pss_mib": sampler.peak_tree_pss_kib / 1024,
            "main_hwm_mib": sampler.main_hwm_kib / 1024, "processes": sampler.workers + 1,
            "parquet": parquet, "sha256": hashlib.sha256(parquet).hexdigest()[:16]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--per-group", type=int, default=80)
    parser.add_argument("--sources", type=Path, default=Path(os.environ.get("SPEEDBENCH_SOURCES", "../shared/sources")))
    parser.add_argument("--work", type=Path, default=Path("bench/output/curate_e2e"),
                        help="work folder (prompts, cache, outputs); emptied first; bench/output/ is git-ignored")
    args = parser.parse_args()
    root = args.work
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    origins, groups, duplicates = write_prompts(args.sources, args.n, root / "prompts.jsonl")
    print(f"{sum(groups.values())} distinct prompts ({duplicates} exact duplicates skipped) in {len(groups)} groups")
    print("by group: " + ", ".join(f"{g} {c}" for g, c in sorted(groups.items())))
    by_source = Counter()
    for origin, count in origins.items():
        by_source[origin.split("/")[0]] += count
    print("by source: " + ", ".join(f"{s} {c}" for s, c in sorted(by_source.items())))
    for source in ("flores", "tatoeba"):
        parts = sorted((o.split("/")[1], c) for o, c in origins.items() if o.startswith(source + "/"))
        if parts:
            print(f"  {source}: {len(parts)} languages: " + ", ".join(f"{code} {c}" for code, c in parts))
    cold = curate(root / "prompts.jsonl", root / "cold", root / "cache", args.per_group)
    warm = curate(root / "prompts.jsonl", root / "warm", root / "cache", args.per_group)
    print(f"{'run':<5} {'wall s':>8} {'embedded':>9} {'texts/s':>8} {'curate VmHWM MiB':>17} "
          f"{'peak PSS MiB (curate + workers)':>32} {'parquet sha256':>17}")
    for name, r in (("cold", cold), ("warm", warm)):
        rate = f"{r['embedded'] / r['seconds']:.1f}" if r["embedded"] else "-"
        print(f"{name:<5} {r['seconds']:>8.1f} {r['embedded']:>9} {rate:>8} {r['main_hwm_mib']:>17,.0f} "
              f"{r['tree_pss_mib']:>26,.0f} ({r['processes']}) {r['sha256']:>17}")
    print(f"identical parquet bytes cold vs warm: {cold['parquet'] == warm['parquet']}")
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
