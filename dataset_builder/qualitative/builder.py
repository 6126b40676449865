"""Build the Qualitative config: 11 categories x 80 prompts chosen for semantic diversity.

Steps per category: pool (all adapters' candidates; Spec-Bench is never one; ``--pool-cap`` can
cap it with a seeded source-balanced sample, 0 = every candidate, the default), drop template-only
variants (one prompt held whole by another plus a short prefix, suffix or marker;
``selection/template_dups.py``), embed (cached by content hash), drop near-duplicates (FAISS),
select k with the chosen selector (default: Algorithm 1, greedy + swap), enforce the category's
composition rules (``composition.py``: task mix and languages in Multilingual, hard share in
Coding / Humanities / Math / STEM, a multi-turn minimum), then measure the diversity against a
random sample of the same pool and against Spec-Bench's own prompts.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path

import numpy as np

from speedbench.dataset_builder.embeddings import EmbeddingCache, embed_texts, get_embedder
from speedbench.dataset_builder.qualitative.composition import enforce, rules_for, violations
from speedbench.dataset_builder.qualitative.pools import CategoryPool, cap_pool, collect_candidates, embedding_text
from speedbench.dataset_builder.qualitative.report import measure, write_report
from speedbench.dataset_builder.registry import BuildContext, BuiltConfig
from speedbench.dataset_builder.selection import random_select, select
from speedbench.dataset_builder.selection.dedup import near_duplicates
from speedbench.dataset_builder.selection.template_dups import template_duplicates
from speedbench.dataset_builder.sources import SourceFiles, specbench
from speedbench.schema import QUALITATIVE_CATEGORIES, DatasetRow

class ShortPoolError(ValueError):
    """A category has fewer candidates than the rows asked for (and --allow-short was not given)."""


def service_options(options: dict) -> dict:
    """--embedder openai: the endpoint and model (``--embedding-url``, ``--embedding-model``)."""
    if options["embedder"] != "openai":
        return {}
    given = {"base_url": options.get("embedding_url"), "model": options.get("embedding_model")}
    return {key: value for key, value in given.items() if value}


def _options(ctx: BuildContext) -> dict:
    options = asdict(ctx.build_options)  # defaults filled in (speedbench.settings.BuildOptions)
    hub_revisions = options.get("hub_revisions") or {}
    if isinstance(hub_revisions, (str, Path)):
        hub_revisions = json.loads(Path(hub_revisions).read_text(encoding="utf-8"))
    options["hub_revisions"] = hub_revisions
    return options


def specbench_by_category(files: SourceFiles) -> dict[str, list[DatasetRow]]:
    rows: dict[str, list[DatasetRow]] = defaultdict(list)
    for _, row in specbench.read_rows(files.path(specbench.FILE)):
        rows[row.category].append(row)
    return rows


def _choose(category: str, index: int, pool_rows: list[DatasetRow], pool_vectors: np.ndarray, take: int,
            options: dict, seed: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """(selected indices, the random baseline's indices, what the composition rules did)."""
    rng_seed = [seed, index]
    chosen = select(pool_vectors, take, options["selector"], seed=int(np.random.default_rng(rng_seed).integers(2**31)))
    rules = rules_for(category, pool_rows, take) if options["selector"] != "random" else None
    broken = violations(rules, chosen) if rules else []
    chosen, swaps = enforce(pool_vectors, chosen, rules)
    random_chosen = random_select(len(pool_rows), take, np.random.default_rng(rng_seed + [2]))
    composition = {"rule": rules.description if rules else None, "selector_broke": broken, "swaps": swaps,
                   "unmet": violations(rules, chosen) if rules else []}
    return chosen, random_chosen, composition


def _category_stats(pool: CategoryPool, removed: int, pool_rows: list[DatasetRow], selected: list[DatasetRow],
                    composition: dict, result) -> dict:
    return {
        "candidates": pool.available, "pool_after_cap": len(pool.rows), "near_duplicates_removed": removed,
        "pool": len(pool_rows), "selected": len(selected), "pool_per_source": pool.per_source,
        "selected_per_source": dict(sorted(Counter(r.source for r in selected).items())),
        "multiturn": sum(r.multiturn for r in selected),
        "multiturn_share": sum(r.multiturn for r in selected) / max(1, len(selected)),
        "pool_difficulty": dict(sorted(Counter(r.difficulty or "none" for r in pool_rows).items())),
        "languages": sorted({r.language for r in selected}),
        "composition": composition,
        **selection_profile(selected),
        "mean_similarity": {"selected": result.ours, "random": result.random, "specbench": result.specbench},
    }


def _deduplicated(pool: CategoryPool, embedder, cache, options: dict,
                  progress: bool) -> tuple[list[DatasetRow], np.ndarray, dict[str, int], int]:
    """(rows, vectors, rows removed per method, texts embedded): template variants, then embedding near-duplicates."""
    variants = template_duplicates([r.turns for r in pool.rows])     # whole prompts, as sent
    pool.rows = [r for r, dropped in zip(pool.rows, variants.drop) if not dropped]
    vectors, embedded = embed_texts([embedding_text(r) for r in pool.rows], embedder, cache,
                                    progress=progress, description=f"embedding {pool.category}")
    drop = near_duplicates(vectors, float(options["dedup_threshold"]))
    keep = np.flatnonzero(~drop)
    removed = {"template": variants.count, "embedding": int(drop.sum())}
    return [pool.rows[i] for i in keep], vectors[keep], removed, embedded


def _short_pool(category: str, pool: CategoryPool, left: int, k: int, allow_short: bool) -> int:
    """``left`` (the rows the category will have) when --allow-short, else ShortPoolError."""
    message = (f"category {category!r}: only {left} candidates after de-duplication "
               f"({pool.available} before the cap), fewer than the {k} asked for")
    if not allow_short:
        raise ShortPoolError(message + "; pass --allow-short to write it anyway")
    return left


def build_qualitative(ctx: BuildContext) -> BuiltConfig:
    from tqdm.auto import tqdm

    options = _options(ctx)
    k = int(options["per_category"])
    files = SourceFiles(Path(ctx.sources), online=bool(options["online"]), hub_revisions=options["hub_revisions"])
    candidates = collect_candidates(files, progress=ctx.progress)
    spec_rows = specbench_by_category(files)

    workers = options.get("embed_workers")
    embedder = get_embedder(options["embedder"], **({"workers": int(workers)} if workers and options["embedder"] == "use" else {}),
                            **service_options(options))
    cache = EmbeddingCache(options.get("embedding_cache"))
    rows: list[DatasetRow] = []
    results, category_stats, short = [], {}, {}
    embedded_total = 0
    try:
        for index, category in enumerate(tqdm(QUALITATIVE_CATEGORIES, desc="qualitative", unit="category",
                                              disable=not ctx.progress)):
            pool: CategoryPool = cap_pool(category, candidates[category], int(options["pool_cap"] or 0), ctx.seed)
            pool_rows, pool_vectors, removed, embedded = _deduplicated(pool, embedder, cache, options, ctx.progress)
            embedded_total += embedded
            if len(pool_rows) < k:
                short[category] = _short_pool(category, pool, len(pool_rows), k, options["allow_short"])
            take = min(k, len(pool_rows))
            chosen, random_chosen, composition = _choose(category, index, pool_rows, pool_vectors, take, options,
                                                         ctx.seed)
            spec_vectors = None
            if spec_rows.get(category):
                compared = spec_rows[category][:int(options["specbench_compare_cap"])] or spec_rows[category]
                spec_vectors, embedded = embed_texts([embedding_text(r) for r in compared], embedder, cache)
                embedded_total += embedded
            results.append(measure(category, pool_vectors, chosen, random_chosen, spec_vectors))
            selected = sorted((pool_rows[i] for i in chosen), key=lambda r: r.question_id)
            rows += selected
            category_stats[category] = _category_stats(pool, removed["embedding"], pool_rows, selected, composition,
                                                       results[-1])
            category_stats[category]["template_variants_removed"] = removed["template"]
    finally:
        cache.close()
        if hasattr(embedder, "close"):
            embedder.close()       # stops the embedding worker processes
    markdown, report_files = write_report(ctx.out_dir, results, embedder.model_id)
    stats = {
        "selector": options["selector"], "embedder": embedder.model_id, "per_category": k,
        "pool_cap": options["pool_cap"], "dedup_threshold": options["dedup_threshold"],
        "texts_embedded_this_build": embedded_total, "categories": category_stats, "short_categories": short,
        "languages": sorted({r.language for r in rows}), "multiturn_rows": sum(r.multiturn for r in rows),
        "multiturn_share": sum(r.multiturn for r in rows) / max(1, len(rows)),
        "median_first_turn_isl_o200k": float(np.median([first_turn_tokens(r) for r in rows])) if rows else 0.0,
        "hub_revisions": files.resolved_revisions, "report_markdown": markdown,
        "report_files": [str(p.relative_to(ctx.out_dir)) for p in report_files],
    }
    return BuiltConfig(name="qualitative", rows=rows, card_section=card_section(rows, stats, options),
                       stats=stats, source_files=list(files.used))


def first_turn_tokens(row: DatasetRow) -> int:
    from speedbench.tokenization.o200k import count_tokens
    return count_tokens(row.turns[0])


def selection_profile(rows: list[DatasetRow]) -> dict:
    """Task types, difficulty mix and median first-turn ISL (o200k) of a category's selected rows."""
    difficulties = Counter(r.difficulty or "none" for r in rows)
    return {
        "task_types": dict(sorted(Counter(r.sub_category.split("/")[0] for r in rows).items())),
        "difficulty": dict(sorted(difficulties.items())),
        "hard_share": difficulties.get("hard", 0) / max(1, len(rows)),
        "median_first_turn_isl_o200k": float(np.median([first_turn_tokens(r) for r in rows])) if rows else 0.0,
    }


def card_section(rows: list[DatasetRow], stats: dict, options: dict) -> str:
    from speedbench.dataset_builder.qualitative.card import render_card_section
    return render_card_section(rows, stats, options)
