"""One resolver per published source: a placeholder row in, its turns as the reference builds them out.

Each resolver reads the row's ``src_id`` (``srcid``), the source rows (``tables``) and builds the
text with the reference's formats (``formats``). A ``Resolution`` says whether the text is the
reference's (``exact``) or may differ from it, and why (``note``: a substitute file, a sampler
that cannot be replayed offline).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from speedbench.dataset_builder.published import formats, srcid
from speedbench.dataset_builder.published.tables import NEEDS_ONLINE, OnlineRequired, SourceTables, Table
from speedbench.schema import PLACEHOLDER_PREFIX, DatasetRow


@dataclass(frozen=True)
class Resolution:
    turns: list[str]
    exact: bool = True
    note: str = ""


@dataclass
class Context:
    tables: SourceTables
    config: str | None
    n_tokens: int | None          # the Throughput bucket's length; None for the Qualitative config
    seed: int = 0
    state: dict[str, Any] = field(default_factory=dict)   # e.g. the reference's HLE sampler, replayed in row order

    def bucket(self) -> int:
        if self.n_tokens is None:
            raise LookupError(f"config {self.config!r}: the bucket length is unknown (pass --config throughput_<N>k)")
        return self.n_tokens


def template(row: DatasetRow) -> str:
    """The ``str.format`` template after the placeholder sentence (empty when there is none)."""
    return row.turns[0].removeprefix(PLACEHOLDER_PREFIX + "\n\n").removeprefix(PLACEHOLDER_PREFIX)


def _at(rows: list, index: int, what: str) -> Any:
    if not 0 <= index < len(rows):
        raise LookupError(f"{what}: row {index} is not in the source ({len(rows)} rows)")
    return rows[index]


def _from(table: Table, turns: list[str]) -> Resolution:
    return Resolution(turns, table.exact, table.note)


def bamboo(row: DatasetRow, ctx: Context) -> Resolution:
    name = srcid.file_name(row.source)
    table = ctx.tables.json_file("BAMBOO", row.source, f"bamboo/{name}")
    contents = [_at(table.rows, i, f"BAMBOO {name}")["content"] for i in srcid.rows_after_underscores(row.src_id)]
    return _from(table, [formats.pad_or_truncate(formats.dialogue_prompt(contents), ctx.bucket())])


def cnn_dailymail(row: DatasetRow, ctx: Context) -> Resolution:
    table = ctx.tables.cnn_dailymail()
    if row.src_id not in table.rows:
        raise LookupError(f"CNN/DailyMail article {row.src_id!r} not in the 3.0.0 test split")
    return _from(table, [template(row).format(article=table.rows[row.src_id])])


def livecodebench(row: DatasetRow, ctx: Context) -> Resolution:
    table = ctx.tables.livecodebench()
    if row.src_id not in table.rows:
        where = "" if ctx.tables.online else f" the mirror's 454 problems ({NEEDS_ONLINE})"
        raise LookupError(f"LiveCodeBench problem {row.src_id!r} not in{where or ' release_v6'}")
    question, starter = table.rows[row.src_id]
    return _from(table, [template(row).format(question=question, starter_code=starter)])


def code_contests(row: DatasetRow, ctx: Context) -> Resolution:
    table = ctx.tables.code_contests()
    if row.src_id not in table.rows:
        raise LookupError(f"Code Contests problem {row.src_id!r} not in the test split"
                          + ("" if ctx.tables.online else f" the mirror holds ({NEEDS_ONLINE})"))
    return _from(table, [template(row).format(question=table.rows[row.src_id])])


def mtbench101(row: DatasetRow, ctx: Context) -> Resolution:
    table = ctx.tables.json_file("MT-Bench-101", row.source, "mtbench101/mtbench101.jsonl")
    dialogue = _at(table.rows, srcid.last_field_row(row.src_id), "MT-Bench-101")
    return _from(table, [turn["user"] for turn in dialogue["history"]])


def opus100(row: DatasetRow, ctx: Context) -> Resolution:
    place = srcid.opus_id(row.src_id)
    table = ctx.tables.opus100(place.pair)
    pair = _at(table.rows, place.row, f"OPUS-100 {place.pair}")["translation"]
    return _from(table, [template(row).format(question=pair)])


def chatrag(row: DatasetRow, ctx: Context) -> Resolution:
    table = ctx.tables.chatrag()
    item = _at(table.rows, srcid.last_field_row(row.src_id), "ChatRAG-Bench hybridial + sqa")
    users = [m["content"] for m in item["messages"] if m["role"] == "user"]
    return _from(table, formats.chatrag_turns([c["text"] for c in item["ctxs"]], users))


def mmlu_pro(row: DatasetRow, ctx: Context) -> Resolution:
    table = ctx.tables.mmlu_pro()
    first = srcid.mmlu_pro_first_row(row.src_id)
    picked = [_at(table.rows, i, "MMLU-Pro test") for i in range(first, first + len(row.turns))]
    return _from(table, formats.mmlu_pro_turns(row.sub_category, [(q["question"], q["options"]) for q in picked]))


def stackselect(row: DatasetRow, ctx: Context) -> Resolution:
    name = srcid.file_name(row.source)
    mirror = f"adaleval/{name}"
    note = ""
    if ctx.tables._mirror(mirror) is None and not ctx.tables.online:
        # The mirror holds only the 1k file: the same question there has fewer candidate answers.
        mirror = "adaleval/stackselect_1k.json"
        note = f"the mirror holds stackselect_1k.json, not {name}: the question's candidate answers may differ; " \
               + NEEDS_ONLINE
    table = ctx.tables.json_file("StackSelect", row.source, mirror, exact_note=note)
    by_id = {str(item["question_id"]): item for item in table.rows}
    item = by_id[srcid.stackselect_id(row.src_id, by_id)]
    n_tokens = ctx.bucket()
    prompt = formats.stackselect_prompt(item["question"], item["all_answers"], item["answer"], n_tokens)
    return _from(table, [formats.pad_or_truncate(prompt, n_tokens)])


def textsort(row: DatasetRow, ctx: Context) -> Resolution:
    table = ctx.tables.json_file("TextSort", row.source, None)
    item = _at(table.rows, srcid.second_field_row(row.src_id), "TextSort")
    return _from(table, [formats.pad_or_truncate(formats.textsort_prompt(item["prompt"]), ctx.bucket())])


def rolebench(row: DatasetRow, ctx: Context) -> Resolution:
    place = srcid.rolebench_id(row.src_id, len(row.turns))
    table = ctx.tables.rolebench(row.source, place.subset)
    picked = [_at(table.rows, i, f"RoleBench {place.subset}") for i in place.rows]
    role = picked[0]["role"]
    profiles = ctx.tables.role_profiles()
    if profiles.exact and role not in profiles.rows:
        raise LookupError(f"RoleBench role {role!r} has no description in {profiles.origin}")
    description = profiles.rows.get(role, role)
    turns = formats.rolebench_turns(template(row), role, description, [q["question"] for q in picked])
    notes = "; ".join(n for n in (table.note, profiles.note) if n)
    return Resolution(turns, table.exact and profiles.exact, notes)


COSER_THOUGHT = ("the played character's inner thoughts come from key_characters[].thought: the reference reads "
                 "a 'motivation' field that CoSER's test set no longer has (its resolver raises KeyError here)")


def coser(row: DatasetRow, ctx: Context) -> Resolution:
    table = ctx.tables.coser(row.source)
    text, from_thought = formats.coser_prompt(_at(table.rows, srcid.second_field_row(row.src_id), "CoSER test set"))
    if from_thought:
        return Resolution([text], False, "; ".join(n for n in (table.note, COSER_THOUGHT) if n))
    return _from(table, [text])


def hle(row: DatasetRow, ctx: Context) -> Resolution:
    ids = srcid.hle_ids(row.src_id)
    if ctx.n_tokens is None:                       # Qualitative: the question itself
        questions = ctx.tables.hle_questions()
        if ids[0] not in questions.rows:
            raise LookupError(f"HLE question {ids[0]} not in the mirror's 500-question subset; "
                              f"pass --online (gated: needs HF_TOKEN with access to cais/hle)")
        return _from(questions, [questions.rows[ids[0]]["question"]])
    if ctx.tables.online:
        return _hle_reference_sampler(ids[0], ctx)
    return _hle_from_mirror(ids, ctx)


def _hle_reference_sampler(question_id: str, ctx: Context) -> Resolution:
    """The reference's demonstrations: one ``default_rng(42)`` per config, drawn in row order."""
    import numpy as np

    if "hle_train" not in ctx.state:
        train, test = ctx.tables.hle_split()["train"], ctx.tables.hle_split()["test"]
        by_category: dict[str, list[list[int]]] = {}
        for item in train.to_list():
            if item.get("image", "") == "":
                text = formats.hle_demonstration(item["question"], item["rationale"])
                by_category.setdefault(item["category"], []).append(formats._encode(text))
        ctx.state["hle_train"] = by_category
        ctx.state["hle_test"] = {item["id"]: item for item in test.to_list()}
        ctx.state["hle_rng"] = np.random.default_rng(42)
    if question_id not in ctx.state["hle_test"]:
        raise LookupError(f"HLE question {question_id} is not in the test half of the reference's split")
    item = ctx.state["hle_test"][question_id]
    pool = ctx.state["hle_train"].get(item["category"], [])
    need = formats.hle_demonstrations_needed(item["category"], item["question"], ctx.bucket())
    picked, total = [], 0
    while total < need:
        if not pool:
            raise LookupError(f"HLE category {item['category']!r} has no text-only demonstrations")
        choice = pool[int(ctx.state["hle_rng"].choice(len(pool), size=1, replace=False)[0])]
        picked.append(choice)
        total += len(choice)
    return Resolution([formats.hle_prompt(item["category"], item["question"], picked, ctx.bucket())])


def _hle_from_mirror(ids: list[str], ctx: Context) -> Resolution:
    """Offline: the question from the mirror's subset, demonstrations of its category drawn per row."""
    import numpy as np

    questions = ctx.tables.hle_questions().rows
    if ids[0] not in questions:
        raise LookupError(f"HLE question {ids[0]} not in the mirror's 500-question subset; pass --online "
                          f"(gated: needs HF_TOKEN with access to cais/hle)")
    item = questions[ids[0]]
    given = [questions[i] for i in ids[1:] if i in questions]
    if ids[1:] and len(given) == len(ids) - 1:     # v1.1 naming the demonstrations: no sampler needed
        demos = [formats._encode(formats.hle_demonstration(d["question"], d["rationale"])) for d in given]
        return Resolution([formats.hle_prompt(item["category"], item["question"], demos, ctx.bucket())])
    pool = [formats.hle_demonstration(q["question"], q["rationale"]) for key, q in sorted(questions.items())
            if q["category"] == item["category"] and key != ids[0] and q.get("rationale")]
    seed = int.from_bytes(hashlib.sha256(f"{ctx.seed}\x1f{ids[0]}".encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    need = formats.hle_demonstrations_needed(item["category"], item["question"], ctx.bucket())
    picked, total = [], 0
    while total < need and pool:
        tokens = formats._encode(pool[int(rng.integers(len(pool)))])
        picked.append(tokens)
        total += len(tokens)
    note = ("the reference draws the demonstrations from the train half of the full gated HLE set with one "
            "sampler shared by a config's rows; offline they come from the mirror's 500-question subset "
            "(same category, drawn per row); pass --online for the reference's own")
    return Resolution([formats.hle_prompt(item["category"], item["question"], picked, ctx.bucket())], False, note)


RESOLVERS = {
    "bamboo": bamboo, "cnn_dailymail": cnn_dailymail, "hle": hle, "livecodebench": livecodebench,
    "code_contests": code_contests, "mtbench101": mtbench101, "opus100": opus100, "chatrag": chatrag,
    "mmlu_pro": mmlu_pro, "stackselect": stackselect, "textsort": textsort, "rolebench": rolebench, "coser": coser,
}
__all__ = ["Context", "OnlineRequired", "RESOLVERS", "Resolution"]
