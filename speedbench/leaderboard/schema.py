"""The versioned bundle schema: what ``submission.json`` holds, and how a bad bundle is rejected.

Schema version 1 (``BUNDLE_SCHEMA_VERSION``)::

    submission.json
      {"schema_version": 1,
       "metadata": {"model": ..., "drafter": ..., "sd_method": ..., "engine": ...,
                    "engine_version": ..., "gpu": ..., "draft_length": int, "temperature": float,
                    "model_family": optional, "submitter": optional, "notes": optional,
                    "phase_boundary_ids": optional list of token ids that end thinking,
                    "phase_prompt_state": optional "none" | "open" | "closed"},
       "runs": [{"path": "runs/<name>", "role": "sd" | "baseline"}, ...]}
    runs/<name>/records.jsonl   raw per-request records (the only numbers the board uses)
    runs/<name>/manifest.json   what produced the run (engine, dataset config and hash, options)
    runs/<name>/results.json    the client's own summary (kept for reference, never trusted)

Free-text fields are plain text (:func:`text_problem`): control, bidi, zero-width and other
invisible characters, markup and a leading formula character (``= + - @``) are refused at the
door, and the Space shows every value as text (never as HTML or Markdown).
"""
from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import asdict, dataclass

from speedbench.metrics.phases import PROMPT_STATES
from speedbench.records import MANIFEST_NAME, RECORDS_NAME, RESULTS_NAME
from speedbench.settings import ENGINE_NAMES

BUNDLE_SCHEMA_VERSION = 1
SUPPORTED_SCHEMA_VERSIONS = (1,)
SUBMISSION_FILE = "submission.json"
RUN_FILES = (RECORDS_NAME, MANIFEST_NAME, RESULTS_NAME)
REQUIRED_RUN_FILES = (RECORDS_NAME, MANIFEST_NAME)
RUN_ROLES = ("sd", "baseline")

KNOWN_ENGINES = ENGINE_NAMES  # the engines the client measures (speedbench.settings)
MAX_TEXT_CHARS = 120
MAX_NOTES_CHARS = 500
MAX_DRAFT_LENGTH = 64
MAX_RUNS_PER_BUNDLE = 16
MAX_PHASE_BOUNDARY_IDS = 16  # harmony's final-channel marker is 3 ids; a boundary is never long
PHASE_FIELDS = ("phase_boundary_ids", "phase_prompt_state")  # optional: per-phase AL (speedbench.leaderboard.phases)
# Characters that could open markup; none is needed in a model name, so refusing them is
# simpler and safer than sanitising.
_MARKUP = re.compile(r"[<>`]|&#|&[a-zA-Z]+;|javascript:", re.IGNORECASE)
# A leading = + - @ makes a spreadsheet evaluate the cell ("Copy table data" copies it as is).
FORMULA_PREFIXES = ("=", "+", "-", "@")
# Unicode categories never accepted in text: Cc control (tab, newline, NEL ...), Cf format (bidi
# overrides and isolates, zero-width space/joiners, BOM, soft hyphen), Cs surrogates, Co private
# use, Cn unassigned, Zl / Zp line and paragraph separators.
_REFUSED_CATEGORIES = {"Cc": "control character", "Cf": "invisible formatting character (bidi or zero-width)",
                       "Cs": "lone surrogate", "Co": "private-use character", "Cn": "unassigned code point",
                       "Zl": "line separator", "Zp": "paragraph separator"}


class BundleRejected(ValueError):
    """A submission that cannot be accepted; ``str(error)`` is the message shown to the submitter.

    ``rule`` names the check that failed (``"stats.k_mismatch"``, ``"json.surrogate"`` ...),
    ``where`` the member (and line), ``field`` the field; the message says all three.
    """

    def __init__(self, detail: str, *, rule: str | None = None, where: str | None = None, field: str | None = None):
        self.detail, self.rule, self.where, self.field = detail, rule, where, field
        named = field and not detail.startswith(field)  # "metadata.model is required" names it already
        parts = [p for p in (where, f"field {field}" if named else None, detail) if p]
        message = ": ".join(parts)
        super().__init__(f"{message} [rule {rule}]" if rule else message)


def shown(value, limit: int = 80) -> str:
    """An untrusted value quoted for a message: ASCII only (bidi, zero-width and control
    characters appear as escapes), cut to ``limit`` characters."""
    text = ascii(str(value))
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be shown as plain text on the board, or None when it can."""
    for char in text:
        category = unicodedata.category(char)
        if category in _REFUSED_CATEGORIES:
            return f"contains a {_REFUSED_CATEGORIES[category]} (U+{ord(char):04X})"
    if text.startswith(FORMULA_PREFIXES):
        return f"starts with {text[0]!r} (read as a formula by spreadsheets)"
    match = _MARKUP.search(text)
    if match:
        return f"contains markup ({match.group(0)!r}); HTML and scripts are not accepted"
    return None


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
    phase_boundary_ids: tuple[int, ...] = ()
    phase_prompt_state: str = ""

    def to_dict(self) -> dict:
        data = asdict(self)
        for name in PHASE_FIELDS:  # absent unless given: bundles without them keep their bytes
            if not data[name]:
                data.pop(name)
        if "phase_boundary_ids" in data:
            data["phase_boundary_ids"] = list(data["phase_boundary_ids"])
        return data


_REQUIRED_TEXT = ("model", "drafter", "sd_method", "engine", "engine_version", "gpu")
_OPTIONAL_TEXT = ("model_family", "submitter", "notes")


def clean_text(value, field: str, *, required: bool, max_chars: int = MAX_TEXT_CHARS) -> str:
    """A free-text field as stripped plain text, or a :class:`BundleRejected` naming the field."""
    where, name = "submission.json", f"metadata.{field}"
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise BundleRejected(f"{name} must be a string, got {type(value).__name__}", rule="text.type", where=where,
                             field=name)
    text = unicodedata.normalize("NFKC", value).strip(" ")  # fullwidth "ＡＢ" is "AB": one name, one spelling
    if required and not text:
        raise BundleRejected(f"{name} is required", rule="text.required", where=where, field=name)
    if len(text) > max_chars:
        raise BundleRejected(f"{name} is longer than {max_chars} characters", rule="text.length", where=where,
                             field=name)
    problem = text_problem(text)
    if problem:
        raise BundleRejected(f"{name} {problem}; free-text fields must be plain text", rule="text.unsafe", where=where,
                             field=name)
    return text


def model_family_of(model: str) -> str:
    """The family a model id belongs to, for the board's filter: ``meta-llama/Llama-3.3-70B`` -> ``llama``."""
    name = model.rsplit("/", 1)[-1].lower()
    match = re.match(r"[a-z]+", name)
    return match.group(0) if match else name


def parse_metadata(raw) -> SubmissionMetadata:
    """Validate ``submission.json``'s ``metadata`` object."""
    if not isinstance(raw, dict):
        raise BundleRejected("submission.json: 'metadata' must be an object", rule="submission.schema")
    unknown = sorted(set(raw) - set(_REQUIRED_TEXT) - set(_OPTIONAL_TEXT) - set(PHASE_FIELDS)
                     - {"draft_length", "temperature"})
    if unknown:
        raise BundleRejected(f"submission.json: unknown metadata field(s) {shown(unknown)}", rule="submission.schema")
    text = {f: clean_text(raw.get(f), f, required=True) for f in _REQUIRED_TEXT}
    text["engine"] = text["engine"].lower()
    if text["engine"] not in KNOWN_ENGINES:
        raise BundleRejected(
            f"submission.json: metadata.engine {text['engine']!r} is not one of {', '.join(KNOWN_ENGINES)}",
            rule="submission.engine")
    optional = {f: clean_text(raw.get(f), f, required=False,
                              max_chars=MAX_NOTES_CHARS if f == "notes" else MAX_TEXT_CHARS)
                for f in _OPTIONAL_TEXT}
    draft_length = raw.get("draft_length")
    if isinstance(draft_length, bool) or not isinstance(draft_length, int) or not 1 <= draft_length <= MAX_DRAFT_LENGTH:
        raise BundleRejected(
            f"submission.json: metadata.draft_length must be an integer in 1..{MAX_DRAFT_LENGTH}, got {shown(draft_length)}",
            rule="submission.draft_length")
    temperature = raw.get("temperature")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not math.isfinite(temperature) or not 0 <= temperature <= 10:
        raise BundleRejected(
            f"submission.json: metadata.temperature must be a finite number in 0..10, got {shown(temperature)}",
            rule="submission.temperature")
    if not optional["model_family"]:
        optional["model_family"] = model_family_of(text["model"])
    optional["model_family"] = optional["model_family"].lower()
    return SubmissionMetadata(draft_length=draft_length, temperature=float(temperature), **text, **optional,
                              **_phase_fields(raw))


def _phase_fields(raw: dict) -> dict:
    """The optional phase boundary: 1..16 token ids, and the prompt state (only with ids)."""
    ids, state = raw.get("phase_boundary_ids"), raw.get("phase_prompt_state")
    if ids is not None and (not isinstance(ids, list) or not 1 <= len(ids) <= MAX_PHASE_BOUNDARY_IDS or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 2**31 for i in ids)):
        raise BundleRejected(f"metadata.phase_boundary_ids must be a list of 1..{MAX_PHASE_BOUNDARY_IDS} token ids "
                             f"(integers in 0..2^31-1), got {shown(ids)}", rule="submission.phase_boundary",
                             where="submission.json", field="metadata.phase_boundary_ids")
    if state is not None and (state not in PROMPT_STATES or ids is None):
        raise BundleRejected(f"metadata.phase_prompt_state must be one of {', '.join(PROMPT_STATES)} and comes with "
                             f"phase_boundary_ids, got {shown(state)}", rule="submission.phase_boundary",
                             where="submission.json", field="metadata.phase_prompt_state")
    return {"phase_boundary_ids": tuple(ids or ()), "phase_prompt_state": state or ""}


@dataclass(frozen=True)
class RunRef:
    """One run folder inside a bundle and what it is for (the SD run or its autoregressive baseline)."""

    path: str
    role: str


def parse_submission(raw) -> tuple[SubmissionMetadata, list[RunRef]]:
    """Validate the whole ``submission.json`` object (schema version first)."""
    if not isinstance(raw, dict):
        raise BundleRejected("submission.json must hold a JSON object", rule="submission.schema")
    version = raw.get("schema_version")
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise BundleRejected(
            f"submission.json: schema_version {shown(version)} is not supported "
            f"(this leaderboard reads version(s) {', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))}; "
            "re-pack the run with the current 'speedbench submit')", rule="submission.schema_version")
    metadata = parse_metadata(raw.get("metadata"))
    runs_raw = raw.get("runs")
    if not isinstance(runs_raw, list) or not runs_raw:
        raise BundleRejected("submission.json: 'runs' must be a non-empty list of {path, role}", rule="submission.schema")
    if len(runs_raw) > MAX_RUNS_PER_BUNDLE:
        raise BundleRejected(f"submission.json: more than {MAX_RUNS_PER_BUNDLE} runs in one bundle",
                             rule="caps.runs_per_bundle")
    runs: list[RunRef] = []
    for i, item in enumerate(runs_raw):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise BundleRejected(f"submission.json: runs[{i}] must be an object with a 'path' string",
                                 rule="submission.schema")
        role = item.get("role", "sd")
        if role not in RUN_ROLES:
            raise BundleRejected(f"submission.json: runs[{i}].role must be one of {RUN_ROLES}, got {shown(role)}",
                                 rule="submission.schema")
        runs.append(RunRef(path=item["path"].strip("/"), role=role))
    if len({r.path for r in runs}) != len(runs):
        raise BundleRejected("submission.json: the same run path is listed twice", rule="submission.schema")
    if not any(r.role == "sd" for r in runs):
        raise BundleRejected("submission.json: at least one run must have role 'sd'", rule="submission.schema")
    return metadata, runs
