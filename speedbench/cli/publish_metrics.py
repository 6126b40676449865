"""`speedbench publish-metrics`: push each evaluate module under metrics/ to the Hub as a Space.

Each folder ``metrics/<name>/`` is a self-contained evaluate Space: the metric card ``README.md``
(its YAML header holds the Space settings: ``sdk: gradio``, ``app_file: app.py``,
``sdk_version``), the module ``<name>.py``, the page ``app.py`` and ``requirements.txt`` (this
package). It becomes the Space repo ``ORG/<name>``, which ``evaluate.load("ORG/<name>")`` reads:
evaluate downloads ``<name>.py`` from ``{HF_ENDPOINT}/spaces/ORG/<name>/resolve/main/``.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from speedbench import settings
from speedbench.options import add_arguments, option

METRIC_NAMES = ("speedbench_al", "speedbench_latency", "speedbench_speedup")
SPACE_FILES = ("README.md", "app.py", "requirements.txt")  # besides the module <name>.py
PACKAGE_NAME = "speed-bench"  # the line of requirements.txt that --requirement replaces


def default_metrics_dir() -> Path:
    import speedbench

    return Path(speedbench.__file__).resolve().parent.parent / "metrics"


@dataclass(frozen=True)
class SpaceFiles:
    """What one Space repo receives: path in the repo -> bytes."""

    name: str
    files: dict[str, bytes]


def space_files(folder: Path, requirement: str | None = None) -> SpaceFiles:
    """The files of one metric folder as pushed; ``requirement`` replaces the package's line of
    requirements.txt (e.g. a ``git+https`` URL at a commit). Refuses a folder that is not a Space."""
    name = folder.name
    wanted = (f"{name}.py",) + SPACE_FILES
    missing = [f for f in wanted if not (folder / f).is_file()]
    if missing:
        raise ValueError(f"{folder}: not a metric Space folder (missing {', '.join(missing)})")
    header = _space_header(folder / "README.md")
    for key, wanted_value in (("sdk", "gradio"), ("app_file", "app.py"), ("sdk_version", None)):
        value = header.get(key)
        if value is None or (wanted_value is not None and value != wanted_value):
            setting = f"{key}: {wanted_value or '<version>'}"
            raise ValueError(f"{folder / 'README.md'}: the YAML header lacks '{setting}' (the Space would not start)")
    files = {f: (folder / f).read_bytes() for f in wanted}
    if requirement:
        files["requirements.txt"] = _replace_requirement(files["requirements.txt"].decode(), requirement, folder)
    return SpaceFiles(name, files)


def _space_header(card: Path) -> dict:
    """The card's YAML front matter (the Space settings), parsed by huggingface_hub as the Hub does."""
    import yaml
    from huggingface_hub import metadata_load

    try:
        header = metadata_load(card)
    except yaml.YAMLError as error:
        raise ValueError(f"{card}: the YAML header does not parse ({error})") from None
    return header if isinstance(header, dict) else {}


def _replace_requirement(text: str, requirement: str, folder: Path) -> bytes:
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines) if line.strip().startswith(PACKAGE_NAME)]
    if len(hits) != 1:
        raise ValueError(f"{folder / 'requirements.txt'}: expected one line starting with {PACKAGE_NAME!r} to replace")
    lines[hits[0]] = requirement
    return ("\n".join(lines) + "\n").encode()


def hub_endpoint() -> str:
    """HF_ENDPOINT as it is now (huggingface_hub read it once, at import), else the library's default."""
    from huggingface_hub import constants

    return settings.hub_endpoint() or constants.ENDPOINT


def publish_metrics(namespace: str, metrics_dir: Path | None = None, names=METRIC_NAMES, token: str | None = None,
                    private: bool = False, requirement: str | None = None, endpoint: str | None = None) -> dict[str, str]:
    """Create (if needed) and commit each Space ``namespace/<name>``; returns {repo_id: commit URL}."""
    from huggingface_hub import CommitOperationAdd, HfApi, constants

    if constants.HF_HUB_OFFLINE:
        raise RuntimeError("cannot publish with HF_HUB_OFFLINE=1 set; unset it to publish")
    if not namespace or "/" in namespace:
        raise ValueError(f"--namespace {namespace!r}: expected a user or organisation name, without '/'")
    metrics_dir = Path(metrics_dir or default_metrics_dir())
    spaces = [space_files(metrics_dir / name, requirement) for name in names]  # all checked before any push
    api = HfApi(endpoint=endpoint or hub_endpoint(), token=token)
    urls = {}
    for space in spaces:
        repo_id = f"{namespace}/{space.name}"
        api.create_repo(repo_id, repo_type="space", space_sdk="gradio",
                        private=True if private else None, exist_ok=True)  # None: the owner's default
        commit = api.create_commit(
            repo_id=repo_id, repo_type="space", commit_message=f"speedbench publish-metrics: {space.name}",
            operations=[CommitOperationAdd(path_in_repo=path, path_or_fileobj=data)
                        for path, data in sorted(space.files.items())])
        urls[repo_id] = str(getattr(commit, "commit_url", commit))
    return urls


@dataclass(kw_only=True)
class PublishMetricsOptions:
    """``speedbench publish-metrics``'s options, declared once (``speedbench.options``)."""

    namespace: str = option("--namespace", help="user or organisation that owns the Spaces")
    token: str | None = option("--token", default=None, help="Hub token with write access (default: HF_TOKEN / login)")
    private: bool = option("--private", default=False, help="create the Spaces private")
    metrics_dir: Path | None = option("--metrics-dir", default=None, parse=Path, help=(
        "folder holding the metric folders (default: metrics/ of this checkout)"))
    requirement: str | None = option("--requirement", default=None, help=(
        "what requirements.txt installs instead of the pinned package, e.g. "
        "'speed-bench[metrics] @ git+https://github.com/ORG/speed-bench@COMMIT'"))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "publish-metrics",
        help="push the evaluate modules under metrics/ to the Hub as Spaces ORG/<name>",
        description=(
            "Create or update one Space per metric (" + ", ".join(METRIC_NAMES) + ") under NAMESPACE with "
            "huggingface_hub, so that evaluate.load('NAMESPACE/speedbench_al') works. HF_ENDPOINT selects the "
            "Hub; the token comes from --token, HF_TOKEN or `hf auth login`."
        ),
    )
    add_arguments(parser, PublishMetricsOptions)
    parser.set_defaults(func=run)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library huggingface_hub sends with raises these when the Hub is unreachable
    (httpx2 in huggingface_hub 2.x, httpx before): not HfHubHTTPError, since no answer came."""
    for name in ("httpx2", "httpx"):
        try:
            return (__import__(name).TransportError,)
        except (ImportError, AttributeError):
            continue
    return ()


def run(args: argparse.Namespace) -> int:
    from huggingface_hub.errors import HfHubHTTPError

    try:
        urls = publish_metrics(args.namespace, args.metrics_dir, token=args.token, private=args.private,
                               requirement=args.requirement)
    except (ValueError, RuntimeError) as error:
        print(f"speedbench publish-metrics: {error}", file=sys.stderr)
        return 2
    except HfHubHTTPError as error:  # the Hub refused (rights, token, name): its message, no traceback
        print(f"speedbench publish-metrics: the Hub refused: {error}", file=sys.stderr)
        return 1
    except _transport_errors() as error:
        print(f"speedbench publish-metrics: the Hub at {hub_endpoint()} did not answer: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 1
    for repo_id, url in urls.items():
        print(f"{repo_id}: {url}")
    if not args.requirement:  # the pin names a PyPI release, which a checkout's version may not have
        print(f"speedbench publish-metrics: note: the Spaces install {_pinned_requirement(args.metrics_dir)} "
              "from PyPI; if that release is not there, publish again with --requirement "
              f"'{PACKAGE_NAME}[metrics] @ git+https://...@COMMIT'", file=sys.stderr)
    return 0


def _pinned_requirement(metrics_dir: Path | None) -> str:
    """The package line of the first metric's requirements.txt (the same in every folder)."""
    text = (Path(metrics_dir or default_metrics_dir()) / METRIC_NAMES[0] / "requirements.txt").read_text()
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(PACKAGE_NAME))
