"""Resolving the published nvidia/SPEED-Bench placeholder rows the way the reference resolver does.

``srcid`` reads where a row comes from (v1.0 and v1.1 ``src_id``), ``tables`` reads those source
rows from the offline mirror or, with ``--online``, the Hub at the reference's pinned revisions,
``formats`` holds the reference's prompt formats and ``resolvers`` puts them together per source.
``resolve_row`` is the entry point used by ``speedbench resolve`` (``redistribution.resolve_rows``).
"""
from __future__ import annotations

from speedbench.dataset_builder.published.resolvers import RESOLVERS, Context, Resolution
from speedbench.dataset_builder.published.srcid import HUB_ID, source_key
from speedbench.dataset_builder.published.tables import OnlineRequired, SourceTables
from speedbench.schema import DatasetRow, placeholder_turns


def resolve_row(row: DatasetRow, ctx: Context) -> Resolution:
    """The row's turns rebuilt from its source; LookupError (with the reason) when that is not possible."""
    key = source_key(row.source)
    if key is None:
        raise LookupError(f"source {row.source!r} is not one the reference resolver rebuilds "
                          f"({', '.join(sorted(HUB_ID.values()))})")
    resolution = RESOLVERS[key](row, ctx)
    if not resolution.turns or placeholder_turns(resolution.turns):
        raise LookupError(f"{HUB_ID[key]}: the rebuilt turns are empty or still a placeholder")
    return resolution


def source_label(row: DatasetRow) -> str:
    key = source_key(row.source)
    return HUB_ID[key] if key else (row.source or "unknown")


__all__ = ["Context", "OnlineRequired", "Resolution", "SourceTables", "resolve_row", "source_label"]
