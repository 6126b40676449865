"""Published nvidia/SPEED-Bench placeholder rows resolve to the text the reference resolver builds.

Each fixture row is written here in the published format (v1.0 ``src_id`` and, for the Throughput
sources, a v1.1-style one with the id inside a longer string). The expected text comes from a
separate implementation of the reference's logic in this file (its sampling with pandas'
``DataFrame.sample``, ``random.seed(42)`` shuffles, ``datasets``-loaded CoSER scenes, the padding
loop, the option letters), never from the code under test. The instruction strings are the
reference's (``examples/specdec_bench`` at a2fbac7); they are pinned by digest so neither side can
drift. Sources the mirror lacks are served by in-memory stand-ins of the Hub datasets.
"""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from speedbench.cli import main as cli_main
from speedbench.dataset_builder.published import SourceTables
from speedbench.dataset_builder.published import formats as F
from speedbench.dataset_builder.redistribution import resolve_rows, rows_from_table
from speedbench.schema import PLACEHOLDER_PREFIX as PH
from speedbench.tokenization.o200k import o200k

DIGESTS = {  # sha256 (first 16 hex) of the reference's strings
    "STACKSELECT_HEAD": "303cdbd5911dd8de", "STACKSELECT_TAIL": "540abbf0e24561f6",
    "TEXTSORT_ORIGINAL": "e767a48bbe452c3e", "TEXTSORT_REPLACEMENT": "983da4b132b72295",
    "DIALOGUE_HEAD": "0c103c0fe69d13af", "HLE_HEAD": "d54c76c9abbf3589", "CHATRAG": "7c63f03cf51598fe",
    "MMLU_PRO_HEAD": "901c021a4a4f2851", "COSER": "778fcb593f39b0b3", "PAD": "b5ddda3c8249f1ee",
}
PUBLISHED = pa.schema([
    ("question_id", pa.string()), ("category", pa.string()), ("sub_category", pa.string()),
    ("turns", pa.list_(pa.string())), ("source", pa.string()), ("src_id", pa.string()),
    ("difficulty", pa.string()), ("multiturn", pa.bool_())])
BAMBOO = "https://huggingface.co/datasets/RUCAIBox/BAMBOO/resolve/main/showspred_4k.jsonl"
STACK = "https://huggingface.co/datasets/AdaLEval/stackselect/resolve/main/stackselect_1k.json"
MTB = "https://huggingface.co/datasets/mtbench101/mt-bench-101/raw/main/mtbench101.jsonl"
COSER_SRC = "https://github.com/Neph0s/CoSER/tree/main/data"
ROLES_SRC = "https://huggingface.co/datasets/ZenMoore/RoleBench/tree/a57ed54/rolebench-eng"
ENC = o200k()


def test_reference_strings_are_unchanged():
    for name, digest in DIGESTS.items():
        assert hashlib.sha256(getattr(F, name).encode()).hexdigest()[:16] == digest, name


def row(qid, source, src_id, turns=None, sub="x", category="c") -> dict:
    return {"question_id": qid, "category": category, "sub_category": sub, "turns": turns or [PH], "source": source,
            "src_id": src_id, "difficulty": "", "multiturn": bool(turns and len(turns) > 1)}


def resolve(rows, sources, config, online=False, **hub):
    tables = SourceTables(sources, online=online, **hub)
    out, report = resolve_rows(rows_from_table(pa.Table.from_pylist(rows, schema=PUBLISHED)), sources, config,
                               online=online, tables=tables)
    return {r.question_id: r.turns for r in out}, report


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ---- the reference's logic, written independently ------------------------------------------
def ref_fit(prompt: str, n: int) -> str:
    ids = ENC.encode(prompt, disallowed_special=())
    if len(ids) > n:
        return ENC.decode(ids[:n])
    if len(ids) < n:
        unit = len(ENC.encode("Answer now please.\n", disallowed_special=()))
        times = (n - len(ids) + unit - 1) // unit
        return ENC.decode(ENC.encode(prompt + "Answer now please.\n" * times, disallowed_special=())[:n])
    return prompt


def ref_bamboo(contents, n):
    body = "\n\n".join(f"START CONTENT {i + 1}\n\n{c}\n\nEND CONTENT" for i, c in enumerate(contents))
    return ref_fit(F.DIALOGUE_HEAD + body + "\n", n)


def ref_stackselect(question, answers, right, n):
    random.seed(42)
    prompt = F.STACKSELECT_HEAD + "The question is given below.\n" + question + "\n\n" + "Possible answers are given below.\n"
    count = lambda text: len(ENC.encode(text, disallowed_special=()))  # noqa: E731
    r = int(right.strip("A")) - 1
    total = count(prompt) + count(F.STACKSELECT_TAIL) + count(right + ":\n\n" + answers[r] + "\n\n")
    stop = 0
    for i, answer in enumerate(answers):
        if i != r:
            if total + count(f"A{i + 1}:\n\n{answer}\n\n") > n:
                break
            stop = i
    chosen = answers[:stop + 1] if stop >= r else [answers[r]] + answers[:stop + 1]
    random.shuffle(chosen)
    for i, answer in enumerate(chosen):
        prompt += f"A{i + 1}:\n\n{answer}\n\n"
    return ref_fit(prompt + F.STACKSELECT_TAIL, n)


def ref_hle(example, train: pd.DataFrame, n, rng):
    prompt = F.HLE_HEAD.format(category=example["category"])
    tokens = ENC.encode(prompt)
    question = ENC.encode(example["question"])
    current = len(tokens) + len(question)
    same = train[train["category"] == example["category"]]
    while current < n:
        pick = same.sample(1, random_state=rng)
        tokens += list(pick["tokens"].iloc[0])
        current += len(pick["tokens"].iloc[0])
    return ENC.decode(tokens[:n - len(question) + 1] + question)


def ref_mmlu(rows, subject):
    def block(q, options):
        return "Question: " + q + "\n\nOptions: " + "\n".join(f"({'ABCDEFGHIJ'[i]}) {o}" for i, o in enumerate(options)) + "\n\n"
    return [F.MMLU_PRO_HEAD.format(subject=subject) + block(*rows[0])] + [block(*r) for r in rows[1:]]


def ref_coser(scene):
    character = np.random.default_rng(seed=12347).choice(scene["major_characters"])
    motivation = "No motivation provided"
    for key in scene["key_characters"]:
        if key["name"] == character:
            motivation = key.get("motivation", key.get("thought"))
            break
    others = [f"{name}: {p}" for name, p in scene["character_profiles"].items() if name != character and p is not None]
    return F.COSER.format(character=character, character_profile=scene["character_profiles"][character],
                          book_name=scene["book"], scenario=scene["scenario"],
                          other_character_profiles_str="\n\n".join(others), motivation=motivation)


# ---- offline, from the mirror -----------------------------------------------------------------
def test_throughput_sources_both_src_id_versions(sources_dir):
    rows = [row("b0", BAMBOO, "bamboo_3_17"), row("b1", BAMBOO, "v1.1 rows_3_17 tokens"),
            row("s0", STACK, "38560748"), row("s1", STACK, "stackselect_1k/38560748/answers")]
    bamboo = jsonl(sources_dir / "bamboo" / "showspred_4k.jsonl")
    stack = {q["question_id"]: q for q in json.loads((sources_dir / "adaleval" / "stackselect_1k.json").read_text())}
    for config, n in (("throughput_1k", 1000), ("throughput_8k", 8000)):
        turns, report = resolve(rows, sources_dir, config)
        assert report.unresolved == [] and report.differs == 0
        expected_bamboo = ref_bamboo([bamboo[3]["content"], bamboo[17]["content"]], n)
        q = stack["38560748"]
        expected_stack = ref_stackselect(q["question"], q["all_answers"], q["answer"], n)
        assert turns["b0"] == turns["b1"] == [expected_bamboo]
        assert turns["s0"] == turns["s1"] == [expected_stack]
        assert len(ENC.encode(expected_bamboo, disallowed_special=())) == n


def test_qualitative_sources_from_the_mirror(sources_dir):
    dialogues = jsonl(sources_dir / "mtbench101" / "mtbench101.jsonl")
    mmlu = pq.read_table(sources_dir / "mmlu_pro" / "test-00000-of-00001.parquet").to_pylist()
    problems = {p["question_id"]: p for p in jsonl(sources_dir / "livecodebench" / "problems.jsonl")}
    qwen = {p["question_id"]: p for p in jsonl(sources_dir / "livecodebench" / "livecodebench_v5.jsonl")}
    only_qwen = next(q for q in sorted(qwen) if q not in problems and "starter code" in qwen[q]["prompt"])
    hle = {h["id"]: h for h in jsonl(sources_dir / "benchfortir" / "hle" / "top.json")}
    lcb_template = PH + "\n\nSolve:\n{question}\n\nStarter:\n{starter_code}"
    rows = [row("m0", MTB, "mtbench101_GR_5"), row("m1", MTB, "x_1000"),
            row("p0", "TIGER-Lab/MMLU-Pro", "range(70, 73)", [PH] * 3, sub="math"),
            row("l0", "livecodebench/code_generation_lite", "abc387_b", [lcb_template]),
            row("l1", "livecodebench/code_generation_lite", only_qwen, [lcb_template]),
            row("h0", "cais/hle", "668825f80a642802bdfeadfa")]
    turns, report = resolve(rows, sources_dir, "qualitative")
    assert report.unresolved == [] and report.differs == 0
    assert turns["m0"] == [t["user"] for t in dialogues[5]["history"]]
    assert turns["m1"] == [t["user"] for t in dialogues[1000]["history"]]
    assert turns["p0"] == ref_mmlu([(r["question"], r["options"]) for r in mmlu[70:73]], "math")
    p = problems["abc387_b"]
    assert turns["l0"] == [f"Solve:\n{p['question_content']}\n\nStarter:\n{p['starter_code']}"]
    starter = qwen[only_qwen]["prompt"].split("```python\n", 1)[1].split("\n```", 1)[0]
    assert turns["l1"][0].endswith(f"\n\nStarter:\n{starter}") and starter.strip()
    assert turns["h0"] == [hle["668825f80a642802bdfeadfa"]["question"]]


def test_coser_scenes_as_datasets_loads_them(sources_dir):
    from datasets import load_dataset

    scenes = load_dataset("json", data_files={"test": str(sources_dir / "coser" / "test_set.json")}, split="test",
                          cache_dir=None, keep_in_memory=True)
    rows = [row("c21", COSER_SRC, "coser_21"), row("c0", COSER_SRC, "coser_0_Mr Bennet")]
    turns, report = resolve(rows, sources_dir, "qualitative")
    assert turns["c21"] == [ref_coser(scenes[21])] and turns["c0"] == [ref_coser(scenes[0])]
    # Scene 21's character has no key-character entry (exact); scene 0's reads the renamed field.
    assert report.per_source["Neph0s/CoSER"] == {"exact": 1, "differs": 1, "unresolved": 0}
    assert [r["question_id"] for r in report.rows] == ["c0"] and "thought" in report.rows[0]["reason"]


def test_rolebench_offline_marks_the_missing_profiles_and_online_is_exact(sources_dir, tmp_path):
    questions = jsonl(sources_dir / "rolebench" / "eng_instruction-generalization_role_specific_test.jsonl")
    template = PH + "\n\nYou are {role_name}. Your description: {role_description_and_catchphrases}"
    rows = [row("r0", ROLES_SRC, "rolebench_instruction-generalization_0_1_2", [template, PH, PH])]
    role = questions[0]["role"]
    turns, report = resolve(rows, sources_dir, "qualitative")
    assert report.differs == 1 and "desc.json" in report.rows[0]["reason"]
    profiles = tmp_path / "desc.json"
    profiles.write_text(json.dumps({role: "A gentle giant."}))
    turns, report = resolve(rows, sources_dir, "qualitative", online=True,
                            load_hub_file=lambda repo, path, revision: profiles)
    expected = [f"You are {role}. Your description: A gentle giant.\n" + questions[0]["question"]]
    expected += [q["question"].removeprefix(f"{role}, ").removeprefix(f" {role},") for q in questions[1:3]]
    assert report.differs == 0 and turns["r0"] == expected


# ---- online: sources the mirror lacks, from stand-ins of the Hub datasets --------------------
def test_hle_throughput_replays_the_reference_sampler_online(sources_dir):
    from datasets import Dataset

    items = jsonl(sources_dir / "benchfortir" / "hle" / "top.json")
    full = Dataset.from_list([{"id": h["id"], "question": h["question"], "rationale": h["rationale"],
                               "category": h["category"], "image": ""} for h in items])
    split = full.train_test_split(test_size=0.5, shuffle=True, seed=42)
    train = split["train"].to_pandas()
    train["tokens"] = train.apply(lambda e: ENC.encode("Question: " + e["question"] + "\n\nAnswer: " + e["rationale"]
                                                       + "\n\n", disallowed_special=()), axis=1)
    test = split["test"].to_pandas()
    ids = list(test["id"][:5])
    rng = np.random.default_rng(42)
    expected = [ref_hle(test[test["id"] == i].iloc[0], train, 2000, rng) for i in ids]
    rows = [row(f"h{k}", "cais/hle", i if k % 2 else f"hle_test_{i}_v1.1") for k, i in enumerate(ids)]
    turns, report = resolve(rows, sources_dir, "throughput_2k", online=True, load_hub=lambda repo, **kw: full)
    assert report.differs == 0 and [turns[f"h{k}"][0] for k in range(5)] == expected
    offline, report = resolve(rows, sources_dir, "throughput_2k")
    assert report.per_source["cais/hle"]["differs"] == 5 and "--online" in report.rows[0]["reason"]


def test_hub_only_sources_need_online_and_then_match(sources_dir):
    from datasets import Dataset

    hub = {
        "abisee/cnn_dailymail": Dataset.from_list([{"id": "abc123", "article": "The article text."}]),
        "Helsinki-NLP/opus-100": Dataset.from_list([{"translation": {"de": "Hallo Welt", "en": "Hello world"}}] * 3),
        "nvidia/ChatRAG-Bench": Dataset.from_list([{"ctxs": [{"text": "ctx one"}, {"text": "ctx two"}],
                                                    "messages": [{"role": "user", "content": "first?"},
                                                                 {"role": "assistant", "content": "a"},
                                                                 {"role": "user", "content": "second?"}]}]),
        "deepmind/code_contests": Dataset.from_list([{"name": "1575_A. Another Sorting Problem",
                                                      "description": "Verbatim statement."}]),
        "json": Dataset.from_list([{"prompt": "Intro" + F.TEXTSORT_ORIGINAL + "Before: a\nPart 1: b"}] * 2),
    }
    rows = [row("n0", "abisee/cnn_dailymail", "abc123", [PH + "\n\nSummarize:\n{article}"]),
            row("o0", "Helsinki-NLP/opus-100", "opus_de-en_2", [PH + "\n\nTranslate to English: {question[de]}"]),
            row("g0", "nvidia/ChatRAG-Bench", "chatrag_1", [PH, PH]),
            row("k0", "deepmind/code_contests", "1575_A. Another Sorting Problem", [PH + "\n\n{question}"])]
    _, report = resolve(rows, sources_dir, "qualitative")
    assert {q for q, _ in report.unresolved} == {"n0", "o0", "g0"} and report.differs == 1   # CodeT stand-in
    load = lambda repo, **kw: hub[repo]  # noqa: E731  (ChatRAG: hybridial + sqa, one row each)
    turns, report = resolve(rows, sources_dir, "qualitative", online=True, load_hub=load)
    assert report.unresolved == [] and report.differs == 0
    assert turns["n0"] == ["Summarize:\nThe article text."]
    assert turns["o0"] == ["Translate to English: Hallo Welt"]
    assert turns["g0"] == [F.CHATRAG.format(context="ctx one\n\nctx two", question="first?"), "second?"]
    assert turns["k0"] == ["Verbatim statement."]
    sort_rows = [row("t0", "https://huggingface.co/datasets/AdaLEval/textsort/raw/main/textsort_2k.json", "textsort_1")]
    turns, _ = resolve(sort_rows, sources_dir, "throughput_1k", online=True, load_hub=load)
    assert turns["t0"] == [ref_fit("Intro" + F.TEXTSORT_REPLACEMENT + "Before: a\nPart 1: b", 1000)]


# ---- the command: refuse, write, and what `speedbench run` does with the result --------------
def published_folder(root: Path, rows: list[dict]) -> Path:
    path = root / "data" / "qualitative" / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=PUBLISHED), path)
    return root


def test_resolve_folder_then_run_it_and_refuse_one_placeholder(sources_dir, models_dir, tmp_path, capsys):
    from tests.standins.standin import Simulation, StandinServer

    rows = [row("a" * 32, MTB, "mtbench101_GR_5", category="reasoning"),
            row("b" * 32, "https://x/CoSER/raw", "x_1", category="roleplay"),   # not a Neph0s/CoSER source
            {**row("c" * 32, "inline", "7", category="writing"), "turns": ["Write a haiku about the sea."]}]
    folder = published_folder(tmp_path / "published", rows)
    out = tmp_path / "resolved"
    assert cli_main(["resolve", str(folder), "--out", str(out), "--sources", str(sources_dir)]) == 1
    assert not out.exists()                                         # refused: nothing written
    code = cli_main(["run", "--engine", "vllm", "--url", "http://127.0.0.1:9", "--tokenizer", str(models_dir),
                     "--dataset", str(folder), "--config", "qualitative", "--out", str(tmp_path / "refused")])
    assert code == 2 and not (tmp_path / "refused" / "records.jsonl").exists()
    good = published_folder(tmp_path / "published2", [rows[0], rows[2]])
    assert cli_main(["resolve", str(good), "--out", str(out), "--sources", str(sources_dir)]) == 0
    manifest = json.loads((out / "resolve_manifest.json").read_text())
    entry = manifest["files"]["data/qualitative/test-00000-of-00001.parquet"]
    assert entry["per_source"] == {"mtbench101/mt-bench-101": {"exact": 1, "differs": 0, "unresolved": 0}}
    with StandinServer("vllm", Simulation(conditional_rates=[0.8, 0.5])) as server:
        code = cli_main(["run", "--engine", "vllm", "--url", server.url, "--tokenizer", str(models_dir),
                         "--dataset", str(out), "--config", "qualitative", "--out", str(tmp_path / "run"),
                         "--no-progress", "--resamples", "50", "--max-tokens", "16", "--ignore-eos"])
    assert code == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert {r["question_id"] for r in records} == {"a" * 32, "c" * 32}
    # the resolved folder with ONE placeholder turn put back (the second turn of the dialogue): refused
    resolved = pq.read_table(out / "data" / "qualitative" / "test-00000-of-00001.parquet").to_pylist()
    dialogue = next(r for r in resolved if r["question_id"] == "a" * 32)
    assert len(dialogue["turns"]) > 1 and not any(t.startswith(PH) for r in resolved for t in r["turns"])
    dialogue["turns"][1] = PH
    one_left = published_folder(tmp_path / "one-left", resolved)
    capsys.readouterr()
    code = cli_main(["run", "--engine", "vllm", "--url", "http://127.0.0.1:9", "--tokenizer", str(models_dir),
                     "--dataset", str(one_left), "--config", "qualitative", "--out", str(tmp_path / "refused2")])
    message = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "refused2" / "records.jsonl").exists()
    assert "1 of 2 rows are unresolved placeholders" in message and f"question_id {'a' * 32!r}, turn 2" in message


@pytest.mark.parametrize("bad, message", [
    ({"turns": None}, "row 1 (question_id 'q1'): field 'turns' must be a non-empty list of non-empty strings"),
    ({"turns": [PH, None]}, "row 1 (question_id 'q1'): field 'turns' must be a non-empty list"),
    ({"question_id": "q0"}, "row 1 (question_id 'q0'): field 'question_id' is repeated"),
    ({"question_id": ""}, "row 1 (question_id ''): field 'question_id' is empty"),
])
def test_a_bad_row_is_named_and_nothing_written(sources_dir, tmp_path, bad, message):
    rows = [row("q0", MTB, "mtbench101_GR_5"), {**row("q1", MTB, "mtbench101_GR_6"), **bad}]
    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=PUBLISHED), path)
    with pytest.raises(SystemExit) as stopped:
        cli_main(["resolve", str(path), "--out", str(tmp_path / "out.parquet"), "--config", "qualitative",
                  "--sources", str(sources_dir)])
    assert str(stopped.value).startswith(f"speedbench resolve: {path} row 1 ") and message in str(stopped.value)
    assert not (tmp_path / "out.parquet").exists()
