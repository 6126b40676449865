"""RoleBench (ZenMoore/RoleBench): questions addressed to 100+ characters (English) and 5 Chinese ones.

Consecutive questions to the same role become multi-turn rows (1 to 5 turns); the first turn starts
with a role instruction. The role profiles are not in the mirror, so the instruction uses the role name.
"""
from __future__ import annotations

from itertools import groupby

from speedbench.dataset_builder.sources import HubFile
from speedbench.dataset_builder.sources._read import chunk_by_pattern, field, read_jsonl
from speedbench.dataset_builder.sources._roleplay import role_instruction
from speedbench.schema import DatasetRow

SOURCE = "ZenMoore/RoleBench"
LICENSE = "Apache-2.0"
FEEDS = ("roleplay",)
FILES = {  # mirror path -> (path in the Hub repo, language, subset)
    "rolebench/eng_instruction-generalization_role_specific_test.jsonl":
        ("rolebench-eng/instruction-generalization/role_specific/test.jsonl", "en", "eng_instruction_generalization"),
    "rolebench/eng_role-generalization_role_specific_test.jsonl":
        ("rolebench-eng/role-generalization/role_specific/test.jsonl", "en", "eng_role_generalization"),
    "rolebench/zh_role_specific_test.jsonl": ("rolebench-zh/role_specific/test.jsonl", "zh", "zh"),
}
HUB = HubFile(SOURCE, {mirror: hub for mirror, (hub, _, _) in FILES.items()},
              revision="f5cf63b5ea9bdb1061a294e4f08b184a72a564c8")
TURN_GROUPS = (1, 1, 1, 1, 2, 1, 1, 3, 1, 1, 4, 1, 5)


def candidates(files) -> list[DatasetRow]:
    rows = []
    for mirror, (_, language, subset) in FILES.items():
        path = files.path(mirror, HUB)
        items = []
        for lineno, obj in read_jsonl(path):
            items.append((lineno, field(obj, "role", path, lineno).strip(), field(obj, "question", path, lineno).strip()))
        for role, same_role in groupby(items, key=lambda item: item[1]):
            for group in chunk_by_pattern(list(same_role), TURN_GROUPS):
                first_line = group[0][0]
                src_id = f"{subset}/{first_line}" + (f"-{group[-1][0]}" if len(group) > 1 else "")
                instruction = role_instruction(role, src_id, language=language)
                turns = [f"{instruction}\n\n{group[0][2]}"] + [question for _, _, question in group[1:]]
                rows.append(DatasetRow(
                    category="roleplay", sub_category=f"rolebench/{subset}", turns=turns, source=SOURCE,
                    src_id=src_id, language=language, license=LICENSE))
    return rows
