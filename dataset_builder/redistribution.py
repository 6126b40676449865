"""Placeholders for rows whose sources may not be redistributed, and filling them back in.

Export (``speedbench build --placeholders``): a Throughput row built from a source that may not
be redistributed (gated HLE, CC BY-SA StackSelect, the unlicensed RISE MATH subset) keeps every
field except its prompt, which becomes the reference's placeholder sentence followed by a
``str.format`` template::

    FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE USING SPECDEC_BENCH

    speed-bench recipe (task exam_qa, 8000 o200k_base tokens): run `speedbench resolve`.
    {prompt}

``src_id`` already names the source units and the fit (``base.Recipe``), so ``resolve``
re-renders the identical prompt from the sources and substitutes it for ``{prompt}``.

Resolve (``speedbench resolve``) also reads the published ``nvidia/SPEED-Bench`` parquet files.
Their placeholders name a source row in ``src_id``; version 1.0 gives the bare id (HLE id,
StackSelect question id, ``..._<row>`` indices for BAMBOO), version 1.1 rewrote the throughput
``src_id`` to carry more reconstruction detail. We extract the ids with patterns that accept both
(the id embedded in a longer string, or a list of ``_<row>`` indices) and rebuild the prompt with
this project's task renderers at the bucket length. Those prompts are exact in length and source
but not byte-identical to the reference's (its HLE demonstrations come from a stateful sampler
over the full gated set). Other published placeholders (MT-Bench-101, RoleBench, CoSER, ... whose
files the mirror may well hold, and any placeholder in a later turn) stay placeholders and are
reported with the reason; nothing may be benchmarked while any turn of any row is one
(:func:`assert_no_placeholders`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from speedbench.schema import PLACEHOLDER_PREFIX, THROUGHPUT_BUCKETS, DatasetRow, placeholder_turns

TEMPLATE_LINE = "speed-bench recipe (task {task}, {n_tokens} o200k_base tokens): run `speedbench resolve`."
HLE_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{24}(?![0-9a-f])")
ROW_INDEX = re.compile(r"_(\d+)")


class UnresolvedPlaceholderError(RuntimeError):
    """Placeholders left in a dataset that is about to be benchmarked."""


def bucket_tokens(config: str | None) -> int | None:
    """``throughput_8k`` -> 8000 (also ``random_8k``); None for other configs."""
    match = re.search(r"_(\d+k)$", config or "")
    return THROUGHPUT_BUCKETS.get(match[1]) if match else None


def placeholder_turn(task: str, n_tokens: int | None) -> str:
    line = TEMPLATE_LINE.format(task=task, n_tokens=n_tokens if n_tokens else "?")
    return f"{PLACEHOLDER_PREFIX}\n\n{line}\n{{prompt}}"


def fill_placeholder(turn: str, prompt: str) -> str:
    """Fill our placeholder template (everything after the prefix line is the template)."""
    template = turn.removeprefix(PLACEHOLDER_PREFIX).lstrip("\n")
    template = template.split("\n", 1)[1] if template.startswith("speed-bench recipe") else template
    return template.format(prompt=prompt)


def _task(row_sub_category: str, sources: Path, seed: int = 0):
    from speedbench.dataset_builder.throughput.bucket import task_types
    return task_types(str(sources), seed).get(row_sub_category)


def is_redistributable(row: DatasetRow, sources: Path) -> bool:
    """False for Throughput rows whose source units may not be redistributed; other rows are left alone."""
    from speedbench.dataset_builder.throughput.base import Recipe
    task = _task(row.sub_category, sources)
    if task is None:
        return True
    try:
        recipe = Recipe.parse(row.src_id)
    except ValueError:
        return True
    return task.redistributable(recipe.units)


def export_placeholders(rows: list[DatasetRow], sources: Path, config: str) -> list[DatasetRow]:
    """Rows for publishing: non-redistributable Throughput rows become placeholders, others unchanged."""
    n_tokens = bucket_tokens(config)
    exported = []
    for row in rows:
        if is_redistributable(row, sources):
            exported.append(row)
        else:
            exported.append(replace(row, turns=[placeholder_turn(row.sub_category, n_tokens)]))
    return exported


@dataclass
class ResolveReport:
    resolved: int = 0
    already_complete: int = 0
    unresolved: list[tuple[str, str]] = field(default_factory=list)  # (question_id, reason)

    def summary(self) -> str:
        lines = [f"resolved {self.resolved} placeholder row(s); {self.already_complete} row(s) had full text; "
                 f"{len(self.unresolved)} left unresolved"]
        lines += [f"  {qid}: {reason}" for qid, reason in self.unresolved[:20]]
        if len(self.unresolved) > 20:
            lines.append(f"  ... and {len(self.unresolved) - 20} more")
        return "\n".join(lines)


def _count(text: str) -> int:
    from speedbench.tokenization.o200k import count_tokens
    return count_tokens(text)


def resolve_own_recipe(row: DatasetRow, sources: Path, n_tokens: int | None) -> str:
    """The prompt of a placeholder row written by this project's export."""
    from speedbench.dataset_builder.throughput.base import Recipe
    from speedbench.dataset_builder.throughput.bucket import render_from_recipe
    from speedbench.dataset_builder.throughput.random_tokens import SUB_CATEGORY, render_random
    recipe = Recipe.parse(row.src_id)
    if row.sub_category == SUB_CATEGORY:
        prompt = render_random(recipe)
    else:
        task = _task(row.sub_category, sources)
        if task is None:
            raise LookupError(f"unknown task type {row.sub_category!r}")
        if n_tokens is None:
            raise LookupError("the bucket length is unknown: pass the config (e.g. throughput_8k)")
        prompt = render_from_recipe(task, recipe, n_tokens)
    if n_tokens is not None and _count(prompt) != n_tokens:
        raise LookupError(f"rebuilt prompt is {_count(prompt)} tokens, not {n_tokens}: the sources differ "
                          "from the ones the row was built from")
    return fill_placeholder(row.turns[0], prompt)


def _fit_published(task, units: tuple[str, ...], n_tokens: int | None) -> str:
    """Render units with our task renderer; throughput rows are fitted to the bucket length."""
    from speedbench.dataset_builder.throughput.fit import encode_body, fit_to_length, o200k_codec
    rendered = task.render(units)
    if n_tokens is None:
        return rendered.head + rendered.body + rendered.tail
    codec = o200k_codec()
    body = encode_body(codec, rendered.body, n_tokens)
    return fit_to_length(rendered.head, body, rendered.tail, n_tokens, codec).text


def resolve_published(row: DatasetRow, sources: Path, n_tokens: int | None, seed: int = 0) -> str:
    """The prompt of a placeholder row of the published nvidia/SPEED-Bench dataset (v1.0 or v1.1 src_id)."""
    from speedbench.dataset_builder.throughput.base import stable_rng
    source = row.source or ""
    if "cais/hle" in source or "hle" == source.lower():
        task = _task("exam_qa", sources, seed)
        ids = HLE_ID.findall(row.src_id)
        known = [f"hle:{i}" for i in ids if f"hle:{i}" in task.items]
        if not known:
            raise LookupError(f"HLE id(s) {ids or row.src_id!r} not in the mirror's HLE subset")
        if n_tokens is None:  # qualitative: the question itself
            return task.items[known[0]]["question"]
        rng = stable_rng(seed, "resolve", row.question_id)
        units = task.select_for(known[0], n_tokens, task.demonstration_streams(rng))
        return _fit_published(task, units, n_tokens)
    if "stackselect" in source.lower():
        task = _task("answer_selection", sources, seed)
        qid = next((i for i in re.findall(r"\d+", row.src_id) if i in task.questions), None)
        if qid is None:
            raise LookupError(f"StackSelect question {row.src_id!r} not in the mirror's stackselect_1k")
        rng = stable_rng(seed, "resolve", row.question_id)
        units = task.select_for(qid, n_tokens or 32000, task.distractor_stream(rng))
        if units is None:
            raise LookupError(f"StackSelect question {qid} and its right answer exceed {n_tokens} tokens")
        return _fit_published(task, units, n_tokens)
    if "bamboo" in source.lower():
        task = _task("dialogue_continuation", sources, seed)
        name = next((f for f in ("showspred_4k", "showspred_16k", "meetingpred_4k") if f in source), None)
        indices = [int(i) for i in ROW_INDEX.findall(row.src_id.replace("_4k", "").replace("_16k", ""))]
        if name is None or not indices:
            raise LookupError(f"BAMBOO file or row indices not recognised in source={source!r} src_id={row.src_id!r}")
        units = tuple(f"bamboo/{name}:{i}" for i in indices)
        missing = [u for u in units if u not in task.dialogues]
        if missing:
            raise LookupError(f"BAMBOO rows {missing} not in the mirror")
        return _fit_published(task, units, n_tokens)
    raise LookupError(_no_resolver(source, sources))


# Sources of published placeholder rows that the offline mirror holds (folder) although this
# module cannot rebuild their rows yet; keys are lower-case fragments of the row's `source`.
MIRRORED_WITHOUT_RESOLVER = {
    "mt-bench-101": "mtbench101", "mtbench101": "mtbench101", "rolebench": "rolebench", "coser": "coser",
    "mmlu-pro": "mmlu_pro", "mmlu_pro": "mmlu_pro", "livecodebench": "livecodebench",
    "code_contests": "code_contests",
}
RESOLVED_SOURCES = "cais/hle, AdaLEval/stackselect, RUCAIBox/BAMBOO"


def _no_resolver(source: str, sources: Path) -> str:
    """Why a published row cannot be resolved, checked against the mirror on disk."""
    folder = next((f for key, f in MIRRORED_WITHOUT_RESOLVER.items() if key in source.lower()), None)
    if folder is not None and (Path(sources) / folder).is_dir():
        return (f"source {source!r}: the mirror holds it ({folder}/ in {sources}), but there is no resolver "
                f"for published rows of this source yet (published rows are resolved for {RESOLVED_SOURCES})")
    return f"source {source!r}: not in the mirror at {sources}, and no resolver for it"


def resolve_rows(rows: list[DatasetRow], sources: Path, config: str | None = None,
                 seed: int = 0) -> tuple[list[DatasetRow], ResolveReport]:
    """Fill every placeholder whose source is available; report the rest."""
    from speedbench.dataset_builder.throughput.base import RECIPE
    n_tokens = bucket_tokens(config)
    report = ResolveReport()
    out = []
    for row in rows:
        at = placeholder_turns(row.turns)
        if not at:
            report.already_complete += 1
            out.append(row)
            continue
        if at != [0]:
            # Our resolvers rebuild single-turn prompts; a later turn cannot be guessed.
            later = ", ".join(str(i + 1) for i in at if i)
            report.unresolved.append((row.question_id, f"turn {later} of {len(row.turns)} is a placeholder; "
                                                       "only a placeholder first turn can be resolved"))
            out.append(row)
            continue
        try:
            if RECIPE.match(row.src_id) and "{prompt}" in row.turns[0]:
                text = resolve_own_recipe(row, sources, n_tokens)
            else:
                text = resolve_published(row, sources, n_tokens, seed)
        except (LookupError, KeyError, ValueError) as error:
            report.unresolved.append((row.question_id, str(error)))
            out.append(row)
            continue
        out.append(replace(row, turns=[text] + list(row.turns[1:])))
        report.resolved += 1
    return out, report


def assert_no_placeholders(rows, what: str = "dataset") -> None:
    """Refuse to benchmark while placeholders are left (rows: DatasetRow or dicts with ``turns``)."""
    left = []
    for row in rows:
        turns = row.turns if isinstance(row, DatasetRow) else row["turns"]
        qid = row.question_id if isinstance(row, DatasetRow) else row.get("question_id", "?")
        if placeholder_turns(turns):
            left.append(qid)
    if left:
        raise UnresolvedPlaceholderError(
            f"{what}: {len(left)} row(s) are unresolved placeholders (e.g. {', '.join(left[:5])}); "
            "run `speedbench resolve` first")


def rows_from_table(table) -> list[DatasetRow]:
    """DatasetRows from an Arrow table of either our schema or the published one (no language/license)."""
    rows = []
    for record in table.to_pylist():
        rows.append(DatasetRow(
            category=record.get("category") or "", sub_category=record.get("sub_category") or "",
            turns=list(record["turns"]), source=record.get("source") or "", src_id=str(record.get("src_id") or ""),
            difficulty=record.get("difficulty") or "", language=record.get("language") or "en",
            license=record.get("license") or "", question_id=record.get("question_id") or ""))
    return rows


def write_like(table, rows: list[DatasetRow], path: Path) -> None:
    """Write ``rows`` with the input table's own schema (published files keep their columns)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    by_id = {row.question_id: row for row in rows}
    records = table.to_pylist()
    for record in records:
        row = by_id[record["question_id"]]
        record["turns"] = row.turns
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records, schema=table.schema), path, compression="zstd")


def describe(report: ResolveReport) -> str:
    return json.dumps({"resolved": report.resolved, "already_complete": report.already_complete,
                       "unresolved": len(report.unresolved)})
