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
Their placeholders name a source row in ``src_id``; ``speedbench.dataset_builder.published``
rebuilds every source the reference resolver handles, with the reference's own formats, from the
offline mirror or (``online``) the Hub at the reference's pinned revisions. Each resolved row is
marked exact or, where our text can differ from the reference's (a substitute file, a sampler
that cannot be replayed offline), with the reason; nothing may be benchmarked while any turn of
any row is a placeholder (:func:`assert_no_placeholders`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from speedbench.schema import PLACEHOLDER_PREFIX, THROUGHPUT_BUCKETS, DatasetRow, placeholder_turns

TEMPLATE_LINE = "speed-bench recipe (task {task}, {n_tokens} o200k_base tokens): run `speedbench resolve`."


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
    """What resolve did, per row (``rows``: resolved rows that may differ and unresolved ones) and per source."""
    resolved: int = 0
    already_complete: int = 0
    unresolved: list[tuple[str, str]] = field(default_factory=list)  # (question_id, reason)
    per_source: dict[str, dict[str, int]] = field(default_factory=dict)
    rows: list[dict] = field(default_factory=list)
    files_read: dict[str, str] = field(default_factory=dict)   # file or Hub origin -> sha256 / revision

    def count(self, source: str, status: str) -> None:
        counts = self.per_source.setdefault(source, {"exact": 0, "differs": 0, "unresolved": 0})
        counts[status] += 1

    @property
    def differs(self) -> int:
        return sum(c["differs"] for c in self.per_source.values())

    def summary(self) -> str:
        lines = [f"resolved {self.resolved} placeholder row(s) ({self.differs} may differ from the reference's "
                 f"text); {self.already_complete} row(s) had full text; {len(self.unresolved)} left unresolved"]
        for source, c in sorted(self.per_source.items()):
            lines.append(f"  {source}: {c['exact']} exact, {c['differs']} may differ, {c['unresolved']} unresolved")
        reasons: dict[str, list[str]] = {}
        for qid, reason in self.unresolved:
            reasons.setdefault(reason, []).append(qid)
        for reason, qids in list(reasons.items())[:20]:
            lines.append(f"  unresolved ({len(qids)}, e.g. {qids[0]}): {reason}")
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


def resolve_rows(rows: list[DatasetRow], sources: Path | None, config: str | None = None, seed: int = 0,
                 online: bool = False, tables=None) -> tuple[list[DatasetRow], ResolveReport]:
    """Fill every placeholder whose source is available; report the rest (and what may differ) per source."""
    from speedbench.dataset_builder.published import Context, SourceTables, resolve_row, source_label
    from speedbench.dataset_builder.sources._read import SourceError
    from speedbench.dataset_builder.throughput.base import RECIPE
    n_tokens = bucket_tokens(config)
    ctx = Context(tables or SourceTables(Path(sources) if sources else None, online=online), config, n_tokens, seed)
    report = ResolveReport()
    out = []
    for row in rows:
        at = placeholder_turns(row.turns)
        if not at:
            report.already_complete += 1
            out.append(row)
            continue
        own = RECIPE.match(row.src_id) and "{prompt}" in row.turns[0]
        label = "speed-bench export" if own else source_label(row)
        try:
            if at[0] != 0:
                later = ", ".join(str(i + 1) for i in at)
                raise LookupError(f"turn {later} of {len(row.turns)} is a placeholder but turn 1 is not: "
                                  "only rows whose first turn is the placeholder can be rebuilt")
            if own:
                resolved, exact, note = [resolve_own_recipe(row, Path(sources), n_tokens)] + list(row.turns[1:]), True, ""
            else:
                resolution = resolve_row(row, ctx)
                resolved, exact, note = resolution.turns, resolution.exact, resolution.note
        except (LookupError, KeyError, ValueError, IndexError, TypeError, SourceError) as error:
            reason = str(error) if not isinstance(error, KeyError) else f"missing field {error}"
            report.unresolved.append((row.question_id, reason))
            report.count(label, "unresolved")
            report.rows.append({"question_id": row.question_id, "source": label, "src_id": row.src_id,
                                "status": "unresolved", "reason": reason})
            out.append(row)
            continue
        out.append(replace(row, turns=resolved))
        report.resolved += 1
        report.count(label, "exact" if exact else "differs")
        if not exact:
            report.rows.append({"question_id": row.question_id, "source": label, "src_id": row.src_id,
                                "status": "differs", "reason": note})
    report.files_read = dict(ctx.tables.read)
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


class RowError(ValueError):
    """A row of an input file that cannot be read (names the file, the row and the field)."""


def rows_from_table(table, where: str = "table") -> list[DatasetRow]:
    """DatasetRows from an Arrow table of either our schema or the published one (no language/license).

    ``where`` (the file) names the offending row in a :class:`RowError`: turns that are not a
    non-empty list of non-empty strings, an empty or repeated ``question_id``.
    """
    rows, seen = [], set()
    for index, record in enumerate(table.to_pylist()):
        qid = record.get("question_id")
        at = f"{where} row {index} (question_id {qid!r})"
        turns = record.get("turns")
        if not isinstance(turns, list) or not turns or not all(isinstance(t, str) and t for t in turns):
            raise RowError(f"{at}: field 'turns' must be a non-empty list of non-empty strings")
        if not qid or qid in seen:
            raise RowError(f"{at}: field 'question_id' is {'empty' if not qid else 'repeated'} (rows are keyed by it)")
        seen.add(qid)
        rows.append(DatasetRow(
            category=record.get("category") or "", sub_category=record.get("sub_category") or "",
            turns=list(turns), source=record.get("source") or "", src_id=str(record.get("src_id") or ""),
            difficulty=record.get("difficulty") or "", language=record.get("language") or "en",
            license=record.get("license") or "", question_id=qid))
    return rows


def write_like(table, rows: list[DatasetRow], path: Path) -> None:
    """Write ``rows`` (the table's rows, in its order) with the input table's own schema (published files keep their columns)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    records = table.to_pylist()
    if [r.get("question_id") for r in records] != [row.question_id for row in rows]:
        raise ValueError(f"{path}: the rows to write are not the input table's rows in its order")
    for record, row in zip(records, rows):
        record["turns"] = row.turns
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records, schema=table.schema), path, compression="zstd")


def describe(report: ResolveReport) -> dict:
    """The resolve manifest entry of one file: counts per source, every row that may differ or is left, inputs."""
    return {"resolved": report.resolved, "already_complete": report.already_complete,
            "unresolved": len(report.unresolved), "may_differ": report.differs, "per_source": report.per_source,
            "rows": report.rows, "files_read": report.files_read}
