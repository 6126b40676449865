"""speedbench.settings: the one home of shared names and defaults."""
import pytest

from speedbench.settings import BUILD_DEFAULTS, ENGINE_NAMES, LOCAL_ENGINES, STANDIN_ENGINES, BuildOptions


def test_engine_subsets_are_engines():
    assert set(LOCAL_ENGINES) <= set(ENGINE_NAMES)
    assert set(STANDIN_ENGINES) <= set(ENGINE_NAMES)
    assert len(set(ENGINE_NAMES)) == len(ENGINE_NAMES)


def test_build_options_from_a_mapping():
    options = BuildOptions.from_mapping({"per_tier": 3, "allow_short": True, "dedup_threshold": 1, "pool_cap": None})
    assert (options.per_tier, options.allow_short, options.dedup_threshold) == (3, True, 1.0)
    assert options.pool_cap == BUILD_DEFAULTS.pool_cap == 0  # None means the default
    assert BuildOptions.from_mapping({}) == BUILD_DEFAULTS


@pytest.mark.parametrize("options, match", [
    ({"per_teir": 3}, "unknown option.*'per_teir'"),
    ({"per_tier": "3"}, "per_tier must be an integer"),
    ({"per_tier": True}, "per_tier must be an integer"),
    ({"allow_short": 1}, "allow_short must be true or false"),
    ({"dedup_threshold": "high"}, "dedup_threshold must be a number"),
    ({"lite_per_category": 2.5}, "lite_per_category must be an integer"),
    ({"selector": 1}, "selector must be a string"),
])
def test_bad_build_options_are_named(options, match):
    with pytest.raises(ValueError, match=match):
        BuildOptions.from_mapping(options)


def test_build_context_types_its_options_and_refuses_unknown_ones(tmp_path):
    from speedbench.dataset_builder.registry import BuildContext

    ctx = BuildContext(sources=tmp_path, out_dir=tmp_path, options={"per_tier": 3, "lite_per_category": 2})
    assert ctx.build_options.per_tier == 3 and ctx.build_options.lite_per_category == 2
    assert ctx.build_options.per_category == BUILD_DEFAULTS.per_category
    assert ctx.options == {"per_tier": 3, "lite_per_category": 2}  # recorded as given
    with pytest.raises(ValueError, match="'per_teir'"):
        BuildContext(sources=tmp_path, out_dir=tmp_path, options={"per_teir": 3})


def test_cli_defaults_come_from_settings():
    from speedbench.cli import build_parser
    from speedbench.settings import MAX_ERRORS, READ_TIMEOUT_S, REQUEST_TIMEOUT_S

    run = build_parser().parse_args(["run", "--engine", "vllm", "--url", "u", "--tokenizer", "t", "--dataset", "d",
                                     "--config", "c", "--out", "o"])
    assert (run.max_errors, run.request_timeout, run.read_timeout) == (MAX_ERRORS, REQUEST_TIMEOUT_S, READ_TIMEOUT_S)
    build = build_parser().parse_args(["build"])
    assert (build.per_tier, build.per_category, build.pool_cap, build.dedup_threshold, build.selector) == (
        BUILD_DEFAULTS.per_tier, BUILD_DEFAULTS.per_category, BUILD_DEFAULTS.pool_cap,
        BUILD_DEFAULTS.dedup_threshold, BUILD_DEFAULTS.selector)


# -- environment variables: read only in speedbench/settings.py ---------------------------------

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]
# Reads that are not settings: a sweep plan's ${NAME} references and its PATH lookup.
ENV_READ_ALLOWED = {"speedbench/settings.py", "sweep/plan.py"}


def _env_reads(path) -> list[int]:
    """Lines of ``path`` that read os.environ (get/pop/[]/in) or call os.getenv."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))

    def is_environ(node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) \
            and node.value.id == "os"

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if is_environ(node.func.value) and node.func.attr in ("get", "pop"):
                lines.append(node.lineno)
            elif node.func.attr == "getenv" and isinstance(node.func.value, ast.Name) and node.func.value.id == "os":
                lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and is_environ(node.value) and isinstance(node.ctx, ast.Load):
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and any(is_environ(c) for c in node.comparators):
            lines.append(node.lineno)
    return lines


def test_environment_variables_are_read_only_in_settings():
    found = {}
    for top in ("speedbench", "client", "sweep", "dataset_builder", "space"):
        for path in (REPO / top).rglob("*.py"):
            rel = str(path.relative_to(REPO))
            if rel not in ENV_READ_ALLOWED and (lines := _env_reads(path)):
                found[rel] = lines
    assert found == {}, f"read these through a named accessor in speedbench/settings.py: {found}"


def test_the_guard_sees_each_kind_of_read(tmp_path):
    code = tmp_path / "m.py"
    code.write_text("import os\na = os.environ.get('A')\nb = os.environ['B']\nc = 'C' in os.environ\n"
                    "d = os.getenv('D')\ne = os.environ.pop('E', '')\nos.environ['F'] = '1'\n"
                    "f = {**os.environ}\n")
    assert _env_reads(code) == [2, 3, 4, 5, 6]


def test_accessors_read_at_call_time_and_treat_empty_as_unset(monkeypatch, tmp_path):
    from speedbench import settings

    monkeypatch.setenv("SPEEDBENCH_SOURCES", str(tmp_path))
    assert settings.sources_dir() == tmp_path
    monkeypatch.setenv("SPEEDBENCH_SOURCES", "  ")
    assert settings.sources_dir() is None
    monkeypatch.delenv("SPEEDBENCH_SOURCES")
    assert settings.sources_dir() is None
    monkeypatch.setenv("SPEEDBENCH_KNOWN_BUILDS", f"a{__import__('os').pathsep}{__import__('os').pathsep}b")
    assert settings.known_builds_paths() == ["a", "b"]


def test_a_bad_number_names_its_variable(monkeypatch):
    from speedbench import settings

    monkeypatch.setenv("SPEEDBENCH_MAX_VALIDATIONS", "two")
    with pytest.raises(ValueError, match="SPEEDBENCH_MAX_VALIDATIONS='two': expected an integer"):
        settings.leaderboard_limit("SPEEDBENCH_MAX_VALIDATIONS", 2, int)
    monkeypatch.setenv("SPEEDBENCH_MAX_BUNDLE_MB", "1.5")
    assert settings.leaderboard_limit("SPEEDBENCH_MAX_BUNDLE_MB", 9.0) == 1.5
    with pytest.raises(KeyError, match="not a leaderboard limit"):
        settings.leaderboard_limit("HOME", 1)


def test_the_sweep_parent_pid_is_taken_once(monkeypatch):
    from speedbench import settings

    monkeypatch.setenv("SPEEDBENCH_SWEEP_PID", "4242")
    assert settings.take_sweep_parent_pid() == 4242
    assert settings.take_sweep_parent_pid() == 0

