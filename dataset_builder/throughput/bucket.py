"""Build one Throughput bucket (``throughput_<N>k``): 3 entropy tiers x ``per_tier`` prompts of exactly N tokens.

Per tier, the rows are shared equally among its task types, capped by how many prompts with
distinct content each can make at this length (``capacity``); what a capped task type cannot
fill goes to the others of the tier. Each prompt is rendered from its source units and fitted
to exactly N o200k_base tokens (``fit.py``); ``src_id`` records the recipe (``base.py``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from speedbench.dataset_builder.registry import BuildContext, BuiltConfig
from speedbench.dataset_builder.throughput.answer_selection import AnswerSelection
from speedbench.dataset_builder.throughput.base import Recipe, TaskType, stable_rng
from speedbench.dataset_builder.throughput.book_continuation import BookContinuation
from speedbench.dataset_builder.throughput.code_completion import CodeCompletion
from speedbench.dataset_builder.throughput.creative_writing import CreativeWriting
from speedbench.dataset_builder.throughput.dialogue_continuation import DialogueContinuation
from speedbench.dataset_builder.throughput.exam_qa import ExamQA
from speedbench.dataset_builder.throughput.fit import (
    PADDING, FitError, FittedPrompt, count_capped, encode_body, fit_to_length, o200k_codec)
from speedbench.dataset_builder.throughput.reuse import reuse_statistics
from speedbench.dataset_builder.throughput.sources import pin_mismatches
from speedbench.dataset_builder.throughput.text_sorting import TextSorting
from speedbench.schema import THROUGHPUT_CATEGORIES, DatasetRow, make_question_id
from speedbench.settings import BUILD_DEFAULTS

DEFAULT_PER_TIER = BUILD_DEFAULTS.per_tier
TIER_TASKS: dict[str, tuple[type[TaskType], ...]] = {
    "low_entropy": (CodeCompletion, TextSorting),
    "mixed": (ExamQA, AnswerSelection),
    "high_entropy": (DialogueContinuation, BookContinuation, CreativeWriting),
}
# Mirror paths each bucket reads (hashed into manifest.json by the writer).
SOURCE_PATHS = ("gutenberg_dighums", "humaneval_x", "benchfortir/hle/top.json", "benchfortir/math/test.jsonl",
                "gsm8k", "math_rise/math_test_1000.jsonl", "adaleval/stackselect_1k.json",
                "bamboo/showspred_4k.jsonl", "bamboo/showspred_16k.jsonl", "bamboo/meetingpred_4k.jsonl",
                "summarization/qmsum", "writingbench")


class UnitTokens:
    """o200k token count of a task's source unit, at most the bucket length N (cached).

    A unit counts at most what fits in one prompt (a 50k-token source file is never encoded
    whole for a 1k prompt); the reuse statistics use the same counts. Tasks that know a unit's
    size without encoding it (book passages) say so through ``TaskType.known_unit_tokens``.
    """

    def __init__(self) -> None:
        self.cache: dict[str, tuple[int, bool]] = {}  # unit -> (count, whole text counted)
        self.task: TaskType | None = None
        self.n_tokens = 0  # set per bucket by build_bucket; 0 = no cap

    def __call__(self, unit: str) -> int:
        cached = self.cache.get(unit)
        if cached is not None:
            count, whole = cached
            if whole or (self.n_tokens and count >= self.n_tokens):
                return min(count, self.n_tokens) if self.n_tokens else count
        known = self.task.known_unit_tokens(unit)
        if known is not None:
            count, whole = known, True
        else:
            text = self.task.unit_text(unit)
            cap = self.n_tokens or 10**12
            count = count_capped(text, cap)
            whole = count < cap
        self.cache[unit] = (count, whole)
        return min(count, self.n_tokens) if self.n_tokens else count


@lru_cache(maxsize=4)
def task_types(sources: str, seed: int) -> dict[str, TaskType]:
    """One instance of every task type (they cache their source reads), keyed by sub_category."""
    tasks = {}
    for classes in TIER_TASKS.values():
        for cls in classes:
            counter = UnitTokens()
            task = cls(Path(sources), counter, seed=seed) if cls in (TextSorting, BookContinuation) \
                else cls(Path(sources), counter)
            counter.task = task
            tasks[task.name] = task
    return tasks


def allocate(total: int, capacities: Sequence[int | None]) -> list[int]:
    """Share ``total`` rows equally, capped by capacity (None = no cap); spill what a cap refuses to the others."""
    n = len(capacities)
    shares = [total // n + (1 if i < total % n else 0) for i in range(n)]
    allocation = [s if c is None else min(s, c) for s, c in zip(shares, capacities)]
    deficit = total - sum(allocation)
    while deficit > 0:
        open_tasks = [i for i, c in enumerate(capacities) if c is None or allocation[i] < c]
        if not open_tasks:
            break
        for i in open_tasks:
            if deficit == 0:
                break
            allocation[i] += 1
            deficit -= 1
    return allocation


@dataclass
class BuiltPrompt:
    row: DatasetRow
    units: tuple[str, ...]
    fitted: FittedPrompt


def build_prompt(task: TaskType, units: Sequence[str], n_tokens: int, config: str, codec=None) -> BuiltPrompt:
    codec = codec or o200k_codec()
    rendered = task.render(units)
    body_tokens = encode_body(codec, rendered.body, n_tokens)
    try:
        fitted = fit_to_length(rendered.head, body_tokens, rendered.tail, n_tokens, codec)
    except FitError as error:
        raise FitError(f"{config}: {task.name} prompt from {'|'.join(units)[:200]}: {error}") from error
    if fitted.n_tokens != n_tokens:  # fit_to_length counts the exact returned string
        raise AssertionError(f"{config}: prompt from {units[:3]} has {fitted.n_tokens} tokens, not {n_tokens}")
    recipe = Recipe(tuple(units), fitted.body_tokens_used, fitted.padding_chars)
    source = task.row_source(units)
    src_id = recipe.to_src_id()
    row = DatasetRow(category=task.tier, sub_category=task.name, turns=[fitted.text], source=source,
                     src_id=src_id, language=task.row_language(units), license=task.row_license(units),
                     question_id=make_question_id(source, src_id, salt=config))
    return BuiltPrompt(row, tuple(units), fitted)


def render_from_recipe(task: TaskType, recipe: Recipe, n_tokens: int, codec=None) -> str:
    """The exact prompt text a recipe stands for (used by resolve; no search, no fit)."""
    from speedbench.dataset_builder.throughput.fit import padding_text
    codec = codec or o200k_codec()
    rendered = task.render(recipe.units)
    body_tokens = encode_body(codec, rendered.body, n_tokens)
    body = codec.decode_prefix(body_tokens, recipe.body_tokens)
    return rendered.head + body + rendered.tail + padding_text(recipe.padding_chars)


# Rounds of extra selections asked for when prompts repeat (each round from its own seeded stream).
MAX_EXTRA_ROUNDS = 8


def distinct_prompts(task: TaskType, n_tokens: int, count: int, config: str, seed: int, codec=None,
                     progress: bool = False) -> tuple[list[BuiltPrompt], int]:
    """``count`` prompts of ``task`` whose texts all differ, and how many repeats were skipped.

    Two selections can fit to the same text: a reused unit that fills the prompt on its own, or
    two source units that share their first N tokens (BAMBOO ships the same transcript in two
    files). A repeat is skipped and replaced from a further seeded selection round, so every row
    of a bucket is a distinct prompt and every ``question_id`` unique.
    """
    seen: set[str] = set()
    prompts: list[BuiltPrompt] = []
    skipped = 0
    for round_index in range(MAX_EXTRA_ROUNDS + 1):
        missing = count - len(prompts)
        if missing <= 0:
            break
        rng = stable_rng(seed, config, task.name, *(["extra", round_index] if round_index else []))
        selections = task.select(n_tokens, missing, rng)
        if not selections:
            break
        for units in _progress(selections, progress, f"{config} {task.name}", len(selections)):
            prompt = build_prompt(task, units, n_tokens, config, codec)
            if prompt.fitted.text in seen:
                skipped += 1
                continue
            seen.add(prompt.fitted.text)
            prompts.append(prompt)
    return prompts, skipped


def _progress(iterable, enabled: bool, description: str, total: int):
    if not enabled:
        return iterable
    from tqdm import tqdm
    return tqdm(iterable, desc=description, total=total, unit="prompt", leave=False)


def build_bucket(ctx: BuildContext, config: str, n_tokens: int) -> BuiltConfig:
    per_tier = ctx.build_options.per_tier or DEFAULT_PER_TIER
    allow_short = ctx.build_options.allow_short
    tasks = task_types(str(ctx.sources), ctx.seed)
    codec = o200k_codec()
    prompts: list[BuiltPrompt] = []
    stats: dict = {"n_tokens": n_tokens, "per_tier": per_tier, "padding": PADDING, "allocation": {},
                   "capacity": {}, "reuse": {}, "padded_rows": {}, "sub_category_rows": {}}
    for tier in THROUGHPUT_CATEGORIES:
        tier_tasks = [tasks[cls.name] for cls in TIER_TASKS[tier]]
        for task in tier_tasks:
            task.unit_tokens.n_tokens = n_tokens
        capacities = [t.capacity(n_tokens) for t in tier_tasks]
        allocation = allocate(per_tier, capacities)
        if sum(allocation) < per_tier and not allow_short:
            raise ValueError(f"{config}: tier {tier} can make only {sum(allocation)} distinct prompts of "
                             f"{n_tokens} tokens from the sources (asked {per_tier}); use --allow-short")
        stats["allocation"][tier] = {t.name: a for t, a in zip(tier_tasks, allocation)}
        stats["capacity"][tier] = {t.name: c for t, c in zip(tier_tasks, capacities)}
        tier_prompts: list[BuiltPrompt] = []
        for task, count in zip(tier_tasks, allocation):
            built, skipped = distinct_prompts(task, n_tokens, count, config, ctx.seed, codec, ctx.progress)
            if len(built) < count and not allow_short:
                raise ValueError(f"{config}: {task.name} made only {len(built)} distinct prompts of {n_tokens} "
                                 f"tokens (asked {count}; {skipped} repeats skipped); use --allow-short")
            stats.setdefault("repeats_skipped", {})[task.name] = skipped
            tier_prompts += built
        tokens = {}
        for p in tier_prompts:
            counter = tasks[p.row.sub_category].unit_tokens
            for u in p.units:
                tokens[u] = counter(u)
        stats["reuse"][tier] = reuse_statistics([p.units for p in tier_prompts], tokens).to_dict()
        for task in tier_tasks:
            padded = [p.fitted.padding_chars for p in tier_prompts
                      if p.row.sub_category == task.name and p.fitted.padding_chars]
            stats["padded_rows"][task.name] = {
                "rows": len(padded), "over_1pct": sum(1 for c in padded if c > n_tokens * 0.04),
                "mean_padding_chars": round(sum(padded) / len(padded), 1) if padded else 0.0}
        prompts += tier_prompts
    for p in prompts:
        key = f"{p.row.category}/{p.row.sub_category}"
        stats["sub_category_rows"][key] = stats["sub_category_rows"].get(key, 0) + 1
    stats["languages"] = sorted({p.row.language for p in prompts})
    stats["code_packages"] = sorted({u.split(":", 1)[0] for p in prompts if p.row.sub_category == "code_completion"
                                     for u in p.units if "==" in u.split(":", 1)[0]})
    stats["code_package_pin_mismatches"] = pin_mismatches()
    rows = [p.row for p in prompts]
    return BuiltConfig(name=config, rows=rows, card_section=card_section(config, stats),
                       stats=stats, source_files=[Path(ctx.sources) / p for p in SOURCE_PATHS])


def card_section(config: str, stats: dict) -> str:
    n = stats["n_tokens"]
    lines = [f"### `{config}`: exactly {n:,} o200k_base tokens per prompt", "",
             f"{stats['per_tier']} prompts per entropy tier requested. Every prompt is exactly {n:,} tokens "
             "under tiktoken `o200k_base` (checked for every row when it is built): longer text is cut at a "
             "token boundary inside the context, shorter text is padded with the neutral suffix "
             f"`{PADDING.strip()!s}\\n` (the reference code's padding); the task instruction is never cut. "
             "`src_id` lists the source units (`package==version:path`, `<book>#t<start>-<end>`, "
             "`hle:<id>`, ...) and `@k=<context tokens kept>,pad=<padding characters>`.", "",
             "| tier | task (`sub_category`) | rows | distinct-content capacity | padded rows | padded > 1% of N |",
             "|---|---|---|---|---|---|"]
    for tier, allocation in stats["allocation"].items():
        for task, count in allocation.items():
            capacity = stats["capacity"][tier][task]
            padded = stats["padded_rows"][task]
            lines.append(f"| {tier} | {task} | {count} | {'reuse allowed' if capacity is None else capacity} | "
                         f"{padded['rows']} | {padded['over_1pct']} |")
    lines += ["", "Most padded rows carry a few characters only: when a cut lands where two tokens merge at "
              "the join with the instruction (e.g. `.` + newline), no context length gives exactly N and the "
              "padding supplies the last token. \"Padded > 1% of N\" counts rows with real filler "
              "(about 4 characters per token)."]
    lines += ["", "Content reuse (distinct source tokens / total source tokens; 1.000 = no unit used twice):", "",
              "| tier | prompts | total source tokens | distinct source tokens | ratio | max uses of one unit |",
              "|---|---|---|---|---|---|"]
    for tier, reuse in stats["reuse"].items():
        lines.append(f"| {tier} | {reuse['prompts']} | {reuse['total_source_tokens']:,} | "
                     f"{reuse['distinct_source_tokens']:,} | {reuse['distinct_ratio']:.3f} | "
                     f"{reuse['max_uses_of_one_unit']} |")
    lines += ["", "Where a tier's sources run out (exam demonstrations, StackSelect distractors, dialogues), "
              "units are drawn again from a seeded reshuffle of the pool; final questions, code files and "
              "book passages are never reused within a bucket."]
    repeats = {task: n for task, n in stats.get("repeats_skipped", {}).items() if n}
    lines += ["", "Every prompt of the bucket is distinct: a selection that fits to the same text as an earlier "
              "one (a reused unit that fills the prompt alone, or two source files that share their first N "
              "tokens) is skipped and replaced from a further seeded selection round. Repeats skipped: "
              + (", ".join(f"{task} {n}" for task, n in sorted(repeats.items())) if repeats else "none") + "."]
    if stats.get("code_packages"):
        lines += ["", "Code completion read the installed sources of: " + ", ".join(f"`{p}`" for p in stats["code_packages"])
                  + "."]
    if stats.get("code_package_pin_mismatches"):
        lines += ["", "**Note**: installed packages differ from the pins in pyproject.toml: "
                  + "; ".join(f"{k} ({v})" for k, v in stats["code_package_pin_mismatches"].items())
                  + ". The `src_id` names the installed version that was read."]
    return "\n".join(lines)


def make_builder(config: str, n_tokens: int):
    def builder(ctx: BuildContext) -> BuiltConfig:
        return build_bucket(ctx, config, n_tokens)
    builder.__name__ = f"build_{config}"
    return builder
