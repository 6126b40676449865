"""The short table ``speedbench run`` prints at the end (from ``results.json``).

One block per load point: a line with throughput, achieved vs requested concurrency, errors and
flags, then one row per category with the acceptance length (primary source, step-weighted,
95% bootstrap CI, over the steps that source counts), the tokens per decode step (what
Appendix G's speedup uses), TTFT / step latency / TPOT p50 and p99 (ms), and user TPS p50.
"""
from __future__ import annotations


def _ms(stats: dict | None, key: str) -> str:
    value = (stats or {}).get(key)
    return "-" if value is None else f"{1000 * value:.1f}"


def _num(value, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def _coverage_text(point: dict) -> str:
    """`` coverage 92.0% (retried 3)``: measured share of the planned request-turns, superseded records."""
    share = (point.get("coverage") or {}).get("share")
    text = "" if share is None else f" coverage {100 * share:.1f}%"
    return text + (f" (retried {point['num_superseded']})" if point.get("num_superseded") else "")


def format_summary(results: dict) -> str:
    lines = [f"engine {results.get('engine')} | model {results.get('model_id')} | "
             f"{results.get('engine_version')} | config {results.get('dataset_config')}"]
    header = (f"{'category':<16} {'AL':>6} {'AL 95% CI':>15} {'tok/step':>8} {'TTFT p50/p99 ms':>17} "
              f"{'step p50/p99 ms':>17} "
              f"{'TPOT p50/p99 ms':>17} {'user TPS p50':>12}")
    for point in results.get("points", []):
        latency = point.get("latency") or {}
        source = point.get("primary_acceptance_source")
        acceptance = (point.get("acceptance") or {}).get(source) or {}
        requested = point.get("requested_concurrency")
        load = f"concurrency {requested}" if requested is not None else f"rate {point.get('request_rate')}/s"
        lines.append("")
        lines.append(
            f"[{point['run_point']}] {load}, achieved {_num(point.get('achieved_concurrency'))} | "
            f"output TPS {_num(latency.get('output_tps'), '{:.1f}')} | requests {point['num_requests']} "
            f"errors {point['num_errors']}{_coverage_text(point)} | AL source: {source or 'none'}")
        lines.append(header)
        rows = [("all", acceptance, latency)]
        for category in sorted((latency.get("per_category") or {})):
            rows.append((category, (acceptance.get("per_category") or {}).get(category, {}),
                         latency["per_category"][category]))
        for name, acc, lat in rows:
            ci = acc.get("acceptance_length_ci")
            ci_text = f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci and None not in ci else "-"
            lines.append(
                f"{name[:16]:<16} {_num(acc.get('acceptance_length')):>6} {ci_text:>15} "
                f"{_num(acc.get('tokens_per_decode_step')):>8} "
                f"{_ms(lat.get('ttft'), 'p50') + '/' + _ms(lat.get('ttft'), 'p99'):>17} "
                f"{_ms(lat.get('step_latency'), 'p50') + '/' + _ms(lat.get('step_latency'), 'p99'):>17} "
                f"{_ms(lat.get('tpot'), 'p50') + '/' + _ms(lat.get('tpot'), 'p99'):>17} "
                f"{_num((lat.get('user_tps') or {}).get('p50'), '{:.1f}'):>12}")
        for flag in point.get("flags", []):
            lines.append(f"  ! {flag}")
    return "\n".join(lines)
