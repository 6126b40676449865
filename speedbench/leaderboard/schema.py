"""The versioned bundle schema: what ``submission.json`` holds, and how a bad bundle is rejected.

Schema version 1 (``BUNDLE_SCHEMA_VERSION``)::

    submission.json
      {"schema_version": 1,
       "metadata": {"model": ..., "drafter": ..., "sd_method": ..., "engine": ...,
                    "engine_version": ..., "gpu": ..., "draft_length": int, "temperature": float,
                    "model_family": optional, "submitter": optional, "notes": optional},
       "runs": [{"path": "runs/<name>", "role": "sd" | "baseline"}, ...]}
    runs/<name>/records.jsonl   raw per-request records (the only numbers the board uses)
    runs/<name>/manifest.json   what produced the run (engine, dataset config and hash, options)
    runs/<name>/results.json    the client's own summary (kept for reference, never trusted)

Free-text fields are plain text: markup characters are refused at the door and the Space
shows every value as text (never as HTML or Markdown).
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

BUNDLE_SCHEMA_VERSION = 1
SUPPORTED_SCHEMA_VERSIONS = (1,)
SUBMISSION_FILE = "submission.json"
RUN_FILES = ("records.jsonl", "manifest.json", "results.json")
REQUIRED_RUN_FILES = ("records.jsonl", "manifest.json")
RUN_ROLES = ("sd", "baseline")

KNOWN_ENGINES = ("vllm", "sglang", "trtllm", "llamacpp", "openai")
MAX_TEXT_CHARS = 120
MAX_NOTES_CHARS = 500
MAX_DRAFT_LENGTH = 64
# Characters that could open markup or a formula in a spreadsheet export; none is needed in a
# model name, so refusing them is simpler and safer than sanitising.
_MARKUP = re.compile(r"[<>`]|&#|&[a-zA-Z]+;|javascript:", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class BundleRejected(ValueError):
    """A submission that cannot be accepted; ``str(error)`` is the message shown to the submitter."""


@dataclass(frozen=True)
class SubmissionMetadata:
    """Who measured what: the identity columns of a leaderboard row."""

    model: str
    drafter: str
    sd_method: str
    engine: str
    engine_version: str
    gpu: str
    draft_length: int
    temperature: float
    model_family: str = ""
    submitter: str = ""
    notes: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


_REQUIRED_TEXT = ("model", "drafter", "sd_method", "engine", "engine_version", "gpu")
_OPTIONAL_TEXT = ("model_family", "submitter", "notes")


def clean_text(value, field: str, *, required: bool, max_chars: int = MAX_TEXT_CHARS) -> str:
    """A free-text field as stripped plain text, or a :class:`BundleRejected` naming the field."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise BundleRejected(f"submission.json: metadata.{field} must be a string, got {type(value).__name__}")
    text = value.strip()
    if required and not text:
        raise BundleRejected(f"submission.json: metadata.{field} is required")
    if len(text) > max_chars:
        raise BundleRejected(f"submission.json: metadata.{field} is longer than {max_chars} characters")
    if _CONTROL.search(text):
        raise BundleRejected(f"submission.json: metadata.{field} contains control characters")
    match = _MARKUP.search(text)
    if match:
        raise BundleRejected(
            f"submission.json: metadata.{field} contains markup ({match.group(0)!r}); "
            "free-text fields must be plain text (HTML and scripts are not accepted)")
    return text


def model_family_of(model: str) -> str:
    """The family a model id belongs to, for the board's filter: ``meta-llama/Llama-3.3-70B`` -> ``llama``."""
    name = model.rsplit("/", 1)[-1].lower()
    match = re.match(r"[a-z]+", name)
    return match.group(0) if match else name


def parse_metadata(raw) -> SubmissionMetadata:
    """Validate ``submission.json``'s ``metadata`` object."""
    if not isinstance(raw, dict):
        raise BundleRejected("submission.json: 'metadata' must be an object")
    unknown = sorted(set(raw) - set(_REQUIRED_TEXT) - set(_OPTIONAL_TEXT) - {"draft_length", "temperature"})
    if unknown:
        raise BundleRejected(f"submission.json: unknown metadata field(s) {unknown}")
    text = {f: clean_text(raw.get(f), f, required=True) for f in _REQUIRED_TEXT}
    text["engine"] = text["engine"].lower()
    if text["engine"] not in KNOWN_ENGINES:
        raise BundleRejected(
            f"submission.json: metadata.engine {text['engine']!r} is not one of {', '.join(KNOWN_ENGINES)}")
    optional = {f: clean_text(raw.get(f), f, required=False,
                              max_chars=MAX_NOTES_CHARS if f == "notes" else MAX_TEXT_CHARS)
                for f in _OPTIONAL_TEXT}
    draft_length = raw.get("draft_length")
    if isinstance(draft_length, bool) or not isinstance(draft_length, int) or not 1 <= draft_length <= MAX_DRAFT_LENGTH:
        raise BundleRejected(
            f"submission.json: metadata.draft_length must be an integer in 1..{MAX_DRAFT_LENGTH}, got {draft_length!r}")
    temperature = raw.get("temperature")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not math.isfinite(temperature) or not 0 <= temperature <= 10:
        raise BundleRejected(
            f"submission.json: metadata.temperature must be a finite number in 0..10, got {temperature!r}")
    if not optional["model_family"]:
        optional["model_family"] = model_family_of(text["model"])
    optional["model_family"] = optional["model_family"].lower()
    return SubmissionMetadata(draft_length=draft_length, temperature=float(temperature), **text, **optional)


@dataclass(frozen=True)
class RunRef:
    """One run folder inside a bundle and what it is for (the SD run or its autoregressive baseline)."""

    path: str
    role: str


def parse_submission(raw) -> tuple[SubmissionMetadata, list[RunRef]]:
    """Validate the whole ``submission.json`` object (schema version first)."""
    if not isinstance(raw, dict):
        raise BundleRejected("submission.json must hold a JSON object")
    version = raw.get("schema_version")
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise BundleRejected(
            f"submission.json: schema_version {version!r} is not supported "
            f"(this leaderboard reads version(s) {', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))}; "
            "re-pack the run with the current 'speedbench submit')")
    metadata = parse_metadata(raw.get("metadata"))
    runs_raw = raw.get("runs")
    if not isinstance(runs_raw, list) or not runs_raw:
        raise BundleRejected("submission.json: 'runs' must be a non-empty list of {path, role}")
    runs: list[RunRef] = []
    for i, item in enumerate(runs_raw):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise BundleRejected(f"submission.json: runs[{i}] must be an object with a 'path' string")
        role = item.get("role", "sd")
        if role not in RUN_ROLES:
            raise BundleRejected(f"submission.json: runs[{i}].role must be one of {RUN_ROLES}, got {role!r}")
        runs.append(RunRef(path=item["path"].strip("/"), role=role))
    if len({r.path for r in runs}) != len(runs):
        raise BundleRejected("submission.json: the same run path is listed twice")
    if not any(r.role == "sd" for r in runs):
        raise BundleRejected("submission.json: at least one run must have role 'sd'")
    return metadata, runs
