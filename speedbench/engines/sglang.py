"""SGLang: per-request statistics in ``meta_info`` with speculation on; counters with ``--enable-metrics``."""
from speedbench.engines.spec import CounterNames, EngineSpec

SPEC = EngineSpec(
    name="sglang", label="SGLang", adapter="speedbench.client.engines.sglang:SGLangAdapter",
    stats_source="sglang.meta_info",
    counters=CounterNames("sglang.prometheus", "sglang:spec_verify_calls_total",
                          verify_steps="sglang:spec_verify_calls_total",
                          generation_tokens="sglang:generation_tokens_total"),
    source_flags={"engine": "speculative decoding on (meta_info spec_* fields)",
                  "counters": "python -m sglang.launch_server --enable-metrics"},
    local=True, standin=True,
)
