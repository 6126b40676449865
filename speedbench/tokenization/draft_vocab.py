"""Reading a drafter's pruned vocabulary and token-count files (for ``speedbench vocab-coverage``).

Drafter vocabulary files:

- ``.safetensors`` (an EAGLE-3 / ``speculators`` checkpoint, or a file holding only the mapping):
  the tensor ``d2t`` (integer offsets over the draft vocabulary: draft id ``d`` is target id
  ``d + d2t[d]``) and/or ``t2d`` (bool mask over the target vocabulary). A tensor whose name ends
  in ``.d2t`` / ``.t2d`` is accepted when it is the only one. **When both are present, d2t wins**:
  it is what the engine applies to drafted ids at inference (vLLM adds ``draft_id_to_target_id``
  to each drafted id); t2d then only gives the target vocabulary size (its length), and a
  disagreement between the two is reported as a note, not an error. Only the two tensors are
  read (``safe_open``), never the weights.
- ``.json``: a list of target token ids (duplicates are dropped), or an object with an ``"ids"`` list.

Token-count files (a corpus for ``--top-k``):

- ``.json``: an object ``{"<token id>": count, ...}`` (keys decimal strings, counts integers >= 0);
- anything else: text, one ``<token id> <count>`` pair per line (whitespace-separated; blank
  lines and lines starting with ``#`` ignored); an id listed twice adds up.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from speedbench.metrics.vocab_coverage import VocabInputError, vocab_from_d2t, vocab_from_ids, vocab_from_t2d

MAPPING_NAMES = ("d2t", "t2d")
MAX_TOKEN_ID = 2**24  # far above any tokenizer's vocabulary (o200k: 200,019); bounds the count vector
MAX_COUNT = 2**62  # a count vector is int64: larger counts (summed) would overflow it


def _decimal(text: str) -> int | None:
    """The value of a plain non-negative decimal (ASCII digits only); None when ``text`` is not one."""
    return int(text) if text.isascii() and text.isdigit() else None


@dataclass
class DraftVocab:
    """A drafter's vocabulary as target ids, where it came from, and what the reader noticed."""

    ids: np.ndarray  # sorted unique target ids
    path: str
    source: str  # "d2t" | "t2d" | "json"
    target_vocab_size: int | None = None  # the length of t2d when the file has one
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"file": self.path, "source": self.source, "size": int(self.ids.size),
                "target_vocab_size": self.target_vocab_size, "notes": list(self.notes)}


def _tensor_names(path: Path, keys: list[str]) -> dict[str, str]:
    found = {}
    for name in MAPPING_NAMES:
        if name in keys:
            found[name] = name
            continue
        suffixed = [k for k in keys if k.endswith("." + name)]
        if len(suffixed) > 1:
            raise VocabInputError(f"{path}: several tensors end in '.{name}' ({', '.join(sorted(suffixed))}); "
                                  "keep one")
        if suffixed:
            found[name] = suffixed[0]
    if not found:
        shown = ", ".join(sorted(keys)[:8]) + (" ..." if len(keys) > 8 else "")
        raise VocabInputError(f"{path}: holds neither a 'd2t' nor a 't2d' tensor (tensors: {shown or 'none'})")
    return found


def _read_safetensors(path: Path, target_vocab_size: int | None) -> DraftVocab:
    try:
        from safetensors import SafetensorError, safe_open
    except ImportError as error:  # pinned in the client extra
        raise VocabInputError(f"{path}: reading .safetensors needs the safetensors package "
                              "(pip install 'speed-bench[client]')") from error
    try:
        with safe_open(str(path), framework="numpy") as handle:
            names = _tensor_names(path, list(handle.keys()))
            tensors = {name: handle.get_tensor(key) for name, key in names.items()}
    except SafetensorError as error:
        raise VocabInputError(f"{path}: not a readable safetensors file ({error})") from None
    except TypeError as error:  # a dtype numpy cannot hold (bfloat16 ...)
        raise VocabInputError(f"{path}: a mapping tensor has a dtype numpy cannot read ({error})") from None
    t2d = None
    if "t2d" in tensors:
        t2d = vocab_from_t2d(tensors["t2d"], f"{path}: tensor {names['t2d']!r}")
        size = int(tensors["t2d"].shape[0])
        if target_vocab_size is not None and size != target_vocab_size:
            raise VocabInputError(f"{path}: tensor {names['t2d']!r} covers {size} target ids but the target "
                                  f"vocabulary has {target_vocab_size}")
        target_vocab_size = size
    if "d2t" not in tensors:
        return DraftVocab(t2d, str(path), "t2d", target_vocab_size)
    ids = vocab_from_d2t(tensors["d2t"], f"{path}: tensor {names['d2t']!r}", target_vocab_size)
    vocab = DraftVocab(ids, str(path), "d2t", target_vocab_size)
    if t2d is not None and not np.array_equal(t2d, ids):
        only_t2d, only_d2t = np.setdiff1d(t2d, ids).size, np.setdiff1d(ids, t2d).size
        vocab.notes.append(f"t2d and d2t disagree ({only_t2d} ids only in t2d, {only_d2t} only in d2t); "
                           "d2t used (what the engine applies at inference)")
    return vocab


def _read_json_ids(path: Path, target_vocab_size: int | None) -> DraftVocab:
    data = _load_json(path)
    if isinstance(data, dict) and "ids" in data:
        data = data["ids"]
    if not isinstance(data, list):
        raise VocabInputError(f"{path}: must hold a JSON list of token ids (or {{\"ids\": [...]}})")
    for index, value in enumerate(data):
        if type(value) is not int:
            raise VocabInputError(f"{path}: item {index} is {value!r:.40}, not an integer token id")
    vocab = DraftVocab(vocab_from_ids(data, str(path), target_vocab_size), str(path), "json", target_vocab_size)
    if vocab.ids.size != len(data):
        vocab.notes.append(f"{len(data) - vocab.ids.size} duplicate ids dropped")
    return vocab


def _load_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise VocabInputError(f"{path}: not valid JSON ({error})") from None


def _exists(path: Path, what: str) -> None:
    if not path.is_file():
        raise VocabInputError(f"{path}: no such file ({what})")


def read_draft_vocab(path: str | Path, target_vocab_size: int | None = None) -> DraftVocab:
    """The drafter vocabulary in ``path`` (module doc for the formats)."""
    path = Path(path)
    _exists(path, "the drafter's vocabulary: a .safetensors with d2t/t2d, or a JSON list of ids")
    vocab = _read_json_ids(path, target_vocab_size) if path.suffix == ".json" else _read_safetensors(
        path, target_vocab_size)
    if vocab.ids.size and vocab.ids[-1] >= MAX_TOKEN_ID:
        raise VocabInputError(f"{path}: target id {int(vocab.ids[-1])} is not a token id (above {MAX_TOKEN_ID})")
    return vocab


def read_token_counts(path: str | Path) -> np.ndarray:
    """Dense count vector of a token-count file (module doc for the formats)."""
    path = Path(path)
    _exists(path, "token counts: JSON {id: count} or 'id count' lines")
    pairs: list[tuple[int, int]] = []
    if path.suffix == ".json":
        data = _load_json(path)
        if not isinstance(data, dict):
            raise VocabInputError(f"{path}: must hold a JSON object {{\"<token id>\": count}}")
        for key, count in data.items():
            if _decimal(key) is None or type(count) is not int or count < 0:
                raise VocabInputError(f"{path}: entry {key!r:.40}: {count!r:.40} is not '<token id>': count >= 0")
            pairs.append((_decimal(key), count))
    else:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as error:
            raise VocabInputError(f"{path}: not a text file ({error})") from None
        for number, line in enumerate(lines, start=1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) != 2 or _decimal(parts[0]) is None or _decimal(parts[1]) is None:
                raise VocabInputError(f"{path}:{number}: expected '<token id> <count>' (two non-negative "
                                      f"integers), got {line.strip()!r:.60}")
            pairs.append((_decimal(parts[0]), _decimal(parts[1])))
    if not pairs:
        raise VocabInputError(f"{path}: no token counts in it")
    too_large = next((i for i, _ in pairs if i >= MAX_TOKEN_ID), None)
    if too_large is not None:
        raise VocabInputError(f"{path}: token id {too_large} is not a token id (above {MAX_TOKEN_ID})")
    totals: dict[int, int] = {}
    for token, count in pairs:  # exact Python integers: float weights would round counts above 2^53
        totals[token] = totals.get(token, 0) + count
    huge = next((t for t, c in totals.items() if c > MAX_COUNT), None)
    if huge is not None:
        raise VocabInputError(f"{path}: token id {huge}: count {totals[huge]} is above {MAX_COUNT}")
    counts = np.zeros(max(totals) + 1, dtype=np.int64)
    counts[np.fromiter(totals, dtype=np.int64)] = np.fromiter(totals.values(), dtype=np.int64)
    return counts
