"""What a stand-in engine simulates: speculative decoding with known acceptance rates, per request.

At every decode step a draft is proposed with probability ``draft_probability`` (1.0 for a draft
model or EAGLE; below 1 for n-gram speculation, where only steps whose n-gram matched carry a
draft); a drafted step accepts position i with probability AR_i given positions < i were, so it
emits ``1 + accepted`` tokens; the prefill emits one token first. The last step is cut at
``max_tokens`` while its accepted drafts are still counted, as the engines count them (vLLM: 36
counted, 35 emitted); a step that ends at EOS counts only what it emitted. How the steps reach the client is the chunking: ``coalesce`` steps per
chunk (a lagging frontend), or every ``stall_every``-th chunk arriving ``stall_s`` late with
``stall_steps`` steps merged into it (vLLM's frontend after a stall, even at concurrency 1).
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field


@dataclass
class Simulation:
    """What the stand-in pretends to be.

    conditional_rates: AR_1..AR_K (K = len; empty: no speculation). output_tokens: tokens per
    request when it does not end earlier through max_tokens (None: always max_tokens).
    eos_after: stop with finish_reason "stop" after this many tokens unless ignore_eos.
    draft_probability: chance that a decode step carries a draft (n-gram: < 1).
    per_request_metrics: vLLM's ``--per-request-spec-decode-metrics`` (the usage chunk's
    ``metrics.speculative_decoding``). sglang_legacy_names: ``spec_accept_token_num`` /
    ``spec_draft_token_num`` instead of the newer names. metrics_enabled: SGLang
    ``--enable-metrics``; return_perf_metrics / enable_iter_perf_stats: TensorRT-LLM's server
    config (``/prometheus/metrics`` and ``/perf_metrics`` need the first, its speculative
    counters the second).
    """

    conditional_rates: list[float] = field(default_factory=lambda: [0.8, 0.6, 0.4])
    output_tokens: int | None = None
    eos_after: int | None = None
    ttft_s: float = 0.0
    step_s: float = 0.0
    seed: int = 0
    coalesce: int = 1
    draft_probability: float = 1.0
    stall_every: int = 0
    stall_steps: int = 2
    stall_s: float = 0.0
    stamp_send_time: bool = False
    model: str = "standin/model"
    version: str = "0.0-standin"
    per_request_metrics: bool = True
    sglang_legacy_names: bool = False
    # SGLang draft tree: top-k branching (1: a chain of K) and its node count (None: K, a chain);
    # K is then the tree's depth (the most drafts one verify can accept).
    sglang_topk: int = 1
    sglang_tree_nodes: int | None = None
    # SGLang refreshes its spec_* gauges on the decode log line, every this many decode steps.
    sglang_decode_log_interval: int = 40
    metrics_enabled: bool = True
    return_perf_metrics: bool = True
    enable_iter_perf_stats: bool = True
    perf_metrics_max_requests: int = 1000
    faults: dict[str, str] = field(default_factory=dict)

    @property
    def draft_length(self) -> int:
        return len(self.conditional_rates)

    @classmethod
    def from_profile(cls, path, category: str | None = None, **fields) -> "Simulation":
        """A simulation replaying a speculation profile (``speedbench profile``): its marginal rates
        ``P(>= i)`` as the conditional rates this stand-in draws, ``AR_i = P(>= i) / P(>= i-1)``."""
        from speedbench.engine.config import synthetic_rates_from
        from speedbench.metrics.acceptance.formulas import conditional_from_marginal

        marginal = synthetic_rates_from(path, category)
        return cls(conditional_rates=conditional_from_marginal(marginal).tolist(), **fields)

    @property
    def proposed_per_step(self) -> int:
        """Draft tokens one SGLang verify proposes: K for a chain, the node count for a tree."""
        return self.sglang_tree_nodes or self.draft_length


def prompt_key(ids: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()


@dataclass
class StepPlan:
    """One request as simulated: tokens per step (prefill first), and per decode step whether it
    drafted and how many drafts it accepted (counted even when the cut last step did not emit them)."""

    sizes: list[int]
    drafted: list[bool]
    accepted_all: list[int]
    finish: str

    @property
    def accepted(self) -> list[int]:
        """Accepted drafts per *drafted* step (what engines' per-request statistics count)."""
        return [a for a, d in zip(self.accepted_all, self.drafted) if d]


def simulate_steps(sim: Simulation, prompt_ids: list[int], max_tokens: int, ignore_eos: bool) -> StepPlan:
    rng = random.Random(f"{sim.seed}:{prompt_key(prompt_ids)}")
    limit = max_tokens if sim.output_tokens is None else min(max_tokens, sim.output_tokens)
    finish = "length"
    if sim.eos_after is not None and not ignore_eos and sim.eos_after < limit:
        limit, finish = sim.eos_after, "stop"
    sizes, drafted, accepted = [1], [], []
    total = 1
    while total < limit:
        draft = bool(sim.conditional_rates) and rng.random() < sim.draft_probability
        drafts = 0
        if draft:
            for rate in sim.conditional_rates:
                if rng.random() < rate:
                    drafts += 1
                else:
                    break
        size = min(1 + drafts, limit - total)  # the last step is cut at the limit
        if finish == "stop" and size < 1 + drafts:
            drafts = size - 1  # EOS ends the step: nothing after it was accepted
        drafted.append(draft)
        accepted.append(drafts)
        sizes.append(size)
        total += size
    return StepPlan(sizes, drafted, accepted, finish)


def chunk_groups(sim: Simulation, sizes: list[int]) -> list[tuple[list[int], float]]:
    """Steps per streamed chunk, with each chunk's extra delay (a stall), prefill first."""
    groups: list[tuple[list[int], float]] = [(sizes[:1], 0.0)]
    i, chunk = 1, 0
    while i < len(sizes):
        chunk += 1
        if sim.stall_every and chunk % sim.stall_every == 0:
            groups.append((sizes[i:i + sim.stall_steps], sim.stall_s))
            i += sim.stall_steps
        else:
            groups.append((sizes[i:i + sim.coalesce], 0.0))
            i += sim.coalesce
    return groups


class Counters:
    """The engine-side counters the stand-ins expose (drafted steps only count drafts)."""

    def __init__(self, draft_length: int, proposed_per_step: int | None = None, log_interval: int = 0):
        self.k = draft_length
        # SGLang's gauges: computed over the steps since the last decode log line, refreshed
        # only every ``log_interval`` verify steps (0 before the first refresh).
        self.proposed_per_step = proposed_per_step or draft_length
        self.log_interval = log_interval
        self.gauges: dict[str, float] = {}
        self._window = [0, 0]  # verify steps, accepted drafts since the last refresh
        self.drafts = 0
        self.draft_tokens = 0
        self.accepted = 0
        self.per_position = [0] * draft_length
        self.generation_tokens = 0
        self.prompt_tokens = 0
        self.requests = 0
        self.verify_calls = 0

    def add(self, plan: StepPlan, prompt_tokens: int) -> None:
        self.tick_gauges(plan.accepted_all)
        self.requests += 1
        self.prompt_tokens += prompt_tokens
        self.generation_tokens += sum(plan.sizes)
        self.verify_calls += len(plan.accepted_all)
        accepted = plan.accepted
        self.drafts += len(accepted)
        self.draft_tokens += self.k * len(accepted)
        self.accepted += sum(accepted)
        for a in accepted:
            for position in range(a):
                self.per_position[position] += 1

    def tick_gauges(self, accepted_per_step: list[int]) -> None:
        """Called before ``verify_calls`` counts these steps (SGLang logs per decode step)."""
        for index, accepted in enumerate(accepted_per_step, start=1):
            self._window[0] += 1
            self._window[1] += accepted
            if self.log_interval and (self.verify_calls + index) % self.log_interval == 0:
                steps, total = self._window
                self.gauges = {"spec_accept_length": 1 + total / steps,
                               "spec_accept_rate": total / (steps * self.proposed_per_step) if self.proposed_per_step else 0.0}
                self._window = [0, 0]
