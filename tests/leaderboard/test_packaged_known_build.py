"""The leaderboard ships the descriptor of the default build from the source mirror; it must stay true."""
from speedbench.leaderboard.known_builds import KnownBuilds, dataset_fingerprint
from speedbench.schema import QUALITATIVE_CATEGORIES, THROUGHPUT_CATEGORIES

PACKAGED = "speed-bench 0.1.0 (offline source mirror, seed 0, default options)"


def _packaged():
    builds = [b for b in KnownBuilds.load(paths=[]).builds if b.name == PACKAGED]
    assert len(builds) == 1
    return builds[0]


def test_packaged_descriptor_describes_every_default_config():
    build = _packaged()
    assert sorted(build.configs) == sorted(["qualitative"] + [f"throughput_{n}k" for n in (1, 2, 8, 16, 32)])
    qualitative = build.configs["qualitative"].questions
    assert len(qualitative) == 880 and set(qualitative.values()) == set(QUALITATIVE_CATEGORIES)
    for name, config in build.configs.items():
        if name.startswith("throughput_"):
            assert len(config.questions) == 1536
            assert sorted(set(config.questions.values())) == sorted(THROUGHPUT_CATEGORIES)


def test_default_throughput_1k_build_matches_the_packaged_fingerprint(tmp_path, sources_dir):
    # A full-size bucket (3 x 512 rows) built from the mirror now must be the build the board knows.
    from speedbench.dataset_builder.registry import BuildContext, available_configs
    from speedbench.dataset_builder.writer import write_dataset

    out = tmp_path / "speed-bench"
    ctx = BuildContext(sources=sources_dir, out_dir=out, seed=0, options={}, progress=False)
    built = available_configs()["throughput_1k"](ctx)
    write_dataset(out, [built], {"configs": ["throughput_1k"], "seed": 0})
    assert dataset_fingerprint(out, "throughput_1k") == _packaged().configs["throughput_1k"].dataset_config_sha256
