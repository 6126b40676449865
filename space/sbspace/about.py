"""Texts shown by the Space: title, introduction, About tab, submission guide, citation."""
from speedbench import CITATION as PAPER_CITATION
from speedbench.metrics.client_timing import MAX_CLIENT_LAGGED_SHARE

TITLE = "SPEED-Bench leaderboard"

INTRODUCTION = """
Speculative decoding measured the way it behaves in production: acceptance length (AL) per
domain on the **Qualitative** split and speedup under load on the **Throughput** split.
Every number on this board is recomputed from the raw per-request records of each submission.
"""

ABOUT = """
## What the columns mean

- **Model, Drafter, Method, Engine, Version, GPU, K, Temp.**: what was measured, as submitted:
  target model, draft model or head, SD method, serving engine and its version, accelerator,
  draft length K, sampling temperature.
- **Mean AL**: acceptance length, the tokens a verification step emits on average:
  `AL = 1 + sum_i prod_{j<=i} AR_j`, where `AR_i` is the conditional acceptance rate of draft
  position *i*. Step-weighted (all steps of all requests pooled); the request-weighted mean
  (the published reference's convention) is in **AL (req.)**. The **95% CI** is a seeded
  bootstrap over requests, stratified by category.
- **Per-category AL** (coding ... writing): the same, on the 80 prompts of each Qualitative
  category. The first chunk is dropped when it is the lone prefill token and the last chunk
  of every stream is dropped (it is cut by `max_tokens` or EOS).
- **Speedup**: measured speedup at an input length and concurrency: output tokens/s of the SD
  run divided by that of the autoregressive baseline run at the same ISL and concurrency.
  Entries without a baseline run show no speedup. The Appendix-G estimate
  `S = t_ar * AL / t_sd` is kept with each entry.
- **Speedup ISL (best)** and **at concurrency**: the best measured speedup over the entry's
  load points at that input length, and the concurrency it was reached at; every load point is
  in Compare.
- **Client-lagged % (max)**: the largest share, over the entry's load points, of requests whose
  token chunks reached the client in one read, or in a burst faster than any engine decodes (a
  busy client or server frontend): their decode timing is the delivery's, not the engine's, so they are left out of that point's step latency, TPOT and user tokens/s (they
  still count in its tokens and output tokens/s). Floored to 0.1%; each point's share is in the
  Pareto tooltip. A bundle with more than %MAX_LAGGED% at any load point is refused (`client.lag`).
- **Trust**: `self-reported` until a maintainer reruns the entry independently and every figure agrees
  (`verified`). **Warnings**: plausibility checks that do not reject (greedy outputs that differ
  from the baseline, an AL above what the method usually reaches, a speedup above the AL ...).
- **Lossless (T=0)**: at temperature 0, speculative decoding must reproduce the baseline's
  tokens, so when an entry holds an SD run and a baseline run on the same prompts, their output
  token ids are compared request by request: the share identical, and how many differ (the first
  divergence of each is kept with the entry; warning `lossless.tokens_differ`). Batched GPU
  kernels are not bitwise deterministic (batch shape and multi-position verification change the
  reduction order, near-ties flip), so a small share of late divergences is expected: this is a
  flag, never a rejection. Empty when the entry has no baseline, no token ids, or T > 0.
- **AL thinking** / **AL answer**: for entries whose submission names the token ids that end the
  reasoning trace (`phase_boundary_ids`, e.g. Qwen3's `</think>`), the AL of the steps before
  and after that boundary, from the output token ids; the step that spans the boundary counts
  as thinking. Shown only when some entry has them.
- **Pareto curves** (Compare): output tokens/s (system throughput) against median user
  tokens/s (per-request speed), one point per concurrency.

## How a row is checked

A submission is a bundle of the run folders written by `speedbench run` plus
`submission.json` (model, drafter, method, engine, GPU, draft length, temperature). The Space
checks the bundle against a versioned schema, refuses anything but the run files, holds every
record to the same consistency rules as the measurement client (K, drafted and accepted tokens,
chunk sums, times, physical bounds), refuses a load point whose requests the client was too busy
to time (more than %MAX_LAGGED% client-lagged), checks that the dataset hash is a known SPEED-Bench build,
that every record is a row of it and that each run covers its config, refuses a measurement
already on the board however it is packed, then recomputes every metric with the
`speedbench.metrics` core. The submitter's own summary
(`results.json`) is kept but never used.

## How to reproduce a row

```bash
pip install -e '.[all]'      # in a checkout of the speed-bench repository
speedbench run --engine vllm --url http://127.0.0.1:8000 --tokenizer TOKENIZER_DIR \\
    --dataset speed-bench --config qualitative --out runs/qual
speedbench run ... --config throughput_8k --concurrency 1,4,16,64 --out runs/tp8k
speedbench run ... --config throughput_8k --concurrency 1,4,16,64 --out runs/tp8k-ar   # without SD
speedbench submit runs/qual runs/tp8k --baseline runs/tp8k-ar --space URL \\
    --model MODEL --drafter DRAFTER --method eagle3 --gpu H100 --draft-length 3 --temperature 0
```

`speedbench submit ... --dry-run` packs and checks the bundle and prints the figures the board
will show, without submitting. The raw bundle of every entry is kept in the Space's store, so
the whole board can be recomputed when the metrics change.
""".replace("%MAX_LAGGED%", f"{MAX_CLIENT_LAGGED_SHARE:.0%}")

PROMISES = """
## What the board promises

- **self-reported** (every entry at first): the board recomputed every number from the raw
  per-request records of the bundle, and the records passed every check above. It promises that
  they are internally consistent, cover the dataset build they claim, name the engine claimed,
  and are not a copy of an entry already on the board. The board reran nothing: it cannot
  promise the setup was measured as described.
- **verified**: a maintainer reran the setup independently and every stored figure was
  reproduced. Independent: not a measurement already on the board, no request copied from the
  entry's runs (the same token streams with every time within 0.01% of the entry's request: the
  submitter's folder, re-dated or with a few values nudged), made after the entry was submitted,
  on the claimed engine (and model, where the runs name it). The maintainer makes the rerun on
  hardware they control: the checks catch copies, not a forger who re-times every chunk. Every
  figure is compared, and one the rerun did not measure fails: AL (step- and request-weighted)
  overall and per category within max(0.1, 5%, the two 95% confidence half-widths together);
  output tokens/s and median user tokens/s at each load point (SD and baseline) and measured
  speedup at each load point within 20%. The entry keeps who verified, when, with which runs, and
  every check.
- **Bounds**: an upload is at most {archive_mb:g} MiB and unpacks to at most {unpacked_mb:g} MiB; at most
  {validations} validation(s) run at once, whatever sent them, reserving {memory_mb:g} MiB together by the
  size each upload declares; one upload may use {cpu_s:g} CPU seconds; Compare takes at most
  {compare} entries and reads each pair of them under the same limit and budgets. An upload over a bound is
  refused with a message naming it (`budget.*`); identical uploads sent at once each get an answer;
  every uploaded file (dropped mid-upload, never submitted, or left by a restart) is deleted once it
  is {upload_age:g} s old and no submission is using it; a request body must arrive within
  {body_s:g} s and at most {connections} requests are served at once (more are answered 503); a
  request body other than an upload (a search, a comparison) is at most {request_kb:g} KiB (more is
  answered 413); a
  connection that has not sent its request head within {header_s:g} s is closed, and past
  {open_connections} open connections the ones waiting longest for a request are closed; one
  submitter (your Hugging Face login, else your address) may send {per_hour} uploads an hour; a
  search is cut to {search_chars} characters.
- **Durability**: the board's store of record is a Hub dataset: each accepted entry (bundle,
  entry document with its date and trust level, verification) is one commit there, retried from
  a local queue until it lands. Until then the entry lives on the Space's disk; a note above the
  board says when the Hub copy is behind. A restarted Space restores every entry from the Hub
  with its original date, re-validating each bundle; trust is never taken from the Hub's copy:
  a restored entry is verified only when the verification's own runs, stored with it in the Hub
  dataset, pass every check of a verification again here; otherwise it is self-reported (with a
  note saying why) until a maintainer verifies it again. An entry filed under an id of an older
  digest version gets the id of its measurement (noted). Files there that fail any check are
  skipped and counted above the board.
"""


def promises(limits, budget, max_compare: int, guard=None, per_hour: int | None = None) -> str:
    """The About tab's promises, with the bounds this Space runs under (its settings)."""
    from sbspace.guard import GuardLimits

    from sbspace.populate import MAX_SEARCH_CHARS
    from speedbench.leaderboard.quota import uploads_per_hour

    guard = guard or GuardLimits()
    return PROMISES.format(archive_mb=limits.max_archive_bytes / 2**20, unpacked_mb=limits.max_total_bytes / 2**20,
                           validations=budget.max_concurrent, memory_mb=budget.memory_bytes / 2**20,
                           cpu_s=budget.cpu_seconds, compare=max_compare, upload_age=guard.upload_max_age_s,
                           body_s=guard.body_timeout_s, connections=guard.max_in_flight,
                           header_s=guard.header_timeout_s, open_connections=guard.max_open_connections,
                           request_kb=guard.max_body_bytes / 1024,
                           per_hour=uploads_per_hour() if per_hour is None else per_hour,
                           search_chars=MAX_SEARCH_CHARS)


SUBMIT_GUIDE = """
Upload a bundle (`.tar.gz` or `.zip`) written by `speedbench submit RUN_DIR ... --out bundle.tar.gz`,
or submit from the command line with `speedbench submit RUN_DIR --space URL`.
Bundles hold only JSON files; each is validated, every metric is recomputed from the raw
records, and the same bundle cannot be submitted twice.
"""

CITATION_LABEL = "Cite SPEED-Bench"
CITATION = PAPER_CITATION.strip()  # the one citation, also in the evaluate modules' cards
