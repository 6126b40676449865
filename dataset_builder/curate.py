"""`speedbench curate`: a SPEED-Bench-style diverse split from anyone's prompts.

The paper's curation (embed, drop near-duplicates, select k per category by Algorithm 1, compare
with random) applied to a user's prompts: each value of the ``group_by`` column is a category,
``per_group`` prompts are chosen from it, and the result is one config of a dataset folder with
the published schema, a card section and the diversity report (selection vs random, heatmaps),
ready for ``speedbench run --dataset DIR --config NAME``.
"""
from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from speedbench.dataset_builder.curate_input import CurateInputError, InputSpec, Prompt, check_group_sizes
from speedbench.dataset_builder.registry import BuiltConfig
from speedbench.dataset_builder.selection.template_dups import EXTRA, template_duplicates
from speedbench.schema import DatasetRow

CONFIG_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True)
class CurateOptions:
    name: str
    per_group: int
    seed: int = 0
    selector: str = "greedy_swap"
    index: str = "flat"
    threads: int = 1
    dedup_threshold: float = 0.95
    template_extra: int = EXTRA  # template variants: at most this many characters around the prompt (0: keep them)
    source: str = ""
    license: str = ""


def check_config_name(name: str) -> str:
    if not name or not set(name) <= CONFIG_NAME_CHARS or name[0] in "-_":
        raise CurateInputError(f"--config {name!r}: use lower-case letters, digits, '_' and '-'")
    return name


def group_seed(seed: int, group: str) -> int:
    """A selection seed per group that does not depend on which other groups exist."""
    digest = hashlib.sha256(f"{seed}\x1f{group}".encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def to_row(prompt: Prompt, options: CurateOptions) -> DatasetRow:
    return DatasetRow(category=prompt.group, sub_category=prompt.extra.get("sub_category") or prompt.group,
                      turns=list(prompt.turns), source=options.source, src_id=prompt.prompt_id,
                      difficulty=prompt.extra.get("difficulty", ""),
                      language=prompt.extra.get("language") or "und", license=options.license)


def select_group(vectors: np.ndarray, options: CurateOptions, group: str, variants: int = 0):
    """(kept pool positions, chosen positions within them, random positions, dropped near-duplicates)."""
    from speedbench.dataset_builder.selection import random_select, select
    from speedbench.dataset_builder.selection.dedup import near_duplicates

    drop = near_duplicates(vectors, options.dedup_threshold)
    keep = np.flatnonzero(~drop)
    if len(keep) < options.per_group:
        raise CurateInputError(f"group {group!r}: {len(keep)} prompts left after removing {variants} template "
                               f"variants and {int(drop.sum())} near-duplicates (cosine >= {options.dedup_threshold}), "
                               f"fewer than "
                               f"--per-group {options.per_group}")
    seed = group_seed(options.seed, group)
    chosen = select(vectors[keep], options.per_group, options.selector, seed=seed, index=options.index,
                    threads=options.threads)
    random_chosen = random_select(len(keep), options.per_group, np.random.default_rng([seed, 2]))
    return keep, chosen, random_chosen, int(drop.sum())


def curate(spec: InputSpec, prompts: list[Prompt], embeddings: np.ndarray, options: CurateOptions,
           out_dir: Path, embedder_id: str) -> BuiltConfig:
    """Select per group and write the diversity report; the caller writes the dataset folder."""
    from speedbench.dataset_builder.qualitative.report import measure, write_report

    check_config_name(options.name)
    check_group_sizes(spec, prompts, options.per_group)
    members: dict[str, list[int]] = defaultdict(list)
    for position, prompt in enumerate(prompts):
        members[prompt.group].append(position)
    rows: list[DatasetRow] = []
    results, per_group = [], {}
    for group in sorted(members):
        everyone = np.asarray(members[group])
        # Template variants first (a text method: embeddings miss a courtesy prefix on a short prompt).
        variants = template_duplicates([prompts[p].turns for p in everyone], options.template_extra)
        positions = everyone[~variants.drop]
        keep, chosen, random_chosen, dropped = select_group(embeddings[positions], options, group, variants.count)
        vectors = embeddings[positions[keep]]
        results.append(measure(group, vectors, chosen, random_chosen, None))
        selected = sorted((to_row(prompts[positions[keep[i]]], options) for i in chosen), key=lambda r: r.question_id)
        rows += selected
        per_group[group] = {"prompts": len(everyone), "template_variants_removed": variants.count,
                             "template_variants": [[prompts[everyone[a]].prompt_id, prompts[everyone[b]].prompt_id]
                                                   for a, b in sorted(variants.kept_for.items())],
                             "near_duplicates_removed": dropped, "pool": len(keep),
                            "selected": len(selected), "multiturn": sum(r.multiturn for r in selected),
                            "mean_similarity": {"selected": results[-1].ours, "random": results[-1].random}}
    markdown, files = write_report(Path(out_dir) / "reports" / options.name, results, embedder_id)
    stats = {"selector": options.selector, "index": options.index, "embedder": embedder_id,
             "per_group": options.per_group, "dedup_threshold": options.dedup_threshold, "seed": options.seed,
             "template_extra": options.template_extra,
             "input": {"path": str(spec.path), "text_field": spec.text_field, "group_by": spec.group_by,
                       "id_field": spec.id_field, "records": len(prompts)},
             "groups": per_group, "languages": sorted({r.language for r in rows} - {"und"}),
             "multiturn_rows": sum(r.multiturn for r in rows), "report_markdown": markdown,
             "report_files": [str(p.relative_to(out_dir)) for p in files]}
    source_files = [Path(spec.path)] if Path(spec.path).is_file() else []
    return BuiltConfig(name=options.name, rows=rows, card_section=card_section(rows, stats, options),
                       stats=stats, source_files=source_files)


def card_section(rows: list[DatasetRow], stats: dict, options: CurateOptions) -> str:
    source = stats["input"]
    lines = [f"## `{options.name}` config (curated with `speedbench curate`)", "",
             f"{len(rows)} prompts: {options.per_group} per value of `{source['group_by']}` in "
             f"`{Path(source['path']).name}` ({source['records']:,} records, text field `{source['text_field']}`), "
             f"chosen for semantic diversity as SPEED-Bench chooses its Qualitative split: embedded with "
             f"`{stats['embedder']}`, template variants (another prompt whole, plus at most {options.template_extra} "
             f"characters of prefix, suffix, repeat marker or spacing) and near-duplicates "
             f"(cosine >= {options.dedup_threshold}) removed, then "
             f"`{options.selector}` (Algorithm 1: greedy + swap, over the `{options.index}` index), seed {options.seed}.",
             "", "| group | prompts | template variants removed | near-duplicates removed | selected | multi-turn | "
             "mean similarity: selected | random |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for group, g in stats["groups"].items():
        lines.append(f"| {group} | {g['prompts']} | {g['template_variants_removed']} | {g['near_duplicates_removed']} | "
                     f"{g['selected']} | {g['multiturn']} | "
                     f"{g['mean_similarity']['selected']:.3f} | {g['mean_similarity']['random']:.3f} |")
    lines += ["", f"The diversity report with heatmaps is in `reports/{options.name}/reports/diversity.md`."]
    return "\n".join(lines)
