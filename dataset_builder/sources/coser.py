"""CoSER (Neph0s/CoSER test set): scenes from books with the characters' lines, filtered to public-domain books.

The model plays one major character; the user's turns are the other characters' lines (and the
environment) between that character's lines, with their private [thoughts] removed. Up to five
turns; the first carries the role instruction, the scenario and the character profile.
"""
from __future__ import annotations

import re

from speedbench.dataset_builder.sources import HubFile
from speedbench.dataset_builder.sources._read import SourceError, field, read_json
from speedbench.dataset_builder.sources._roleplay import role_instruction
from speedbench.schema import DatasetRow

SOURCE = "Neph0s/CoSER"
LICENSE = "public domain (book); CoSER states no license"
FILE = "coser/test_set.json"
HUB = HubFile(SOURCE, {FILE: "test/test_set.json"})
FEEDS = ("roleplay",)
MAX_TURNS = 5
PROFILE_CHARS = 1500
# Books in the test set whose text is in the public domain (the reference keeps only these).
PUBLIC_DOMAIN_BOOKS = {
    "Anna Karenina", "Around the World in Eighty Days", "Bleak House", "Don Quixote", "Dracula",
    "Frankenstein: The 1818 Text", "Great Expectations", "Les Misérables", "Little Women",
    "Moby-Dick or, The Whale", "Of Human Bondage", "Pericles and Aspasia: A Story of Ancient Greece",
    "Pride and Prejudice", "Tess of the D’Urbervilles", "The Complete Sherlock Holmes",
    "The Count of Monte Cristo", "The Idiot", "The Portrait of a Lady", "The Story of My Life",
    "The Woman in White", "War and Peace", "Wuthering Heights",
}
_THOUGHT = re.compile(r"\[[^\]]*\]")


def _spoken(message: str) -> str:
    return re.sub(r"\s+", " ", _THOUGHT.sub("", message)).strip()


def scene_turns(dialogues: list[dict], played: str) -> list[str]:
    """User turns: the others' lines up to each of ``played``'s lines (lines after the last one are dropped)."""
    turns, pending = [], []
    for line in dialogues:
        if line["character"] == played:
            if pending:
                turns.append("\n".join(pending))
                pending = []
        else:
            spoken = _spoken(line["message"])
            if spoken:
                pending.append(f"{line['character']}: {spoken}")
    return turns[:MAX_TURNS]


def candidates(files) -> list[DatasetRow]:
    path = files.path(FILE, HUB)
    scenes = read_json(path)
    if not isinstance(scenes, list):
        raise SourceError(f"{path}: expected a JSON list of scenes")
    rows = []
    for index, scene in enumerate(scenes):
        where = f"[{index}]"
        book = field(scene, "book", path, where)
        if book not in PUBLIC_DOMAIN_BOOKS:
            continue
        dialogues = field(scene, "dialogues", path, where, list)
        if not all(isinstance(d, dict) and "character" in d and "message" in d for d in dialogues):
            raise SourceError(f"{path}{where}: every dialogue line needs 'character' and 'message'")
        for played in field(scene, "major_characters", path, where, list):
            turns = scene_turns(dialogues, played)
            if not turns:
                continue
            src_id = f"test_set/{index}/{played}"
            profile = str(scene.get("character_profiles", {}).get(played, "")).strip()
            if len(profile) > PROFILE_CHARS:
                profile = profile[:PROFILE_CHARS].rsplit(" ", 1)[0] + " ..."
            header = role_instruction(played, src_id, context=f" from {book}")
            header += f"\n\nScenario: {field(scene, 'scenario', path, where)}"
            if profile:
                header += f"\n\nYour character ({played}): {profile}"
            turns[0] = f"{header}\n\n{turns[0]}"
            rows.append(DatasetRow(
                category="roleplay", sub_category="coser/book_character", turns=turns, source=SOURCE,
                src_id=src_id, license=LICENSE))
    return rows
