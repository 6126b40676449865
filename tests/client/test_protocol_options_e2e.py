"""`speedbench run`'s protocol options end to end against the vLLM stand-in: balanced subsets recorded
in the manifest, results and report; chat template arguments reach the prompts; bad values are one
clear error naming the option."""
from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest

from speedbench.schema import DatasetRow
from tests.standins.fixtures import read_jsonl, run_cli, write_dataset
from tests.standins.standin import Simulation, StandinServer

SIZES = {"coding": 6, "humanities": 6, "math": 2}


@pytest.fixture(scope="module")
def server():
    with StandinServer("vllm", Simulation(conditional_rates=[0.8, 0.5, 0.3])) as running:
        yield running


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    rows = [DatasetRow(category=c, sub_category="", turns=[f"Once upon a time {c} {i}"], source="t", src_id=f"{c}{i}")
            for c, n in SIZES.items() for i in range(n)]
    return write_dataset(tmp_path_factory.mktemp("protocol") / "ds", rows, config="qualitative")


def _run(server, dataset, out, tokenizer, *extra) -> int:
    return run_cli("vllm", server.url, dataset, out, tokenizer, "--config", "qualitative", "--concurrency", "2",
                   "--max-tokens", "8", "--draft-length", "3", *extra)


def test_limit_is_balanced_and_recorded(server, dataset, models_dir, tmp_path):
    out = tmp_path / "run"
    assert _run(server, dataset, out, models_dir, "--limit", "6") == 0
    # one row of each category in turn: coding, humanities, math, coding, humanities, math
    assert Counter(r["category"] for r in read_jsonl(out / "records.jsonl")) == {"coding": 2, "humanities": 2, "math": 2}
    selection = json.loads((out / "manifest.json").read_text())["options"]["selection"]
    assert selection["rows_per_category"] == {"coding": 2, "humanities": 2, "math": 2}
    assert selection["partial"] is True and selection["config_rows"] == 14
    assert json.loads((out / "results.json").read_text())["selection"]["rows"] == 6
    from speedbench.report.compute import compute_report
    from speedbench.analysis.run_folder import read_run_folder

    flags = [f for f in compute_report([read_run_folder(out)]).flags if f["flag"] == "partial_config"]
    assert flags and flags[0]["detail"] == "6 of the config's 14 rows (coding 2, humanities 2, math 2)"


def test_categories_and_per_category(server, dataset, models_dir, tmp_path):
    out = tmp_path / "run"
    assert _run(server, dataset, out, models_dir, "--categories", "math,humanities", "--per-category", "1") == 0
    assert Counter(r["category"] for r in read_jsonl(out / "records.jsonl")) == {"humanities": 1, "math": 1}


def test_bad_values_name_the_option(server, dataset, models_dir, tmp_path, capsys):
    assert _run(server, dataset, tmp_path / "a", models_dir, "--categories", "cooking") == 2
    assert "--categories: 'cooking' not in config 'qualitative' (its categories: coding, humanities, math)" \
        in capsys.readouterr().err
    assert _run(server, dataset, tmp_path / "b", models_dir, "--chat-template-kwargs", '{"enable_thinking": false}') == 2
    assert "--chat-template-kwargs:" in capsys.readouterr().err
    empty = tmp_path / "empty-tokenizer"
    empty.mkdir()
    assert _run(server, dataset, tmp_path / "c", empty) == 2
    assert "tokenizer.json: not found" in capsys.readouterr().err


def test_chat_template_kwargs_reach_the_prompt(server, dataset, models_dir, tmp_path):
    """A template that writes a marker when thinking is off: the prompt sent is the text with the
    marker, encoded by `tokenizers` from the string written out here."""
    import pyarrow.parquet as pq
    from tokenizers import Tokenizer

    folder = tmp_path / "tok"
    folder.mkdir()
    shutil.copy(models_dir / "tokenizer.json", folder / "tokenizer.json")
    template = ("{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
                "{% if enable_thinking is defined and not enable_thinking %} The end.{% endif %}")
    (folder / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>",
                                                              "chat_template": template}))
    out = tmp_path / "run"
    assert _run(server, dataset, out, folder, "--limit", "1", "--chat-template-kwargs", '{"enable_thinking": false}') == 0
    record = read_jsonl(out / "records.jsonl")[0]
    table = pq.read_table(next((dataset / "data" / "qualitative").glob("*.parquet")))
    text = dict(zip(table.column("question_id").to_pylist(), table.column("turns").to_pylist()))[record["question_id"]][0]
    expected = Tokenizer.from_file(str(models_dir / "tokenizer.json")).encode(f"<s>{text} The end.",
                                                                            add_special_tokens=False).ids
    assert server.received[-1]["prompt"] == expected
    assert json.loads((out / "manifest.json").read_text())["options"]["chat_template_kwargs"] == {"enable_thinking": False}


def test_tokenizer_as_a_hub_model_id(server, dataset, models_dir, tmp_path, monkeypatch, capsys):
    """--tokenizer ORG/NAME reads the tokenizer files from the Hugging Face cache (laid out by hand
    here); the manifest names the Hub model; an id not in the cache is an error pointing at --online."""
    import huggingface_hub.constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--karpathy--stories260K"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(models_dir / name, repo / "snapshots" / commit / name)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    out = tmp_path / "run"
    assert _run(server, dataset, out, "karpathy/stories260K", "--limit", "2") == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["tokenizer_source"] == {"repo_id": "karpathy/stories260K", "revision": None,
                                                       "commit": commit}
    from speedbench.tokenization.target import tokenizer_fingerprint

    assert manifest["tokenizer_sha256"] == tokenizer_fingerprint(models_dir)
    assert _run(server, dataset, tmp_path / "b", "someone/absent", "--limit", "2") == 2
    assert "--tokenizer someone/absent: not in the local Hugging Face cache; pass --online" in capsys.readouterr().err
