"""``speedbench serve --draft-p-min P`` on the real llama.cpp server (xllamacpp): drafts end early. The same
request at K = 8, greedy, without and with P = 0.9: the server's own counters (parsed here) show fewer draft
tokens per drafted step with P, and its per-request timings agree with them."""
from __future__ import annotations

import json
import urllib.request

from speedbench.cli import build_parser
from speedbench.cli.serve import _config
from speedbench.engine import LocalEngine

PROMPT = [1, 400, 300]  # BOS + two ids of the 512-token vocabulary


def _serve_and_ask(models_dir, *flags: str) -> tuple[dict, dict[str, float]]:
    args = build_parser().parse_args(["serve", "--draft-length", "8", "--parallel", "1", *flags])
    with LocalEngine(_config(args)) as engine:
        request = urllib.request.Request(f"{engine.url}/v1/completions", headers={"Content-Type": "application/json"},
                                         data=json.dumps({"prompt": PROMPT, "max_tokens": 64, "temperature": 0}).encode())
        with urllib.request.urlopen(request, timeout=120) as response:
            timings = json.loads(response.read())["timings"]
        text = urllib.request.urlopen(f"{engine.url}/metrics", timeout=10).read().decode()
    counters = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                if line.startswith("llamacpp:spec_decode_num_draft")}
    return timings, counters


def test_p_min_shortens_drafts(models_dir, monkeypatch):
    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    full_timings, full = _serve_and_ask(models_dir)
    short_timings, short = _serve_and_ask(models_dir, "--draft-p-min", "0.9")
    for timings, counters in ((full_timings, full), (short_timings, short)):
        assert counters["llamacpp:spec_decode_num_draft_tokens_total"] == timings["draft_n"]
        assert counters["llamacpp:spec_decode_num_drafts_total"] > 0
    per_step = {name: c["llamacpp:spec_decode_num_draft_tokens_total"] / c["llamacpp:spec_decode_num_drafts_total"]
                for name, c in (("full", full), ("short", short))}
    assert per_step["short"] < per_step["full"] <= 8
