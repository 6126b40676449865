"""`speedbench vocab-coverage` on constructed runs: every share computed by hand from the planted ids."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from safetensors.numpy import save_file

from speedbench.cli import main
from speedbench.leaderboard.synthetic import SimulatedEngine, make_run
from speedbench.schema import QUALITATIVE_CATEGORIES, DatasetRow, rows_to_table

VOCAB = {1, 2, 3}  # the drafter keeps target ids 1, 2, 3 (of a 64-id target vocabulary)
ROWS_PER_CATEGORY = 4


def _language(category: str, j: int) -> str:
    return ("de", "fr")[j % 2] if category == "multilingual" else "en"


def _design(category: str, sub: str, language: str) -> list[int]:
    """The planted output ids: in-vocabulary 1s by category, out-of-vocabulary 50s by language, a 7 in sub1."""
    i = QUALITATIVE_CATEGORIES.index(category)
    return [1] * (i + 1) + [50] * (2 + (language == "fr")) + ([7] if sub == "sub1" else [])


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("vocab") / "speed-bench"
    rows = [DatasetRow(category=c, sub_category=f"sub{j % 2}", turns=[f"{c} prompt {j}"], source="t", src_id=f"{c}{j}",
                       language=_language(c, j)) for c in QUALITATIVE_CATEGORIES for j in range(ROWS_PER_CATEGORY)]
    (root / "data" / "qualitative").mkdir(parents=True)
    pq.write_table(rows_to_table(rows), root / "data" / "qualitative" / "test.parquet")
    return root


def _rows(dataset: Path) -> dict[str, dict]:
    table = pq.read_table(dataset / "data" / "qualitative" / "test.parquet").to_pylist()
    return {r["question_id"]: r for r in table}


def _plant(run_dir: Path, dataset: Path, reencoded: int = 0) -> list[dict]:
    """Give every record its designed ids (the first ``reencoded`` ones marked re-encoded)."""
    rows = _rows(dataset)
    path = run_dir / "records.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for n, record in enumerate(records):
        row = rows[record["question_id"]]
        record["sub_category"] = row["sub_category"]
        record["output_token_ids"] = _design(row["category"], row["sub_category"], row["language"])
        record["output_token_ids_source"] = "reencoded" if n < reencoded else "engine"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return [{**r, "language": rows[r["question_id"]]["language"]} for r in records]


def _expected(records: list[dict], group, vocab=VOCAB) -> dict[str, float]:
    inside: dict[str, int] = {}
    total: dict[str, int] = {}
    for r in records:
        key = group(r)
        inside[key] = inside.get(key, 0) + sum(t in vocab for t in r["output_token_ids"])
        total[key] = total.get(key, 0) + len(r["output_token_ids"])
    return {k: inside[k] / total[k] for k in total}


@pytest.fixture
def sd_run(tmp_path, dataset):
    scale = {c: 0.4 + 0.05 * i for i, c in enumerate(QUALITATIVE_CATEGORIES)}  # AL grows with the category index
    engine = SimulatedEngine(rates=(0.9, 0.8, 0.7), category_scale=scale, report_engine_stats=True)
    run = make_run(tmp_path / "sd", dataset, "qualitative", engine, seed=3)
    return run, _plant(run, dataset, reencoded=2)


def _vocab_file(tmp_path: Path) -> Path:
    d2t = np.array([1 - 0, 2 - 1, 3 - 2], dtype=np.int64)  # draft ids 0, 1, 2 -> target 1, 2, 3
    t2d = np.zeros(64, dtype=bool)
    t2d[sorted(VOCAB)] = True
    save_file({"d2t": d2t, "t2d": t2d}, str(tmp_path / "drafter.safetensors"))
    return tmp_path / "drafter.safetensors"


def _run_cli(args, capsys) -> tuple[int, str, str]:
    code = main(["vocab-coverage", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_coverage_tables_by_hand(tmp_path, sd_run, capsys):
    run, records = sd_run
    out = tmp_path / "coverage.json"
    code, text, _ = _run_cli([run, "--draft-vocab", _vocab_file(tmp_path), "--json", out], capsys)
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["overall"] == pytest.approx(_expected(records, lambda r: "all")["all"])
    assert doc["by_category"] == pytest.approx(_expected(records, lambda r: r["category"]))
    assert doc["by_subcategory"] == pytest.approx(_expected(records, lambda r: f"{r['category']}/{r['sub_category']}"))
    assert doc["by_language"] == pytest.approx(_expected(records, lambda r: r["language"]))
    assert set(doc["by_language"]) == {"en", "de", "fr"}
    # coding (index 0): 1 x "1" against 2 or 3 "50"s and a "7" in sub1
    assert doc["by_subcategory"]["coding/sub0"] == pytest.approx(2 / 6)  # two rows of [1, 50, 50]
    assert doc["draft_vocab"]["source"] == "d2t" and doc["draft_vocab"]["size"] == 3
    assert doc["ids_sources"] == {"engine": 42, "reencoded": 2}
    assert any("2 of 44 requests have re-encoded ids" in n for n in doc["notes"])
    assert "re-encoded ids" in text and "overall" in text and "multilingual" in text


def test_top_k_simulation_by_hand(tmp_path, dataset, sd_run, capsys):
    run, records = sd_run
    counts = {}
    for r in records:
        for t in r["output_token_ids"]:
            counts[t] = counts.get(t, 0) + 1
    ranked = sorted(counts, key=lambda t: (-counts[t], t))  # most frequent first, ties to the smaller id
    out = tmp_path / "topk.json"
    assert _run_cli([run, "--top-k", "1,2,10", "--json", out], capsys)[0] == 0
    tables = json.loads(out.read_text())["top_k"]["tables"]
    for k in (1, 2, 10):
        kept = set(ranked[:k])
        assert tables[str(k)]["vocab_size"] == len(kept)
        assert tables[str(k)]["by_category"] == pytest.approx(_expected(records, lambda r: r["category"], kept))
        assert tables[str(k)]["overall"] == pytest.approx(_expected(records, lambda r: "all", kept)["all"])
    assert tables["10"]["overall"] == 1.0  # only three distinct ids: all kept
    assert "overall" not in json.loads(out.read_text())  # no --draft-vocab: only the top-k tables

    # a token-count file ranks 50 first, then 7: top-1 keeps only the out-of-vocabulary 50
    count_file = tmp_path / "counts.txt"
    count_file.write_text("50 100\n7 90\n1 5\n")
    assert _run_cli([run, "--top-k", "1", "--top-k-corpus", count_file, "--json", out], capsys)[0] == 0
    doc = json.loads(out.read_text())
    assert doc["top_k"]["tables"]["1"]["by_language"] == pytest.approx(
        _expected(records, lambda r: r["language"], {50}))
    assert doc["top_k"]["corpus"] == f"token counts {count_file}"

    # a corpus run is counted, not labelled: its dataset is not read (here: gone), and --dataset is the runs'
    corpus = make_run(tmp_path / "corpus", dataset, "qualitative", SimulatedEngine(), seed=5)
    _plant(corpus, dataset)
    manifest = json.loads((corpus / "manifest.json").read_text())
    (corpus / "manifest.json").write_text(json.dumps({**manifest, "dataset_config": "throughput_1k",
                                                        "dataset_dir": str(tmp_path / "gone")}))
    args = [run, "--top-k", "1", "--top-k-corpus", corpus, "--dataset", dataset, "--json", out]
    assert _run_cli(args, capsys)[0] == 0
    doc = json.loads(out.read_text())
    assert doc["top_k"]["corpus"] == f"run {corpus}" and not any("gone" in n for n in doc["notes"])
    assert doc["top_k"]["tables"]["1"]["overall"] == pytest.approx(_expected(records, lambda r: "all", {ranked[0]})["all"])


def test_correlation_with_al_per_category(tmp_path, sd_run, capsys):
    from scipy import stats

    run, records = sd_run
    out = tmp_path / "corr.json"
    assert _run_cli([run, "--draft-vocab", _vocab_file(tmp_path), "--top-k", "2", "--json", out], capsys)[0] == 0
    doc = json.loads(out.read_text())
    # AL per category from the engine's per-request counts, by hand: 1 + accepted / drafted steps
    al = {}
    for c in QUALITATIVE_CATEGORIES:
        mine = [r["engine_stats"] for r in records if r["category"] == c]
        al[c] = 1 + sum(s["accepted_tokens"] for s in mine) / sum(s["verify_steps"] for s in mine)
    coverage = doc["by_category"]
    cats = sorted(QUALITATIVE_CATEGORIES)
    [row] = [r for r in doc["correlation"] if r["vocabulary"] == "draft"]
    assert row["acceptance_length"] == pytest.approx(al)
    assert row["num_categories"] == 11
    x, y = [coverage[c] for c in cats], [al[c] for c in cats]
    assert row["pearson"] == pytest.approx(stats.pearsonr(x, y).statistic)
    assert row["spearman"] == pytest.approx(stats.spearmanr(x, y).statistic)
    assert {r["vocabulary"] for r in doc["correlation"]} == {"draft", "top_2"}


def test_a_baseline_run_counts_tokens_but_has_no_correlation(tmp_path, dataset, sd_run, capsys):
    run, records = sd_run
    base = make_run(tmp_path / "ar", dataset, "qualitative", SimulatedEngine(speculative=False), seed=4)
    base_records = _plant(base, dataset)
    out = tmp_path / "both.json"
    assert _run_cli([run, base, "--draft-vocab", _vocab_file(tmp_path), "--json", out], capsys)[0] == 0
    doc = json.loads(out.read_text())
    assert doc["by_category"] == pytest.approx(_expected(records + base_records, lambda r: r["category"]))
    assert [r["run"] for r in doc["correlation"]] == [str(run)]


def test_languages_unknown_without_the_dataset(tmp_path, sd_run, capsys):
    run, _ = sd_run
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["dataset_dir"] = str(tmp_path / "moved-away")
    (run / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "lang.json"
    assert _run_cli([run, "--top-k", "2", "--json", out], capsys)[0] == 0
    doc = json.loads(out.read_text())
    assert list(doc["top_k"]["tables"]["2"]["by_language"]) == ["unknown"]
    assert any("not found" in n and "--dataset" in n for n in doc["notes"])


def test_a_dataset_without_a_language_column(tmp_path, dataset, sd_run, capsys):
    """The published dataset and the reference's prepared layout (speed/<config>/test.parquet) carry no
    language column: every request is 'unknown', the other tables are unchanged; a broken parquet is named."""
    run, records = sd_run
    table = pq.read_table(dataset / "data" / "qualitative" / "test.parquet")
    prepared = tmp_path / "prepared"
    (prepared / "speed" / "qualitative").mkdir(parents=True)
    parquet = prepared / "speed" / "qualitative" / "test.parquet"
    pq.write_table(table.drop_columns(["language"]), parquet)
    out = tmp_path / "nolang.json"
    assert _run_cli([run, "--draft-vocab", _vocab_file(tmp_path), "--dataset", prepared, "--json", out], capsys)[0] == 0
    doc = json.loads(out.read_text())
    assert doc["by_language"] == pytest.approx({"unknown": _expected(records, lambda r: "all")["all"]})
    assert doc["by_category"] == pytest.approx(_expected(records, lambda r: r["category"]))
    assert any(f"{parquet}: no 'language'" in n for n in doc["notes"])
    code, _, err = _run_cli([run, "--top-k", "2", "--dataset", tmp_path / "nowhere"], capsys)
    assert code == 1 and f"--dataset {tmp_path / 'nowhere'}: " in err and "no parquet files for config 'qualitative'" in err
    parquet.write_bytes(b"PAR1 not really")
    code, _, err = _run_cli([run, "--top-k", "2", "--dataset", prepared], capsys)
    assert code == 1 and f"{parquet}: not a readable parquet file" in err


@pytest.mark.parametrize("ids, fragment", [
    ([1, 2.5], "item 1 is 2.5, not an integer token id"),
    ([1, "2"], "item 1 is '2', not an integer token id"),
    ([[1, 2], [3]], "item 0 is [1, 2], not an integer token id"),  # per-chunk lists: not the record format
    ([1, 2**70], f"item 1 is {2**70}, not an integer token id"),
    ([1, 2**63 + 5], f"item 1 is {2**63 + 5}, not an integer token id"),  # numpy makes this list uint64
    ({"0": 1}, "output_token_ids is dict, not a list of token ids"),
    ([1, -1], "holds id -1 (item 1), outside the target vocabulary"),
    ([3, 2**24], f"holds id {2**24} (item 1), outside the target vocabulary (not below {2**24})"),
])
def test_malformed_output_ids_name_the_record(sd_run, capsys, ids, fragment):
    run, _ = sd_run
    path = run / "records.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    path.write_text("\n".join([json.dumps({**first, "output_token_ids": ids}), *lines[1:]]) + "\n")
    code, _, err = _run_cli([run, "--top-k", "2"], capsys)
    assert code == 1 and f"{path}: record {first['record_key']!r}: output_token_ids" in err and fragment in err


def test_bad_inputs_fail_with_the_file_or_record_named(tmp_path, sd_run, capsys):
    run, _ = sd_run
    code, _, err = _run_cli([run, "--draft-vocab", tmp_path / "nope.safetensors"], capsys)
    assert code == 1 and f"{tmp_path / 'nope.safetensors'}: no such file" in err
    code, _, err = _run_cli([run], capsys)
    assert code == 2 and "--draft-vocab" in err
    code, _, err = _run_cli([run, "--draft-vocab", _vocab_file(tmp_path), "--top-k-corpus", run], capsys)
    assert code == 2 and "give --top-k" in err
    code, _, err = _run_cli([tmp_path / "not-a-run", "--top-k", "2"], capsys)
    assert code == 1 and "not a run folder" in err
    with pytest.raises(SystemExit):
        _run_cli([run, "--top-k", "16000,x"], capsys)
    assert "argument --top-k: expected comma-separated integers" in capsys.readouterr().err
    for size in ("0", "-5", "x"):
        with pytest.raises(SystemExit):
            _run_cli([run, "--top-k", "2", "--target-vocab-size", size], capsys)
        assert f"{size!r} is not a positive integer" in capsys.readouterr().err

    # runs of two target tokenizers: their ids are not one vocabulary
    other = make_run(tmp_path / "other", Path(json.loads((run / "manifest.json").read_text())["dataset_dir"]),
                     "qualitative", SimulatedEngine(), seed=9)
    manifest = json.loads((other / "manifest.json").read_text())
    (other / "manifest.json").write_text(json.dumps({**manifest, "tokenizer_sha256": "1" * 64}))
    for args in ([run, other, "--top-k", "2"], [run, "--top-k", "2", "--top-k-corpus", other]):
        code, _, err = _run_cli(args, capsys)
        assert code == 1 and "different target tokenizers" in err and str(other) in err

    # an output id beyond the target vocabulary that t2d spans (64 ids): the tokenizer does not match
    path = run / "records.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["output_token_ids"] = [1, 2, 64]
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    code, _, err = _run_cli([run, "--draft-vocab", _vocab_file(tmp_path)], capsys)
    assert code == 1 and f"record {first['record_key']!r}" in err and "holds id 64" in err and "of 64 ids" in err

    # no ids at all (an older client)
    path.write_text("".join(json.dumps({**json.loads(line), "output_token_ids": None}) + "\n" for line in lines))
    code, _, err = _run_cli([run, "--top-k", "2"], capsys)
    assert code == 1 and "no request with output_token_ids" in err and "no_token_ids" in err


@pytest.mark.e2e
def test_the_installed_command(tmp_path, sd_run):
    run, records = sd_run
    result = subprocess.run([sys.executable, "-m", "speedbench", "vocab-coverage", str(run), "--draft-vocab",
                             str(_vocab_file(tmp_path)), "--top-k", "1"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    overall = _expected(records, lambda r: "all")["all"]
    assert f"{100 * overall:6.1f}%" in result.stdout


@pytest.mark.e2e
def test_a_real_client_run(tmp_path, models_dir, capsys):
    """Records written by the real `speedbench run` against the vLLM stand-in, whose id at output
    position p is (7p + 3) % 500 + 3 = 7p + 6 (p < 71): with 40 tokens a request, a vocabulary of the
    ids below 100 keeps positions 0..13, 14 of every 40 tokens."""
    from tests.standins.fixtures import run_cli, story_rows, write_dataset
    from tests.standins.standin import Simulation, StandinServer

    dataset = write_dataset(tmp_path / "speed-bench", story_rows(6))
    with StandinServer("vllm", Simulation(conditional_rates=[0.8, 0.5, 0.3], step_s=0.001)) as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "run", models_dir, "--max-tokens", "40",
                       "--ignore-eos", "--concurrency", "2") == 0
    (tmp_path / "vocab.json").write_text(json.dumps(list(range(100))))
    out = tmp_path / "out.json"
    assert _run_cli([tmp_path / "run", "--draft-vocab", tmp_path / "vocab.json", "--json", out], capsys)[0] == 0
    doc = json.loads(out.read_text())
    assert doc["ids_sources"] == {"engine": 6} and doc["tokens"] == 240
    assert doc["overall"] == pytest.approx(14 / 40)
    assert doc["by_category"] == pytest.approx({"qa": 14 / 40, "roleplay": 14 / 40, "writing": 14 / 40})
    assert doc["by_language"] == pytest.approx({"en": 14 / 40})  # the dataset folder named in the manifest
    [row] = doc["correlation"]
    assert row["num_categories"] == 3 and row["pearson"] is None  # coverage is the same in every category
