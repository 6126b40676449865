"""SGLang: per-request statistics in ``meta_info`` with speculation on; counters with ``--enable-metrics``."""
from speedbench.engines.spec import CounterNames, EngineSpec, LocalLauncher, ScheduleForm

SPEC = EngineSpec(
    name="sglang", label="SGLang", adapter="speedbench.client.engines.sglang:SGLangAdapter",
    stats_source="sglang.meta_info",
    counters=CounterNames("sglang.prometheus", "sglang:spec_verify_calls_total",
                          verify_steps="sglang:spec_verify_calls_total",
                          generation_tokens="sglang:generation_tokens_total"),
    source_flags={"engine": "speculative decoding on (meta_info spec_* fields)",
                  "counters": "python -m sglang.launch_server --enable-metrics"},
    local=True, standin=True, peer_view="sglang",
    # ~65-80 s to start on 2 idle cores (kernels stood in by plain torch); NGRAM, or STANDALONE (a separate
    # draft model) as a chain or as a tree (speedbench.engine.sglang).
    launcher=LocalLauncher(label="SGLang server (kernels: speed-bench's CPU stand-in)",
                           banner="SGLang (CPU kernel stand-in, not for timing; ",
                           server="sglang (sgl_kernel: speed-bench CPU stand-in)", startup_timeout_s=900.0,
                           stop_timeout_s=40.0, speculation_modes=("none", "ngram", "draft", "draft-tree"),
                           hf_models=True, supervised="speedbench.engine.sglang", version_route="/server_info"),
    # SGLang reads its adaptive config from a file (--speculative-adaptive-config FILE)
    schedule_form=ScheduleForm(writer="speedbench.engine.schedule_forms:sglang_schedule", key="speculative_adaptive_config", as_file=True),
)
