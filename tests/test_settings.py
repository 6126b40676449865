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
