"""What the board shows, as plain data: one flat row per entry, filters, Pareto points, comparisons.

Rows use stable machine keys (``al``, ``al_coding``, ``speedup_8k_c16`` ...); the Space's column
module maps them to headers. Everything here is pure (no Gradio), so it is tested directly.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable

from speedbench.leaderboard.lossless import lossless_cell
from speedbench.leaderboard.metrics_doc import (
    BoardAcceptance,
    BoardMetrics,
    BoardPoint,
    MetricsShapeError,
    PairedComparison,
)
from speedbench.leaderboard.phases import phase_cells
from speedbench.leaderboard.recompute import compare_runs, finite
from speedbench.leaderboard.store import Entry, LeaderboardStore
from speedbench.schema import QUALITATIVE_CATEGORIES, THROUGHPUT_BUCKETS, THROUGHPUT_CATEGORIES

IDENTITY_KEYS = ("id", "model", "model_family", "drafter", "sd_method", "engine", "engine_version", "gpu",
                 "draft_length", "temperature")
ISL_ORDER = tuple(THROUGHPUT_BUCKETS)  # 1k, 2k, 8k, 16k, 32k
# The only per-category columns there can be: the Qualitative categories, then the Throughput
# split's entropy categories (AL from throughput runs when an entry has no qualitative run).
CATEGORY_ORDER = tuple(QUALITATIVE_CATEGORIES) + tuple(c for c in THROUGHPUT_CATEGORIES
                                                       if c not in QUALITATIVE_CATEGORIES)


def _round(value, digits: int = 3):
    """A board number: finite int/float rounded, anything else (text, bool, NaN) None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = finite(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if value is None else round(value, digits)


def speedup_key(isl: str) -> str:
    """The board's one speedup column per ISL bucket: the best measured speedup over the entry's
    load points there (``speedup_<isl>_at`` holds the concurrency it was reached at)."""
    return f"speedup_{isl}"


def _text(value) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _warnings_cell(warnings) -> str:
    codes = sorted({str(w.get("code", "?")) for w in warnings if isinstance(w, dict)})
    return ", ".join(codes)


def k_label(draft_length, acceptance: BoardAcceptance) -> str:
    """The K column: the submitted K, or ``"dynamic 1-4"`` when the recomputed acceptance saw the draft
    length vary (the smallest and largest K that drafted, from its histogram; ``"dynamic, max 4"``
    when only the totals say it varied)."""
    k = _round(draft_length, 0)
    shown = "" if k is None else str(int(k))
    if acceptance.variable_draft_length is not True:
        return shown
    histogram = acceptance.draft_length_histogram
    ks = sorted(int(key) for key in histogram if str(key).isdigit() and int(key) > 0) \
        if isinstance(histogram, dict) else []
    if ks:
        return f"dynamic {ks[0]}-{ks[-1]}"
    return f"dynamic, max {shown}" if shown else "dynamic"


def entry_row(entry: Entry) -> dict:
    """The flat board row of one entry: a fixed, bounded set of keys whatever the entry holds."""
    problems: list[str] = []
    meta, metrics = entry.metadata, BoardMetrics.read(entry.metrics, problems)
    if problems:  # shown as an error row (safe_rows): a damaged document is not shown as empty figures
        raise MetricsShapeError("; ".join(problems))
    acceptance = metrics.acceptance
    ci = acceptance.ci
    row = {key: meta.get(key) for key in IDENTITY_KEYS if key != "id"}
    for key in ("model", "model_family", "drafter", "sd_method", "engine", "engine_version", "gpu"):
        row[key] = _text(row[key])
    row["k"] = k_label(row["draft_length"], acceptance)
    row["draft_length"], row["temperature"] = _round(row["draft_length"], 0), _round(row["temperature"], 3)
    row["id"] = entry.id
    row["al"] = _round(acceptance.acceptance_length)
    row["al_ci_low"], row["al_ci_high"] = _round(ci[0]), _round(ci[1])
    row["al_request_weighted"] = _round(acceptance.acceptance_length_request_weighted)
    for category in CATEGORY_ORDER:
        figures = acceptance.per_category.get(category)
        if figures is None:
            continue
        cat_ci = figures.ci
        row[f"al_{category}"] = _round(figures.acceptance_length)
        row[f"al_{category}_ci_low"], row[f"al_{category}_ci_high"] = _round(cat_ci[0]), _round(cat_ci[1])
    isls = {p.isl for p in metrics.points if p.role == "sd" and p.isl in ISL_ORDER}
    for speedup in metrics.speedup:
        isl, value = speedup.isl, _round(speedup.speedup_measured)
        if isl in ISL_ORDER and value is not None and value > (row.get(speedup_key(isl)) or float("-inf")):
            row[speedup_key(isl)] = value
            row[f"{speedup_key(isl)}_at"] = _round(speedup.concurrency, 0)
    row["isls"] = [i for i in ISL_ORDER if i in isls]
    row["client_lagged"] = _worst_client_lag(metrics.points)
    row["submitted"] = _text(entry.submitted_at)[:10]
    row["trust"] = entry.trust
    row["warnings"] = _warnings_cell(entry.warnings)
    row["lossless"] = lossless_cell(metrics.losslessness)
    row.update(phase_cells(metrics.phases))  # per-phase AL, where the bundle named a boundary
    return row


def lagged_percent(share) -> float | None:
    """A client-lagged share as a percentage floored to 0.1 (never rounded up; None when not measured)."""
    value = _round(share, 9)
    return None if value is None else math.floor(value * 1000 + 1e-9) / 10


def _worst_client_lag(points: list[BoardPoint]) -> float | None:
    """The largest client-lagged share over the entry's load points, as a percentage: the requests
    whose decode timing was the busy client's, left out of that point's latency figures (the board
    refuses a bundle above MAX_CLIENT_LAGGED_SHARE at any point, rule ``client.lag``)."""
    shares = [lagged_percent(p.client_lagged_share) for p in points]
    shares = [s for s in shares if s is not None]
    return max(shares) if shares else None


def error_row(entry_id: str, problem: str) -> dict:
    """What the board shows for a stored entry it cannot read (the page still renders)."""
    return {"id": entry_id, "model": f"(entry not shown: {problem})", "trust": "error", "isls": [], "warnings": ""}


def safe_rows(entries: Iterable[Entry], problems: Iterable[tuple[str, str]] = ()) -> list[dict]:
    """Board rows of every entry; an entry whose row cannot be built becomes an error row."""
    rows = []
    for entry in entries:
        try:
            rows.append(entry_row(entry))
        except Exception as exc:  # a bad stored row must never take the board down
            rows.append(error_row(entry.id, type(exc).__name__))
    return rows + [error_row(i, p) for i, p in problems]


def speedup_columns(rows: Iterable[dict], isl: str | None = None) -> list[str]:
    """The speedup keys present in ``rows`` (only one ISL's when given), in ISL order."""
    present = {k for row in rows for k in row}
    return [speedup_key(i) for i in ISL_ORDER if speedup_key(i) in present and (isl is None or i == isl)]


def category_columns(rows: Iterable[dict]) -> list[str]:
    """``al_<category>`` keys present, qualitative categories in the published order first."""
    present = {k for row in rows for k in row}
    return [f"al_{c}" for c in CATEGORY_ORDER if f"al_{c}" in present]


def phase_columns(rows: Iterable[dict]) -> list[str]:
    """``al_thinking`` / ``al_answer`` when some entry has them (bundles that named a phase boundary)."""
    present = {k for row in rows for k, v in row.items() if v is not None}
    return [key for key in ("al_thinking", "al_answer") if key in present]


def filter_rows(rows: list[dict], *, search: str = "", engines: Iterable[str] = (), methods: Iterable[str] = (),
                families: Iterable[str] = (), isl: str | None = None) -> list[dict]:
    """Rows matching every filter: ``search`` (case-insensitive, all words, in any identity
    field), engine / SD method / model family (any of the chosen; none chosen = all), and ISL
    (entries measured at that throughput bucket)."""
    words = search.lower().split()
    engines, methods, families = set(engines or ()), set(methods or ()), set(families or ())
    out = []
    for row in rows:
        haystack = " ".join(str(row.get(k) or "") for k in IDENTITY_KEYS).lower()
        if words and not all(w in haystack for w in words):
            continue
        if engines and row.get("engine") not in engines:
            continue
        if methods and row.get("sd_method") not in methods:
            continue
        if families and row.get("model_family") not in families:
            continue
        if isl and isl not in row.get("isls", ()):
            continue
        out.append(row)
    return out


def sort_rows(rows: list[dict], key: str, descending: bool = True) -> list[dict]:
    """Sorted by ``key``; rows without a value go last either way (mixed types sort as text)."""
    present = [r for r in rows if r.get(key) is not None]
    missing = [r for r in rows if r.get(key) is None]
    numeric = all(isinstance(r[key], (int, float)) for r in present)
    return sorted(present, key=lambda r: r[key] if numeric else str(r[key]), reverse=descending) + missing


def choices(rows: list[dict], key: str) -> list[str]:
    return sorted({str(r[key]) for r in rows if r.get(key)})


def entry_label(entry: Entry) -> str:
    meta = entry.metadata
    return (f"{entry.id} | {meta.get('model')} | {meta.get('drafter')} ({meta.get('sd_method')}, {meta.get('engine')}) "
            f"| {entry.trust}")


def pareto_points(entries: Iterable[Entry], isl: str | None = None) -> list[dict]:
    """(user TPS, output TPS) of every SD load point on a throughput bucket, labelled by entry.

    ``on_frontier`` marks each entry's own Pareto frontier (computed by the metrics core)."""
    from speedbench.metrics.latency import pareto_frontier

    out = []
    for entry in entries:
        points = [p for p in BoardMetrics.read(entry.metrics).points
                  if p.role == "sd" and p.isl in ISL_ORDER and (isl is None or p.isl == isl)
                  and _round(p.user_tps_p50) is not None and _round(p.output_tps) is not None]
        if not points:
            continue
        frontier = set(pareto_frontier([p.user_tps_p50 for p in points], [p.output_tps for p in points]).tolist())
        for i, p in enumerate(points):
            out.append({"entry": f"{entry.id} ({p.isl})", "user_tps": p.user_tps_p50,
                        "output_tps": p.output_tps, "concurrency": p.concurrency,
                        "client_lagged_pct": lagged_percent(p.client_lagged_share),
                        "on_frontier": i in frontier})
    return sorted(out, key=lambda p: (p["entry"], p["concurrency"] or 0))


def per_category_side_by_side(entries: list[Entry]) -> list[dict]:
    """One row per category, one AL column per entry (``<id>`` and ``<id> CI``)."""
    rows = [entry_row(e) for e in entries]
    cats = [c[3:] for c in category_columns(rows)]
    table = []
    for cat in ["all", *cats]:
        line = {"category": cat}
        for entry, row in zip(entries, rows):
            key = "al" if cat == "all" else f"al_{cat}"
            low, high = row.get(f"{key}_ci_low"), row.get(f"{key}_ci_high")
            line[entry.id] = row.get(key)
            line[f"{entry.id} 95% CI"] = f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
        table.append(line)
    return table


def _acceptance_records(archive: bytes):
    """The records an entry's AL comes from, and its K, read from its stored bundle."""
    from speedbench.analysis.selection import acceptance_records
    from speedbench.leaderboard.validate import STORED_LIMITS, read_runs

    metadata, runs, _ = read_runs(archive, STORED_LIMITS)
    return acceptance_records(runs), metadata.draft_length


# A pair's result is a few hundred bytes and its bootstrap costs seconds: kept. The entries'
# records (up to the unpacked cap each) are not: they live only while their pair is computed.
_PAIRS: "OrderedDict[tuple, dict]" = OrderedDict()
_PAIRS_LOCK = threading.Lock()
MAX_PAIRS = 256


def _pair(store: LeaderboardStore, ref: Entry, other: Entry, admission=None) -> dict:
    """``compare_runs`` of two entries; the bundles are read and compared in a slot of the app's
    admission control (:mod:`.admission`: the same limit, memory reservation and CPU budget as an
    upload), so Compare cannot cost more than the bound an upload is held to."""
    key = (str(store.path), ref.id, ref.archive_sha256, other.id, other.archive_sha256)
    with _PAIRS_LOCK:
        if key in _PAIRS:
            _PAIRS.move_to_end(key)
            return _PAIRS[key]
    archives = [store.archive(ref.id), store.archive(other.id)]
    if admission is None:
        result = _compare_archives(*archives)
    else:
        from speedbench.leaderboard.admission import reservation
        from speedbench.leaderboard.validate import STORED_LIMITS

        with admission.slot(sum(reservation(a, STORED_LIMITS)[0] for a in archives), "comparing these entries",
                            "compare smaller entries"):
            result = _compare_archives(*archives)
    with _PAIRS_LOCK:
        _PAIRS[key] = result
        while len(_PAIRS) > MAX_PAIRS:
            _PAIRS.popitem(last=False)
    return result


def _compare_archives(ref_archive: bytes, archive: bytes) -> dict:
    ref_records, ref_k = _acceptance_records(ref_archive)
    records, k = _acceptance_records(archive)
    return compare_runs(ref_records, records, ref_k, k)


def paired_differences(store: LeaderboardStore, entries: list[Entry], admission=None) -> list[dict]:
    """Each entry against the first (the reference): AL difference (B - A) on the prompts both
    ran, with its paired bootstrap CI, overall and per category (each pair under ``admission``,
    the app's :class:`~speedbench.leaderboard.admission.Admission`, when given)."""
    if len(entries) < 2:
        return []
    ref = entries[0]
    out = []
    for other in entries[1:]:
        result = _pair(store, ref, other, admission)
        for category, comparison in result.items():
            diff = PairedComparison.read(comparison).acceptance_length
            ci = diff.ci
            out.append({"reference": ref.id, "entry": other.id, "category": category,
                        "al_reference": _round(diff.value_a), "al_entry": _round(diff.value_b),
                        "difference": _round(diff.difference), "ci_low": _round(ci[0]),
                        "ci_high": _round(ci[1]), "paired_prompts": diff.num_paired})
    return out
