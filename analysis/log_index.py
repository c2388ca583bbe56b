"""An index of every episode under some run or log directories, for a viewer that must open
100,000 episodes in seconds.

Building it validates no record: each results line is parsed once with orjson for the few
fields a list shows and filters by (task, epoch, label, cause, F1, the copied-demonstration
flag, ...), and its byte offset is kept, so an opened episode is read and validated alone,
when it is opened. The index fills in a background thread (:meth:`LogIndex.build`); queries
answer from what is indexed so far and say how far that is. A stored (``.gz``) file is
decompressed once into memory: it cannot be read from an offset.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from raleval.records import RunHeader, Task, Trajectory
from raleval.store import GZ, RESULTS, TASKS, read_header, stored_file

QUESTION_CHARS = 300  # a row shows the start of its question; the episode view shows all of it
BATCH = 2000  # rows become visible to queries this many at a time


@dataclass
class IndexedRun:
    """One run directory: where its records are, and the name that tells it from the others."""

    path: Path
    system: str = "-"
    environment: str = "-"
    task_set: str = "-"
    episodes: int = 0
    # byte (offset, length) of each task's line in tasks.jsonl, by task id
    task_lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    results_bytes: bytes | None = None  # a stored .gz file, decompressed
    tasks_bytes: bytes | None = None
    header: RunHeader | None = None  # an Inspect log's, read when indexed
    inspect: bool = False  # an Inspect log file: its samples are read one at a time

    @property
    def name(self) -> str:
        return f"{self.system} ({self.environment}, {self.task_set})"


# one row per episode (the last attempt per task and epoch), as a tuple: 100,000 of them stay
# small. ``right`` is the rules' verdict (scores["correct"], else F1 >= 0.5).
ROW_FIELDS = (
    "run", "task_id", "epoch", "family", "level", "label", "cause", "f1", "right", "copied",
    "termination", "wall", "steps", "question", "diagnosis", "offset", "length",
)  # fmt: skip
RUN, TASK_ID, EPOCH, FAMILY, LEVEL, LABEL, CAUSE, F1, RIGHT, COPIED = range(10)
TERMINATION, WALL, STEPS, QUESTION, DIAGNOSIS, OFFSET, LENGTH = range(10, 17)


def cause_kind(cause: str) -> str:
    """A label's cause without its detail: ``TE:bad_arguments: 'x' ...`` -> ``TE:bad_arguments``."""
    return ":".join(cause.split(":")[:2]).strip()


def _read(path: Path) -> tuple[bytes | None, Any]:
    """``(bytes, None)`` for a stored .gz file (decompressed), else ``(None, open file)``."""
    if path.name.endswith(GZ):
        import gzip

        return gzip.decompress(path.read_bytes()), None
    return None, path.open("rb")


def _lines(data: bytes | None, handle: Any) -> Any:
    """``(offset, line)`` for every line, from memory or from an open file."""
    offset = 0
    source = data.splitlines(keepends=True) if data is not None else handle
    for line in source:
        yield offset, line
        offset += len(line)


def _copied(record: dict[str, Any]) -> bool:
    extra = record.get("extra") or {}
    scores = record.get("scores") or {}
    return bool(extra.get("copied_demonstration") or scores.get("copied_demonstration"))


class LogIndex:
    """The episodes of ``run_dirs`` (each a run; see :func:`raleval.analysis.runs.find_runs`)."""

    def __init__(self, run_dirs: list[Path]) -> None:
        self.runs = [IndexedRun(Path(p)) for p in run_dirs]
        self.rows: list[tuple[Any, ...]] = []
        self._where: dict[tuple[int, str, int], int] = {}  # (run, task, epoch) -> row position
        self.done = False
        self.error: str | None = None
        self._lock = threading.Lock()

    # --- building ----------------------------------------------------------------------

    def build(self) -> None:
        """Index every run, appending rows as they are read (safe to query meanwhile)."""
        try:
            for i, run in enumerate(self.runs):
                self._index_run(i, run)
        except Exception as exc:  # shown by the viewer; what was indexed stays usable
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.done = True

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.build, name="log-index", daemon=True)
        thread.start()
        return thread

    def _index_run(self, i: int, run: IndexedRun) -> None:
        if run.path.is_file():
            self._index_inspect(i, run)
            return
        header = read_header(run.path)
        config = header.config if header else {}
        run.environment = str(config.get("env") or "-")
        base, at, testbed = str(config.get("tasks") or "-").partition("@")
        if "/" in base or base.endswith((".jsonl", ".json")):
            base = Path(base).stem
        run.task_set = base + at + testbed
        tasks: dict[str, tuple[str, str, str]] = {}  # id -> (family, level, question)
        data, handle = _read(stored_file(run.path, TASKS))
        run.tasks_bytes = data
        try:
            for offset, line in _lines(data, handle):
                if not line.strip():
                    continue
                record = orjson.loads(line)
                tid = str(record.get("id"))
                run.task_lines[tid] = (offset, len(line))
                level = record.get("level")
                question = str(record.get("question") or "")[:QUESTION_CHARS]
                tasks[tid] = (str(record.get("family") or "?"), str(level or "-"), question)
        finally:
            if handle is not None:
                handle.close()
        from raleval.analysis.diagnosis import read_diagnoses

        diagnosed = {(d.task_id, d.epoch): str(d.cause) for d in read_diagnoses(run.path)}
        data, handle = _read(stored_file(run.path, RESULTS))
        run.results_bytes = data
        batch: list[tuple[Any, ...]] = []
        try:
            for offset, line in _lines(data, handle):
                if not line.strip():
                    continue
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue  # a torn last line of a killed run: raleval score says so
                agent = record.get("agent") or {}
                if run.system == "-":
                    run.system = f"{agent.get('workflow')}/{agent.get('model')}"
                tid, epoch = str(record.get("task_id")), int(record.get("epoch") or 0)
                family, level, question = tasks.get(tid, ("?", "-", ""))
                scores = record.get("scores") or {}
                f1 = float(scores.get("f1") or 0.0)
                right = scores.get("correct")
                batch.append((
                    i, tid, epoch, family, level, record.get("error_type") or "-",
                    record.get("error_cause") or "", f1,
                    bool(right) if right is not None else f1 >= 0.5, _copied(record),
                    record.get("termination") or "", float(record.get("wall_time_s") or 0.0),
                    len(record.get("steps") or ()), question, diagnosed.get((tid, epoch), ""),
                    offset, len(line),
                ))  # fmt: skip
                if len(batch) >= BATCH:  # the first rows are listed long before the last
                    self._add(run, batch)
                    batch = []
        finally:
            if handle is not None:
                handle.close()
        self._add(run, batch)

    def _index_inspect(self, i: int, run: IndexedRun) -> None:
        """An Inspect log, from its sample summaries alone (no messages or events): a row's
        label is the one a raleval export stored (else "-": the episode is graded when opened);
        F1 and right are the sample's ``f1`` and ``correct`` scores, else its first score."""
        from raleval.analysis.inspect_log import inspect_header, inspect_summaries

        head, summaries = inspect_summaries(run.path)
        spec = head.eval
        run.inspect = True
        run.header = inspect_header(run.path, spec, len({s.id for s in summaries}))
        config = run.header.config
        run.system = f"{config['workflow']}/{config['model']}"
        run.environment, run.task_set = str(config["env"]), str(spec.dataset.name or spec.task)
        batch: list[tuple[Any, ...]] = []
        for s in summaries:
            meta = s.metadata or {}
            f1 = summary_score(s.scores, "f1")
            right = summary_score(s.scores, "correct")
            question = (
                s.input if isinstance(s.input, str) else " ".join(message_text(m) for m in s.input)
            )
            label = meta.get("label") if isinstance(meta.get("label"), str) else "-"
            batch.append((
                i, str(s.id), max(0, int(s.epoch) - 1), str(meta.get("family") or spec.task),
                str(meta.get("level") or "-"), label, str(meta.get("cause") or ""),
                f1 or 0.0, right is not None and right >= 0.5,
                False, "error" if s.error else ("limit" if s.limit else "finished"),
                float(s.total_time or 0.0), 0, question[:QUESTION_CHARS], "", 0, 0,
            ))  # fmt: skip
            if len(batch) >= BATCH:
                self._add(run, batch)
                batch = []
        self._add(run, batch)
        # opening a sample reads it with Inspect's own reader: import it now, after the list
        threading.Thread(target=_import_inspect, name="inspect-import", daemon=True).start()

    def _add(self, run: IndexedRun, rows: list[tuple[Any, ...]]) -> None:
        """Add rows; a later attempt at a (task, epoch) takes its earlier one's place."""
        with self._lock:
            for row in rows:
                key = (row[RUN], row[TASK_ID], row[EPOCH])
                at = self._where.get(key)
                if at is None:
                    self._where[key] = len(self.rows)
                    self.rows.append(row)
                    run.episodes += 1
                else:
                    self.rows[at] = row

    # --- reading ----------------------------------------------------------------------------

    def snapshot(self) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self.rows)

    def facets(self) -> dict[str, list[Any]]:
        """The values each filter can take, over what is indexed so far."""
        rows = self.snapshot()
        return {
            "runs": [{"i": i, "name": r.name, "episodes": r.episodes} for i, r in
                     enumerate(self.runs)],
            "families": sorted({r[FAMILY] for r in rows}),
            "levels": sorted({r[LEVEL] for r in rows}),
            "labels": sorted({r[LABEL] for r in rows}),
            "causes": sorted({cause_kind(r[CAUSE]) for r in rows if r[CAUSE]}),
            "diagnoses": sorted({r[DIAGNOSIS] for r in rows if r[DIAGNOSIS]}),
        }  # fmt: skip

    def query(
        self, filters: dict[str, str], offset: int = 0, limit: int = 50
    ) -> tuple[int, list[dict[str, Any]]]:
        """``(matching episodes, the page of them)`` under ``filters`` (run, family, level,
        label, cause (:func:`cause_kind`), diagnosis (raleval diagnose's cause), copied ("1"),
        right ("1"/"0"), text (in the task id or question, any case))."""
        rows = self.snapshot()
        run = filters.get("run")
        text = (filters.get("text") or "").lower()
        wanted = [
            (RUN, int(run) if run not in (None, "") else None),
            (FAMILY, filters.get("family") or None),
            (LEVEL, filters.get("level") or None),
            (LABEL, filters.get("label") or None),
            (DIAGNOSIS, filters.get("diagnosis") or None),
        ]
        wanted = [(k, v) for k, v in wanted if v is not None]
        cause = filters.get("cause") or None
        copied = filters.get("copied") == "1"
        right = filters.get("right")
        out = [
            r for r in rows
            if all(r[k] == v for k, v in wanted)
            and (cause is None or cause_kind(r[CAUSE]) == cause)
            and (not copied or r[COPIED])
            and (right not in ("0", "1") or r[RIGHT] == (right == "1"))
            and (not text or text in r[TASK_ID].lower() or text in r[QUESTION].lower())
        ]  # fmt: skip
        page = out[max(0, offset) : max(0, offset) + max(1, min(limit, 500))]
        return len(out), [self.row_view(r) for r in page]

    def row_view(self, r: tuple[Any, ...]) -> dict[str, Any]:
        view = dict(zip(ROW_FIELDS, r, strict=True))
        del view["offset"], view["length"]
        view["run_name"] = self.runs[r[RUN]].name
        return view

    def find(self, run: int, task_id: str, epoch: int) -> tuple[Any, ...] | None:
        with self._lock:
            at = self._where.get((run, task_id, epoch))
            return None if at is None else self.rows[at]

    def trajectory(self, row: tuple[Any, ...]) -> Trajectory:
        """The episode's record, read from its offset and validated now."""
        run = self.runs[row[RUN]]
        if run.inspect:
            from raleval.analysis.inspect_log import read_inspect_sample

            return read_inspect_sample(run.path, row[TASK_ID], row[EPOCH])[0]
        if run.results_bytes is not None:
            line = run.results_bytes[row[OFFSET] : row[OFFSET] + row[LENGTH]]
        else:
            with stored_file(run.path, RESULTS).open("rb") as f:
                f.seek(row[OFFSET])
                line = f.read(row[LENGTH])
        return Trajectory.model_validate_json(line)

    def header(self, run: int) -> RunHeader | None:
        """The run's header: a run directory's file, or the one made for an Inspect log."""
        indexed = self.runs[run]
        return indexed.header if indexed.inspect else read_header(indexed.path)

    def task(self, run: int, task_id: str) -> Task | None:
        indexed = self.runs[run]
        if indexed.inspect:  # the sample's input and target (one read, then cached)
            from raleval.analysis.inspect_log import read_inspect_sample

            return read_inspect_sample(indexed.path, task_id, 0)[1]
        where = indexed.task_lines.get(task_id)
        if where is None:
            return None
        offset, length = where
        if indexed.tasks_bytes is not None:
            line = indexed.tasks_bytes[offset : offset + length]
        else:
            with stored_file(indexed.path, TASKS).open("rb") as f:
                f.seek(offset)
                line = f.read(length)
        return Task.model_validate_json(line)

    def pairs(self, a: int, b: int) -> list[dict[str, Any]]:
        """The episodes two runs share (task and epoch): where one is right and the other wrong
        first, then both wrong, then both right; task order within each group."""
        rows = self.snapshot()
        of_a = {(r[TASK_ID], r[EPOCH]): r for r in rows if r[RUN] == a}
        of_b = {(r[TASK_ID], r[EPOCH]): r for r in rows if r[RUN] == b}
        shared = [k for k in of_a if k in of_b]

        def group(k: tuple[str, int]) -> int:
            ra, rb = of_a[k][RIGHT], of_b[k][RIGHT]
            return 0 if ra != rb else (1 if not ra else 2)

        return [
            {
                "task_id": k[0], "epoch": k[1], "family": of_a[k][FAMILY],
                "a": {"label": of_a[k][LABEL], "f1": of_a[k][F1], "right": of_a[k][RIGHT]},
                "b": {"label": of_b[k][LABEL], "f1": of_b[k][F1], "right": of_b[k][RIGHT]},
                "differ": group(k) == 0,
            }
            for k in sorted(shared, key=lambda k: (group(k), k))
        ]  # fmt: skip


def _import_inspect() -> None:
    with contextlib.suppress(ImportError):
        import inspect_ai.log  # noqa: F401


def message_text(message: Any) -> str:
    """A chat message's text: a validated message's ``text``, or a raw one's content (a
    string, or parts whose text is joined)."""
    if not isinstance(message, dict):
        return str(getattr(message, "text", ""))
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return " ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))


def summary_score(scores: dict[str, Any] | None, name: str) -> float | None:
    """An Inspect sample's score ``name`` as a number (C/I as 1/0), else its first score that
    is a number (a raleval export has ``f1`` and ``correct``; another task its own), or None."""
    scores = scores or {}
    for score in [scores[name]] if name in scores else scores.values():
        value = score.get("value") if isinstance(score, dict) else score.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)  # the common case, without importing Inspect
        from inspect_ai.scorer import value_to_float

        try:
            return float(value_to_float()(value))
        except (TypeError, ValueError):
            continue
    return None


def step_signature(step: Any) -> tuple[Any, ...]:
    """What an agent did at a step, for aligning transcripts: the tool and its arguments (as
    canonical JSON), or the text it wrote where it called none."""
    args = orjson.dumps(step.arguments or {}, option=orjson.OPT_SORT_KEYS) if step.tool else b""
    return (step.tool, args, None if step.tool else (step.raw_action or "").strip())


def first_divergence(trajectories: list[Trajectory]) -> int | None:
    """The first step index at which the transcripts differ (a different call, or one ended
    while another went on); None when they took the same steps throughout."""
    longest = max((len(t.steps) for t in trajectories), default=0)
    for k in range(longest):
        seen = {
            step_signature(t.steps[k]) if k < len(t.steps) else ("<ended>",) for t in trajectories
        }
        if len(seen) > 1:
            return k
    return None
