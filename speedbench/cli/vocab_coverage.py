"""``speedbench vocab-coverage``: the share of the target's output tokens inside a drafter's pruned
vocabulary, per category, sub-category and language (the paper's Appendix J, Table 10).

Tokens: every measured (non-warmup), successful request-turn of the given runs with
``output_token_ids``, each turn counted once per load point it ran at. Ids the client re-encoded
from text (``output_token_ids_source = "reencoded"``: the engine sent text only) are counted but
named in the output, since re-encoded ids need not be the ids the model produced. Languages come
from the dataset's ``language`` column (the folder named in each run's manifest, or ``--dataset``).
The math is :mod:`speedbench.metrics.vocab_coverage`; the file formats are
:mod:`speedbench.tokenization.draft_vocab`. AL per category comes from the core's record path
(:func:`speedbench.metrics.acceptance.from_records.record_acceptance`), the one the report uses.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from speedbench.options import add_arguments, option, positive_ints
from speedbench.records import RECORDS_NAME

GROUPS = (("by_category", "category"), ("by_subcategory", "subcategory"), ("by_language", "language"))
UNKNOWN_LANGUAGE = "unknown"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "vocab-coverage",
        help="share of output tokens inside a drafter's pruned vocabulary, per category and language",
        description=(
            "Read RUN_DIRs written by 'speedbench run' and report, per category, sub-category and language, the "
            "share of the target's output tokens inside a drafter's pruned vocabulary (--draft-vocab: an EAGLE-3 "
            ".safetensors with d2t and/or t2d, d2t winning when both are there, or a JSON list of target ids) "
            "and inside the K most frequent tokens of a corpus (--top-k). With speculative runs, coverage is "
            "correlated with the measured AL per category (Pearson and Spearman)."),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser, VocabCoverageOptions)
    parser.set_defaults(func=run)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


@dataclass(kw_only=True)
class VocabCoverageOptions:
    """``speedbench vocab-coverage``'s options, declared once (``speedbench.options``)."""

    run_dirs: list[Path] = option("run_dirs", parse=Path, nargs="+", metavar="RUN_DIR")
    draft_vocab: Path | None = option("--draft-vocab", default=None, parse=Path, metavar="FILE", help=(
        "the drafter's vocabulary: .safetensors (d2t / t2d) or .json (list of target ids)"))
    top_k: list[int] = option("--top-k", default_factory=list, parse=positive_ints, metavar="K[,K...]", help=(
        "simulate pruning to the K most frequent tokens of --top-k-corpus, e.g. 16000,32000,64000"))
    top_k_corpus: str | None = option("--top-k-corpus", default=None, metavar="RUN|COUNTS_FILE", help=(
        "corpus ranking the tokens for --top-k: a run folder, a JSON {id: count} or an 'id count' text file "
        "(none: the given runs themselves)"))
    target_vocab_size: int | None = option("--target-vocab-size", default=None, parse=_positive_int, help=(
        "target vocabulary size: ids at or above it are errors (none: t2d's length, if given)"))
    dataset: Path | None = option("--dataset", default=None, parse=Path, help=(
        "dataset folder for the language of each prompt (none: the folder in each run's manifest)"))
    json: Path | None = option("--json", default=None, parse=Path, metavar="OUT", help="write the tables as JSON")


@dataclass
class Outputs:
    """The output ids of the counted requests, concatenated, with each request's labels."""

    runs: list[str] = field(default_factory=list)  # per request: the run it came from
    categories: list[str] = field(default_factory=list)
    subcategories: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    chunks: list[np.ndarray] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def flat(self) -> np.ndarray:
        return np.concatenate(self.chunks) if self.chunks else np.zeros(0, np.int64)

    def labels(self, group: str, mask: np.ndarray | None = None) -> list[str]:
        values = {"category": self.categories, "subcategory": self.subcategories, "language": self.languages}[group]
        return values if mask is None else [v for v, keep in zip(values, mask) if keep]


def _languages(run, dataset: Path | None, notes: list[str]) -> dict[str, str]:
    """question_id -> language from the run's dataset config; empty, with a note, when the dataset is
    not at hand or has no ``language`` column (the published dataset and the reference's prepared
    layout have none: only folders ``speedbench build`` writes do)."""
    import pyarrow.parquet as pq

    from speedbench.fingerprint import config_parquet_files
    from speedbench.metrics.vocab_coverage import VocabInputError

    folder = dataset or Path(str(run.manifest.dataset_dir or ""))
    try:
        files = config_parquet_files(folder, run.dataset_config)
    except FileNotFoundError as error:
        if dataset is not None:  # asked for by name: a wrong --dataset is an error, not a quiet 'unknown'
            raise VocabInputError(f"--dataset {dataset}: {error}") from None
        notes.append(f"{run.path}: dataset {str(folder)!r} ({run.dataset_config}) not found: languages shown "
                     f"as {UNKNOWN_LANGUAGE!r} (pass --dataset)")
        return {}
    out: dict[str, str] = {}
    for path in files:
        try:
            handle = pq.ParquetFile(path)
            names = handle.schema_arrow.names
            if "language" not in names or "question_id" not in names:
                notes.append(f"{path}: no 'language' (or 'question_id') column: languages shown as "
                             f"{UNKNOWN_LANGUAGE!r}")
                continue
            table = handle.read(columns=["question_id", "language"])
        except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
            raise VocabInputError(f"{path}: not a readable parquet file ({error})") from None
        out.update(zip(table.column("question_id").to_pylist(), table.column("language").to_pylist()))
    return out


def _record_ids(record, where: str, target_vocab_size: int | None) -> np.ndarray:
    """The record's output ids as int64; anything but a flat list of token ids is refused, naming the record."""
    from speedbench.metrics.vocab_coverage import VocabInputError
    from speedbench.tokenization.draft_vocab import MAX_TOKEN_ID

    values = record.output_token_ids
    prefix = f"{where}: record {record.record_key!r}: output_token_ids"
    if not isinstance(values, list):
        raise VocabInputError(f"{prefix} is {type(values).__name__}, not a list of token ids")
    try:  # one numpy conversion; the per-item scan below runs only to name a bad item
        ids = np.asarray(values) if values else np.zeros(0, np.int64)
    except (ValueError, OverflowError):
        ids = None
    if ids is None or ids.ndim != 1 or ids.dtype.kind != "i":  # uint64: a value at or above 2^63
        bad = next((i for i, v in enumerate(values) if type(v) is not int or not -2**63 <= v < 2**63), 0)
        raise VocabInputError(f"{prefix}: item {bad} is {values[bad]!r:.40}, not an integer token id")
    ids = ids.astype(np.int64, copy=False)
    limit = target_vocab_size or MAX_TOKEN_ID  # bounds the count vector of an in-sample --top-k
    outside = np.flatnonzero((ids < 0) | (ids >= limit))
    if outside.size:
        bad = int(outside[0])
        raise VocabInputError(f"{prefix} holds id {int(ids[bad])} (item {bad}), outside the target vocabulary"
                              + (f" of {target_vocab_size} ids" if target_vocab_size else f" (not below {limit})"))
    return ids


def collect(runs, dataset: Path | None, target_vocab_size: int | None, languages: bool = True) -> Outputs:
    """The counted requests of ``runs``; ``languages=False`` (a --top-k corpus, counted only) skips the dataset."""
    out = Outputs()
    for run in runs:
        by_question = _languages(run, dataset, out.notes) if languages else {}
        for record in run.measured:
            if not record.ok or record.output_token_ids is None:
                reason = "failed" if not record.ok else "no_token_ids"
                out.skipped[reason] = out.skipped.get(reason, 0) + 1
                continue
            ids = _record_ids(record, str(Path(run.path) / RECORDS_NAME), target_vocab_size)
            source = record.output_token_ids_source or "unknown"
            out.sources[source] = out.sources.get(source, 0) + 1
            out.runs.append(str(run.path))
            out.categories.append(record.category)
            out.subcategories.append(f"{record.category}/{record.sub_category}")
            out.languages.append(str(by_question.get(record.question_id) or UNKNOWN_LANGUAGE))
            out.lengths.append(int(ids.size))
            out.chunks.append(ids)
    return out


def check_same_tokenizer(runs) -> None:
    """Ids of different tokenizers cannot be counted against one vocabulary: refuse a mix."""
    from speedbench.metrics.vocab_coverage import VocabInputError

    seen: dict[str, str] = {}
    for run in runs:
        digest = str(run.manifest.tokenizer_sha256 or "")
        if digest:
            seen.setdefault(digest, str(run.path))
    if len(seen) > 1:
        (a, first), (b, second) = list(seen.items())[:2]
        raise VocabInputError(f"{first} and {second} were measured with different target tokenizers "
                              f"(tokenizer_sha256 {a[:12]}... and {b[:12]}...): their ids are not one vocabulary")


def coverage_tables(outputs: Outputs, vocab: np.ndarray, mask: np.ndarray | None = None) -> dict:
    """``{"overall", "tokens", "by_category", "by_subcategory", "by_language", "tokens_by_..."}``."""
    from speedbench.metrics.vocab_coverage import group_coverage, in_vocab

    lengths = np.asarray(outputs.lengths, dtype=np.int64)
    flat = outputs.flat
    if mask is not None:
        flat = flat[np.repeat(mask, lengths)]
        lengths = lengths[mask]
    inside = in_vocab(flat, vocab)  # once per vocabulary, shared by every grouping
    overall = group_coverage(["all"] * len(lengths), lengths, inside)
    tables = {"overall": overall.share.get("all"), "tokens": overall.tokens.get("all", 0)}
    for key, group in GROUPS:
        figures = group_coverage(outputs.labels(group, mask), lengths, inside)
        tables[key] = figures.share
        tables[f"tokens_{key}"] = figures.tokens
    return tables


def corpus_counts(spec: str | None, runs, outputs: Outputs, target_vocab_size) -> tuple[np.ndarray, str]:
    from speedbench.metrics.vocab_coverage import token_counts
    from speedbench.report.runs import load_run
    from speedbench.tokenization.draft_vocab import read_token_counts

    if spec is None:
        return token_counts(outputs.flat), "the runs themselves (in-sample: the most optimistic pruning)"
    path = Path(spec)
    if path.is_dir():
        corpus = load_run(path)
        check_same_tokenizer([*runs, corpus])
        return token_counts(collect([corpus], None, target_vocab_size, languages=False).flat), f"run {path}"
    return read_token_counts(path), f"token counts {path}"


def _category_al(run) -> dict[str, float]:
    """AL per category of an SD run, through the core's record path (the report's numbers)."""
    from speedbench.analysis.selection import acceptance_records
    from speedbench.metrics.acceptance.from_records import record_acceptance

    records = acceptance_records(run)
    summary = record_acceptance(records, run.draft_length, num_resamples=0, untrimmed=False).primary
    if summary is None:
        return {}
    return {c: v["acceptance_length"] for c, v in summary.per_category.items()
            if v.get("acceptance_length") is not None and np.isfinite(v["acceptance_length"])}


def correlations(runs, outputs: Outputs, vocabs: dict[str, np.ndarray]) -> list[dict]:
    """Per SD run and vocabulary: coverage vs AL over the run's categories (Pearson and Spearman)."""
    from speedbench.metrics.vocab_coverage import pearson, spearman

    rows = []
    for run in (r for r in runs if r.speculative):
        al = _category_al(run)
        mask = np.asarray([p == str(run.path) for p in outputs.runs], dtype=bool)
        for name, vocab in vocabs.items():
            shares = coverage_tables(outputs, vocab, mask)["by_category"]
            cats = sorted(c for c in al if shares.get(c) is not None)
            x, y = [shares[c] for c in cats], [al[c] for c in cats]
            rows.append({"run": str(run.path), "vocabulary": name, "draft_length": run.draft_length,
                         "num_categories": len(cats), "pearson": pearson(x, y), "spearman": spearman(x, y),
                         "coverage": {c: shares[c] for c in cats}, "acceptance_length": {c: al[c] for c in cats}})
    return rows


def build(args: argparse.Namespace) -> dict:
    from speedbench.metrics.vocab_coverage import VocabInputError, top_k_vocab
    from speedbench.records import IDS_REENCODED
    from speedbench.report.runs import load_run
    from speedbench.tokenization.draft_vocab import read_draft_vocab

    runs = [load_run(path) for path in args.run_dirs]
    check_same_tokenizer(runs)
    draft = read_draft_vocab(args.draft_vocab, args.target_vocab_size) if args.draft_vocab else None
    size = args.target_vocab_size or (draft.target_vocab_size if draft else None)
    outputs = collect(runs, args.dataset, size)
    doc: dict = {"runs": [str(r.path) for r in runs], "num_requests": len(outputs.lengths),
                 "ids_sources": dict(sorted(outputs.sources.items())), "skipped": outputs.skipped,
                 "notes": list(outputs.notes)}
    if not outputs.lengths:
        raise VocabInputError(f"no request with output_token_ids in {', '.join(doc['runs'])} (skipped: "
                              f"{outputs.skipped or 'none'}); rerun with a client that keeps token ids")
    reencoded = outputs.sources.get(IDS_REENCODED, 0)
    if reencoded:
        doc["notes"].append(f"{reencoded} of {len(outputs.lengths)} requests have re-encoded ids (the engine sent text "
                            "only; the client encoded it with the target tokenizer): their coverage is approximate")
    vocabs: dict[str, np.ndarray] = {}
    if draft is not None:
        doc["draft_vocab"] = draft.to_dict()
        doc["notes"] += draft.notes
        doc.update(coverage_tables(outputs, draft.ids))
        vocabs["draft"] = draft.ids
    if args.top_k:
        counts, described = corpus_counts(args.top_k_corpus, runs, outputs, size)
        doc["top_k"] = {"corpus": described, "tables": {}}
        for k in args.top_k:
            vocab = top_k_vocab(counts, k)
            doc["top_k"]["tables"][str(k)] = {"vocab_size": int(vocab.size), **coverage_tables(outputs, vocab)}
            vocabs[f"top_{k}"] = vocab
    doc["correlation"] = correlations(runs, outputs, vocabs)
    return doc


def _fmt(share) -> str:
    return "      -" if share is None else f"{100 * share:6.1f}%"


def text_lines(doc: dict) -> list[str]:
    columns = (["draft"] if "draft_vocab" in doc else []) + [f"top {k}" for k in doc.get("top_k", {}).get("tables", {})]
    tables = ([doc] if "draft_vocab" in doc else []) + list(doc.get("top_k", {}).get("tables", {}).values())
    base = tables[0]
    lines = [f"output tokens: {base['tokens']} in {doc['num_requests']} requests; ids: "
             + ", ".join(f"{n} {s}" for s, n in doc["ids_sources"].items())]
    if "draft_vocab" in doc:
        v = doc["draft_vocab"]
        lines.append(f"draft vocabulary: {v['size']} ids from {v['source']} in {v['file']}")
    if "top_k" in doc:
        lines.append(f"top-k corpus: {doc['top_k']['corpus']}")
    lines.append(f"{'group':<34} {'tokens':>9} " + " ".join(f"{c:>10}" for c in columns))
    lines.append(f"{'overall':<34} {base['tokens']:>9} " + " ".join(f"{_fmt(t['overall']):>10}" for t in tables))
    for key, _ in GROUPS:
        lines.append(f"-- {key[3:]}")
        for name, tokens in base[f"tokens_{key}"].items():
            lines.append(f"{name[:34]:<34} {tokens:>9} " + " ".join(f"{_fmt(t[key].get(name)):>10}" for t in tables))
    for row in doc["correlation"]:
        r, rho = row["pearson"], row["spearman"]
        lines.append(f"coverage ({row['vocabulary']}) vs AL over {row['num_categories']} categories of {row['run']}: "
                     f"Pearson {'-' if r is None else f'{r:.3f}'}, Spearman {'-' if rho is None else f'{rho:.3f}'}")
    lines += [f"note: {note}" for note in doc["notes"]]
    return lines


def run(args: argparse.Namespace) -> int:
    from speedbench.metrics.vocab_coverage import VocabInputError
    from speedbench.report.runs import RunFolderError

    if args.draft_vocab is None and not args.top_k:
        print("speedbench vocab-coverage: give --draft-vocab FILE, --top-k K[,K...], or both", file=sys.stderr)
        return 2
    if args.top_k_corpus is not None and not args.top_k:
        print("speedbench vocab-coverage: --top-k-corpus ranks the tokens for --top-k: give --top-k K[,K...] too",
              file=sys.stderr)
        return 2
    try:
        doc = build(args)
    except (VocabInputError, RunFolderError) as error:
        print(f"speedbench vocab-coverage: {error}", file=sys.stderr)
        return 1
    for line in text_lines(doc):
        print(line)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0
