"""A peer's saved result beside our peer view and our own figures, each difference with its cause.

For every figure the peer's file holds and its module maps (``FIGURES``):

- a *count* figure (fixed by the traffic) equal to our peer view of the same run is ``equal``; the
  cause says whether its definition is ours (then our figure is the same number) or how it differs;
- a count figure that differs from our peer view is a ``mismatch``: no definition explains it, so
  the two runs did not see the same traffic (other prompts, other outputs, another client on the
  server, a server that was not fresh);
- a *timing* figure is ``measured``: two runs never time alike; the relative difference is shown.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from speedbench.peers.common import COUNT, Figure
from speedbench.peers.view import PEERS

EQUAL, MISMATCH, MEASURED, MISSING = "equal", "mismatch", "measured", "not computed"
REL_TOLERANCE = 1e-9  # JSON keeps doubles exactly; this only absorbs a different summation order


@dataclass
class ComparisonRow:
    scope: str  # "all" or a category
    figure: str
    peer: Any
    peer_view: Any
    ours_name: str | None
    ours: Any  # in the peer's unit
    verdict: str
    cause: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def detect_tool(path: str | Path) -> str:
    """Which peer wrote ``path`` (a file or an output folder), from its shape."""
    path = Path(path)
    if path.is_dir():
        if (path / PEERS["aiperf"].EXPORT_FILE).exists():
            return "aiperf"
        if any((path / name).exists() for name in PEERS["specdec"].RESULT_FILES):
            return "specdec"
        raise ValueError(f"{path}: a folder, but neither aiperf's {PEERS['aiperf'].EXPORT_FILE} nor a "
                         "specdec_bench output is in it")
    if not path.exists():
        raise ValueError(f"{path}: no such file")
    if path.name in PEERS["specdec"].RESULT_FILES:
        return "specdec"
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    try:
        data = json.loads(text) if text.startswith("{") and "\n{" not in text else json.loads(text.splitlines()[-1])
    except (json.JSONDecodeError, IndexError) as error:
        raise ValueError(f"{path}: not JSON or JSON lines ({error})") from error
    for name in ("llamacpp", "sglang", "vllm", "aiperf"):
        if PEERS[name].is_result(data):
            return name
    raise ValueError(f"{path}: not a result of vllm bench serve, SGLang bench_serving, llama.cpp speed-bench, "
                     "aiperf or specdec_bench (pass --tool to say which)")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b) \
            and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or math.isclose(float(a), float(b), rel_tol=REL_TOLERANCE, abs_tol=0.0)
    return a == b


def _scaled(value: Any, scale: float) -> Any:
    if value is None or scale == 1.0:
        return value
    if isinstance(value, (list, tuple)):
        return [None if v is None else v * scale for v in value]
    return value * scale


def _relative(a: Any, b: Any) -> float | None:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not b:
        return None
    return (float(a) - float(b)) / abs(float(b))


def compare_figure(figure: Figure, scope: str, peer: Any, view: Any, ours: dict[str, Any],
                   notes: list[str]) -> ComparisonRow:
    our_value = _scaled(ours.get(figure.ours), figure.scale) if figure.ours else None
    mapping = (f"same definition as our {figure.ours}" if figure.same else
               f"definition differs from our {figure.ours}: {figure.differs}" if figure.ours else
               f"no figure of ours; {figure.definition}")
    if figure.same and figure.differs:
        mapping += f" ({figure.differs})"
    if view is None:
        return ComparisonRow(scope, figure.key, peer, None, figure.ours, our_value, MISSING,
                             "; ".join(notes) or "our records hold nothing to compute it from")
    if figure.kind != COUNT:
        relative = _relative(peer, view)
        shown = "" if relative is None else f"{relative:+.1%} from our peer view; "
        return ComparisonRow(scope, figure.key, peer, view, figure.ours, our_value, MEASURED,
                             f"{shown}timed in another run; {mapping}")
    if _equal(peer, view):
        if figure.same and our_value is not None and not _equal(our_value, view):
            why = "; ".join(notes) or "it comes from another source than the peer's (e.g. per-request statistics " \
                                      "where the peer reads counters over the whole window)"
            mapping += f"; our figure differs from the peer view: {why}"
        return ComparisonRow(scope, figure.key, peer, view, figure.ours, our_value, EQUAL, mapping)
    return ComparisonRow(scope, figure.key, peer, view, figure.ours, our_value, MISMATCH,
                         "no definition explains it: the peer's run and ours did not see the same traffic "
                         "(prompts, outputs, other clients, a server that was not fresh)")


def compare(tool: str, peer_result: dict[str, Any], view: dict[str, Any], ours: dict[str, Any],
            ours_by_category: dict[str, dict[str, Any]] | None = None) -> list[ComparisonRow]:
    """One row per figure the peer's file holds and its module maps, overall then per category."""
    figures: tuple[Figure, ...] = PEERS[tool].FIGURES
    notes = view.get("notes") or []
    rows = [compare_figure(f, "all", peer_result["figures"][f.key], (view.get("figures") or {}).get(f.key), ours,
                           notes)
            for f in figures if f.key in peer_result["figures"]]
    view_categories = view.get("per_category") or {}
    for category, peer_figures in sorted((peer_result.get("per_category") or {}).items()):
        mine = view_categories.get(category) or {}
        our_category = (ours_by_category or {}).get(category) or {}
        for figure in figures:
            if figure.key in peer_figures:
                rows.append(compare_figure(figure, category, peer_figures[figure.key], mine.get(figure.key),
                                           our_category, notes))
    # specdec_bench's per-category figure has its own key.
    for category, peer_figures in sorted((peer_result.get("per_category") or {}).items()):
        if "Category_AL" in peer_figures:
            figure = Figure("Category_AL", "mean of Request_AL over the category's requests",
                            "acceptance_length_request_weighted",
                            differs=PEERS["specdec"].FIGURES[0].differs)
            rows.append(compare_figure(figure, category, peer_figures["Category_AL"],
                                       (view_categories.get(category) or {}).get("Category_AL"),
                                       (ours_by_category or {}).get(category) or {}, notes))
    return rows


def select_point(points: list[dict], meta: dict[str, Any], wanted: str | None = None) -> dict:
    """The run's load point to compare: ``wanted``, else the one at the peer's concurrency, else the only one."""
    names = [p["run_point"] for p in points]
    if wanted:
        for point in points:
            if point["run_point"] == wanted:
                return point
        raise ValueError(f"no load point {wanted!r} in the run (points: {', '.join(names)})")
    concurrency = meta.get("max_concurrency") or meta.get("concurrency")
    if concurrency:
        match = [p for p in points if p.get("requested_concurrency") == int(concurrency)]
        if len(match) == 1:
            return match[0]
    if len(points) == 1:
        return points[0]
    raise ValueError(f"the run has {len(points)} load points ({', '.join(names)}) and the peer's file does not say "
                     "which concurrency it ran: pass --point")


__all__ = ["EQUAL", "MEASURED", "MISMATCH", "MISSING", "ComparisonRow", "compare", "compare_figure", "detect_tool",
           "select_point"]
