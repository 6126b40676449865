"""The rows to send: a dataset config read from a folder written by ``speedbench build``.

The folder is a Hugging Face dataset folder (``data/<config>/*.parquet`` with the fields of
``speedbench.schema``) or the reference framework's prepared layout
(``speed/<config>/test.parquet``). Rows with a turn that is the reference's placeholder sentence
(``speedbench.schema.PLACEHOLDER_PREFIX``: data that must be fetched from its source with
``speedbench resolve``) are refused, all counted, with the command that resolves them: measuring
them would measure the placeholder text. ``--dataset`` may also be a Hub dataset id
(``nvidia/SPEED-Bench``): :func:`resolve_dataset` turns it into such a folder (``hub_dataset``).
A subset (``--categories``, ``--per-category``, ``--limit``) is taken by :mod:`.selection`,
balanced across categories. First turns are tokenized here, once, with the target tokenizer;
later turns depend on the model's own answers and are tokenized by the worker that runs the
conversation (:mod:`speedbench.tokenization.conversation`: the whole conversation at once).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from speedbench.fingerprint import REFERENCE_LAYOUT_DIR, config_parquet_files
from speedbench.fingerprint import dataset_fingerprint as core_dataset_fingerprint
from speedbench.schema import placeholder_turns
from speedbench.client.data.selection import Selection, select
from speedbench.tokenization import conversation
from speedbench.tokenization.conversation import PROMPT_MODES
from speedbench.tokenization.target import TargetTokenizer

__all__ = ["PROMPT_MODES", "Conversation", "Selection", "WorkloadError", "config_files", "dataset_fingerprint",
           "encode_turn", "encode_turn_exact", "load_conversations", "prompt_sha256", "read_conversations", "resolve_dataset", "select",
           "tokenize_first_turns"]


class WorkloadError(ValueError):
    """A dataset that cannot be measured, naming the file, row or field."""


@dataclass
class Conversation:
    """One dataset row as the client runs it: its turns, in order."""

    question_id: str
    category: str
    sub_category: str
    turns: list[str]
    first_prompt_ids: list[int] = field(default_factory=list)


def config_files(dataset_dir: str | Path, config: str) -> list[Path]:
    """``data/<config>/*.parquet``, else the reference's ``speed/<config>/test.parquet``."""
    try:
        return config_parquet_files(dataset_dir, config)
    except FileNotFoundError as error:
        raise WorkloadError(str(error)) from None


def resolve_dataset(dataset: str | Path, config: str, online: bool = False) -> Path:
    """The local folder ``--dataset`` names: a folder as given, or a Hub dataset id (``ORG/NAME[@REV]``)
    read through ``datasets`` (its cache; the Hub too when ``online``) into a folder."""
    from speedbench.client.data.hub_dataset import materialize, parse_hub_id

    if Path(dataset).is_dir():
        return Path(dataset)
    hub_id = parse_hub_id(str(dataset))
    if hub_id is None:
        raise WorkloadError(f"--dataset {dataset}: neither a dataset folder nor a Hub dataset id (ORG/NAME)")
    return materialize(hub_id, config, online=online)


def resolve_command(dataset_dir: str | Path, config: str, path: Path, out: Path | None = None) -> str:
    """The command that fills a layout's placeholders, and the folder to measure afterwards
    (``out``, default: beside the dataset folder)."""
    dataset_dir = Path(dataset_dir)
    out = out or dataset_dir.with_name(dataset_dir.name + "-resolved")
    if path.parent.parent.name == REFERENCE_LAYOUT_DIR:
        target = out / REFERENCE_LAYOUT_DIR / config / path.name
        return f"speedbench resolve {path} --config {config} --out {target}, then --dataset {out}"
    return f"speedbench resolve {dataset_dir} --out {out}, then --dataset {out}"


def dataset_fingerprint(dataset_dir: str | Path, config: str) -> str:
    """Content fingerprint of one config (``speedbench.fingerprint.dataset_fingerprint``, which the
    leaderboard shares); a missing config is a :class:`WorkloadError` here."""
    config_files(dataset_dir, config)
    return core_dataset_fingerprint(dataset_dir, config)


def dataset_manifest_hash(dataset_dir: str | Path) -> str:
    """sha256 of the folder's ``manifest.json`` (provenance: how the folder was built), or "" without one."""
    manifest = Path(dataset_dir) / "manifest.json"
    return hashlib.sha256(manifest.read_bytes()).hexdigest() if manifest.is_file() else ""


def load_conversations(dataset_dir: str | Path, config: str, limit: int | None = None,
                       categories: list[str] | None = None, per_category: int | None = None) -> list[Conversation]:
    """The config's rows, or the subset :func:`select` takes (``--categories``, ``--per-category``, ``--limit``)."""
    return select(read_conversations(dataset_dir, config), Selection(categories, per_category, limit), config).rows


def read_conversations(dataset_dir: str | Path, config: str) -> list[Conversation]:
    """Every row of the config, in file order, checked (fields, duplicate ids, placeholders)."""
    import pyarrow.parquet as pq

    conversations: list[Conversation] = []
    seen: set[str] = set()
    for path in config_files(dataset_dir, config):
        table = pq.ParquetFile(path).read()  # (read_table would import pyarrow.dataset: slow)
        missing = {"question_id", "category", "turns"} - set(table.column_names)
        if missing:
            raise WorkloadError(f"{path}: missing field(s) {', '.join(sorted(missing))}")
        rows = table.to_pylist()
        _refuse_placeholders(dataset_dir, config, path, rows)
        for index, row in enumerate(rows):
            turns = row.get("turns") or []
            where = f"{path} row {index} (question_id {row.get('question_id')!r})"
            if not turns or not all(isinstance(t, str) and t for t in turns):
                raise WorkloadError(f"{where}: field 'turns' must be a non-empty list of non-empty strings")
            if str(row["question_id"]) in seen:
                raise WorkloadError(f"{where}: question_id appears twice (records are keyed by it)")
            seen.add(str(row["question_id"]))
            conversations.append(Conversation(
                question_id=str(row["question_id"]), category=str(row.get("category") or ""),
                sub_category=str(row.get("sub_category") or ""), turns=list(turns)))
    return conversations


def placeholder_rows(rows: list[dict]) -> list[tuple[int, int]]:
    """(row index, first placeholder turn index) of every row with a placeholder turn."""
    return [(i, placeholder_turns(row["turns"])[0]) for i, row in enumerate(rows)
            if isinstance(row.get("turns"), list) and placeholder_turns(row["turns"])]


def _refuse_placeholders(dataset_dir: str | Path, config: str, path: Path, rows: list[dict]) -> None:
    """Measuring a placeholder would measure the placeholder sentence: refuse, with the count and the fix."""
    marked = placeholder_rows(rows)
    if not marked:
        return
    index, turn = marked[0]
    raise WorkloadError(
        f"{path}: {len(marked)} of {len(rows)} rows are unresolved placeholders (their turns start with the "
        f"reference's placeholder sentence; first: row {index}, question_id {rows[index].get('question_id')!r}, turn "
        f"{turn + 1}); resolve them with: {resolve_command(dataset_dir, config, path)}")


def encode_turn(tokenizer: TargetTokenizer, messages: list[dict[str, str]], prompt_mode: str) -> list[int]:
    """Token ids of a conversation ending in a user turn, as sent to every engine (answers as text)."""
    return conversation.encode_turn(tokenizer, messages, prompt_mode)


def encode_turn_exact(tokenizer: TargetTokenizer, messages: list[dict[str, str]], prompt_mode: str,
                      answer_ids: list[list[int] | None]) -> conversation.TurnIds:
    """A later turn's prompt: the whole conversation encoded at once, with each earlier answer as the
    ids the engine produced (``answer_ids[k]``, None: its text), and how each answer entered
    (:class:`speedbench.tokenization.conversation.TurnIds`)."""
    return conversation.encode_turn_exact(tokenizer, messages, prompt_mode, answer_ids)


def tokenize_first_turns(conversations: list[Conversation], tokenizer: TargetTokenizer, prompt_mode: str) -> None:
    for conversation in conversations:
        conversation.first_prompt_ids = encode_turn(
            tokenizer, [{"role": "user", "content": conversation.turns[0]}], prompt_mode)


def prompt_sha256(ids: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()
