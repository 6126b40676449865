"""TensorRT-LLM (``trtllm-serve``): ``/perf_metrics`` per request, iteration statistics as counters.
Needs a GPU: the tests use a stand-in (tests/standins/)."""
from speedbench.engines.spec import CounterNames, EngineSpec, ScheduleForm

SPEC = EngineSpec(
    name="trtllm", label="TensorRT-LLM", adapter="speedbench.client.engines.trtllm:TrtLlmAdapter",
    stats_source="trtllm.perf_metrics",
    counters=CounterNames("trtllm.prometheus", "trtllm_spec_decode_num_draft_tokens_total",
                          draft_tokens="trtllm_spec_decode_num_draft_tokens_total",
                          accepted_tokens="trtllm_spec_decode_num_accepted_tokens_total"),
    source_flags={"engine": "return_perf_metrics: true and perf_metrics_max_requests in the server config",
                  "counters": "return_perf_metrics: true and enable_iter_perf_stats: true in the server config"},
    standin=True,
    schedule_form=ScheduleForm(writer="speedbench.engine.schedule_forms:trtllm_schedule", key="draft_len_schedule"),
)
