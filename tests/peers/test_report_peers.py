"""The report's per-category speedup and peer view, on two hand-built runs of the same prompts."""
from __future__ import annotations

import pytest

from speedbench.report import compute_report, load_runs
from speedbench.report.tables import TABLES
from tests.peers.records import record, write_run

approx = pytest.approx


def _runs(tmp_path):
    # SD (K = 3): q1 9 tokens in 3 chunks, 2 steps accepting 3 each; q2 4 tokens, steps accepting 1 and 0.
    sd = [record("q1", "writing", send=0.0, chunks=(0.1, 0.2, 0.3), tokens=(1, 4, 4), end=0.35, accepted=6,
                 drafted=6, steps=2, histogram=[0, 0, 0, 2]),
          record("q2", "qa", send=1.0, chunks=(1.1, 1.3, 1.6), tokens=(1, 2, 1), end=1.65, accepted=1, drafted=6,
                 steps=2, histogram=[1, 1, 0, 0])]
    # Baseline: one token per chunk, 0.1 s apart.
    base = [record("q1", "writing", send=0.0, chunks=tuple(0.1 * i for i in range(1, 10)), tokens=(1,) * 9, end=0.95),
            record("q2", "qa", send=1.0, chunks=(1.1, 1.2, 1.3, 1.4), tokens=(1,) * 4, end=1.45)]
    return load_runs([write_run(tmp_path / "sd", sd, "vllm", draft_length=3),
                      write_run(tmp_path / "base", base, "vllm", draft_length=None)])


def test_speedup_per_category_by_hand(tmp_path):
    data = compute_report(_runs(tmp_path))
    rows = {r["category"]: r for r in data.speedup_by_category}
    assert set(rows) == {"writing", "qa"} and rows["qa"]["concurrency"] == 1
    assert rows["writing"]["latency_speedup"] == approx(0.95 / 0.35)  # E2E baseline / E2E SD
    assert rows["qa"]["latency_speedup"] == approx(0.45 / 0.65)
    assert rows["writing"]["decode_speedup"] == approx(40 / 10)  # (9 - 1) / 0.2 s over (9 - 1) / 0.8 s
    assert rows["qa"]["decode_speedup"] == approx(6 / 10)  # (4 - 1) / 0.5 s over (4 - 1) / 0.3 s
    # Appendix G per category: t_ar 0.1 s, t_sd = mean of gaps 0.1, 0.1, 0.2, 0.3 s; AL = tokens per decode step
    assert rows["writing"]["estimated_speedup"] == approx(0.1 * 4.0 / 0.175)
    assert rows["qa"]["estimated_speedup"] == approx(0.1 * 1.5 / 0.175)
    assert rows["writing"]["latency_speedup_ci_low"] == approx(0.95 / 0.35)  # one pair: no spread
    table = next(t for t in TABLES if t.name == "speedup_by_category")
    assert len(table.cells(data)) == 2


def test_decode_speed_per_category_is_the_user_tps_of_the_latency_figures(tmp_path):
    # A closing chunk with no token (a usage-only event) at 1.9 s is no arrival of output: qa's SD request
    # still decodes (4 - 1) tokens between 1.1 and 1.6 s, as the point's user TPS says.
    sd = [record("q2", "qa", send=1.0, chunks=(1.1, 1.3, 1.6, 1.9), tokens=(1, 2, 1, 0), end=1.95, accepted=1,
                 drafted=6, steps=2, histogram=[1, 1, 0, 0])]
    base = [record("q2", "qa", send=1.0, chunks=(1.1, 1.2, 1.3, 1.4), tokens=(1,) * 4, end=1.45)]
    data = compute_report(load_runs([write_run(tmp_path / "sd", sd, "vllm", draft_length=3),
                                     write_run(tmp_path / "base", base, "vllm", draft_length=None)]))
    (row,) = data.speedup_by_category
    assert row["decode_speedup"] == approx((3 / 0.5) / (3 / 0.3))
    assert data.details["sd/c1"]["latency"]["user_tps"]["mean"] == approx(3 / 0.5)


def test_the_html_report_shows_the_category_speedup_and_the_peer_view(tmp_path):
    import re

    from speedbench.report import build_report

    runs = _runs(tmp_path)
    files = build_report([r.path for r in runs], tmp_path / "report")
    html = files.html.read_text(encoding="utf-8")

    def body_rows(name: str) -> int:
        match = re.search(rf'id="table-{name}">(.*?)</table>', html, re.S)
        assert match, f"no table {name} in report.html"
        return match.group(1).split("<tbody>")[1].count("<tr>")

    assert body_rows("speedup_by_category") == 2  # writing and qa at c1
    assert 'id="figure-speedup_by_category"' in html
    # the SD run (vLLM, per-request statistics): vllm, aiperf and specdec_bench rows; the baseline: specdec_bench
    assert body_rows("peers") == 4
    assert 'href="#peers"' in html
