"""Every prompt of a throughput bucket is distinct, even when selections repeat."""
import random
from collections.abc import Sequence

from speedbench.dataset_builder.throughput.base import Rendered, TaskType
from speedbench.dataset_builder.throughput.bucket import distinct_prompts
from speedbench.tokenization.o200k import count_tokens

TEXTS = {f"u{i}": f"Dialogue number {i}. " + " ".join(f"word{i}x{j}" for j in range(400)) for i in range(6)}
# u5 starts exactly like u0 for far more than the bucket length: it fits to the same prompt.
TEXTS["u5"] = TEXTS["u0"] + " and then something else entirely."


class RepeatingTask(TaskType):
    """Hands out the same few units again and again, like a reused dialogue pool."""
    name = "repeating"
    tier = "high_entropy"
    source = "test"

    def select(self, n_tokens: int, count: int, rng: random.Random) -> list[tuple[str, ...]]:
        return [(rng.choice(sorted(TEXTS)),) for _ in range(count)]

    def render(self, units: Sequence[str]) -> Rendered:
        return Rendered("Continue:\n", TEXTS[units[0]], "\nNow continue.\n")

    def unit_text(self, unit: str) -> str:
        return TEXTS[unit]


def test_repeats_are_skipped_and_replaced(tmp_path):
    task = RepeatingTask(tmp_path, unit_tokens=lambda unit: 1000)
    prompts, skipped = distinct_prompts(task, 200, 5, "throughput_test", seed=0)
    texts = [p.row.turns[0] for p in prompts]
    # Six units but u0 and u5 fit to the same 200 tokens: exactly 5 distinct prompts exist.
    assert len(texts) == 5 and len(set(texts)) == 5
    assert len({p.row.question_id for p in prompts}) == 5
    assert skipped > 0
    assert all(count_tokens(t) == 200 for t in texts)
    assert not ({p.units[0] for p in prompts} >= {"u0", "u5"})


def test_no_more_distinct_prompts_than_exist(tmp_path):
    task = RepeatingTask(tmp_path, unit_tokens=lambda unit: 1000)
    prompts, skipped = distinct_prompts(task, 200, 8, "throughput_test", seed=0)
    assert len(prompts) == 5 and skipped > 0
