"""The peer view in results.json (speedbench.analysis.run_results) and in the report's table ``peers``."""
from __future__ import annotations

import pytest

from speedbench.report import compute_report
from speedbench.report.tables import TABLES
from tests.peers.test_report_peers import _runs

approx = pytest.approx


def test_peer_view_reaches_results_and_the_report(tmp_path):
    data = compute_report(_runs(tmp_path))
    sd_point = data.details["sd/c1"]
    views = sd_point["peers"]
    # vLLM's AL over the drafted steps of both requests: 1 + 7 / 4; aiperf's request mean: (4 + 1.5) / 2
    assert views["vllm"]["figures"]["spec_decode_acceptance_length"] == approx(1 + 7 / 4)
    assert views["aiperf"]["figures"]["spec_decode_acceptance_length"] == approx((4.0 + 1.5) / 2)
    rows = next(t for t in TABLES if t.name == "peers").rows(data)
    # a vLLM run: llama.cpp's and SGLang's acceptance figures read their own servers' fields, so no row
    assert {r["tool"] for r in rows if r["run"] == "sd"} == {"vllm bench serve", "aiperf", "specdec_bench"}
    assert views["sglang"]["figures"].get("accept_length") is None and views["llamacpp"]["figures"]["accept_rate"] is None
