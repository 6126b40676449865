"""`speedbench fit-isl`: templated prompts of exactly N target tokens, recorded tokenizer hash (stories260K)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import speedbench.dataset_builder.throughput  # noqa: F401
from speedbench.cli import main as cli_main
from speedbench.dataset_builder.registry import CONFIG_BUILDERS, BuildContext
from speedbench.dataset_builder.throughput.target_fit import strip_padding
from speedbench.dataset_builder.writer import data_file, write_dataset
from speedbench.tokenization.target import TargetTokenizer

CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}</s>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


@pytest.fixture(scope="module")
def dataset(sources_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("fit_isl") / "speed-bench"
    ctx = BuildContext(sources=sources_dir, out_dir=folder, seed=0, options={"per_tier": 2}, progress=False)
    built = [CONFIG_BUILDERS[name](ctx) for name in ("throughput_1k", "random_1k")]
    write_dataset(folder, built, {"seed": 0, "sources": str(sources_dir)})
    return folder, built


def templated_counts(target: TargetTokenizer, path: Path) -> list[int]:
    turns = pq.read_table(path).column("turns").to_pylist()
    return [len(target.encode_chat([{"role": "user", "content": t[0]}])) for t in turns]


def test_fit_isl_without_chat_template(dataset, models_dir, sources_dir, tmp_path):
    folder, built = dataset
    out = tmp_path / "fitted"
    assert cli_main(["fit-isl", str(folder), "--tokenizer", str(models_dir / "tokenizer.json"), "--out", str(out),
                     "--sources", str(sources_dir), "--no-progress"]) == 0
    target = TargetTokenizer.from_folder(models_dir)
    assert not target.has_chat_template  # stories260K: BOS + text
    for config in ("throughput_1k", "random_1k"):
        assert set(templated_counts(target, data_file(out, config))) == {1000}
    record = json.loads((out / "fit_isl.json").read_text())
    assert record["tokenizer_sha256"] == target.sha256
    assert json.loads((out / "manifest.json").read_text())["fit_isl"]["tokenizer_sha256"] == target.sha256
    # The rows keep their ids; only the prompt text changed.
    table = pq.read_table(data_file(out, "throughput_1k"))
    assert table.column("question_id").to_pylist() == [r.question_id for r in built[0].rows]
    # An instruction at the end of a recipe row survives the re-fit (tiny vocabulary: much is cut).
    code_rows = [t[0] for t, s in zip(table.column("turns").to_pylist(), table.column("sub_category").to_pylist())
                 if s == "dialogue_continuation"]
    assert code_rows and all("continue the last dialogue for at least 600 words." in strip_padding(t) for t in code_rows)


def test_fit_isl_with_a_chat_template_file(dataset, models_dir, sources_dir, tmp_path):
    folder, _ = dataset
    template = tmp_path / "chat_template.jinja"
    template.write_text(CHAT_TEMPLATE)
    out = tmp_path / "fitted_chat"
    assert cli_main(["fit-isl", str(folder), "--tokenizer", str(models_dir), "--chat-template", str(template),
                     "--configs", "throughput_1k", "--out", str(out), "--sources", str(sources_dir),
                     "--no-progress"]) == 0
    target = TargetTokenizer.from_folder(models_dir)
    target.chat_template = CHAT_TEMPLATE
    counts = templated_counts(target, data_file(out, "throughput_1k"))
    assert set(counts) == {1000}
    record = json.loads((out / "fit_isl.json").read_text())
    assert record["chat_template"] == "override"
    assert record["chat_template_sha256"] == hashlib.sha256(CHAT_TEMPLATE.encode()).hexdigest()
    assert list(record["configs"]) == ["throughput_1k"]


def test_fit_isl_rejects_a_missing_tokenizer(dataset, tmp_path):
    folder, _ = dataset
    assert cli_main(["fit-isl", str(folder), "--tokenizer", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2


def test_strip_padding():
    assert strip_padding("Question?\nAnswer now please.\nAnswer now please.\nAns") == "Question?\n"
    assert strip_padding("Ends with Ans") == "Ends with Ans"  # no whole padding before: not padding
    assert strip_padding("abcdef", padding_chars=2) == "abcd"
