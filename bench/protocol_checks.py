"""What we send and count on real servers (issue 20): multi-turn ids, client lag, balanced subsets.

Run under the engine lock (it starts a real vLLM): ``flock /work/coord/engine.lock
.venv/bin/python bench/protocol_checks.py [--dataset FOLDER] [--rows 34] [--max-tokens 32]``.
Prints three sections:

(a) multi-turn prompts, on the real vLLM (chat mode, stories260K with a chat template written for
    this bench) and the real llama.cpp (completion mode, no template): a `speedbench run` over
    3-turn rows at concurrency 4; for every later turn, the prompt we sent (its ``prompt_sha256``)
    against the server's own ``/tokenize`` of the whole conversation (the records' answers as
    text), and whether the client had to send an earlier answer as text whose tokens are not the
    engine's ids (``prompt_answers_mismatched``: a token crossing the answer's edge); a later turn
    failing either is a mismatch: mismatches per 100 later turns (target 0), beside how the
    earlier answers entered (spliced as the engine's ids / as text);
(b) one lite_qualitative run at concurrency 4 on vLLM, unloaded and then with the client's core under
    a CPU hog (two busy loops for the run's length): the client-lag share and chunks-sharing-a-read
    share each run reports, and each run's AL with its accepted and drafted counts (greedy: the same
    counts are expected);
(c) ``--limit 88`` of a built qualitative config: rows per category, round-robin (ours now) and
    what the first 88 rows were.

The configs come from ``--dataset`` (default: built in bench/output/protocol/speed-bench when
missing, from the real sources: qualitative with 24 prompts per category, as ``speedbench demo``'s
parent, and lite_qualitative, 8 per category of at most 600 o200k tokens, for (b)).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.standins
OUT = ROOT / "bench" / "output" / "protocol"
MODELS = Path(os.environ.get("SPEEDBENCH_MODELS", ROOT.parent / "shared" / "models" / "stories260K"))
SOURCES = Path(os.environ.get("SPEEDBENCH_SOURCES", ROOT.parent / "shared" / "sources"))
K = 3
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}USER: {{ m['content'] }}\n"
    "{% else %}ASSISTANT:{{ m['content'] }}{{ eos_token }}\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
FOLLOW_UPS = ["What happened next?", "How did it end?"]


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


def _run(engine: str, url: str, dataset: Path, config: str, out: Path, tokenizer: Path, *extra: str) -> dict:
    from tests.standins.fixtures import run_cli

    code = run_cli(engine, url, dataset, out, tokenizer, "--config", config, "--draft-length", str(K), *extra)
    if code != 0:
        raise SystemExit(f"speedbench run failed ({code}) for {out}")
    return json.loads((out / "results.json").read_text())


def _multiturn_dataset(rows: int) -> Path:
    from speedbench.schema import DatasetRow
    from tests.standins.fixtures import STORY_STARTS, write_dataset

    made = [DatasetRow(category="writing", sub_category="story", source="bench", src_id=str(i),
                       turns=[f"{STORY_STARTS[i % len(STORY_STARTS)]} number {i}", *FOLLOW_UPS]) for i in range(rows)]
    return write_dataset(OUT / "multiturn", made, config="multiturn")


def _later_turn_mismatches(out: Path, dataset: Path, tokenize) -> tuple[int, int, Counter]:
    """(mismatches, later turns, answers by how they entered): each later turn's prompt hash against the
    server's whole-conversation ids, and the client's own count of answers it could not carry as ids."""
    from speedbench.client.data.workload import load_conversations, prompt_sha256
    from tests.standins.fixtures import read_jsonl

    turns = {c.question_id: c.turns for c in load_conversations(dataset, "multiturn")}
    by_row: dict[str, dict[int, dict]] = {}
    for record in read_jsonl(out / "records.jsonl"):
        if not record["warmup"] and record["error"] is None:
            by_row.setdefault(record["question_id"], {})[record["turn_index"]] = record
    mismatches = later = 0
    answers: Counter = Counter()
    for qid, records in by_row.items():
        messages = []
        for index in sorted(records):
            messages.append({"role": "user", "content": turns[qid][index]})
            if index:
                record = records[index]
                later += 1
                for name in ("spliced", "as_text", "mismatched"):
                    answers[name] += record.get(f"prompt_answers_{name}") or 0
                mismatches += (record["prompt_sha256"] != prompt_sha256(tokenize(messages))
                               or bool(record.get("prompt_answers_mismatched")))
            messages.append({"role": "assistant", "content": records[index]["output_text"]})
    return mismatches, later, answers


def _print_mismatches(label: str, bad: int, later: int, answers: Counter) -> None:
    print(f"(a) {label}: {bad} mismatches in {later} later turns = {100 * bad / later:.2f} per 100 later turns; "
          f"earlier answers spliced as the engine's ids {answers['spliced']}, as text {answers['as_text']} "
          f"(not the engine's ids: {answers['mismatched']})")


def _hog(count: int = 2) -> list[subprocess.Popen]:
    code = "import time\nend = time.time() + 900\nwhile time.time() < end: pass"  # bounded: stops by itself
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]


def _acceptance(results: dict) -> dict:
    point = results["points"][0]
    engine = point["acceptance"]["engine"]
    return {"AL": engine["acceptance_length"], "accepted": engine["num_accepted_tokens"],
            "drafted": engine["num_draft_tokens"], "lagged": point["client_timing"]["client_lagged_share"],
            "shared": point["client_timing"]["chunks_sharing_a_read_share"]}


def section_vllm(args, dataset: Path, config: str, multiturn: Path) -> None:
    from speedbench.engine import EngineConfig, LocalEngine
    from speedbench.engine.hf_llama import convert

    work = OUT / "vllm"
    target = convert(MODELS / "stories260K.bin", MODELS, work / "stories-templated")
    tok_config = json.loads((target / "tokenizer_config.json").read_text())
    (target / "tokenizer_config.json").write_text(json.dumps({**tok_config, "chat_template": TEMPLATE}))
    draft = convert(MODELS / "stories260K.bin", MODELS, work / "stories-draft-q4", draft_q4_0=True)
    engine_config = EngineConfig(engine="vllm", target=str(target), draft=str(draft), speculation="draft",
                                 draft_length=K, n_parallel=4, work_dir=str(work / "engine"))
    with LocalEngine(engine_config, log_path=work / "server.log") as engine:
        run = _fresh(work / "multiturn-run")
        _run("vllm", engine.url, multiturn, "multiturn", run, target, "--concurrency", "4",
             "--max-tokens", str(args.max_tokens), "--model", "stories-templated")
        tokenize = lambda messages: _post(engine.url + "/tokenize", {  # noqa: E731
            "model": "stories-templated", "messages": messages, "add_generation_prompt": True})["tokens"]
        _print_mismatches("vLLM 0.32 (chat, template)", *_later_turn_mismatches(run, multiturn, tokenize))
        runs = {}
        for label, hogs in (("unloaded", 0), ("CPU hog", 2)):
            processes = _hog(hogs) if hogs else []
            try:
                results = _run("vllm", engine.url, dataset, config, _fresh(work / f"c4-{hogs}"), MODELS,
                               "--concurrency", "4", "--max-tokens", "64",
                               "--prompt-mode", "completion", "--model", "stories-templated")
            finally:
                for process in processes:
                    process.kill()
            runs[label] = _acceptance(results)
        print(f"(b) vLLM, {config} (completion mode), concurrency 4, 64 tokens:")
        for label, figures in runs.items():
            print(f"    {label:9s}: client-lagged share {figures['lagged']:.3f}, chunks sharing a read "
                  f"{figures['shared']:.3f}; AL {figures['AL']:.6f} ({figures['accepted']} accepted of "
                  f"{figures['drafted']} drafted)")
        same = runs["unloaded"]["accepted"] == runs["CPU hog"]["accepted"] and \
            runs["unloaded"]["drafted"] == runs["CPU hog"]["drafted"]
        print(f"    identical counts: {same}")


def section_llamacpp(args, multiturn: Path) -> None:
    from speedbench.engine import EngineConfig, LocalEngine

    work = OUT / "llamacpp"
    with LocalEngine(EngineConfig(engine="llamacpp", speculation="draft", draft_length=K, n_parallel=4),
                     log_path=_fresh(work) / "server.log") as engine:
        run = work / "multiturn-run"
        _run("llamacpp", engine.url, multiturn, "multiturn", run, MODELS, "--concurrency", "4",
             "--max-tokens", str(args.max_tokens), "--prompt-mode", "completion")
        tokenize = lambda messages: _post(engine.url + "/tokenize", {  # noqa: E731
            "content": "\n\n".join(m["content"] for m in messages), "add_special": True})["tokens"]
        _print_mismatches("llama.cpp (completion)", *_later_turn_mismatches(run, multiturn, tokenize))


def _fresh(folder: Path) -> Path:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def section_subsets(dataset: Path, config: str) -> None:
    from speedbench.client.data.workload import load_conversations

    rows = load_conversations(dataset, config)
    limited = load_conversations(dataset, config, limit=88)
    print(f"(c) --limit 88 of {config} ({len(rows)} rows, {len(set(r.category for r in rows))} categories):")
    print(f"    round-robin (ours): {dict(sorted(Counter(r.category for r in limited).items()))}")
    print(f"    first 88 rows (before): {dict(sorted(Counter(r.category for r in rows[:88]).items()))}")


def _dataset(args) -> Path:
    """A folder with a built qualitative config and its lite config (built here when missing, from the
    real sources: 24 prompts per category from a seeded pool of 48, as ``speedbench demo``'s parent)."""
    if args.dataset:
        return args.dataset
    from speedbench.dataset_builder.registry import BuildContext, available_configs
    from speedbench.dataset_builder.writer import data_file, write_dataset

    folder = OUT / "speed-bench"
    options = {"per_category": 24, "allow_short": True, "selector": "greedy_swap", "embedder": "use",
               "pool_cap": 48, "dedup_threshold": 0.95, "online": False, "specbench_compare_cap": 8,
               "lite_per_category": 8, "lite_max_prompt_tokens": 600}
    for name in ("qualitative", "lite_qualitative"):
        if not data_file(folder, name).exists():
            ctx = BuildContext(sources=SOURCES, out_dir=folder, seed=0, options=dict(options, config=name),
                               progress=False)
            write_dataset(folder, [available_configs()[name](ctx)], {"seed": 0, "options": options,
                                                                     "command": "bench/protocol_checks.py"})
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, help="a folder with built qualitative and lite_qualitative configs")
    parser.add_argument("--rows", type=int, default=34, help="3-turn rows for (a): 2 later turns each")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--skip-llamacpp", action="store_true")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    dataset = _dataset(args)
    multiturn = _multiturn_dataset(args.rows)
    section_subsets(dataset, "qualitative")
    section_vllm(args, dataset, "lite_qualitative", multiturn)
    if not args.skip_llamacpp:
        section_llamacpp(args, multiturn)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
