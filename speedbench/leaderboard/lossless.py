"""Losslessness of a bundle: its SD runs' greedy outputs against its baseline runs', token by token.

At temperature 0 speculative decoding must reproduce the autoregressive baseline's tokens. When a
bundle submitted at temperature 0 holds an SD run and a baseline run of the same dataset config,
each load point both ran is compared with the metrics core (:mod:`speedbench.metrics.losslessness`:
requests paired by question, turn and identical prompt ids, first divergence per request, share
identical). The summary is stored in the entry's metrics (``metrics["losslessness"]``, so a
rebuild recomputes it from the raw records) and any divergence becomes the warning
``lossless.tokens_differ``: flagged, never rejected, since batched kernels are not bitwise
deterministic and a small share of late divergences is expected.

A pair is compared only when the submitted temperature is 0 and neither run's manifest says
otherwise (``options.sampling.temperature``). Records without token ids (older clients) are
counted as skipped (``no_token_ids``); the text comparison of :mod:`.plausibility` still covers
them. Re-encoded ids (an engine that sent text only) make a divergence index approximate: ``ids``
says which ids were compared.
"""
from __future__ import annotations

import math

from speedbench.metrics.losslessness import NONDETERMINISM_NOTE, compare_outputs, pair_records, summary_fields
from speedbench.analysis.run_folder import RunFolder

WARNING_CODE = "lossless.tokens_differ"
MAX_LISTED = 100  # divergent requests listed per pair (bounds the stored entry; the counts cover all)


def _manifest_temperature(run: RunFolder):
    options = run.manifest.options if isinstance(run.manifest.options, dict) else {}
    sampling = options.get("sampling") if isinstance(options.get("sampling"), dict) else {}
    return sampling.get("temperature", options.get("temperature"))


def _is_greedy(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0)


def _pair_row(sd: RunFolder, base: RunFolder, point: str) -> dict:
    sd_ids, base_ids, skipped, sources = pair_records(sd.points[point], base.points[point])
    summary = compare_outputs(sd_ids, base_ids, skipped)
    divergent = summary.divergent
    return {"sd_run": sd.path, "baseline_run": base.path, "dataset_config": sd.dataset_config, "point": point,
            **summary_fields(summary, sources),
            "divergent_requests": [{"request": r.key, "first_divergence": r.first_divergence,
                                    "sd_tokens": r.sd_tokens, "baseline_tokens": r.baseline_tokens}
                                   for r in divergent[:MAX_LISTED]]}


def bundle_losslessness(runs: list[RunFolder], temperature) -> dict:
    """The ``metrics["losslessness"]`` document of a bundle (module doc)."""
    out = {"checked": False, "pairs": [], "note": NONDETERMINISM_NOTE}
    if not _is_greedy(temperature):
        out["reason"] = "not compared: the submission's temperature is not 0"
        return out
    for sd in (r for r in runs if r.role == "sd" and _is_greedy(_manifest_temperature(r))):
        for base in (r for r in runs if r.role == "baseline" and r.dataset_config == sd.dataset_config
                     and _is_greedy(_manifest_temperature(r))):
            out["pairs"] += [_pair_row(sd, base, point) for point in sorted(set(sd.points) & set(base.points))]
    compared = sum(p["num_compared"] for p in out["pairs"])
    identical = sum(p["num_identical"] for p in out["pairs"])
    out.update(checked=compared > 0, num_compared=compared, num_identical=identical,
               num_divergent=compared - identical, share_identical=identical / compared if compared else None)
    if not compared:
        has_baseline = any(r.role == "baseline" for r in runs)
        out["reason"] = ("not compared: no SD and baseline run of the same config and load point with token ids"
                         if has_baseline else "not compared: the bundle has no baseline run")
    return out


def losslessness_warnings(summary: dict | None) -> list[dict]:
    """``lossless.tokens_differ`` for each compared pair whose outputs differ (flag, never reject)."""
    out = []
    for pair in (summary or {}).get("pairs", []):
        if pair.get("num_divergent"):
            out.append({"code": WARNING_CODE, "message": (
                f"{pair['sd_run']} vs {pair['baseline_run']} at {pair['point']}: {pair['num_identical']} of "
                f"{pair['num_compared']} greedy outputs identical token by token; earliest divergence at token "
                f"{pair['earliest_divergence']} (ids: {pair['ids']}). {NONDETERMINISM_NOTE}")})
    return out


def lossless_cell(summary) -> str:
    """The board's one text cell: ``"98.4% identical (3 of 190 differ)"``, ``"100% identical (190)"``, or ''."""
    if not isinstance(summary, dict) or not summary.get("checked"):
        return ""
    compared, divergent = summary.get("num_compared"), summary.get("num_divergent")
    if type(compared) is not int or type(divergent) is not int or compared <= 0 or not 0 <= divergent <= compared:
        return ""
    share = math.floor(1000 * (compared - divergent) / compared) / 10  # never rounds up to 100%
    if not divergent:
        return f"100% identical ({compared})"
    return f"{share:.1f}% identical ({divergent} of {compared} differ)"
