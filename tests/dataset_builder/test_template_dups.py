"""Template-only near-duplicates (a courtesy prefix or suffix, a repeat marker, spacing) are removed before selection.

Prompts built from one template that ask different things are not variants: real BIG-Bench-Hard
items (shared instructions and answer suffix, a different expression, sequence or shuffle), a
math problem and the same one squared, one HumanEval problem in two languages.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq

from speedbench.cli import main
from speedbench.dataset_builder.selection.template_dups import template_duplicates
from speedbench.dataset_builder.sources import bbh

DECORATIONS = (
    lambda t: t,
    lambda t: "Hi there! " + t,
    lambda t: t + " Thank you so much in advance!",
    lambda t: "(asked again) " + t.replace(" ", "  ") + "\n",
)
BBH_TASKS = ("boolean_expressions", "dyck_languages", "navigate", "logical_deduction_three_objects",
             "tracking_shuffled_objects_three_objects", "penguins_in_a_table", "causal_judgement", "object_counting")


def base_prompts(sources_dir: Path, n: int, low: int = 40, high: int = 301) -> list[str]:
    """Distinct real first turns from MT-Bench-101 (one per dialogue, ``low`` to ``high - 1`` characters)."""
    seen, out = set(), []
    for line in (sources_dir / "mtbench101" / "mtbench101.jsonl").read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["history"][0]["user"].strip()
        if low <= len(text) < high and text.lower() not in seen:
            seen.add(text.lower())
            out.append(text)
        if len(out) == n:
            break
    return out


def test_variants_are_found_and_the_first_kept(sources_dir):
    bases = base_prompts(sources_dir, 30)
    texts = [decorate(b) for b in bases for decorate in DECORATIONS]
    found = template_duplicates(texts)
    # every decorated copy is dropped for the plain prompt before it (position 4i)
    assert found.kept_for == {4 * i + j: 4 * i for i in range(30) for j in (1, 2, 3)}
    assert template_duplicates(texts, extra=0).count == 0


def test_a_question_asked_twice_is_a_variant_and_turns_must_line_up(sources_dir):
    bases = base_prompts(sources_dir, 3)
    texts = [bases[0], bases[0] + "\n\nI repeat: " + bases[0], bases[1], bases[2]]
    assert template_duplicates(texts).kept_for == {1: 0}
    # a two-turn prompt whose first turn is another prompt is a different workload, not a variant
    assert template_duplicates([[bases[1]], [bases[1], "Thanks, and shorter please."]]).count == 0
    assert template_duplicates([[bases[1], bases[2]], ["Hi! " + bases[1], bases[2] + " Thanks!"]]).kept_for == {1: 0}


def test_bbh_items_sharing_a_template_are_not_variants(sources_dir):
    """2,016 real BBH questions were once dropped as variants of others; none is one."""
    texts = []
    for task in BBH_TASKS:
        examples = json.loads((sources_dir / "bbh" / f"{task}.json").read_text(encoding="utf-8"))["examples"]
        texts += [e["input"] + bbh.SUFFIX for e in examples]
    # only texts equal but for case and spacing may go (BBH repeats a few inputs verbatim)
    seen: dict[str, int] = {}
    expected = {i: seen.setdefault(" ".join(t.lower().split()), i) for i, t in enumerate(texts)}
    expected = {i: j for i, j in expected.items() if i != j}
    assert len(texts) > 1500 and template_duplicates(texts).kept_for == expected


def test_different_content_inside_one_template_is_kept(sources_dir):
    pairs = [
        # RISE MATH 238 / 284: the same expression, squared or not
        ("Evaluate $\\left\\lceil\\left(\\frac{7}{4}\\right)^2\\right\\rceil^2$",
         "Evaluate $\\left\\lceil\\left(\\frac{7}{4}\\right)^2\\right\\rceil$."),
        ("not ( True ) and ( True ) is" + bbh.SUFFIX, "not ( True ) and ( False ) is" + bbh.SUFFIX),
        ("Find x if 2x = 10. Thank you!", "Find x if 2x = 100. Thank you!"),    # contained, but not as whole words
    ]
    for a, b in pairs:
        assert template_duplicates([a, b]).count == 0, (a, b)
    tasks = [json.loads(line) for line in gzip.open(sources_dir / "humaneval_x" / "humaneval_python.jsonl.gz", "rt")]
    js = [json.loads(line) for line in gzip.open(sources_dir / "humaneval_x" / "humaneval_js.jsonl.gz", "rt")]
    assert template_duplicates([tasks[74]["prompt"], js[74]["prompt"], tasks[38]["prompt"], tasks[50]["prompt"]]).count == 0


def test_prompts_sharing_a_passage_or_differing_in_a_word_are_kept():
    passage = ("The Amazon rainforest covers much of the Amazon basin of South America. This basin encompasses "
               "seven million square kilometres, of which five and a half million are covered by the rainforest. ")
    texts = [passage + "Question: How large is the basin?", passage + "Summarize the passage in one sentence for a child.",
             "I cannot log in since January", "I cannot log in since February"]
    assert template_duplicates(texts).count == 0


def test_curate_selects_no_two_variants_of_one_prompt(sources_dir, tmp_path):
    bases = base_prompts(sources_dir, 40)
    records = [{"id": f"p{i}-v{j}", "group": "chat", "text": decorate(b)}
               for i, b in enumerate(bases) for j, decorate in enumerate(DECORATIONS)]
    source = tmp_path / "pool.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "out"
    code = main(["curate", str(source), "--text-field", "text", "--group-by", "group", "--id-field", "id",
                 "--per-group", "30", "--config", "chat", "--out", str(out), "--no-progress",
                 "--embedding-cache", str(tmp_path / "cache")])
    assert code == 0
    chosen = pq.read_table(out / "data" / "chat" / "test-00000-of-00001.parquet").column("src_id").to_pylist()
    assert len(chosen) == 30 and len({c.split("-")[0] for c in chosen}) == 30
    manifest = json.loads((out / "manifest.json").read_text())
    groups = manifest["configs"]["chat"]["stats"]["groups"]["chat"]
    assert groups["template_variants_removed"] == 120 and groups["pool"] == 40
    assert "| chat | 160 | 120 |" in (out / "README.md").read_text()


def test_short_prompts_with_a_long_template_are_compared(sources_dir):
    """LSH must propose the pair before the verdict can see it: 40-79-character prompts, 80 characters added."""
    bases = base_prompts(sources_dir, 2000, low=40, high=80)
    decoration = "Thank you so much for taking the time to help me with this, I really appreciate it!"[:79]
    texts = [t for i, b in enumerate(bases) for t in (b, f"{decoration} {b}" if i % 2 else f"{b} {decoration}")]
    found = template_duplicates(texts).kept_for
    share = sum(found.get(2 * i + 1) == 2 * i for i in range(len(bases))) / len(bases)
    assert len(bases) > 500 and share >= 0.95          # measured 97.0% at threshold 0.2 (0.3: 86.5%)
