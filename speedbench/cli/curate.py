"""`speedbench curate`: choose a diverse split from your own prompts into a dataset folder."""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from speedbench.cli.build import BuildCommandOptions
from speedbench.options import add_arguments, option, reuse
from speedbench.settings import QualitativeOptions, SharedOptions

INDEXES = ["flat", "ivf", "hnsw", "ivfpq", "pqfs"]


@dataclass(kw_only=True)
class CurateCommandOptions:
    """``speedbench curate``'s options, declared once (``speedbench.options``); the selection and
    embedding options are the ones build takes (``QualitativeOptions``), listed in curate's order."""

    input: str = option("input", metavar="INPUT", help=(
        "a .jsonl / .parquet file, or a Hugging Face dataset (local folder or Hub id)"))
    text_field: str = option("--text-field", help="field holding the prompt: a string or a list of turns")
    group_by: str = option("--group-by", help="field whose values become the categories")
    per_group: int = option("--per-group", default=80, parse=int, help="prompts chosen per group")
    config: str = option("--config", help="config name to write (e.g. support_chats)")
    out: Path = option("--out", parse=Path, help="dataset folder (other configs in it are kept)")
    id_field: str | None = option("--id-field", default=None, help="field with a unique id per prompt (default: position)")
    sub_category_field: str | None = option("--sub-category-field", default=None,
                                            help="field for sub_category (default: the group)")
    language_field: str | None = option("--language-field", default=None, help="field for language")
    difficulty_field: str | None = option("--difficulty-field", default=None, help="field for difficulty")
    hf_config: str | None = option("--hf-config", default=None, help="Hugging Face input: the dataset config")
    split: str = option("--split", default="train", help="Hugging Face input: the split")
    source: str | None = option("--source", default=None, help="value of the 'source' column (default: the input's name)")
    license: str = option("--license", default="", help="value of the 'license' column")
    seed: int = reuse(BuildCommandOptions, "seed")  # as build: seed for every random choice
    selector: str = reuse(QualitativeOptions, "selector")
    index: str = option("--index", default="flat", choices=INDEXES, help=(
        "search index of the selection: flat = exact; the others are approximate (for very large groups)"))
    threads: int = option("--threads", default=1, parse=int, help="search threads")
    dedup_threshold: float = reuse(QualitativeOptions, "dedup_threshold")
    template_dedup: int = option("--template-dedup", default=80, parse=int, metavar="N", help=(
        "drop prompts that hold an earlier one whole plus at most N characters of template (a prefix, suffix, "
        "repeat marker; spacing and case ignored); 0 keeps them"))
    embedder: str = reuse(QualitativeOptions, "embedder")
    embedding_url: str | None = reuse(QualitativeOptions, "embedding_url")
    embedding_model: str | None = reuse(QualitativeOptions, "embedding_model")
    embedding_cache: Path | None = reuse(QualitativeOptions, "embedding_cache")
    ray: str | None = option("--ray", default=None, metavar="auto|ADDRESS|local", help=(
        "embed on a Ray cluster with Ray Data (extra 'ray'): 'auto' joins the cluster of this machine, "
        "ray://HOST:PORT a remote one, 'local' starts a private one"))
    ray_workers: int = option("--ray-workers", default=2, parse=int, help="with --ray: embedding actors (one model each)")
    no_progress: bool = reuse(SharedOptions, "no_progress")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "curate",
        help="curate a diverse split from your own prompts (JSONL, parquet or a Hugging Face dataset)",
        description=(
            "Group prompts by a column, embed them, drop near-duplicates and choose --per-group prompts "
            "per group for semantic diversity (Algorithm 1, as SPEED-Bench's Qualitative split), then write "
            "them as config --config of the dataset folder --out (same schema, card and diversity report as "
            "'speedbench build'); run it with 'speedbench run --dataset OUT --config NAME'."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser, CurateCommandOptions)
    parser.set_defaults(func=run)


def make_embedder(args: argparse.Namespace):
    from speedbench.dataset_builder.embeddings import get_embedder

    kwargs = {}
    if args.embedder == "openai":
        kwargs = {"base_url": args.embedding_url}
        if args.embedding_model:
            kwargs["model"] = args.embedding_model
    if getattr(args, "ray", None):
        try:
            from speedbench.dataset_builder.embeddings.ray_shard import RayEmbedder
            import ray  # noqa: F401
        except ImportError as error:
            raise RuntimeError("--ray needs the 'ray' extra: pip install 'speed-bench[ray]'") from error
        return RayEmbedder(args.embedder, address=args.ray, workers=args.ray_workers, **kwargs)
    return get_embedder(args.embedder, **kwargs)


def embed_prompts(prompts, args: argparse.Namespace):
    from speedbench.dataset_builder.embeddings import EmbeddingCache, embed_texts
    from speedbench.dataset_builder.qualitative.pools import embedding_text
    from speedbench.schema import DatasetRow

    embedder = make_embedder(args)
    # Embedded as the qualitative build embeds (long prompts cut to head and tail); the category is
    # neutral so that no category-specific rule applies to a user's group names.
    texts = [embedding_text(DatasetRow(category="curate", sub_category="", turns=list(p.turns), source="",
                                       src_id=str(p.row))) for p in prompts]
    cache = EmbeddingCache(args.embedding_cache)
    try:
        vectors, embedded = embed_texts(texts, embedder, cache, progress=not args.no_progress,
                                        description="embedding")
    finally:
        cache.close()
        if hasattr(embedder, "close"):
            embedder.close()
    return vectors, embedded, embedder.model_id


def run(args: argparse.Namespace) -> int:
    from speedbench.cli.build import summary
    from speedbench.dataset_builder.curate import CurateOptions, check_config_name, curate
    from speedbench.dataset_builder.curate_input import CurateInputError, InputSpec, check_group_sizes, read_prompts
    from speedbench.dataset_builder.writer import write_dataset

    spec = InputSpec(path=args.input, text_field=args.text_field, group_by=args.group_by, id_field=args.id_field,
                     sub_category_field=args.sub_category_field, language_field=args.language_field,
                     difficulty_field=args.difficulty_field, hf_config=args.hf_config, split=args.split)
    options = CurateOptions(name=args.config, per_group=args.per_group, seed=args.seed, selector=args.selector,
                            index=args.index, threads=args.threads, dedup_threshold=args.dedup_threshold,
                            template_extra=args.template_dedup, source=args.source or Path(args.input.rstrip("/")).stem, license=args.license)
    try:
        if args.per_group < 2:
            raise CurateInputError(f"--per-group {args.per_group}: choose at least 2 prompts per group")
        check_config_name(args.config)
        prompts = read_prompts(spec)
        check_group_sizes(spec, prompts, args.per_group)
        vectors, embedded, embedder_id = embed_prompts(prompts, args)
        built = curate(spec, prompts, vectors, options, args.out, embedder_id)
    except (CurateInputError, FileNotFoundError) as error:
        print(f"speedbench curate: {error}", file=sys.stderr)
        return 1
    except RuntimeError as error:   # the embedding endpoint failed after its retries
        print(f"speedbench curate: embedding failed: {error}", file=sys.stderr)
        return 1
    built.stats["texts_embedded_this_run"] = embedded
    write_dataset(args.out, [built], {"seed": args.seed, "command": "curate", "config": args.config,
                                      "sources": str(Path(args.input).resolve().parent),
                                      "options": {k: v for k, v in vars(args).items() if k != "func"}})
    print(summary(args.out, [built]))
    for group, g in built.stats["groups"].items():
        print(f"  {group}: removed before selection: {g['template_variants_removed']} template variant(s) "
              f"(another prompt plus a short template), {g['near_duplicates_removed']} near-duplicate(s) (cosine >= "
              f"{args.dedup_threshold})")
    print(f"embedded {embedded} of {len(prompts)} texts (the rest came from the cache)")
    return 0
