"""Tokenization throughput of the exact-length fitting step (o200k_base, and a target tokenizer).

For each bucket length, fits prompts made of a fixed instruction and a long Gutenberg passage
(the real build's shape) with ``fit_to_length`` and reports prompt tokens produced per second.
Baseline, in the same process: one plain ``encode_ordinary`` pass over the same final prompts,
so ``cost in encode passes`` = baseline throughput / fit throughput (the fit encodes the body
prefix once and the whole prompt once or twice). Also times the fit-isl re-fit with the
stories260K tokenizer (templated count with the ``tokenizers`` library).
Usage: .venv/bin/python bench/tokenize_fit.py [--prompts 40]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAD = "Here is a passage from a novel.\n\n"
TAIL = "\n\n[The passage stops here.]\n\nContinue the novel from exactly where the passage stops.\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=40, help="prompts per bucket")
    parser.add_argument("--sources", type=Path,
                        default=Path(os.environ.get("SPEEDBENCH_SOURCES", REPO.parent / "shared" / "sources")))
    parser.add_argument("--models", type=Path,
                        default=Path(os.environ.get("SPEEDBENCH_MODELS", REPO.parent / "shared" / "models" / "stories260K")))
    args = parser.parse_args()

    from speedbench.dataset_builder.throughput.fit import encode_body, fit_to_length, o200k_codec
    from speedbench.dataset_builder.throughput.sources import gutenberg_books
    from speedbench.tokenization.o200k import o200k

    encoding = o200k()
    codec = o200k_codec()
    text = "\n\n".join(body for _, body in gutenberg_books(str(args.sources)))
    print(f"{os.cpu_count()} CPUs visible, shared with other work: timings may be contended")
    print(f"{'bucket':>7} {'prompts':>7} {'fit tok/s':>12} {'encode tok/s':>13} {'cost (encode passes)':>21} {'padded':>6}")
    for n_tokens in (1000, 2000, 8000, 16000, 32000):
        step = max(1, (len(text) - n_tokens * 8) // args.prompts)
        starts = [i * step for i in range(args.prompts)]
        t0 = time.perf_counter()
        fitted = []
        for start in starts:
            body = encode_body(codec, text[start:start + n_tokens * 8], n_tokens)
            fitted.append(fit_to_length(HEAD, body, TAIL, n_tokens, codec))
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for f in fitted:
            assert len(encoding.encode_ordinary(f.text)) == n_tokens
        encode_s = time.perf_counter() - t0
        total = n_tokens * len(fitted)
        print(f"{n_tokens:>7} {len(fitted):>7} {total / fit_s:>12,.0f} {total / encode_s:>13,.0f} "
              f"{encode_s and fit_s / encode_s:>21.2f} {sum(1 for f in fitted if f.padding_chars):>6}")

    if (args.models / "tokenizer.json").exists():
        from speedbench.dataset_builder.throughput.target_fit import target_codec
        from speedbench.tokenization.target import TargetTokenizer
        target = TargetTokenizer.from_folder(args.models)
        tcodec = target_codec(target)
        n_tokens, prompts = 8000, max(4, args.prompts // 4)
        t0 = time.perf_counter()
        for i in range(prompts):
            start = i * 50_000
            body = encode_body(tcodec, text[start:start + 60_000], n_tokens)
            fit_to_length(HEAD, body, TAIL, n_tokens, tcodec)
        seconds = time.perf_counter() - t0
        print(f"fit-isl (stories260K tokenizer, templated count), {prompts} x {n_tokens} tokens: "
              f"{n_tokens * prompts / seconds:,.0f} target tokens/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
