"""SPEED-Bench speedup metric: the Appendix-G estimate S = t_ar * AL / t_sd, its error against a
measured speedup, and the best draft length per batch size from a sweep.

A thin wrapper: the math lives in ``speedbench.metrics.speedup``.
"""
import datasets
import evaluate

from speedbench import CITATION, PAPER_URL
from speedbench.metrics.speedup import best_draft_length, estimate_speedup, measured_speedup
from speedbench.metrics.evaluate_support import ValidatedInputsMixin

_CITATION = CITATION

_DESCRIPTION = """\
Speedup of speculative decoding (SD) over autoregressive decoding, estimated as in SPEED-Bench
Appendix G: S = t_ar * AL / t_sd, where t_ar is the mean step latency of the baseline
(one token per step), t_sd the mean verification-step latency with SD, both measured at the
same input length and concurrency, and AL the acceptance length on the target domain.
Given the output tokens/s of a paired baseline and SD run, the measured speedup
(output TPS ratio) and the estimate's relative error are returned too. Config "sweep"
picks the best draft length per concurrency from sweep points.
"""

_KWARGS_DESCRIPTION = """
Args (default config):
    t_ar (list of float): step latencies of the baseline run, seconds (any number).
    t_sd (list of float): step latencies of the SD run, seconds (any number).
        Several (t_ar, t_sd) pairs can be given as lists of lists, one per operating point.
    acceptance_length (float or list of float): AL on the target domain (one per point).
    output_tps_ar, output_tps_sd (float, optional): output tokens/s of the paired baseline and
        SD runs; gives measured_speedup and estimate_error = (estimate - measured) / measured.
Args (config "sweep"):
    concurrency (list of int), draft_length (list of int), value (list of float: output TPS
    or speedup of each sweep point; draft length 0 may stand for the baseline).
Returns (default config):
    speedup_estimate, t_ar, t_sd (means), acceptance_length, num_ar_steps, num_sd_steps,
    measured_speedup, estimate_error (None without output TPS); lists when several points.
Returns (config "sweep"): best_draft_length ({concurrency: K}), best_value, metric.
Examples:
    >>> import evaluate
    >>> speedup = evaluate.load("metrics/speedbench_speedup")
    >>> r = speedup.compute(t_ar=[0.010, 0.010], t_sd=[0.015, 0.015, 0.015], acceptance_length=3.0)
    >>> round(r["speedup_estimate"], 6)
    2.0
    >>> r = speedup.compute(t_ar=[0.010], t_sd=[0.015], acceptance_length=3.0, output_tps_ar=100.0, output_tps_sd=190.0)
    >>> round(r["measured_speedup"], 3), round(r["estimate_error"], 4)
    (1.9, 0.0526)
    >>> sweep = evaluate.load("metrics/speedbench_speedup", "sweep")
    >>> sweep.compute(concurrency=[1, 1, 64, 64], draft_length=[3, 5, 3, 5], value=[90.0, 110.0, 900.0, 850.0])["best_draft_length"]
    {'1': 5, '64': 3}
"""

_FEATURES = {
    "default": {"t_ar": datasets.Sequence(datasets.Value("float64")), "t_sd": datasets.Sequence(datasets.Value("float64"))},
    "sweep": {
        "concurrency": datasets.Value("int64"),
        "draft_length": datasets.Value("int64"),
        "value": datasets.Value("float64"),
    },
}


def _is_flat(values) -> bool:
    return values is not None and len(values) > 0 and all(isinstance(v, (int, float)) for v in values)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SpeedbenchSpeedup(ValidatedInputsMixin, evaluate.Metric):
    """Appendix-G speedup estimate (SPEED-Bench)."""

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

    def reshape_inputs(self, batch):
        # one operating point given as two flat lists: store it as one row
        if self.config_name == "default" and _is_flat(batch.get("t_ar")) and _is_flat(batch.get("t_sd")):
            return {"t_ar": [list(batch["t_ar"])], "t_sd": [list(batch["t_sd"])]}
        return batch

    def _compute(self, t_ar=None, t_sd=None, acceptance_length=None, output_tps_ar=None, output_tps_sd=None,
                 concurrency=None, draft_length=None, value=None):
        if self.config_name == "sweep":
            return best_draft_length(concurrency, draft_length, value).to_dict()
        if acceptance_length is None:
            raise ValueError("acceptance_length: required (the AL measured on the target domain)")
        n = len(t_ar)
        per_point = lambda x: list(x) if isinstance(x, (list, tuple)) else [x] * n  # noqa: E731
        als, tps_ar, tps_sd = per_point(acceptance_length), per_point(output_tps_ar), per_point(output_tps_sd)
        if not (len(als) == len(tps_ar) == len(tps_sd) == n):
            raise ValueError(f"acceptance_length / output_tps_*: give one value or one per point ({n})")
        results = []
        for ar, sd, al, a, s in zip(t_ar, t_sd, als, tps_ar, tps_sd):
            measured = None if a is None or s is None else measured_speedup(a, s).output_tps_ratio
            results.append(estimate_speedup(ar, sd, al, measured_speedup=measured).to_dict())
        if n == 1:
            return results[0]
        return {key: [r[key] for r in results] for key in results[0]}
