"""The diversity report: mean pairwise cosine similarity per category, as a table and heatmaps.

Three sets per category: ours (the selected rows), random (a uniform sample of the same size from
the same pool, the paper's "random" baseline) and Spec-Bench's own prompts mapped to the category
(where Spec-Bench has one). Lower is more diverse. Written to ``reports/`` in the dataset folder.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from speedbench.dataset_builder.selection.objective import mean_pairwise_similarity, similarity_matrix

REPORT_DIR = "reports"


@dataclass
class CategoryDiversity:
    category: str
    pool_size: int
    selected: int
    ours: float
    random: float
    specbench: float | None
    specbench_rows: int
    matrices: dict[str, np.ndarray]


def measure(category: str, pool_embeddings: np.ndarray, chosen: np.ndarray, random_chosen: np.ndarray,
            specbench_embeddings: np.ndarray | None) -> CategoryDiversity:
    matrices = {"greedy+swap": similarity_matrix(pool_embeddings, chosen),
                "random": similarity_matrix(pool_embeddings, random_chosen)}
    spec = None
    if specbench_embeddings is not None and len(specbench_embeddings) >= 2:
        everything = np.arange(len(specbench_embeddings))
        spec = mean_pairwise_similarity(specbench_embeddings, everything)
        matrices["Spec-Bench"] = similarity_matrix(specbench_embeddings, everything)
    return CategoryDiversity(
        category=category, pool_size=len(pool_embeddings), selected=len(chosen),
        ours=mean_pairwise_similarity(pool_embeddings, chosen),
        random=mean_pairwise_similarity(pool_embeddings, random_chosen), specbench=spec,
        specbench_rows=0 if specbench_embeddings is None else len(specbench_embeddings), matrices=matrices)


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def markdown_table(results: list[CategoryDiversity], embedder_id: str) -> str:
    lines = [
        "## Diversity report (mean pairwise cosine similarity, lower = more diverse)",
        "",
        f"Embeddings: `{embedder_id}`. *random*: a uniform sample of the same size from the same pool. "
        "*Spec-Bench*: its own prompts in the matching category (`specbench/question.jsonl`), which are "
        "never candidates, so this compares two disjoint sets.",
        "",
        "| category | pool | greedy+swap | random | Spec-Bench (rows) | vs random | vs Spec-Bench |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        spec = f"{r.specbench:.3f} ({r.specbench_rows})" if r.specbench is not None else "-"
        vs_random = f"{(r.ours - r.random) / abs(r.random) * 100:+.0f}%" if r.random else "-"
        vs_spec = f"{(r.ours - r.specbench) / abs(r.specbench) * 100:+.0f}%" if r.specbench else "-"
        lines.append(f"| {r.category} | {r.pool_size} | {r.ours:.3f} | {r.random:.3f} | {spec} | {vs_random} | {vs_spec} |")
    overlap = [r for r in results if r.specbench is not None]
    ours_all, random_all = _mean([r.ours for r in results]), _mean([r.random for r in results])
    ours_overlap, spec_overlap = _mean([r.ours for r in overlap]), _mean([r.specbench for r in overlap])
    lines.append(f"| **mean (all)** | | **{ours_all:.3f}** | **{random_all:.3f}** | | "
                 f"{(ours_all - random_all) / abs(random_all) * 100:+.0f}% | |")
    if overlap:
        lines.append(f"| **mean (categories Spec-Bench has)** | | **{ours_overlap:.3f}** | | **{spec_overlap:.3f}** | | "
                     f"{(ours_overlap - spec_overlap) / abs(spec_overlap) * 100:+.0f}% |")
    below = sum(r.ours < r.random for r in results)
    lines += ["", f"greedy+swap is below random in {below} of {len(results)} categories."]
    return "\n".join(lines)


def write_report(out_dir: Path, results: list[CategoryDiversity], embedder_id: str) -> tuple[str, list[Path]]:
    """Write ``reports/diversity.md``, one heatmap PNG per category and a bar chart; return (markdown, files)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(out_dir) / REPORT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    metadata = {"Software": None}   # no version string or date: same inputs, same bytes
    for r in results:
        fig, axes = plt.subplots(1, len(r.matrices), figsize=(4.2 * len(r.matrices), 4), squeeze=False)
        for ax, (label, matrix) in zip(axes[0], r.matrices.items()):
            shown = matrix.copy()
            np.fill_diagonal(shown, np.nan)
            image = ax.imshow(shown, vmin=-0.1, vmax=1.0, cmap="viridis", interpolation="nearest")
            mean = (matrix.sum() - np.trace(matrix)) / max(1, matrix.shape[0] * (matrix.shape[0] - 1))
            ax.set_title(f"{label} (n={matrix.shape[0]}, mean={mean:.3f})", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
        fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="cosine similarity")
        fig.suptitle(f"{r.category}: pairwise similarity", fontsize=11)
        path = folder / f"heatmap_{r.category}.png"
        fig.savefig(path, dpi=80, metadata=metadata)
        plt.close(fig)
        written.append(path)

    fig, ax = plt.subplots(figsize=(10, 4))
    positions = np.arange(len(results))
    ax.bar(positions - 0.27, [r.ours for r in results], 0.27, label="greedy+swap")
    ax.bar(positions, [r.random for r in results], 0.27, label="random (same pool)")
    ax.bar(positions + 0.27, [r.specbench if r.specbench is not None else 0 for r in results], 0.27,
           label="Spec-Bench")
    ax.set_xticks(positions, [r.category for r in results], rotation=30, ha="right")
    ax.set_ylabel("mean pairwise cosine similarity")
    ax.legend()
    fig.tight_layout()
    path = folder / "diversity.png"
    fig.savefig(path, dpi=80, metadata=metadata)
    plt.close(fig)
    written.append(path)

    markdown = markdown_table(results, embedder_id)
    body = markdown + "\n\n![diversity per category](diversity.png)\n\n" + "\n".join(
        f"![{r.category}](heatmap_{r.category}.png)" for r in results) + "\n"
    (folder / "diversity.md").write_text(body, encoding="utf-8")
    written.append(folder / "diversity.md")
    return markdown, written
