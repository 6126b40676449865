"""Template-only near-duplicates (a courtesy prefix or suffix, a repeat marker, spacing) are removed before selection."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from speedbench.cli import main
from speedbench.dataset_builder.selection.template_dups import template_duplicates

DECORATIONS = (
    lambda t: t,
    lambda t: "Hi there! " + t,
    lambda t: t + " Thank you so much in advance!",
    lambda t: "(asked again) " + t.replace(" ", "  ") + "\n",
)


def base_prompts(sources_dir: Path, n: int) -> list[str]:
    """Distinct real first turns from MT-Bench-101 (one per dialogue, short ones)."""
    seen, out = set(), []
    for line in (sources_dir / "mtbench101" / "mtbench101.jsonl").read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["history"][0]["user"].strip()
        if 40 <= len(text) <= 300 and text.lower() not in seen:
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
