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
