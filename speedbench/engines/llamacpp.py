"""llama.cpp (``llama-server``): per-step ``timings`` on every streamed event, counters with ``--metrics``.

Its ``verify_steps`` are decode steps (``n_draft_verif_steps`` is not sent per request) and each
event says which step it is, so a chunk is one step, never a merge of several. Its draft never runs
past ``max_tokens``: a step drafts ``min(K, tokens left - 1)`` (``n_predict`` bounds the draft), so
which step drafted how many tokens follows from the stream, checked against ``draft_n``."""
from speedbench.engines.spec import CounterNames, EngineSpec, LocalLauncher

SPEC = EngineSpec(
    name="llamacpp", label="llama.cpp", adapter="speedbench.client.engines.llamacpp:LlamaCppAdapter",
    stats_source="llamacpp.timings",
    counters=CounterNames("llamacpp.prometheus", "llamacpp:spec_decode_num_drafts_total",
                          drafts="llamacpp:spec_decode_num_drafts_total",
                          draft_tokens="llamacpp:spec_decode_num_draft_tokens_total",
                          accepted_tokens="llamacpp:spec_decode_num_accepted_tokens_total",
                          generation_tokens="llamacpp:tokens_predicted_total", per_position=True),
    source_flags={"engine": "speculation on (-md / --spec-type); timings_per_token is sent by the client",
                  "counters": "llama-server --metrics"},
    verify_steps_are_decode_steps=True, chunks_are_engine_steps=True, drafts_fit_the_budget=True, local=True, aliases=("llama.cpp",),
    peer_view="llamacpp",
    launcher=LocalLauncher(label="llama.cpp server (xllamacpp)", banner="llama.cpp (xllamacpp ", server="xllamacpp",
                           startup_timeout_s=60.0, stop_timeout_s=10.0, health_says_ok=True, replays_profiles=True),
)
