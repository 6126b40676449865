"""SPEED-Bench acceptance metric: acceptance length (AL) and per-position acceptance rates of
speculative decoding, with bootstrap confidence intervals, overall and per category.

A thin wrapper: the math lives in ``speedbench.metrics.acceptance``.
"""
import datasets
import evaluate

from speedbench import CITATION, PAPER_URL
from speedbench.metrics.acceptance import (
    TrimRules,
    acceptance_from_counters,
    requests_from_counts,
    requests_from_histograms,
    requests_from_per_step,
    requests_from_step_sizes,
    summarize_acceptance,
)
from speedbench.metrics.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_NUM_RESAMPLES, DEFAULT_SEED
from speedbench.metrics.evaluate_support import ValidatedInputsMixin, column_or_none, ids_or_row_numbers

_CITATION = CITATION

_DESCRIPTION = """\
Acceptance of draft tokens in speculative decoding, as measured by SPEED-Bench.
With K draft tokens per verification step and h_j the number of steps that accepted
exactly j of them: marginal P(>= i) = sum_{j>=i} h_j / n, conditional rate per position
AR_i = P(>= i) / P(>= i-1) (0 for a position never reached), and acceptance length
AL = 1 + sum_{i=1..K} prod_{j<=i} AR_j = 1 + accepted / steps. AL is reported step-weighted
(all steps pooled) and request-weighted (mean of per-request ALs, as the published
reference does), with seeded percentile bootstrap intervals over requests, overall and per
category. Five input forms (config names): "step_sizes" (default; streamed chunk sizes),
"histograms" (h_0..h_K per request), "counts" ((steps, accepted, drafted) per request),
"per_step" (each step's drafted and accepted counts per request, when the draft length varies
from step to step) and "counters" (run-level counter deltas). When K varies, AR_i counts position
i over the steps that drafted it and accepted every position before it; where drafted tokens fall
short of steps x K and no per-step counts say which step drafted what, the per-position rates are
null with the reason (per_position_null_reason).
"""

_KWARGS_DESCRIPTION = """
Args (config "step_sizes", the default):
    step_sizes (list of list of int): tokens in each streamed chunk of each request (or
        turn), first chunk included.
    categories (list of str, optional): category of each row (default "all").
    question_ids (list of str, optional): rows with the same id are the turns of one
        request; also what a paired comparison joins on. Default: every row its own request.
    finish_reasons (list of str, optional): "length" marks a request stopped at max_tokens.
Args (config "histograms"): histograms (list of list of int, h_0..h_K per request),
    categories, question_ids, finish_reasons.
Args (config "counts"): steps, accepted (lists of int, one per request), drafted (list of
    int, optional: default steps * draft_length), categories, question_ids, finish_reasons.
Args (config "per_step"): per_step_drafted, per_step_accepted (list of list of int: each step's
    drafted and accepted counts, per request), categories, question_ids, finish_reasons.
Args (config "counters"): num_drafts, num_draft_tokens, num_accepted_tokens (lists of int,
    one per run or category run), accepted_per_position (list of list of int), categories.
Keyword options:
    draft_length (int): K (the largest when it varies). Inferred as max step size - 1 with a
        warning when omitted (per_step: the largest draft of any step).
    first_chunk ("drop_if_lone" | "drop" | "keep"): default "drop_if_lone".
    last_chunk ("drop" | "keep"): default "drop".
    exclude_max_tokens_requests (bool): default False.
    merged_chunks ("exclude" | "raise"): a step > K+1 tokens; default "exclude".
    num_resamples (int, default 1000), confidence (float, default 0.95), seed (int, default 0).
Returns:
    acceptance_length (float, step-weighted), acceptance_length_request_weighted (float),
    acceptance_length_ci ([low, high]), acceptance_length_request_weighted_ci,
    conditional_acceptance_rate (K floats), marginal_acceptance_rate (K floats) and their
    _ci, mean_acceptance_rate, acceptance_histogram (h_0..h_K), num_requests, num_steps,
    num_max_tokens_requests, max_tokens_share, trim_report, checks_failed, warnings,
    draft_length_histogram ({"K": steps}), variable_draft_length, position_drafted_steps,
    position_reached_steps, position_accepted_steps, per_position_null_reason,
    per_category ({category: {same keys}}).
Examples:
    >>> import evaluate
    >>> al = evaluate.load("metrics/speedbench_al")
    >>> r = al.compute(step_sizes=[[1, 3, 2, 4, 1], [1, 4, 4, 2, 2]], categories=["math", "code"], draft_length=3)
    >>> round(r["acceptance_length"], 4), r["acceptance_histogram"]
    (3.1667, [0, 2, 1, 3])
    >>> [round(x, 4) for x in r["conditional_acceptance_rate"]]
    [1.0, 0.6667, 0.75]
    >>> sorted(r["per_category"])
    ['code', 'math']
    >>> hist = evaluate.load("metrics/speedbench_al", "histograms")
    >>> round(hist.compute(histograms=[[0, 2, 1, 3]])["acceptance_length"], 4)
    3.1667
"""

_INT = datasets.Value("int64")
_STR = datasets.Value("string")
_PER_REQUEST = {"categories": _STR, "question_ids": _STR, "finish_reasons": _STR}
_FEATURES = {
    "step_sizes": {"step_sizes": datasets.Sequence(_INT), **_PER_REQUEST},
    "histograms": {"histograms": datasets.Sequence(_INT), **_PER_REQUEST},
    "counts": {"steps": _INT, "accepted": _INT, "drafted": _INT, **_PER_REQUEST},
    "per_step": {"per_step_drafted": datasets.Sequence(_INT), "per_step_accepted": datasets.Sequence(_INT),
                 **_PER_REQUEST},
    "counters": {
        "num_drafts": _INT,
        "num_draft_tokens": _INT,
        "num_accepted_tokens": _INT,
        "accepted_per_position": datasets.Sequence(_INT),
        "categories": _STR,
    },
}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SpeedbenchAl(ValidatedInputsMixin, evaluate.Metric):
    """Acceptance length and per-position acceptance rates (SPEED-Bench)."""

    input_defaults = {"categories": "all", "question_ids": "", "finish_reasons": "", "drafted": -1,
                      "accepted_per_position": []}

    def _form(self) -> str:
        form = "step_sizes" if self.config_name == "default" else self.config_name
        if form not in _FEATURES:
            raise ValueError(f"unknown config {self.config_name!r}; choose one of {sorted(_FEATURES)}")
        return form

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(_FEATURES[self._form()]),
            reference_urls=[PAPER_URL],
        )

    def _compute(self, categories, question_ids=None, finish_reasons=None, draft_length=None,
                 first_chunk="drop_if_lone", last_chunk="drop", exclude_max_tokens_requests=False,
                 merged_chunks="exclude", num_resamples=DEFAULT_NUM_RESAMPLES, confidence=DEFAULT_CONFIDENCE,
                 seed=DEFAULT_SEED, **inputs):
        form = self._form()
        if form == "counters":
            per_position = inputs.pop("accepted_per_position")
            per_position = None if all(len(p) == 0 for p in per_position) else per_position
            return acceptance_from_counters(categories=categories, accepted_per_position=per_position,
                                            draft_length=draft_length, **inputs).to_dict()
        per_request = dict(categories=categories, question_ids=ids_or_row_numbers(question_ids),
                           finish_reasons=column_or_none(finish_reasons))
        if form == "step_sizes":
            rules = TrimRules(first_chunk=first_chunk, last_chunk=last_chunk, merged_chunks=merged_chunks,
                              exclude_max_tokens_requests=exclude_max_tokens_requests)
            table = requests_from_step_sizes(inputs["step_sizes"], draft_length=draft_length, rules=rules, **per_request)
        elif form == "per_step":
            table = requests_from_per_step(inputs["per_step_drafted"], inputs["per_step_accepted"],
                                           draft_length=draft_length,
                                           exclude_max_tokens_requests=exclude_max_tokens_requests, **per_request)
        elif form == "histograms":
            table = requests_from_histograms(inputs["histograms"], exclude_max_tokens_requests=exclude_max_tokens_requests, **per_request)
        else:
            drafted = None if all(d < 0 for d in inputs["drafted"]) else inputs["drafted"]
            table = requests_from_counts(inputs["steps"], inputs["accepted"], drafted, draft_length=draft_length,
                                         exclude_max_tokens_requests=exclude_max_tokens_requests, **per_request)
        return summarize_acceptance(table, num_resamples=num_resamples, confidence=confidence, seed=seed).to_dict()
