"""Against the real llama.cpp server (xllamacpp, stories260K with its Q4_0 draft, K = 4): the llama.cpp
peer view of a run (``speedbench.peers.llamacpp_bench``) equals the sums of the server's own
``timings`` over the same requests, sent again here with a plain non-streamed ``/completion`` call
(greedy, nothing cached: the same outputs), and the run's overall rate equals the server's
Prometheus counters differenced around the run."""
from __future__ import annotations

import json
import re
import urllib.request
from collections import defaultdict

import pytest

from speedbench.peers.view import peer_views
from speedbench.records import read_records
from tests.standins.fixtures import run_cli, story_rows, write_dataset

MAX_TOKENS = 40


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _spec_counters(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode()
    return {m.group(1): float(m.group(2)) for m in
            re.finditer(r"^(llamacpp:spec_decode_num_(?:draft|accepted)_tokens_total) ([0-9.e+-]+)$", text, re.M)}


@pytest.fixture(scope="module")
def llama_server(models_dir):
    from speedbench.engine import EngineConfig, LocalEngine

    config = EngineConfig(target=str(models_dir / "stories260K-f32.gguf"),
                          draft=str(models_dir / "stories260K-draft-q4_0.gguf"),
                          speculation="draft", draft_length=4, n_parallel=2, n_ctx_per_slot=512)
    with LocalEngine(config) as engine:
        yield engine.url


def test_llamacpp_view_equals_the_servers_timings_per_category(llama_server, models_dir, tmp_path, target_tokenizer):
    rows = story_rows(6)
    dataset = write_dataset(tmp_path / "dataset", rows)
    before = _spec_counters(llama_server)
    assert run_cli("llamacpp", llama_server, dataset, tmp_path / "run", models_dir, "--concurrency", "2",
                   "--max-tokens", str(MAX_TOKENS), "--prompt-mode", "completion") == 0
    after = _spec_counters(llama_server)
    records = list(read_records(tmp_path / "run" / "records.jsonl"))
    view = peer_views(records, "llamacpp")["llamacpp"]

    # The same prompts, sent again without streaming: the server's own timings per request.
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        body = _post(llama_server + "/completion", {"prompt": target_tokenizer.encode_completion(row.turns[0]),
                                                    "n_predict": MAX_TOKENS, "temperature": 0, "cache_prompt": False})
        for key in (row.category, "overall"):
            sums[key][0] += body["timings"]["draft_n"]
            sums[key][1] += body["timings"]["draft_n_accepted"]
    for category, figures in [*view["per_category"].items(), ("overall", view["figures"])]:
        draft_n, accepted = sums[category]
        assert (figures["draft_n"], figures["accepted"]) == (draft_n, accepted), category
        assert figures["accept_rate"] == accepted / draft_n
    # Around the run, the server's counters say the same.
    assert view["figures"]["draft_n"] == after["llamacpp:spec_decode_num_draft_tokens_total"] - \
        before["llamacpp:spec_decode_num_draft_tokens_total"]
    assert view["figures"]["accepted"] == after["llamacpp:spec_decode_num_accepted_tokens_total"] - \
        before["llamacpp:spec_decode_num_accepted_tokens_total"]
    # The server's own decode speed is kept per request, so llama.cpp's avg_pred_t_s is computed.
    assert view["figures"]["avg_pred_t_s"] > 0
    assert view["figures"]["avg_pred_t_s"] == pytest.approx(
        sum(r.engine_stats.raw["predicted_per_second"] for r in records) / len(records), rel=1e-12)
