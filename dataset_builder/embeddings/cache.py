"""A content-addressed embedding cache: sha256(model id, text) -> float32 vector, in one SQLite file.

SQLite (standard library) keeps tens of thousands of vectors in one file, survives an interrupted
build (each batch is committed as it is embedded) and tolerates two builds sharing a cache.
"""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np

from speedbench import settings


def default_cache_dir() -> Path:
    base = settings.cache_dir() or Path.home() / ".cache" / "speedbench"
    return base / "embeddings"


def content_key(model_id: str, text: str) -> str:
    return hashlib.sha256(f"{model_id}\x1f{text}".encode("utf-8")).hexdigest()


class EmbeddingCache:
    def __init__(self, directory: Path | str | None = None):
        self.directory = Path(directory) if directory else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "embeddings.sqlite"
        self._db = sqlite3.connect(self.path, timeout=60)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, vector BLOB)")
        self._db.commit()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for key, dim, blob in self._db.execute(
                    f"SELECT key, dim, vector FROM vectors WHERE key IN ({marks})", chunk):
                vector = np.frombuffer(blob, dtype=np.float32)
                if vector.shape == (dim,):
                    found[key] = vector
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        rows = [(key, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for key, v in items.items()]
        self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
        self._db.commit()

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        self._db.close()
