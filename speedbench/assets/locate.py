"""Find the assets for the demo or the tests: the shared folder, else the cache, else fetch them.

Order: ``SPEEDBENCH_SOURCES`` / ``SPEEDBENCH_MODELS`` when both are set (the user's choice);
else the shared folder (``settings.shared_dir()``: ``../shared`` beside the repository) when it
holds every file the subset needs; else the cache (``settings.assets_dir()``) when it does; else
the subset is fetched into the cache. A folder "holds" a file when the file is there with the
lock's size (``speedbench assets fetch`` verified its sha256 when it wrote it; ``tests/assets``
hash ``../shared``). The served model files (GGUFs, tokenizer.json) are made from the checkpoint
when missing. Which one was used is logged.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from speedbench import settings
from speedbench.assets.fetch import FetchError, fetch
from speedbench.assets.lock import LockEntry, LockError, load_lock, select

MODEL_FOLDER = Path("models") / "stories260K"
CHECKPOINT, TOKENIZER = "stories260K.bin", "tok512.bin"


class AssetsNotFound(RuntimeError):
    pass


@dataclass(frozen=True)
class Found:
    sources: Path
    models: Path
    origin: str  # "environment", "shared", "cache" or "fetched"


def missing(entries: list[LockEntry], root: Path) -> list[str]:
    """The ``dest`` paths of ``entries`` not under ``root`` with the lock's size."""
    return [e.dest for e in entries
            if not (root / e.dest).is_file() or (root / e.dest).stat().st_size != e.size]


def served_files() -> tuple[str, ...]:
    from speedbench.engine.gguf_export import VARIANTS

    return tuple(VARIANTS) + ("tokenizer.json", "tokenizer_config.json")


def make_model_files(models: Path) -> list[Path]:
    """The GGUFs and tokenizer files made from the checkpoint in ``models``, where missing."""
    from speedbench.engine.gguf_export import write_variants
    from speedbench.engine.llama2c import read_checkpoint
    from speedbench.engine.llama2c_tokenizer import write_tokenizer_files

    made = write_variants(models / CHECKPOINT, models / TOKENIZER, models)
    if not all((models / n).is_file() for n in ("tokenizer.json", "tokenizer_config.json")):
        vocab = read_checkpoint(models / CHECKPOINT).config.vocab_size
        made += write_tokenizer_files(models / TOKENIZER, models, vocab)
    return made


def locate(only: str = "demo", *, out: Path | None = None, workers: int = 4, progress: bool = True,
           log: Callable[[str], None] = print) -> Found:
    env_sources, env_models = settings.sources_dir(), settings.models_dir()
    if env_sources and env_models:
        log(f"assets: SPEEDBENCH_SOURCES={env_sources} and SPEEDBENCH_MODELS={env_models}, as set")
        return Found(env_sources, env_models, "environment")
    try:
        entries = select(load_lock(), only)
    except LockError as error:
        raise AssetsNotFound(str(error)) from None
    shared = settings.shared_dir()
    served = served_files()
    if shared.is_dir() and not missing(entries, shared) \
            and all((shared / MODEL_FOLDER / n).is_file() for n in served):
        log(f"assets: the shared folder {shared}")
        return Found(shared / "sources", shared / MODEL_FOLDER, "shared")
    cache = Path(out) if out else settings.assets_dir()
    absent = missing(entries, cache)
    origin = "cache"
    if absent:
        log(f"assets: no shared folder at {shared} and {len(absent)} of {len(entries)} files ({only}) "
            f"missing from {cache}: fetching them")
        try:
            report = fetch(entries, cache, only=only, mirror=settings.assets_mirror_url(), workers=workers,
                           progress=progress)
        except FetchError as error:
            raise AssetsNotFound(str(error)) from None
        log(f"assets: fetched {len(report.fetched)} file(s), {report.downloaded_bytes / 1e6:.1f} MB "
            f"in {report.seconds:.1f} s, into {cache}")
        origin = "fetched"
    made = make_model_files(cache / MODEL_FOLDER)
    if made:
        log(f"assets: made {', '.join(p.name for p in made)} from {CHECKPOINT} and {TOKENIZER}")
    if origin == "cache":
        log(f"assets: the cache {cache}")
    return Found(env_sources or cache / "sources", env_models or cache / MODEL_FOLDER, origin)
