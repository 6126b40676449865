"""The source rows a published placeholder names, read from the offline mirror or (``--online``) the Hub.

Each accessor returns a ``Table``: the rows, whether they are the very rows the reference resolver
reads (``exact``) and, when not, how ours differ (``note``, copied into every row resolved from
it). The mirror is preferred whenever it holds the reference's own file; ``--online`` fills in
what it lacks from the Hub at the revision the reference pins (or, for a ``source`` that is a
file URL, that URL, as the reference loads it). Nothing is written into the working folder:
Hub files go to the Hugging Face cache, and tables built with ``datasets`` use a temporary cache.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from speedbench import settings
from speedbench.dataset_builder.sources._read import SourceError, read_json, read_jsonl

# Revisions the reference pins (cnn_dailymail is not pinned there: its resolved commit is recorded).
REVISIONS = {
    "cais/hle": "021a3d71f516a7ac28ceb8d284969902edf1edeb",
    "deepmind/code_contests": "802411c3010cb00d1b05bad57ca77365a3c699d6",
    "Helsinki-NLP/opus-100": "805090dc28bf78897da9641cdf08b61287580df9",
    "nvidia/ChatRAG-Bench": "af6c7d420ddddf21f54f8ab3394bbf462aad2577",
    "TIGER-Lab/MMLU-Pro": "30527804ea8854662078e457808040d872ecdf29",
    "livecodebench/code_generation_lite": "0fe84c3912ea0c4d4a78037083943e8f0c4dd505",
    "ZenMoore/RoleBench": "a57ed54f9613921e4a5f1b63601a558cd5acf971",
}
LCB_FILES = ("test", "test2", "test3", "test4", "test5", "test6")
ROLE_PROFILES = "profiles-eng/desc.json"
NEEDS_ONLINE = "pass --online (the Hub at the reference's pinned revision) to rebuild it"


class OnlineRequired(LookupError):
    """The mirror does not hold this source (or not the reference's copy) and --online was not given."""


@dataclass(frozen=True)
class Table:
    rows: Any                 # list or dict of source rows, per accessor
    exact: bool = True
    note: str = ""
    origin: str = ""


def hub_dataset(repo: str, name: str | None = None, split: str = "test", revision: str | None = None,
                data_files: Any = None):
    """A ``datasets.Dataset`` from the Hub (or, with ``data_files``, from those files / URLs), held in memory.

    Local files get a temporary cache that is removed at once; Hub downloads stay in the Hugging Face cache.
    """
    from datasets import load_dataset

    if data_files is not None and not str(data_files).startswith(("http://", "https://", "[")) \
            and not isinstance(data_files, list):
        with tempfile.TemporaryDirectory(prefix="speedbench-resolve-") as cache:
            return load_dataset(repo, data_files={split: data_files}, split=split, cache_dir=cache,
                                keep_in_memory=True)
    if data_files is not None:
        return load_dataset(repo, data_files={split: data_files}, split=split, keep_in_memory=True)
    return load_dataset(repo, name, split=split, revision=revision, keep_in_memory=True)


def hub_file(repo: str, path: str, revision: str) -> Path:
    from huggingface_hub import hf_hub_download
    return Path(hf_hub_download(repo, path, repo_type="dataset", revision=revision,
                                endpoint=settings.hub_endpoint()))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class SourceTables:
    sources: Path | None
    online: bool = False
    load_hub: Callable[..., Any] = hub_dataset      # tests pass an in-memory stand-in
    load_hub_file: Callable[..., Path] = hub_file
    read: dict[str, str] = field(default_factory=dict)   # origin -> sha256 or Hub revision (for the manifest)
    _cache: dict = field(default_factory=dict)

    # -- plumbing ---------------------------------------------------------------------------
    def _mirror(self, relative: str) -> Path | None:
        if self.sources is None:
            return None
        path = Path(self.sources) / relative
        if path.is_file():
            if str(path) not in self.read:
                self.read[str(path)] = sha256(path)
            return path
        return None

    def _hub(self, key: str, repo: str, **kwargs):
        if not self.online:
            raise OnlineRequired(f"{repo}: not in the offline mirror; {NEEDS_ONLINE}")
        if key not in self._cache:
            self._cache[key] = self.load_hub(repo, **kwargs)
            self.read[f"hub:{repo}" + (f"/{kwargs['name']}" if kwargs.get("name") else "")] = str(
                kwargs.get("revision") or kwargs.get("data_files") or "unpinned")
        return self._cache[key]

    def _memo(self, key: str, build: Callable[[], Table]) -> Table:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    # -- sources read from a file named by the row's `source` --------------------------------
    def json_file(self, kind: str, source: str, mirror: str | None, exact_note: str = "") -> Table:
        """Rows of a JSON / JSON-lines file the row's ``source`` names (BAMBOO, MT-Bench-101, StackSelect, TextSort)."""
        def build() -> Table:
            path = self._mirror(mirror) if mirror else None
            if path is not None:
                return Table(_records(path), exact=not exact_note, note=exact_note, origin=str(path))
            if not self.online:
                raise OnlineRequired(f"{kind}: {source!r} is not in the offline mirror; {NEEDS_ONLINE}")
            dataset = self._hub(f"url:{source}", "json", data_files=source)
            return Table(dataset.to_list(), origin=source)
        return self._memo(f"{kind}:{source}:{mirror}", build)

    def coser(self, source: str) -> Table:
        """CoSER's test set loaded with ``datasets`` (the reference's loader: profiles become one struct)."""
        def build() -> Table:
            path = self._mirror("coser/test_set.json")
            if path is None:
                url = source.replace("tree", "raw").rstrip("/") + "/test/test_set.json"
                return Table(self._hub(f"url:{url}", "json", data_files=url).to_list(), origin=url)
            return Table(hub_dataset("json", data_files=str(path), split="test").to_list(), origin=str(path))
        return self._memo("coser", build)

    def rolebench(self, source: str, subset: str) -> Table:
        language = source.rstrip("/").rsplit("/", 1)[-1].removeprefix("rolebench-")
        mirror = (f"rolebench/{language}_{subset}_role_specific_test.jsonl" if language == "eng"
                  else f"rolebench/{language}_role_specific_test.jsonl")
        url = source.replace("tree", "raw").rstrip("/") + f"/{subset}/role_specific/test.jsonl"
        return self.json_file("RoleBench", url, mirror)

    def role_profiles(self) -> Table:
        def build() -> Table:
            if not self.online:
                return Table({}, exact=False, note="the role descriptions (profiles-eng/desc.json) are not in the "
                             "offline mirror: the role name stands in for its description; " + NEEDS_ONLINE)
            path = self.load_hub_file("ZenMoore/RoleBench", ROLE_PROFILES, REVISIONS["ZenMoore/RoleBench"])
            self.read[f"hub:ZenMoore/RoleBench/{ROLE_PROFILES}"] = REVISIONS["ZenMoore/RoleBench"]
            return Table(json.loads(Path(path).read_text(encoding="utf-8")), origin=str(path))
        return self._memo("role_profiles", build)

    # -- sources the reference reads from the Hub ---------------------------------------------
    def mmlu_pro(self) -> Table:
        def build() -> Table:
            path = self._mirror("mmlu_pro/test-00000-of-00001.parquet")
            if path is not None:
                import pyarrow.parquet as pq
                return Table(pq.read_table(path, columns=["question", "options"]).to_pylist(), origin=str(path))
            repo = "TIGER-Lab/MMLU-Pro"
            return Table(self._hub(repo, repo, revision=REVISIONS[repo]).to_list(), origin=repo)
        return self._memo("mmlu_pro", build)

    def hle_questions(self) -> Table:
        def build() -> Table:
            path = self._mirror("benchfortir/hle/top.json")
            mirrored = {row["id"]: row for _, row in read_jsonl(path)} if path else {}
            if self.online:
                repo = "cais/hle"
                rows = self._hub(repo, repo, revision=REVISIONS[repo]).to_list()
                return Table({row["id"]: row for row in rows}, origin=repo)
            return Table(mirrored, origin=str(path))
        return self._memo("hle", build)

    def hle_split(self):
        """(train, test) of the full gated set as the reference splits it (online only)."""
        repo = "cais/hle"
        full = self._hub(repo, repo, revision=REVISIONS[repo])
        return self._memo("hle_split", lambda: Table(full.train_test_split(test_size=0.5, shuffle=True, seed=42),
                                                     origin=repo)).rows

    def livecodebench(self) -> Table:
        def build() -> Table:
            problems = {}
            if self.online:
                repo = "livecodebench/code_generation_lite"
                base = f"https://huggingface.co/datasets/{repo}/resolve/{REVISIONS[repo]}"
                for row in self._hub("lcb", "json", data_files=[f"{base}/{n}.jsonl" for n in LCB_FILES]).to_list():
                    problems[row["question_id"]] = (row["question_content"], row["starter_code"])
                return Table(problems, origin=repo)
            return Table(_mirror_lcb(self), origin="livecodebench/")
        return self._memo("lcb", build)

    def code_contests(self) -> Table:
        def build() -> Table:
            if self.online:
                repo = "deepmind/code_contests"
                rows = self._hub(repo, repo, revision=REVISIONS[repo]).select_columns(["name", "description"])
                return Table({r["name"]: r["description"] for r in rows.to_list()}, origin=repo)
            path = self._mirror("code_contests/CodeContests_zeroshot_for_test_case_generation.jsonl")
            if path is None:
                raise OnlineRequired(f"deepmind/code_contests: not in the offline mirror; {NEEDS_ONLINE}")
            statements = {}
            for _, obj in read_jsonl(path):
                meta = obj["meta_data"] if isinstance(obj["meta_data"], dict) else {}
                parts = str(obj.get("prompt", "")).split("'''")
                if meta.get("task_name") and len(parts) >= 3:
                    statements[meta["task_name"]] = parts[1].strip()
            return Table(statements, exact=False, origin=str(path),
                         note="the mirror holds CodeT's reformatting of the statement (its Example and Note "
                              "sections cut), not the verbatim description; " + NEEDS_ONLINE)
        return self._memo("code_contests", build)

    def cnn_dailymail(self) -> Table:
        repo = "abisee/cnn_dailymail"
        return self._memo("cnn", lambda: Table(
            {r["id"]: r["article"] for r in self._hub(repo, repo, name="3.0.0").to_list()}, origin=repo))

    def opus100(self, pair: str) -> Table:
        repo = "Helsinki-NLP/opus-100"
        return self._memo(f"opus:{pair}", lambda: Table(
            self._hub(f"opus:{pair}", repo, name=pair, revision=REVISIONS[repo]).to_list(), origin=f"{repo}/{pair}"))

    def chatrag(self) -> Table:
        repo = "nvidia/ChatRAG-Bench"
        return self._memo("chatrag", lambda: Table(
            [row for name in ("hybridial", "sqa")
             for row in self._hub(f"chatrag:{name}", repo, name=name, revision=REVISIONS[repo]).to_list()],
            origin=repo))


def _records(path: Path) -> list:
    """A JSON list file or a JSON-lines file, as a list of rows in file order."""
    text_start = path.read_bytes()[:1]
    if text_start == b"[":
        data = read_json(path)
        if not isinstance(data, list):
            raise SourceError(f"{path}: expected a JSON list")
        return data
    return [obj for _, obj in read_jsonl(path)]


def _mirror_lcb(tables: SourceTables) -> dict[str, tuple[str, str]]:
    """question_id -> (question_content, starter_code): problems.jsonl, then the Qwen prompts' copies."""
    import re

    problems: dict[str, tuple[str, str]] = {}
    path = tables._mirror("livecodebench/problems.jsonl")
    for _, obj in read_jsonl(path) if path else ():
        problems[obj["question_id"]] = (obj["question_content"], obj.get("starter_code") or "")
    path = tables._mirror("livecodebench/livecodebench_v5.jsonl")
    pattern = re.compile(r"Question: (.*?)\n\n(?:Read the inputs from stdin|You will use the following starter code"
                         r"[^\n]*\n```python\n(.*?)\n```)", re.S)
    for _, obj in read_jsonl(path) if path else ():
        match = pattern.search(obj.get("prompt", ""))
        if match and obj["question_id"] not in problems:
            problems[obj["question_id"]] = (match[1], match[2] or "")
    return problems
