"""Loaders for public task files, for users who have them: each returns :class:`Task` records.

HotpotQA / 2WikiMultihopQA (JSON list), MuSiQue (JSON lines), KQA Pro (JSON list), CRAG (JSON
lines, optionally .bz2), SoAyBench (JSON lines) and R-Eval / KoLA task files (JSON lines with
``input``/``outputs``). A malformed file fails with ``path:line: field 'x': problem``.
Loaded tasks have no gold solution: their environment is the user's (a corpus, the live wiki).
"""

from __future__ import annotations

import bz2
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from raleval.answers import AnswerType, infer_answer_type
from raleval.records import Level, Task, TaskTags


class TaskFileError(ValueError):
    """A task file that cannot be read; the message names the path, line and field."""


def _open(path: Path):
    return (
        bz2.open(path, "rt", encoding="utf-8")
        if path.suffix == ".bz2"
        else path.open(encoding="utf-8")
    )


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with _open(path) as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskFileError(f"{path}:{n}: not JSON: {exc.msg}") from None
            if not isinstance(obj, dict):
                raise TaskFileError(f"{path}:{n}: expected an object, got {type(obj).__name__}")
            yield n, obj


def _json_list(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Items of a JSON array with the line each starts on (for error messages)."""
    with _open(path) as fh:
        text = fh.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(data, list):
        raise TaskFileError(f"{path}:1: expected a JSON list of questions")
    decoder, pos, line = json.JSONDecoder(), text.index("[") + 1, 1
    line += text.count("\n", 0, pos)
    for item in data:
        while text[pos] in " \t\r\n,":
            line += text[pos] == "\n"
            pos += 1
        _, end = decoder.raw_decode(text, pos)
        if not isinstance(item, dict):
            raise TaskFileError(f"{path}:{line}: expected an object, got {type(item).__name__}")
        yield line, item
        line += text.count("\n", pos, end)
        pos = end


def _field(path: Path, line: int, obj: dict[str, Any], name: str, kind: type | tuple = str):
    if name not in obj:
        raise TaskFileError(f"{path}:{line}: field {name!r}: missing")
    value = obj[name]
    if not isinstance(value, kind):
        want = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise TaskFileError(f"{path}:{line}: field {name!r}: expected {want}, got {value!r:.60}")
    return value


def _answers(path: Path, line: int, obj: dict[str, Any], name: str, *aliases: str) -> list[str]:
    value = _field(path, line, obj, name, (str, int, float, list, dict))
    golds = [str(x) for x in value] if isinstance(value, list) else [str(value)]
    for alias in aliases:
        extra = obj.get(alias) or []
        golds += [str(x) for x in (extra if isinstance(extra, list) else [extra])]
    golds = [g for g in dict.fromkeys(golds) if g.strip()]
    if not golds:
        raise TaskFileError(f"{path}:{line}: field {name!r}: no gold answer")
    return golds


def _typed(question: str, answers: list[str], question_type: str | None = None) -> AnswerType:
    return infer_answer_type(question, answers, "f1", question_type)


def load_hotpot(path: Path, family: str = "3-1") -> list[Task]:
    """HotpotQA or 2WikiMultihopQA: [{_id, question, answer, type, supporting_facts}]."""
    tasks = []
    for line, obj in _json_list(path):
        qid = _field(path, line, obj, "_id")
        facts = obj.get("supporting_facts") or []
        question = _field(path, line, obj, "question")
        answers = _answers(path, line, obj, "answer", "answer_aliases")
        tasks.append(
            Task(
                id=f"{family}-{qid}",
                domain="wiki",
                level=Level.KA,
                family=family,
                question=question,
                answers=answers,
                answer_type=_typed(question, answers),
                tags=TaskTags(question_type=obj.get("type")),
                metadata={"supporting_titles": sorted({f[0] for f in facts if f})},
            )
        )
    return tasks


def load_musique(path: Path, family: str = "3-3") -> list[Task]:
    """MuSiQue JSON lines: {id, question, answer, answer_aliases, answerable, paragraphs}."""
    tasks = []
    for line, obj in _json_lines(path):
        answerable = obj.get("answerable", True)
        question = _field(path, line, obj, "question")
        answers = _answers(path, line, obj, "answer", "answer_aliases")
        tasks.append(
            Task(
                id=f"{family}-{_field(path, line, obj, 'id')}",
                domain="wiki",
                level=Level.KA,
                family=family,
                question=question,
                answers=answers,
                answer_type=_typed(question, answers),
                tags=TaskTags(question_type=f"{obj['id'].split('__')[0]}", answerable=answerable),
            )
        )
    return tasks


def load_kqapro(path: Path, family: str = "3-4") -> list[Task]:
    """KQA Pro: [{question, answer, choices?, program?, sparql?}]."""
    tasks = []
    for i, (line, obj) in enumerate(_json_list(path)):
        meta = {k: obj[k] for k in ("program", "sparql", "choices") if k in obj}
        question = _field(path, line, obj, "question")
        answers = _answers(path, line, obj, "answer")
        tasks.append(
            Task(
                id=f"{family}-{i:05d}",
                domain="wiki",
                level=Level.KA,
                family=family,
                question=question,
                answers=answers,
                answer_type=_typed(question, answers),
                metadata=meta,
            )
        )
    return tasks


_CRAG_TIME = ("%m/%d/%Y, %H:%M:%S PT", "%m/%d/%Y, %H:%M:%S", "%Y-%m-%d %H:%M:%S")


def _crag_time(path: Path, line: int, value: str) -> datetime:
    for fmt in _CRAG_TIME:
        try:
            return datetime.strptime(value.strip(), fmt)
        except ValueError:
            continue
    raise TaskFileError(f"{path}:{line}: field 'query_time': unreadable time {value!r}")


def load_crag(path: Path) -> list[Task]:
    """CRAG JSON lines (.jsonl or .jsonl.bz2): the KG questions keep their popularity."""
    tasks = []
    for line, obj in _json_lines(path):
        qtype = _field(path, line, obj, "question_type")
        popularity = obj.get("popularity") or None
        if popularity not in (None, "head", "torso", "tail"):
            raise TaskFileError(f"{path}:{line}: field 'popularity': {popularity!r}")
        question = _field(path, line, obj, "query")
        answers = _answers(path, line, obj, "answer", "alt_ans")
        tasks.append(
            Task(
                id=f"crag-{_field(path, line, obj, 'interaction_id')}",
                domain=f"crag/{_field(path, line, obj, 'domain')}",
                level=Level.KA if qtype in ("multi-hop", "aggregation") else Level.KS,
                family=f"crag-{qtype}",
                question=question,
                answers=answers,
                # CRAG's set answers are free text ("a, b and c"): only false premises are typed
                # from the question type; the rest from the gold's form
                answer_type=_typed(question, answers, qtype),
                query_time=_crag_time(path, line, _field(path, line, obj, "query_time")),
                tags=TaskTags(
                    question_type=qtype,
                    popularity=popularity,
                    dynamism=obj.get("static_or_dynamic"),
                ),
                metric="crag",
            )
        )
    return tasks


def load_soay(path: Path, family: str | None = None) -> list[Task]:
    """SoAyBench JSON lines: {Query_en, Answer, Base_Question_en?, Entity_Information?}."""
    tasks = []
    for i, (line, obj) in enumerate(_json_lines(path)):
        question = obj.get("Query_en") or obj.get("Query_EN")
        if not isinstance(question, str):
            raise TaskFileError(f"{path}:{line}: field 'Query_en': missing")
        fam = family or ("1-3" if path.stem.isdigit() and int(path.stem) <= 7 else "3-5")
        answers = _answers(path, line, obj, "Answer")
        gold = obj.get("Answer")
        # A SoAy list gold (research interests, coauthors) is one set answer, not aliases.
        listed = isinstance(gold, list) and len(gold) > 1
        elements = [[str(x)] for x in gold if str(x).strip()] if listed else None
        tasks.append(
            Task(
                id=f"soay-{path.stem}-{i:04d}",
                domain="scholar",
                level=Level.KS if fam == "1-3" else Level.KA,
                family=fam,
                question=question,
                answers=[", ".join(e[0] for e in elements)] if elements else answers,
                answer_type=AnswerType.list if elements else _typed(question, answers),
                elements=elements,
                metadata={"template": obj.get("Base_Question_en")},
            )
        )
    return tasks


_REVAL_LEVEL = {"1": Level.KS, "2": Level.KU, "3": Level.KA}


def load_reval(path: Path, family: str | None = None) -> list[Task]:
    """R-Eval / KoLA task files: {input, outputs, environment?, dataset?, _id?}."""
    tasks = []
    for i, (line, obj) in enumerate(_json_lines(path)):
        fam = family or str(obj.get("dataset") or path.stem)
        question = _field(path, line, obj, "input")
        answers = _answers(path, line, obj, "outputs")
        tasks.append(
            Task(
                id=str(obj.get("_id") or f"{fam}-{i:05d}"),
                domain="scholar" if obj.get("environment") == "aminer" else "wiki",
                level=_REVAL_LEVEL.get(fam[:1], Level.KS),
                family=fam,
                question=question,
                answers=answers,
                answer_type=_typed(question, answers),
            )
        )
    return tasks


LOADERS: dict[str, Callable[..., list[Task]]] = {
    "hotpotqa": load_hotpot,
    "2wiki": lambda p: load_hotpot(p, "3-2"),
    "musique": load_musique,
    "kqapro": load_kqapro,
    "crag": load_crag,
    "soay": load_soay,
    "reval": load_reval,
}


def load_file(kind: str, path: Path) -> list[Task]:
    """Load ``path`` with the loader named ``kind`` (see :data:`LOADERS`)."""
    if kind not in LOADERS:
        raise ValueError(f"unknown task file kind {kind!r}; choose one of {', '.join(LOADERS)}")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return LOADERS[kind](path)
