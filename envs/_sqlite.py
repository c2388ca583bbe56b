"""SQLite helpers shared by the environments' on-disk worlds."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

BATCH = 50_000


def insert_batched(db: sqlite3.Connection, sql: str, rows: Iterable[tuple]) -> None:
    """``executemany`` in batches: a generator of millions of rows never sits in memory."""
    batch: list[tuple] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            db.executemany(sql, batch)
            batch.clear()
    if batch:
        db.executemany(sql, batch)
