"""Print the shape of the code: largest files, longest functions, package imports.

Usage: python bench/code_shape.py [ROOT] [--top N]

ROOT defaults to the repository this script lives in, so the figures of an older
commit come from a worktree of it (git worktree add /tmp/before HEAD; python
bench/code_shape.py /tmp/before).  Only the shipped code is measured (tests and
bench scripts are not), because the targets (files under ~400 lines, functions
under ~60) are about the code a reader has to hold in mind.

Packages are grouped as the developer guide names them: the core (speedbench/
minus speedbench/cli/), speedbench.cli, client, dataset_builder, space and
metrics (the evaluate modules).  An import inside a function counts like one at
the top: it is still a dependency, just a hidden one.

Then, for every `speedbench run` option, the number of places that spell it out
(issue 25 counted five: the argparse call in speedbench/cli/run.py, the field of
RunOptions (or of a dataclass it is made of: RequestOptions, AnalysisOptions,
SamplingOptions), the keyword that builds RunOptions / SamplingOptions from the
parsed arguments in speedbench/cli/run.py, the key in manifest_options and the
field of ClientSettings).  A place that derives the option from its declaration
(a loop over dataclass fields) does not count.

Last (issue 31), the hand-written `add_argument` calls in speedbench/cli (options.py builds the
rest from declarations) and the flags spelled by more than one `add_argument("--x")` or
`option("--x")` call anywhere in the shipped code (the same flag of two commands counts, whether
the two mean one thing or not).
"""
from __future__ import annotations

import argparse
import ast
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

GROUPS = ("core", "speedbench.cli", "client", "sweep", "dataset_builder", "space", "metrics")
# The core must never import these (developer guide).
FORBIDDEN = {("core", "client"), ("core", "dataset_builder"), ("core", "sweep"), ("client", "sweep")}


@dataclass(frozen=True)
class Function:
    path: str
    qualname: str
    lines: int


def group_of_module(module: str) -> str | None:
    """The package group of a dotted module name, or None for third-party."""
    parts = module.split(".")
    if parts[0] == "speedbench":
        # setup.py maps client/, sweep/ and dataset_builder/ into the speedbench namespace.
        sub = parts[1] if len(parts) > 1 else ""
        if sub == "cli":
            return "speedbench.cli"
        if sub in ("client", "sweep", "dataset_builder"):
            return sub
        return "core"
    if parts[0] in ("client", "sweep", "dataset_builder", "space", "metrics"):
        return parts[0]
    # space/app.py imports its own package as sbspace.
    if parts[0] == "sbspace":
        return "space"
    return None


def module_of_path(root: Path, path: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "space" and len(parts) > 1 and parts[1] == "sbspace":
        parts = parts[1:]
    elif parts[0] in ("client", "sweep", "dataset_builder"):
        parts = ["speedbench"] + parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def source_files(root: Path) -> list[Path]:
    files = []
    for top in ("speedbench", "client", "sweep", "dataset_builder", "space", "metrics"):
        files.extend(p for p in sorted((root / top).rglob("*.py")) if "__pycache__" not in p.parts)
    return files


def functions(tree: ast.AST, path: str) -> list[Function]:
    found: list[Function] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                found.append(Function(path, name, child.end_lineno - child.lineno + 1))
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)

    walk(tree, "")
    return found


def imported_modules(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Absolute names of every module imported anywhere in the file."""
    names: set[str] = set()
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names.add(target)
            # "from package import module" imports the submodule too.
            names.update(f"{target}.{alias.name}" for alias in node.names if target)
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--files", action="store_true", help="name the importing files of every edge")
    args = parser.parse_args()
    root = Path(args.root).resolve()

    sizes: list[tuple[int, str]] = []
    funcs: list[Function] = []
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    module_imports: dict[str, set[str]] = {}
    for path in source_files(root):
        rel = str(path.relative_to(root))
        text = path.read_text(encoding="utf-8")
        sizes.append((len(text.splitlines()), rel))
        tree = ast.parse(text, filename=rel)
        funcs.extend(functions(tree, rel))
        module = module_of_path(root, path)
        source_group = group_of_module(module)
        targets = imported_modules(tree, module, path.name == "__init__.py")
        module_imports[module] = targets
        for target in targets:
            target_group = group_of_module(target)
            if target_group and source_group and target_group != source_group:
                edges[(source_group, target_group)].add(rel)

    print(f"root: {root}")
    print(f"\nlargest files (lines), of {len(sizes)}:")
    for lines, rel in sorted(sizes, key=lambda s: (-s[0], s[1]))[: args.top]:
        print(f"  {lines:5d}  {rel}")
    print(f"\nlongest functions (lines), of {len(funcs)}:")
    for f in sorted(funcs, key=lambda f: (-f.lines, f.path, f.qualname))[: args.top]:
        print(f"  {f.lines:5d}  {f.path}::{f.qualname}")
    over = sum(1 for f in funcs if f.lines > 60)
    big = sum(1 for lines, _ in sizes if lines > 400)
    print(f"\nfiles over 400 lines: {big}; functions over 60 lines: {over}")
    print("\npackage imports (importer -> imported: number of importing files):")
    for source in GROUPS:
        for target in GROUPS:
            files = edges.get((source, target))
            if files:
                flag = "  <-- core must not import this" if (source, target) in FORBIDDEN else ""
                print(f"  {source:15s} -> {target:15s} {len(files):3d}{flag}")
                if flag or args.files:
                    for rel in sorted(files):
                        print(f"      {rel}")

    mutual = sorted(
        (a, b) for a, targets in module_imports.items() for b in targets
        if a < b and a in module_imports.get(b, ())
    )
    print(f"\nmodules that import each other: {len(mutual)}")
    for a, b in mutual:
        print(f"  {a} <-> {b}")
    print_option_places(root)
    print_command_declarations(root)
    print_layers(root)


# The dataclasses a `speedbench run` option may be declared in, and the one workers get.
OPTION_CLASSES = ("RunOptions", "RequestOptions", "AnalysisOptions", "SamplingOptions")
# Before issue 25, ClientSettings named the tokenizer folder tokenizer_path.
FIELD_ALIASES = {"tokenizer_path": "tokenizer"}
PLACES = ("argparse", "dataclass", "construction", "manifest", "ClientSettings")


def _string_arg(call: ast.Call) -> str | None:
    first = call.args[0] if call.args else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _class_fields(tree: ast.AST, names) -> dict[str, list[tuple[str, ast.AST | None]]]:
    """Annotated fields (name, value) of the classes called ``names``, by class."""
    found: dict[str, list] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in names:
            found.setdefault(node.name, []).extend(
                (item.target.id, item.value) for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name))
    return found


def option_places(root: Path) -> dict[str, dict[str, int]]:
    """``{flag: {place: count}}`` for every ``speedbench run`` flag (see the module doc)."""
    cli = ast.parse((root / "speedbench" / "cli" / "run.py").read_text(encoding="utf-8"))
    trees = [ast.parse(p.read_text(encoding="utf-8")) for p in source_files(root)
             if p.parts[len(root.parts)] in ("client", "speedbench")]
    flag_of_field: dict[str, str] = {}
    counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(PLACES, 0))

    for node in ast.walk(cli):  # argparse calls; the construction keywords map args.<dest> to fields
        if isinstance(node, ast.Call) and _call_name(node) == "add_argument" and (_string_arg(node) or "").startswith("--"):
            counts[_string_arg(node)]["argparse"] += 1
        if isinstance(node, ast.Call) and _call_name(node) in ("RunOptions", "SamplingOptions"):
            for keyword in node.keywords:
                if isinstance(keyword.value, ast.Call):  # a nested construction: its own keywords count
                    continue
                dests = [n.attr for n in ast.walk(keyword.value) if isinstance(n, ast.Attribute)
                         and isinstance(n.value, ast.Name) and n.value.id == "args"]
                if keyword.arg and dests:
                    flag = "--" + dests[0].replace("_", "-")
                    flag_of_field[keyword.arg] = flag
                    counts[flag]["construction"] += 1
    declared_flags: dict[tuple[str, str], str] = {}  # (class, field) -> flag, for reuse(Class, "field")
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.value, ast.Call) \
                            and _call_name(item.value) == "option" and _string_arg(item.value):
                        declared_flags[(node.name, item.target.id)] = _string_arg(item.value)
    for tree in trees:  # fields; option("--flag") names the flag of its field, reuse() the reused one's
        for fields_ in _class_fields(tree, OPTION_CLASSES).values():
            for name, value in fields_:
                if isinstance(value, ast.Call) and _call_name(value) == "option" and _string_arg(value):
                    flag_of_field[name] = _string_arg(value)
                elif isinstance(value, ast.Call) and _call_name(value) == "reuse" and len(value.args) == 2 \
                        and isinstance(value.args[0], ast.Name) and isinstance(value.args[1], ast.Constant):
                    flag_of_field[name] = declared_flags.get((value.args[0].id, value.args[1].value))
    flag = lambda name: flag_of_field.get(FIELD_ALIASES.get(name, name))  # noqa: E731
    for tree in trees:
        for fields_ in _class_fields(tree, OPTION_CLASSES).values():
            for name, _ in fields_:
                if flag(name):
                    counts[flag(name)]["dataclass"] += 1
        for name, _ in _class_fields(tree, ("ClientSettings",)).get("ClientSettings", []):
            if flag(name):
                counts[flag(name)]["ClientSettings"] += 1
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "manifest_options":
                for item in ast.walk(node):
                    if isinstance(item, ast.Dict):
                        for key in item.keys:
                            if isinstance(key, ast.Constant) and flag(key.value):
                                counts[flag(key.value)]["manifest"] += 1
    return dict(counts)


def print_option_places(root: Path) -> None:
    places = option_places(root)
    print(f"\n`speedbench run` options: places each is spelled out ({', '.join(PLACES)}):")
    for flag in sorted(places):
        row = places[flag]
        print(f"  {flag:24s} {sum(row.values()):2d}   " + " ".join(f"{p}={row[p]}" for p in PLACES if row[p]))
    totals = [sum(row.values()) for row in places.values()]
    print(f"options: {len(totals)}; declared in one place: {sum(1 for n in totals if n == 1)}; "
          f"most places for one option: {max(totals, default=0)}; places in all: {sum(totals)}")


def command_declarations(root: Path) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Hand-written ``add_argument`` calls per file of speedbench/cli, and for every flag the files
    whose ``add_argument("--flag")`` or ``option("--flag")`` spell it (each call once)."""
    calls: dict[str, int] = {}
    places: dict[str, list[str]] = defaultdict(list)
    for path in source_files(root):
        rel = str(path.relative_to(root))
        if rel == "speedbench/options.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or _call_name(node) not in ("add_argument", "option"):
                continue
            if _call_name(node) == "add_argument" and rel.startswith("speedbench/cli/"):
                calls[rel] = calls.get(rel, 0) + 1
            if (_string_arg(node) or "").startswith("--"):
                places[_string_arg(node)].append(rel)
    return calls, dict(places)


def print_command_declarations(root: Path) -> None:
    calls, places = command_declarations(root)
    print(f"\nhand-written add_argument calls in speedbench/cli (options.py excluded): {sum(calls.values())}")
    for rel in sorted(calls):
        print(f"  {calls[rel]:4d}  {rel}")
    repeated = {flag: files for flag, files in places.items() if len(files) > 1}
    print(f"flags declared (add_argument or option) more than once: {len(repeated)} of {len(places)}, "
          f"{sum(len(files) for files in repeated.values())} declarations")
    for flag in sorted(repeated):
        print(f"  {flag:22s} {len(repeated[flag])}  " + ", ".join(sorted(set(repeated[flag]))))


ENGINES = ("vllm", "sglang", "trtllm", "llamacpp")
# Math must import nothing above it (issue 31): these are above speedbench.metrics.
ABOVE_METRICS = ("speedbench.analysis", "speedbench.run_folder", "speedbench.consistency", "speedbench.report",
                 "speedbench.leaderboard", "speedbench.peers", "speedbench.engine", "speedbench.cli",
                 "speedbench.client", "speedbench.sweep", "speedbench.dataset_builder")
# Where results travel as dicts read back by string key (issue 31 counted about 300 lookups).
RESULT_READERS = ("speedbench/report/compute.py", "speedbench/leaderboard/board.py", "sweep/views.py",
                  "client/sweep/views.py", "speedbench/peers/ours.py")


def engine_mentions(root: Path) -> dict[str, int]:
    """Shipped files naming each engine outside its own modules (a file named after the engine)."""
    counts = {}
    for engine in ENGINES:
        word = re.compile(rf"\b{engine}\b")
        counts[engine] = sum(1 for p in source_files(root) if not p.name.startswith(engine)
                             and word.search(p.read_text(encoding="utf-8")))
    return counts


def upward_imports(root: Path) -> list[str]:
    """``file -> module`` for every import in speedbench/metrics of a module above it."""
    found = []
    for path in sorted((root / "speedbench" / "metrics").rglob("*.py")):
        module = module_of_path(root, path)
        for name in sorted(imported_modules(ast.parse(path.read_text(encoding="utf-8")), module,
                                            path.name == "__init__.py")):
            if any(name == above or name.startswith(above + ".") for above in ABOVE_METRICS):
                found.append(f"{path.relative_to(root)} -> {name}")
    return found


def string_key_lookups(root: Path) -> dict[str, int]:
    """``x["key"]`` and ``x.get("key")`` in the modules that read results."""
    counts = {}
    for rel in RESULT_READERS:
        if (path := root / rel).exists():
            tree = ast.parse(path.read_text(encoding="utf-8"))
            counts[rel] = sum(1 for n in ast.walk(tree) if (
                isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)
            ) or (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
                  and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)))
    return counts


def print_layers(root: Path) -> None:
    mentions = engine_mentions(root)
    print("\nshipped files naming an engine outside its own modules: "
          + ", ".join(f"{e} {n}" for e, n in mentions.items()))
    up = upward_imports(root)
    print(f"imports in speedbench/metrics of a module above it: {len(up)}")
    for line in up:
        print(f"  {line}")
    keys = string_key_lookups(root)
    print(f"string-key lookups of results: {sum(keys.values())} (" + ", ".join(f"{k} {v}" for k, v in keys.items()) + ")")


if __name__ == "__main__":
    main()
