"""`speedbench curate` (issue 14): anyone's prompts -> a diverse config of a dataset folder.

Real parts: JSONL / parquet / a Hugging Face dataset folder on disk, the real USE embedder, the
real writer and report, `datasets.load_dataset` on the result, and `speedbench run` against the
vLLM stand-in engine the client tests use.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from speedbench.cli import main
from speedbench.dataset_builder.curate_input import InputSpec, read_prompts
from speedbench.schema import ARROW_SCHEMA

TOPICS = {
    "billing": ["My invoice for {m} shows a double charge", "How do I change the card used for {m}?",
                "Why was I billed in {m} after cancelling?", "Can I get a refund for the {m} renewal?"],
    "shipping": ["The parcel sent in {m} never arrived", "Can you ship to Norway before {m}?",
                 "Tracking has not updated since {m}", "The box from {m} arrived damaged"],
    "account": ["I cannot log in since {m}", "Please delete my account created in {m}",
                "How do I enable two-factor login, set up in {m}?", "My username changed in {m} by itself"],
}
MONTHS = ["January", "February", "March", "April", "May", "June"]


def support_records():
    records = []
    for group, templates in TOPICS.items():
        for template in templates:
            for month in MONTHS:
                records.append({"id": f"{group}-{len(records)}", "topic": group, "text": template.format(m=month)})
    return records


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def curate_cli(input_path, out, *extra, config="support", per_group="6", cache=None) -> int:
    args = ["curate", str(input_path), "--text-field", "text", "--group-by", "topic", "--per-group", per_group,
            "--config", config, "--out", str(out), "--no-progress", *extra]
    if cache is not None:
        args += ["--embedding-cache", str(cache)]
    return main(args)


@pytest.fixture(scope="module")
def curated(tmp_path_factory):
    root = tmp_path_factory.mktemp("curate")
    source = write_jsonl(root / "support.jsonl", support_records())
    code = curate_cli(source, root / "out", "--id-field", "id", cache=root / "cache")
    return code, root


def test_curated_config_loads_with_the_published_schema(curated):
    import datasets

    code, root = curated
    assert code == 0
    out = root / "out"
    table = pq.read_table(out / "data" / "support" / "test-00000-of-00001.parquet")
    assert table.schema.equals(ARROW_SCHEMA)
    rows = datasets.load_dataset(str(out), "support", split="test")
    assert len(rows) == 18
    assert sorted(set(rows["category"])) == sorted(TOPICS)
    assert all(rows["category"].count(g) == 6 for g in TOPICS)
    by_id = {r["id"]: r for r in support_records()}
    for row in rows:
        original = by_id[row["src_id"]]
        assert row["turns"] == [original["text"]] and row["category"] == original["topic"]
        assert row["source"] == "support"
    manifest = json.loads((out / "manifest.json").read_text())
    stats = manifest["configs"]["support"]["stats"]
    assert stats["groups"]["billing"]["prompts"] == 24 and stats["per_group"] == 6
    card = (out / "README.md").read_text()
    assert "config_name: support" in card and "curated with `speedbench curate`" in card


def test_selection_is_more_diverse_than_random_and_the_report_is_written(curated):
    _, root = curated
    out = root / "out"
    stats = json.loads((out / "manifest.json").read_text())["configs"]["support"]["stats"]
    for group in TOPICS:
        similarity = stats["groups"][group]["mean_similarity"]
        assert similarity["selected"] < similarity["random"]
    report = out / "reports" / "support" / "reports"
    assert (report / "diversity.md").is_file()
    assert all((report / f"heatmap_{g}.png").is_file() for g in TOPICS)


def test_rebuild_is_byte_identical_and_uses_the_cache(curated, tmp_path, capsys):
    _, root = curated
    code = curate_cli(root / "support.jsonl", tmp_path / "again", "--id-field", "id", cache=root / "cache")
    assert code == 0
    assert "embedded 0 of 72 texts" in capsys.readouterr().out
    first = (root / "out" / "data" / "support" / "test-00000-of-00001.parquet").read_bytes()
    assert (tmp_path / "again" / "data" / "support" / "test-00000-of-00001.parquet").read_bytes() == first


def test_the_client_runs_the_curated_config_against_the_standin(curated, models_dir, tmp_path):
    from tests.standins.fixtures import read_jsonl
    from tests.standins.standin import Simulation, StandinServer
    from speedbench.client.data.workload import load_conversations

    _, root = curated
    conversations = load_conversations(root / "out", "support")
    assert len(conversations) == 18
    with StandinServer("vllm", Simulation(conditional_rates=[0.8, 0.5])) as server:
        code = main(["run", "--engine", "vllm", "--url", server.url, "--tokenizer", str(models_dir),
                     "--dataset", str(root / "out"), "--config", "support", "--out", str(tmp_path / "run"),
                     "--no-progress", "--resamples", "50", "--max-tokens", "32", "--ignore-eos",
                     "--concurrency", "2"])
    assert code == 0
    records = read_jsonl(tmp_path / "run" / "records.jsonl")
    assert {r["question_id"] for r in records} == {c.question_id for c in conversations}


def test_parquet_with_chat_turns_and_a_hugging_face_folder(tmp_path):
    records = [{"conv": [{"role": "system", "content": "be brief"}, {"role": "user", "content": f"question {i}"},
                         {"role": "assistant", "content": "answer"}, {"role": "user", "content": f"follow-up {i}"}],
                "lang": "de" if i % 2 else "fr"} for i in range(6)]
    path = tmp_path / "chats.parquet"
    pq.write_table(pa.Table.from_pylist(records), path)
    prompts = read_prompts(InputSpec(str(path), "conv", "lang"))
    assert prompts[1].turns == ("question 1", "follow-up 1") and prompts[1].group == "de"
    folder = tmp_path / "hf" / "data"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(records), folder / "train-00000-of-00001.parquet")
    from_hf = read_prompts(InputSpec(str(tmp_path / "hf"), "conv", "lang", split="train"))
    assert [p.turns for p in from_hf] == [p.turns for p in prompts]


@pytest.mark.parametrize("mutate,expected", [
    (lambda r: r[4].pop("text"), r"support\.jsonl line 5: missing field 'text'"),
    (lambda r: r[2].update(text="   "), r"support\.jsonl line 3: field 'text' turn 1 is empty"),
    (lambda r: r[7].update(text=[]), r"support\.jsonl line 8: field 'text' has no turns"),
    (lambda r: r[9].update(id=r[1]["id"]), r"support\.jsonl line 10: field 'id' value 'billing-1' duplicates "
                                           r".*support\.jsonl line 2"),
    (lambda r: r[3].pop("topic"), r"support\.jsonl line 4: missing field 'topic'"),
    (lambda r: r[5].update(text={"a": 1}), r"line 6: field 'text' must be a string or a list of turns"),
])
def test_bad_input_names_file_row_and_field(tmp_path, capsys, mutate, expected):
    records = support_records()
    mutate(records)
    source = write_jsonl(tmp_path / "support.jsonl", records)
    assert curate_cli(source, tmp_path / "out", "--id-field", "id") == 1
    error = capsys.readouterr().err
    assert __import__("re").search(expected, error), error
    assert not (tmp_path / "out").exists()


def test_a_group_smaller_than_k_is_named(tmp_path, capsys):
    records = support_records() + [{"id": "x1", "topic": "returns", "text": "Where do I send a return?"}]
    source = write_jsonl(tmp_path / "support.jsonl", records)
    assert curate_cli(source, tmp_path / "out", "--id-field", "id") == 1
    error = capsys.readouterr().err
    assert "field 'topic'" in error and "'returns' has 1" in error and "support.jsonl line 73" in error


def test_corrupt_json_and_unknown_format(tmp_path, capsys):
    source = tmp_path / "support.jsonl"
    source.write_text('{"text": "a", "topic": "x"}\n{"text": \n', encoding="utf-8")
    assert curate_cli(source, tmp_path / "out") == 1
    assert "support.jsonl line 2: not valid JSON" in capsys.readouterr().err
    other = tmp_path / "support.csv"
    other.write_text("text,topic\n")
    assert curate_cli(other, tmp_path / "out") == 1
    assert "unknown input format" in capsys.readouterr().err


def test_group_seeds_do_not_depend_on_other_groups():
    from speedbench.dataset_builder.curate import group_seed
    assert group_seed(0, "billing") == group_seed(0, "billing") != group_seed(1, "billing")
    assert np.int64(group_seed(0, "a")) >= 0
