"""SPEED-Lite: small, deterministic, stratified subsets of the Qualitative and Throughput configs.

``lite_qualitative`` keeps ``lite_per_category`` prompts (default 8) of every qualitative
category; ``lite_throughput_1k`` keeps ``lite_per_tier`` prompts (default 16) of every entropy
tier of ``throughput_1k``. They exist for quick checks and for ``make demo`` on a laptop-class
CPU; the full configs remain the benchmark.

Sampling (the same for every lite config):

1. The parent rows are the parent config already in the dataset folder, when it is there (so a
   lite config is an exact subset of the full one, rows and ``question_id`` unchanged); otherwise
   the parent is built in the same process with the current build options (``--pool-cap``,
   ``--per-tier``, ...) and only the subset is written.
2. Optionally (``lite_max_prompt_tokens``), rows whose turns together exceed that many
   ``o200k_base`` tokens are left out before sampling, so the subset fits a small model's context.
   Off by default; when on, the card says how many rows each stratum lost.
3. Within each stratum (the ``category`` column), rows are ordered by
   ``sha256("<seed>:<question_id>")`` and the first n are kept: a seeded uniform sample without
   replacement that does not depend on the parent's row order, and that grows by extension (the
   8-row subset is contained in the 16-row one).
4. Rows are written in the parent's order.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace
from pathlib import Path

from speedbench.dataset_builder.registry import BuildContext, BuiltConfig, available_configs, register_config
from speedbench.schema import QUALITATIVE_CATEGORIES, THROUGHPUT_CATEGORIES, DatasetRow

LITE_CONFIGS = {
    # lite config: (parent config, option naming n per stratum, default n, strata in card order)
    "lite_qualitative": ("qualitative", "lite_per_category", 8, QUALITATIVE_CATEGORIES),
    "lite_throughput_1k": ("throughput_1k", "lite_per_tier", 16, THROUGHPUT_CATEGORIES),
}


def lite_order_key(seed: int, question_id: str) -> str:
    return hashlib.sha256(f"{seed}:{question_id}".encode("utf-8")).hexdigest()


def stratified_sample(rows: list[DatasetRow], per_stratum: int, seed: int) -> list[DatasetRow]:
    """The first ``per_stratum`` rows of each category in seeded hash order, returned in input order."""
    by_stratum: dict[str, list[DatasetRow]] = {}
    for row in rows:
        by_stratum.setdefault(row.category, []).append(row)
    keep: set[str] = set()
    for members in by_stratum.values():
        ordered = sorted(members, key=lambda r: lite_order_key(seed, r.question_id))
        keep.update(r.question_id for r in ordered[:per_stratum])
    return [row for row in rows if row.question_id in keep]


def prompt_tokens_o200k(row: DatasetRow) -> int:
    from speedbench.tokenization.o200k import count_tokens

    return sum(count_tokens(turn) for turn in row.turns)


def _parent_rows(ctx: BuildContext, parent: str) -> tuple[list[DatasetRow], dict, list[Path]]:
    """Rows of the parent config, from the dataset folder when present, else built now."""
    import pyarrow.parquet as pq

    from speedbench.dataset_builder.redistribution import rows_from_table
    from speedbench.dataset_builder.writer import data_file, file_sha256, read_manifest

    path = data_file(ctx.out_dir, parent)
    if path.exists():
        rows = rows_from_table(pq.read_table(path))
        entry = read_manifest(ctx.out_dir)["configs"].get(parent, {})
        origin = {"parent": parent, "origin": "dataset folder", "parent_file_sha256": file_sha256(path),
                  "parent_rows": len(rows), "parent_build": entry.get("build", {})}
        return rows, origin, [path]
    builders = available_configs()
    if parent not in builders:
        raise ValueError(f"lite config needs {parent!r}: not in {ctx.out_dir} and no builder registered for it")
    built = builders[parent](ctx)
    origin = {"parent": parent, "origin": "built in process with this build's options",
              "parent_rows": len(built.rows), "parent_options": dict(ctx.options), "parent_stats": built.stats}
    return built.rows, origin, list(built.source_files)


def build_lite(ctx: BuildContext, name: str) -> BuiltConfig:
    parent, option, default_n, strata = LITE_CONFIGS[name]
    per_stratum = int(getattr(ctx.build_options, option) or default_n)
    max_tokens = ctx.build_options.lite_max_prompt_tokens
    rows, origin, source_files = _parent_rows(ctx, parent)
    dropped: Counter[str] = Counter()
    if max_tokens:
        kept = []
        for row in rows:
            if prompt_tokens_o200k(row) <= int(max_tokens):
                kept.append(row)
            else:
                dropped[row.category] += 1
        rows = kept
    chosen = stratified_sample(rows, per_stratum, ctx.seed)
    counts = Counter(r.category for r in chosen)
    available = Counter(r.category for r in rows)
    short = {c: counts.get(c, 0) for c in strata if counts.get(c, 0) < per_stratum}
    if short and not ctx.build_options.allow_short:
        raise ValueError(f"{name}: strata with fewer than {per_stratum} rows in {parent}: {short}; "
                         f"pass --allow-short to write them anyway")
    stats = {"parent": origin, "per_stratum": per_stratum, "seed": ctx.seed, "sampling": "sha256(seed:question_id) order per category",
             "max_prompt_tokens_o200k": int(max_tokens) if max_tokens else None,
             "dropped_over_max_tokens": dict(sorted(dropped.items())), "available_per_stratum": dict(sorted(available.items())),
             "rows_per_stratum": {c: counts.get(c, 0) for c in strata}, "short_strata": short,
             "languages": sorted({r.language for r in chosen}), "multiturn_rows": sum(r.multiturn for r in chosen)}
    return BuiltConfig(name=name, rows=[replace(r) for r in chosen], card_section=card_section(name, stats),
                       stats=stats, source_files=source_files)


def card_section(name: str, stats: dict) -> str:
    parent = stats["parent"]["parent"]
    n = stats["per_stratum"]
    where = ("taken from the full `{p}` config in this folder (an exact subset: same rows, same `question_id`)"
             if stats["parent"]["origin"] == "dataset folder" else
             "sampled from a `{p}` build made in the same run with that run's options (the parent itself "
             "is not written; its options and statistics are in `manifest.json`)").format(p=parent)
    if stats["parent"]["origin"] != "dataset folder":
        used = stats["parent"].get("parent_options", {})
        keys = ("per_category", "pool_cap", "selector") if parent == "qualitative" else ("per_tier",)
        where += " (parent options: " + ", ".join(f"`{k}={used.get(k)}`" for k in keys) + ")"
    lines = [f"### `{name}` (SPEED-Lite): {n} prompts per stratum of `{parent}`", "",
             f"A small deterministic subset for quick checks and `make demo`, {where}. Within each "
             f"`category` the rows are ordered by `sha256(\"{stats['seed']}:<question_id>\")` and the first {n} "
             "are kept: a seeded uniform sample per stratum, independent of the parent's row order and "
             "nested (a smaller subset is contained in a larger one with the same seed). Figures measured on "
             "it estimate the full config's with much wider intervals; compare per category, not overall "
             "means, since every stratum has the same weight in both."]
    if stats["max_prompt_tokens_o200k"]:
        dropped = ", ".join(f"{c} {k}" for c, k in stats["dropped_over_max_tokens"].items()) or "none"
        lines += ["", f"Before sampling, rows longer than {stats['max_prompt_tokens_o200k']} `o200k_base` tokens "
                      f"(all turns together) were left out so the prompts fit a small model's context "
                      f"(rows dropped per category: {dropped}). This biases long-input categories towards their "
                      "shorter prompts."]
    lines += ["", "| stratum | rows | available in parent |", "|---|---|---|"]
    for stratum, count in stats["rows_per_stratum"].items():
        lines.append(f"| {stratum} | {count} | {stats['available_per_stratum'].get(stratum, 0)} |")
    if stats["short_strata"]:
        lines += ["", f"Short strata (fewer than {n} rows available, written with --allow-short): "
                      + ", ".join(f"{c} ({k})" for c, k in stats["short_strata"].items())]
    return "\n".join(lines)


for _name in LITE_CONFIGS:
    register_config(_name)(lambda ctx, _name=_name: build_lite(ctx, _name))
