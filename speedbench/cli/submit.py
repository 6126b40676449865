"""``speedbench submit``: pack RUN_DIRs into a bundle and submit it to the leaderboard Space."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from dataclasses import dataclass

from speedbench.options import add_arguments, option, reuse
from speedbench.report.compute import ReportOptions
from speedbench.settings import SharedOptions
from speedbench.records import MANIFEST_NAME

API_NAME = "/submit_bundle"
META = "submission metadata (defaults from the first run's manifest where it has them)"


@dataclass(kw_only=True)
class SubmitOptions:
    """``speedbench submit``'s options, declared once (``speedbench.options``); --engine,
    --draft-length and the --phase-* options are declared by other commands and offered here as
    optional metadata (the manifest's value by default)."""

    run_dirs: list[Path] = option("run_dirs", parse=Path, nargs="+", metavar="RUN_DIR",
                                  help="run folder(s) with speculation")
    baseline: list[Path] = option("--baseline", default_factory=list, parse=Path, action="append", metavar="RUN_DIR",
                                  show_default=False, help=(
        "autoregressive baseline run at the same ISL and concurrencies (repeatable); enables measured speedups"))
    space: str | None = option("--space", default=None, metavar="URL",
                               help="leaderboard Space URL (e.g. http://127.0.0.1:7860 or owner/space)")
    out: Path | None = option("--out", default=None, parse=Path, metavar="FILE",
                              help="also write the bundle here (upload it in the UI)")
    dry_run: bool = option("--dry-run", default=False,
                           help="check the bundle and print the figures the board will show, submit nothing")
    model: str | None = option("--model", default=None, group=META, help="target model id (default: the server's model id)")
    model_family: str = option("--model-family", default="", group=META, show_default=False,
                               help="e.g. llama, qwen (default: derived from the model id)")
    drafter: str | None = option("--drafter", default=None, group=META,
                                 help="draft model or head, e.g. EAGLE3-LLaMA3.3-Instruct-70B")
    sd_method: str | None = option("--method", default=None, dest="sd_method", group=META,
                                   help="SD method: eagle3, mtp, ngram, draft_model, ...")
    engine: str | None = reuse(SharedOptions, "engine", default=None, choices=None, group=META, show_default=False,
                               help="vllm, sglang, trtllm, llamacpp or openai (default: the manifest's)")
    engine_version: str | None = option("--engine-version", default=None, group=META,
                                        help="default: the version the server reported")
    gpu: str | None = option("--gpu", default=None, group=META, help="accelerator, e.g. 'H100 SXM 80GB' or '8x B200'")
    draft_length: int | None = reuse(SharedOptions, "draft_length", group=META)
    temperature: float | None = option("--temperature", default=None, parse=float, group=META,
                                       help="sampling temperature (default: the run's option)")
    submitter: str = option("--submitter", default="", group=META, show_default=False, help="who submits (optional)")
    notes: str = option("--notes", default="", group=META, show_default=False, help="free text, plain (optional)")
    # declared by `speedbench report` (its phase overrides); here they go into the bundle's metadata
    phase_boundary_ids: str | None = reuse(ReportOptions, "phase_boundary_ids", group=META, help=(
        "token ids that end thinking, e.g. 151668 (Qwen3's </think>) or 1,2,3 (optional): the board then shows AL "
        "per phase, thinking and answer"))
    phase_prompt_state: str | None = reuse(ReportOptions, "phase_prompt_state", group=META, help=(
        "with --phase-boundary-ids: the generation prompt leaves thinking to the model (none), opens it (open) or "
        "closes it (closed)"))

def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "submit",
        help="pack run folders into a result bundle and submit it to the leaderboard",
        description=(
            "Pack the run folders written by 'speedbench run' (records.jsonl, manifest.json, results.json) "
            "with the submission metadata into a bundle (tar.gz of JSON files) and upload it to the "
            "leaderboard Space, which recomputes every metric from the raw records. Prints the accepted "
            "entry id, or the rejection reason and exits with status 1."),
        epilog=("Example: speedbench submit runs/qual runs/tp8k --baseline runs/tp8k-ar "
                "--space http://127.0.0.1:7860 --drafter EAGLE3 --method eagle3 --gpu H100 --draft-length 3"))
    add_arguments(parser, SubmitOptions, {META: parser.add_argument_group(META)})
    parser.set_defaults(func=run)


def _metadata(args) -> dict:
    """The submission metadata: the flags, else what the first run's manifest says (read by the one
    run-folder reader: a manifest it cannot read is a RunFolderError naming the file)."""
    from speedbench.analysis.run_folder import read_run_manifest

    manifest_path = args.run_dirs[0] / MANIFEST_NAME
    manifest = read_run_manifest(args.run_dirs[0]) if manifest_path.is_file() else None
    options = (manifest.options if manifest is not None and isinstance(manifest.options, dict) else None) or {}
    sampling = options.get("sampling") if isinstance(options.get("sampling"), dict) else {}
    values = {
        "model": args.model or (manifest.model_id if manifest else None),
        "drafter": args.drafter, "sd_method": args.sd_method,
        "engine": args.engine or (manifest.engine if manifest else None),
        "engine_version": args.engine_version or (manifest.engine_version if manifest else None),
        "gpu": args.gpu,
        "draft_length": args.draft_length if args.draft_length is not None else _run_draft_length(args.run_dirs[0]),
        "temperature": args.temperature if args.temperature is not None
        else sampling.get("temperature", options.get("temperature")),
        "model_family": args.model_family, "submitter": args.submitter, "notes": args.notes,
    }
    flags = {"model": "--model", "drafter": "--drafter", "sd_method": "--method", "engine": "--engine",
             "engine_version": "--engine-version", "gpu": "--gpu", "draft_length": "--draft-length",
             "temperature": "--temperature"}
    missing = [flag for key, flag in flags.items() if values[key] in (None, "")]
    if missing:
        raise SystemExit(f"speedbench submit: missing {', '.join(missing)} (not in {manifest_path} either)")
    values.update(_phase_metadata(args))
    return values


def _phase_metadata(args) -> dict:
    """The optional phase boundary (speedbench.leaderboard.phases); absent unless given."""
    from speedbench.tokenization.phase_boundary import PhaseBoundaryError, parse_boundary_ids

    if args.phase_boundary_ids is None:
        if args.phase_prompt_state:
            raise SystemExit("speedbench submit: --phase-prompt-state needs --phase-boundary-ids")
        return {}
    try:
        ids = list(parse_boundary_ids(args.phase_boundary_ids))
    except PhaseBoundaryError as error:
        raise SystemExit(f"speedbench submit: {error}") from None
    return {"phase_boundary_ids": ids, **({"phase_prompt_state": args.phase_prompt_state}
                                          if args.phase_prompt_state else {})}


def _run_draft_length(run_dir: Path) -> int | None:
    """K as the run folder says it (speedbench.metrics.acceptance.draft_length: --draft-length, engine.json, the
    server's description, the engine's records); None when it says nothing or cannot be read."""
    from speedbench.analysis.run_folder import RunFolderError, read_run_folder

    try:
        return read_run_folder(run_dir).draft_length
    except (RunFolderError, ValueError, OSError):
        return None


def _dry_run(bundle: bytes) -> int:
    from speedbench.leaderboard.known_builds import KnownBuilds
    from speedbench.leaderboard.schema import BundleRejected
    from speedbench.leaderboard.validate import (
        ValidatedBundle, check_names, compute_entry_metrics, parse_bundle, read_runs)

    try:  # the Space's checks, but the names are compared with the packaged known ids only
        builds = KnownBuilds.load()
        if len(builds):
            bundle_ok = parse_bundle(bundle, builds)
        else:  # no descriptors here (none packaged or configured): check everything but the dataset build
            metadata, runs, _ = read_runs(bundle)
            bundle_ok = ValidatedBundle(metadata=metadata, runs=runs, files={}, bundle_sha256="", archive_sha256="")
            print("note: no known dataset builds configured (SPEEDBENCH_KNOWN_BUILDS); dataset hash not checked",
                  file=sys.stderr)
        check_names(bundle_ok.metadata, None)
        metrics = compute_entry_metrics(bundle_ok)
    except BundleRejected as exc:
        print(f"rejected: {exc}", file=sys.stderr)
        return 1
    acceptance = metrics["acceptance"]
    if acceptance["acceptance_length"] is None:  # no statistics and chunks that are not steps
        print(f"no AL: {'; '.join(acceptance.get('warnings') or [])}")
    else:
        print(f"mean AL {acceptance['acceptance_length']:.3f} (95% CI {acceptance['acceptance_length_ci']}), "
              f"request-weighted {acceptance['acceptance_length_request_weighted']:.3f}")
    for category, figures in acceptance["per_category"].items():
        print(f"  {category:<14} AL {figures['acceptance_length']:.3f}")
    for speedup in metrics["speedup"]:
        print(f"  speedup {speedup['dataset_config']} c={speedup['concurrency']}: {speedup['speedup_measured']:.3f} "
              + (f"(Appendix-G estimate {speedup['speedup_estimate']:.3f})" if speedup["speedup_estimate"] is not None
                 else "(no Appendix-G estimate: chunks are not decoding steps)"))
    _print_losslessness(metrics.get("losslessness"))
    for name, figures in ((metrics.get("phases") or {}).get("phases") or {}).items():
        al = figures.get("acceptance_length")
        print(f"  phase {name:<9} {figures.get('num_tokens')} tokens, AL " + ("-" if al is None else f"{al:.3f}"))
    return 0


def _submit_sweep(bundles: list[Path], args) -> int:
    """Each bundle of a sweep folder checked (--dry-run) or sent; 1 when any was refused."""
    if not bundles:
        print(f"speedbench submit: {args.run_dirs[0]} holds no bundles (speedbench sweep writes them when it ends)",
              file=sys.stderr)
        return 2
    worst = 0
    for path in bundles:
        print(f"{path.name}:")
        if args.dry_run:
            worst = max(worst, _dry_run(path.read_bytes()))
            continue
        if not args.space:
            continue
        try:
            outcome = submit_to_space(path.read_bytes(), args.space)
        except Exception as exc:  # network, wrong URL, Space down
            print(f"speedbench submit: could not reach {args.space}: {exc}", file=sys.stderr)
            return 2
        if outcome.get("status") == "accepted":
            print(outcome["entry_id"])
        else:
            print(f"rejected: {outcome.get('message')}", file=sys.stderr)
            worst = 1
    return worst


def _print_losslessness(summary) -> None:
    """The board's losslessness cell and each divergent pair (a flag the board shows, never a rejection)."""
    from speedbench.leaderboard.lossless import lossless_cell, losslessness_warnings

    if lossless_cell(summary):
        print(f"  lossless (T=0): {lossless_cell(summary)}")
    for warning in losslessness_warnings(summary):
        print(f"  flag {warning['code']}: {warning['message']}")


def submit_to_space(bundle: bytes, space: str) -> dict:
    """Upload through the Space's API; returns ``{"status", "entry_id", "message"}``."""
    from gradio_client import Client, handle_file

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bundle.tar.gz"
        path.write_bytes(bundle)
        client = Client(space, verbose=False, analytics_enabled=False, download_files=False)
        try:
            return client.predict(handle_file(str(path)), api_name=API_NAME)
        finally:
            client.close()


def run(args) -> int:
    from speedbench.sweep.bundles import sweep_bundles
    from speedbench.leaderboard.pack import pack_bundle
    from speedbench.analysis.run_folder import RunFolderError

    if not args.space and not args.out and not args.dry_run:
        print("speedbench submit: give --space URL, --out FILE or --dry-run", file=sys.stderr)
        return 2
    swept = sweep_bundles(args.run_dirs)
    if swept is not None:  # a `speedbench sweep` folder: its bundles, packed with the plan's metadata
        return _submit_sweep(swept, args)
    try:
        bundle = pack_bundle(args.run_dirs, _metadata(args), args.baseline)
    except (FileNotFoundError, RunFolderError) as exc:
        print(f"speedbench submit: {exc}", file=sys.stderr)
        return 2
    if args.out:
        args.out.write_bytes(bundle)
        print(f"bundle written to {args.out} ({len(bundle)} bytes)", file=sys.stderr)
    if args.dry_run:
        return _dry_run(bundle)
    if not args.space:
        return 0
    try:
        outcome = submit_to_space(bundle, args.space)
    except Exception as exc:  # network, wrong URL, Space down
        print(f"speedbench submit: could not reach {args.space}: {exc}", file=sys.stderr)
        return 2
    if outcome.get("status") == "accepted":
        print(outcome["entry_id"])
        return 0
    print(f"rejected: {outcome.get('message')}", file=sys.stderr)
    return 1
