"""SPEED-Bench latency and throughput metric: TTFT, step latency, TPOT per token, E2E, user and
output tokens/s, achieved concurrency (Little's law), and the Pareto frontier of a sweep.

A thin wrapper: the math lives in ``speedbench.metrics.latency``.
"""
import datasets
import evaluate

from speedbench import CITATION, PAPER_URL
from speedbench.metrics.evaluate_support import ValidatedInputsMixin
from speedbench.metrics.latency import pareto_frontier, summarize_latency, timings_from_lists

_CITATION = CITATION

_DESCRIPTION = """\
Latency and throughput of a serving run, from per-request timestamps as SPEED-Bench records
them: TTFT = t_1 - t_0; step latency = t_i - t_{i-1} (i >= 2, TTFT excluded); TPOT per token
= (t_i - t_{i-1}) / n_i counted once per token; E2E = t_N - t_0; user TPS =
(tokens - 1) / (t_N - t_1); output TPS = all tokens / (max t_N - min t_0); achieved
concurrency = sum E2E / run span (Little's law), next to the requested concurrency. Each
distribution as count / mean / std / min / p50 / p90 / p99 / max. Config "pareto" returns
the non-dominated (user TPS, output TPS) points of a sweep. Chunks with 0 tokens (usage-only
events) are dropped first: they are neither steps nor arrivals. An EOS token the engine
counts is output like any other token (the reference framework cuts it from the last chunk).
"""

_KWARGS_DESCRIPTION = """
Args (default config):
    send_times (list of float): when each request was (scheduled to be) sent, seconds.
    chunk_times (list of list of float): receive time of each streamed chunk (same clock).
    chunk_tokens (list of list of int): new tokens in each chunk (0-token chunks are ignored).
    categories (list of str, optional): per-request category for a breakdown (default "all").
    requested_concurrency (float, optional): reported next to the achieved concurrency.
Args (config "pareto"):
    user_tps (list of float), output_tps (list of float): one point per sweep run.
Returns (default config):
    num_requests, total_output_tokens, run_span, output_tps, request_throughput,
    requested_concurrency, achieved_concurrency, and {count, mean, std, min, p50, p90, p99,
    max} for ttft, e2e, step_latency, tpot, tpot_request_mean, user_tps, tokens_per_request,
    tokens_per_step; per_category ({category: {same keys}}).
Returns (config "pareto"): frontier (indices of the non-dominated points, by user TPS).
Examples:
    >>> import evaluate
    >>> latency = evaluate.load("metrics/speedbench_latency")
    >>> r = latency.compute(send_times=[0.0, 0.5], chunk_times=[[0.2, 0.3, 0.5], [0.9, 1.0]],
    ...                     chunk_tokens=[[1, 2, 3], [1, 1]], requested_concurrency=2)
    >>> r["output_tps"], r["achieved_concurrency"], round(r["ttft"]["mean"], 3)
    (8.0, 1.0, 0.3)
    >>> pareto = evaluate.load("metrics/speedbench_latency", "pareto")
    >>> pareto.compute(user_tps=[100.0, 80.0, 60.0, 70.0], output_tps=[100.0, 600.0, 900.0, 500.0])["frontier"]
    [2, 1, 0]
"""

_FEATURES = {
    "default": {
        "send_times": datasets.Value("float64"),
        "chunk_times": datasets.Sequence(datasets.Value("float64")),
        "chunk_tokens": datasets.Sequence(datasets.Value("int64")),
        "categories": datasets.Value("string"),
    },
    "pareto": {"user_tps": datasets.Value("float64"), "output_tps": datasets.Value("float64")},
}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SpeedbenchLatency(ValidatedInputsMixin, evaluate.Metric):
    """Latency and throughput (SPEED-Bench)."""

    input_defaults = {"categories": "all"}

    def _info(self):
        if self.config_name not in _FEATURES:
            raise ValueError(f"unknown config {self.config_name!r}; choose one of {sorted(_FEATURES)}")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(_FEATURES[self.config_name]),
            reference_urls=[PAPER_URL],
        )

    def _compute(self, send_times=None, chunk_times=None, chunk_tokens=None, categories=None,
                 requested_concurrency=None, user_tps=None, output_tps=None):
        if self.config_name == "pareto":
            return {"frontier": pareto_frontier(user_tps, output_tps).tolist()}
        timings = timings_from_lists(send_times, chunk_times, chunk_tokens)
        summary = summarize_latency(timings, requested_concurrency=requested_concurrency, categories=categories)
        return summary.to_dict()
