"""``speedbench sweep PLAN``: the plan file read, checked and expanded before anything starts.

Every refusal names the file, the line and the key: TOML syntax, an unknown key, a wrong type, a
run option ``speedbench run`` would refuse, an undefined ``${VARIABLE}``, two variants on one
port, a baseline that names no baseline variant, a command that is not found. ``k = [2, 4]``
expands one ``[[variant]]`` into one variant per draft length (``{k}`` in its name and command).
"""
from __future__ import annotations

import difflib
import hashlib
import os
import re
import shlex
import shutil
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from speedbench.settings import ENGINE_NAMES
from speedbench.sweep import run_options
from speedbench.sweep.locate import KeyLines
from speedbench.sweep.schema import BASELINE_METHOD, PlanSpec, VariantSpec, WorkloadSpec

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
PORT, K, SCHEDULE = "{port}", "{k}", "{schedule}"


class PlanError(ValueError):
    """A plan that cannot run; the message names the file, line and key."""


@dataclass(frozen=True)
class Variant:
    name: str
    engine: str
    method: str
    k: int  # 0: no speculation
    baseline: str | None
    command: str | None  # with {k} filled; {port} is filled when the server starts
    url: str | None
    port: int | None
    host: str
    health: str
    startup_timeout_s: float
    stop_timeout_s: float
    env: dict[str, str]
    cwd: str | None
    gpus: int
    drafter: str | None
    run: dict[str, Any]
    source_index: int  # which [[variant]] it came from (for error lines)
    family: str = ""  # the name of its [[variant]] table as written ("draft-k{k}"): its draft family
    schedule: str | None = None  # served with the schedule derived from this family (``{schedule}``)
    schedule_format: str = "ranges"
    schedule_workload: str | None = None

    @property
    def speculative(self) -> bool:
        return self.method != BASELINE_METHOD


@dataclass(frozen=True)
class Workload:
    name: str
    config: str
    dataset: str
    repeats: int
    run: dict[str, Any]
    source_index: int


@dataclass
class Plan:
    path: Path
    text: str
    title: str
    tokenizer: str
    variants: list[Variant]
    workloads: list[Workload]
    run: dict[str, Any]
    submission: dict[str, Any]
    lines: KeyLines = field(repr=False)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def variant(self, name: str) -> Variant:
        return next(v for v in self.variants if v.name == name)


def _where(path: Path, lines: KeyLines, loc) -> str:
    line = lines.line(loc)
    return f"{path}:{line}" if line else str(path)


def _dotted(loc) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (("." if text else "") + str(part))
    return text


def _expand_env(value: Any, loc: tuple, path: Path, lines: KeyLines) -> Any:
    """``${NAME}`` and ``${NAME:-default}`` in every string, from the environment."""
    if isinstance(value, dict):
        return {k: _expand_env(v, loc + (k,), path, lines) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_env(v, loc + (i,), path, lines) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        raise PlanError(f"{_where(path, lines, loc)}: {_dotted(loc)}: environment variable ${{{name}}} is not set "
                        f"(set it, or write ${{{name}:-default}})")

    return _ENV.sub(substitute, value)


def _validation_message(path: Path, lines: KeyLines, error: ValidationError) -> str:
    messages = []
    for item in error.errors():
        loc = tuple(p for p in item["loc"] if not (isinstance(p, str) and p in ("int", "list[int]", "str")))
        key = _dotted(loc)
        if item["type"] == "extra_forbidden":
            known = _known_keys(loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else (f" (known: {', '.join(known)})" if known else "")
            messages.append(f"{_where(path, lines, loc)}: unknown key {key!r}{hint}")
        elif item["type"] == "missing":
            messages.append(f"{_where(path, lines, loc[:-1])}: {key}: required key missing")
        else:
            messages.append(f"{_where(path, lines, loc)}: {key}: {item['msg']} (got {item.get('input')!r})")
    return "\n".join(dict.fromkeys(messages))


def _known_keys(loc: tuple) -> list[str]:
    model = {("variant",): VariantSpec, ("workload",): WorkloadSpec}.get(tuple(p for p in loc if isinstance(p, str)))
    if model is None and loc == ():
        model = PlanSpec
    if model is None and loc == ("submission",):
        from speedbench.sweep.schema import SubmissionSpec as model  # noqa: N813
    return sorted(model.model_fields) if model else []


def load_plan(path: str | Path) -> Plan:
    """Read, check and expand a plan; raises PlanError naming file, line and key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise PlanError(f"{path}: cannot read the plan ({error.strerror})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PlanError(f"{path}: not valid TOML: {error}") from None
    lines = KeyLines(text)
    raw = _expand_env(raw, (), path, lines)
    try:
        spec = PlanSpec.model_validate(raw)
    except ValidationError as error:
        raise PlanError(_validation_message(path, lines, error)) from None
    plan = Plan(path=path, text=text, title=spec.title, tokenizer=spec.tokenizer, variants=[], workloads=[],
                run=dict(spec.run), submission=spec.submission.model_dump(), lines=lines)
    plan.workloads = _workloads(spec, path, lines)
    plan.variants = _variants(spec, path, lines)
    _check(plan, spec)
    return plan


def _workloads(spec: PlanSpec, path: Path, lines: KeyLines) -> list[Workload]:
    workloads, names = [], {}
    for index, item in enumerate(spec.workload):
        name = item.name or item.config
        where = _where(path, lines, ("workload", index))
        if name in names:
            raise PlanError(f"{where}: workload name {name!r} is used by workload[{names[name]}] too; give one a "
                            f"distinct name = \"...\"")
        names[name] = index
        if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
            raise PlanError(f"{where}: workload name {name!r}: use letters, digits and _ . + - (it names folders)")
        dataset = item.dataset or spec.dataset
        if not dataset:
            raise PlanError(f"{where}: workload[{index}] has no dataset (give dataset = \"...\" here or at the top)")
        workloads.append(Workload(name=name, config=item.config, dataset=dataset,
                                  repeats=item.repeats or spec.repeats, run=dict(item.model_extra or {}),
                                  source_index=index))
    return workloads


def _variants(spec: PlanSpec, path: Path, lines: KeyLines) -> list[Variant]:
    variants: list[Variant] = []
    for index, item in enumerate(spec.variant):
        where = _where(path, lines, ("variant", index))
        ks = item.k if isinstance(item.k, list) else [item.k]
        if item.method == BASELINE_METHOD:
            if item.k is not None:
                raise PlanError(f"{_where(path, lines, ('variant', index, 'k'))}: variant[{index}].k: a variant with "
                                f"method = \"none\" (no speculation) has no draft length")
            if item.baseline is not None:
                raise PlanError(f"{_where(path, lines, ('variant', index, 'baseline'))}: variant[{index}].baseline: "
                                f"a variant without speculation is itself a baseline")
            ks = [0]
        elif item.k is None or not ks or any(k < 1 for k in ks):
            raise PlanError(f"{where}: variant[{index}] ({item.name}): method {item.method!r} needs k = a draft "
                            f"length >= 1, or a list of them")
        if len(ks) > 1 and K not in item.name:
            raise PlanError(f"{_where(path, lines, ('variant', index, 'name'))}: variant[{index}].name {item.name!r}: "
                            f"k is a list, so the name needs {K} (one variant per draft length)")
        if len(set(ks)) != len(ks):
            raise PlanError(f"{_where(path, lines, ('variant', index, 'k'))}: variant[{index}].k repeats a value: {ks}")
        if (item.command is None) == (item.url is None):
            raise PlanError(f"{where}: variant[{index}] ({item.name}): give either command (a server to start) "
                            f"or url (a server already running), not {'both' if item.command else 'neither'}")
        if item.url is not None and (item.port is not None or item.env or item.cwd):
            raise PlanError(f"{where}: variant[{index}] ({item.name}): port, env and cwd belong to a command; "
                            f"a url variant is a server someone else runs")
        if item.command is not None and PORT not in item.command and item.port is None:
            raise PlanError(f"{_where(path, lines, ('variant', index, 'command'))}: variant[{index}].command: no "
                            f"{PORT} in it and no port = N: the sweep cannot know where the server listens")
        if item.engine not in ENGINE_NAMES:
            raise PlanError(f"{_where(path, lines, ('variant', index, 'engine'))}: variant[{index}].engine: "
                            f"{item.engine!r} is not one of {', '.join(ENGINE_NAMES)}")
        for k in ks:
            fill = (lambda text: text.replace(K, str(k))) if item.method != BASELINE_METHOD else (lambda text: text)
            variants.append(Variant(
                name=fill(item.name), engine=item.engine, method=item.method, k=k, baseline=item.baseline,
                command=fill(item.command) if item.command else None, url=item.url.rstrip("/") if item.url else None,
                port=item.port, host=item.host, health=item.health, startup_timeout_s=item.startup_timeout_s,
                stop_timeout_s=item.stop_timeout_s, env={key: fill(v) for key, v in item.env.items()}, cwd=item.cwd,
                gpus=item.gpus, drafter=fill(item.drafter) if item.drafter else None, run=dict(item.run),
                source_index=index, family=item.name, schedule=item.schedule, schedule_format=item.schedule_format,
                schedule_workload=item.schedule_workload))
    # A schedule variant runs after every static variant: its {schedule} comes from their runs.
    return [v for v in variants if not v.schedule] + [v for v in variants if v.schedule]


def _check(plan: Plan, spec: PlanSpec) -> None:
    path, lines = plan.path, plan.lines
    names: dict[str, Variant] = {}
    for v in plan.variants:
        if v.name in names:
            raise PlanError(f"{_where(path, lines, ('variant', v.source_index, 'name'))}: two variants are named "
                            f"{v.name!r} (variant[{names[v.name].source_index}] and variant[{v.source_index}])")
        if not re.fullmatch(r"[A-Za-z0-9_.+-]+", v.name):
            raise PlanError(f"{_where(path, lines, ('variant', v.source_index, 'name'))}: variant name {v.name!r}: "
                            f"use letters, digits and _ . + - (it names folders)")
        names[v.name] = v
    _check_ports(plan)
    for v in plan.variants:
        if v.baseline is not None and (v.baseline not in names or names[v.baseline].speculative):
            baselines = [n for n, other in names.items() if not other.speculative]
            raise PlanError(f"{_where(path, lines, ('variant', v.source_index, 'baseline'))}: variant "
                            f"{v.name!r}: baseline {v.baseline!r} names no variant without speculation "
                            f"(method = \"none\"); those are: {', '.join(baselines) or 'none in this plan'}")
        if v.command is not None:
            _check_command(plan, v)
    for v in plan.variants:
        if v.schedule is not None:
            _check_schedule_variant(plan, v)
    _check_run_tables(plan, spec)


def _check_schedule_variant(plan: Plan, v: Variant) -> None:
    """``schedule = "<family>"``: a speculative variant started by a command with ``{schedule}``, naming a
    [[variant]] table of static-K variants with the same baseline, K at least theirs."""
    where = _where(plan.path, plan.lines, ("variant", v.source_index, "schedule"))
    members = [m for m in plan.variants if m.family == v.schedule and not m.schedule and m.speculative]
    if not members:
        families = sorted({m.family for m in plan.variants if m.speculative and not m.schedule})
        raise PlanError(f"{where}: variant {v.name!r}: schedule {v.schedule!r} names no [[variant]] table of "
                        f"speculative variants; those are: {', '.join(families) or 'none in this plan'}")
    if not v.speculative or v.command is None or SCHEDULE not in v.command:
        raise PlanError(f"{where}: variant {v.name!r}: a schedule variant is speculative (method) and started "
                        f"by a command with {SCHEDULE} in it, where the derived schedule is written")
    if v.baseline is None or v.baseline != members[0].baseline:
        raise PlanError(f"{where}: variant {v.name!r}: baseline must be {members[0].baseline!r}, the baseline of "
                        f"{v.schedule!r} (the schedule chooses between its K and no speculation)")
    if v.k < max(m.k for m in members):
        raise PlanError(f"{where}: variant {v.name!r}: k = {v.k} is below {v.schedule!r}'s largest K "
                        f"{max(m.k for m in members)} (k is the server's --draft-length, the largest K it drafts)")
    workloads = [w.name for w in plan.workloads]
    if v.schedule_workload is not None and v.schedule_workload not in workloads:
        raise PlanError(f"{where}: variant {v.name!r}: schedule_workload {v.schedule_workload!r} is not one of "
                        f"{', '.join(workloads)}")


def _host(host: str) -> str:
    return "localhost" if host in ("127.0.0.1", "localhost", "::1", "0.0.0.0") else host


def _check_ports(plan: Plan) -> None:
    seen: dict[tuple[str, int], Variant] = {}
    for v in plan.variants:
        if v.url is not None:
            match = re.match(r"^https?://\[?([^/\]]+?)\]?(?::(\d+))?(?:/|$)", v.url)
            if not match:
                raise PlanError(f"{_where(plan.path, plan.lines, ('variant', v.source_index, 'url'))}: variant "
                                f"{v.name!r}: url {v.url!r} is not http(s)://HOST[:PORT]")
            address = (_host(match.group(1)), int(match.group(2) or (443 if v.url.startswith("https") else 80)))
        elif v.port is not None:
            address = (_host(v.host), v.port)
        else:
            continue  # {port}: a free port is picked when the server starts
        if address in seen:
            raise PlanError(f"{_where(plan.path, plan.lines, ('variant', v.source_index, 'port' if v.url is None else 'url'))}: "
                            f"variants {seen[address].name!r} and {v.name!r} are both on {address[0]}:{address[1]}; "
                            f"one port per variant (leave port out and write {PORT} in the command to get a free one)")
        seen[address] = v


def command_argv(command: str) -> list[str]:
    """The command's argv; ``speedbench ...`` runs this installation's ``python -m speedbench``."""
    argv = shlex.split(command)
    if argv and argv[0] == "speedbench":
        return [sys.executable, "-m", "speedbench", *argv[1:]]
    return argv


def _check_command(plan: Plan, v: Variant) -> None:
    where = _where(plan.path, plan.lines, ("variant", v.source_index, "command"))
    try:
        argv = command_argv(v.command)
    except ValueError as error:
        raise PlanError(f"{where}: variant {v.name!r}: command does not split into words ({error})") from None
    if not argv:
        raise PlanError(f"{where}: variant {v.name!r}: empty command")
    program = argv[0]
    search = (v.env.get("PATH") or os.environ.get("PATH", ""))
    cwd = Path(v.cwd) if v.cwd else Path.cwd()
    if "/" in program:
        candidate = Path(program) if Path(program).is_absolute() else cwd / program
        found = candidate.is_file() and os.access(candidate, os.X_OK)
    else:
        found = shutil.which(program, path=search) is not None
    if not found:
        raise PlanError(f"{where}: variant {v.name!r}: command not found: {program!r} "
                        f"(not an executable file{'' if '/' in program else ' on PATH'})")
    if v.cwd and not cwd.is_dir():
        raise PlanError(f"{_where(plan.path, plan.lines, ('variant', v.source_index, 'cwd'))}: variant {v.name!r}: "
                        f"cwd {v.cwd!r} is not a folder")


def _check_run_tables(plan: Plan, spec: PlanSpec) -> None:
    parser = run_options.run_parser()
    tables = [(("run",), plan.run)]
    tables += [(("workload", w.source_index), w.run) for w in plan.workloads]
    tables += [(("variant", i, "run"), dict(item.run)) for i, item in enumerate(spec.variant)]
    for loc, table in tables:
        for key, value in table.items():
            try:
                run_options.check_key(parser, key, value)
            except run_options.RunOptionError as error:
                raise PlanError(f"{_where(plan.path, plan.lines, loc + (key,))}: {_dotted(loc + (key,))}: "
                                f"{error}") from None
