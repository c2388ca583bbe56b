"""Loaders for public task files, for users who have them: each returns :class:`Task` records.

HotpotQA / 2WikiMultihopQA (JSON list or JSON lines, the original fields or the derived
formats people pass around: LongBench, FlashRAG, IRCoT), MuSiQue (JSON lines), KQA Pro (JSON
list), CRAG (JSON lines, optionally .bz2), SoAyBench (JSON lines) and R-Eval / KoLA task files
(JSON lines with ``input``/``outputs``).

Every record is validated on its own: a bad one is skipped with ``path:line: reason`` and the
rest of the file still loads; :func:`load_report` returns the tasks with the skipped records,
and ``strict=True`` turns the first bad record into a :class:`TaskFileError`. Only a file that
cannot be split into records at all (a JSON list that does not parse) fails as a whole.
Loaded tasks have no gold solution: their environment is the user's (a corpus, the live wiki).
"""

from __future__ import annotations

import ast
import bz2
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from raleval.answers import LIST_JOINER, AnswerType, infer_answer_type
from raleval.grading.freetext import is_answer
from raleval.records import Level, Task, TaskTags
from raleval.tasks.catalog import MADE_FOR


class TaskFileError(ValueError):
    """A task file that cannot be read (or, when strict, a bad record): ``path:line: why``."""


class RecordError(ValueError):
    """One record that cannot become a task; the message says why (``field 'x': problem``)."""


@dataclass
class Skipped:
    path: Path
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class LoadReport:
    """What a load produced: the tasks and the records skipped, each with its reason."""

    path: Path
    tasks: list[Task] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def summary(self) -> str:
        return f"{self.path}: {len(self.tasks)} tasks loaded, {len(self.skipped)} records skipped"


Record = tuple[int, "dict[str, Any] | RecordError"]


def _open(path: Path):
    return (
        bz2.open(path, "rt", encoding="utf-8")
        if path.suffix == ".bz2"
        else path.open(encoding="utf-8")
    )


def _json_lines(path: Path) -> Iterator[Record]:
    with _open(path) as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                yield n, RecordError(f"not JSON: {exc.msg}")
                continue
            if not isinstance(obj, dict):
                yield n, RecordError(f"expected an object, got {type(obj).__name__}")
                continue
            yield n, obj


def _json_list(path: Path) -> Iterator[Record]:
    """Items of a JSON array with the line each starts on (for messages)."""
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
        if isinstance(item, dict):
            yield line, item
        else:
            yield line, RecordError(f"expected an object, got {type(item).__name__}")
        line += text.count("\n", pos, end)
        pos = end


def _json_any(path: Path) -> Iterator[Record]:
    """A JSON list, or JSON lines (derived datasets ship either)."""
    with _open(path) as fh:
        head = fh.read(4096).lstrip()
    return _json_list(path) if head.startswith("[") else _json_lines(path)


def _load(
    path: Path, records: Iterator[Record], parse: Callable[[int, int, dict], Task], strict: bool
) -> LoadReport:
    report = LoadReport(path)
    for index, (line, obj) in enumerate(records):
        try:
            if isinstance(obj, RecordError):
                raise obj
            report.tasks.append(parse(index, line, obj))
        except RecordError as exc:
            if strict:
                raise TaskFileError(f"{path}:{line}: {exc}") from None
            report.skipped.append(Skipped(path, line, str(exc)))
    return report


def _field(obj: dict[str, Any], name: str, kind: type | tuple = str, *aliases: str) -> Any:
    for key in (name, *aliases):
        if key in obj:
            value = obj[key]
            break
    else:
        raise RecordError(f"field {name!r}: missing")
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        want = "/".join(k.__name__ for k in _kinds(kind))
        raise RecordError(f"field {name!r}: expected {want}, got {value!r:.60}")
    if isinstance(value, str) and not value.strip():
        raise RecordError(f"field {name!r}: empty")
    return value


def _kinds(kind: type | tuple) -> tuple:
    return kind if isinstance(kind, tuple) else (kind,)


def _text(value: Any) -> str:
    """A scalar gold as text (JSON for structures, never a Python repr)."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _golds(value: Any, name: str, extra: list[Any] = ()) -> list[str]:
    """Gold answer and aliases: a string or number, or a list of alternatives."""
    if not isinstance(value, (str, int, float, list)) or isinstance(value, bool):
        raise RecordError(f"field {name!r}: expected str/number/list, got {value!r:.60}")
    items = value if isinstance(value, list) else [value]
    golds = [_text(x) for x in [*items, *extra] if x is not None]
    golds = [g for g in dict.fromkeys(golds) if g.strip()]
    if not golds:
        raise RecordError(f"field {name!r}: no gold answer")
    # a gold that is not an answer (CRAG's dev file holds the string 'nan', a missing value
    # written out) would grade every answer wrong, or free text by overlap with 'nan'
    bad = [g for g in golds if not is_answer(g)]
    if bad:
        raise RecordError(f"field {name!r}: {bad[0]!r} is not an answer")
    return golds


def _list_field(obj: dict[str, Any], name: str) -> list[Any]:
    value = obj.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecordError(f"field {name!r}: expected list, got {value!r:.60}")
    return value


def _typed(question: str, answers: list[str], question_type: str | None = None) -> AnswerType:
    return infer_answer_type(question, answers, "f1", question_type)


# --- HotpotQA and 2WikiMultihopQA ---------------------------------------------------------


def _multihop_answers(obj: dict[str, Any]) -> list[str]:
    if "answers_objects" in obj:  # IRCoT's processed files
        objs = _list_field(obj, "answers_objects")
        spans = [s for o in objs if isinstance(o, dict) for s in o.get("spans") or []]
        return _golds(spans, "answers_objects")
    for name in ("answer", "answers", "golden_answers"):  # original, LongBench, FlashRAG
        if name in obj:
            return _golds(obj[name], name, _list_field(obj, "answer_aliases"))
    raise RecordError("field 'answer': missing")


def _supporting_titles(obj: dict[str, Any]) -> list[str]:
    facts = _list_field(obj, "supporting_facts")
    titles = set()
    for fact in facts:
        if not (isinstance(fact, list) and fact and isinstance(fact[0], str)):
            raise RecordError(
                f"field 'supporting_facts': expected [title, sentence], got {fact!r:.60}"
            )
        titles.add(fact[0])
    return sorted(titles)


def load_hotpot(path: Path, family: str = "3-1", strict: bool = False) -> LoadReport:
    """HotpotQA or 2WikiMultihopQA: [{_id, question, answer, type, supporting_facts}], or a
    derived file: LongBench ``{_id, input, answers}``, FlashRAG ``{id, question,
    golden_answers}``, IRCoT ``{question_id, question_text, answers_objects}``, ReAct's
    simplified file ``{question, answer, type}`` (no id: the record's index is its id)."""

    def parse(index: int, line: int, obj: dict[str, Any]) -> Task:
        ids = ("_id", "id", "question_id")
        qid = _field(obj, "_id", (str, int), *ids[1:]) if any(k in obj for k in ids) else index
        question = _field(obj, "question", str, "question_text", "input")
        answers = _multihop_answers(obj)
        return Task(
            id=f"{family}-{qid}",
            domain="wiki",
            level=Level.KA,
            family=family,
            question=question,
            answers=answers,
            answer_type=_typed(question, answers),
            tags=TaskTags(
                question_type=obj.get("type") if isinstance(obj.get("type"), str) else None
            ),
            metadata={"supporting_titles": _supporting_titles(obj)},
        )

    return _load(path, _json_any(path), parse, strict)


def load_musique(path: Path, family: str = "3-3", strict: bool = False) -> LoadReport:
    """MuSiQue JSON lines: {id, question, answer, answer_aliases, answerable, paragraphs}."""

    def parse(_: int, line: int, obj: dict[str, Any]) -> Task:
        qid = _field(obj, "id")
        answerable = obj.get("answerable", True)
        if not isinstance(answerable, bool):
            raise RecordError(f"field 'answerable': expected bool, got {answerable!r:.60}")
        question = _field(obj, "question")
        answers = _golds(_field(obj, "answer", (str, int, float)), "answer",
                         _list_field(obj, "answer_aliases"))  # fmt: skip
        return Task(
            id=f"{family}-{qid}",
            domain="wiki",
            level=Level.KA,
            family=family,
            question=question,
            answers=answers,
            answer_type=_typed(question, answers),
            tags=TaskTags(question_type=qid.split("__")[0], answerable=answerable),
        )

    return _load(path, _json_lines(path), parse, strict)


def load_kqapro(path: Path, family: str = "3-4", strict: bool = False) -> LoadReport:
    """KQA Pro: [{question, answer, choices?, program?, sparql?}] (the test split has no
    answers: its records are skipped as such)."""

    def parse(index: int, line: int, obj: dict[str, Any]) -> Task:
        question = _field(obj, "question")
        answers = _golds(_field(obj, "answer", (str, int, float)), "answer")
        choices = _list_field(obj, "choices")
        if choices and answers[0] not in [str(c) for c in choices]:
            raise RecordError(f"field 'answer': {answers[0]!r:.40} is not one of the choices")
        program = _list_field(obj, "program")
        if any(not isinstance(step, dict) or "function" not in step for step in program):
            raise RecordError("field 'program': expected steps with a 'function'")
        if "sparql" in obj and not isinstance(obj["sparql"], str):
            raise RecordError("field 'sparql': expected str")
        meta = {k: obj[k] for k in ("program", "sparql", "choices") if k in obj}
        return Task(
            id=f"{family}-{index:05d}",
            domain="wiki",
            level=Level.KA,
            family=family,
            question=question,
            answers=answers,
            answer_type=_typed(question, answers),
            metadata=meta,
        )

    return _load(path, _json_list(path), parse, strict)


# --- CRAG ---------------------------------------------------------------------------------

# CRAG's question types -> the ids of the generated CRAG families (envs/crag/families)
CRAG_FAMILIES = {
    "simple": "crag-simple",
    "simple_w_condition": "crag-condition",
    "set": "crag-set",
    "comparison": "crag-comparison",
    "aggregation": "crag-aggregation",
    "multi-hop": "crag-multihop",
    "post-processing": "crag-postproc",
    "false_premise": "crag-false-premise",
}
# the generated families' levels, for the same question types
CRAG_LEVELS = {
    "simple": Level.KS,
    "simple_w_condition": Level.KS,
    "set": Level.KS,
    "comparison": Level.KU,
    "false_premise": Level.KU,
    "aggregation": Level.KA,
    "multi-hop": Level.KA,
    "post-processing": Level.KA,
}
CRAG_DOMAINS = ("finance", "music", "movie", "sports", "open")
_CRAG_ZONES = {"PT": ZoneInfo("America/Los_Angeles"), "UTC": ZoneInfo("UTC")}
PAGE_FIELDS = ("page_name", "page_url", "page_snippet", "page_result", "page_last_modified")


def crag_time(value: str) -> datetime:
    """CRAG's ``"02/28/2024, 10:04:54 PT"`` as an aware datetime (PT is US Pacific time, PST
    or PDT by the date); ISO times keep their offset; a time without zone stays naive."""
    text = value.strip()
    stamp, _, zone = text.rpartition(" ")
    if zone in _CRAG_ZONES:
        for fmt in ("%m/%d/%Y, %H:%M:%S", "%Y-%m-%d %H:%M:%S"):
            try:
                return datetime.strptime(stamp, fmt).replace(tzinfo=_CRAG_ZONES[zone])
            except ValueError:
                continue
    for parse in (lambda s: datetime.strptime(s, "%m/%d/%Y, %H:%M:%S"), datetime.fromisoformat):
        try:
            return parse(text)
        except ValueError:
            continue
    raise RecordError(f"field 'query_time': unreadable time {value!r}")


def _alternatives(obj: dict[str, Any]) -> list[Any]:
    """``alternative_answers`` (CRAG's files: a list, or its text such as ``"[]"``) or
    ``alt_ans`` (CRAG's docs)."""
    for name in ("alternative_answers", "alt_ans"):
        value = obj.get(name)
        if value is None or value == "":
            continue
        if isinstance(value, str):
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                value = [value]  # one alternative written as plain text
        if not isinstance(value, list):
            raise RecordError(f"field {name!r}: expected a list, got {value!r:.60}")
        return value
    return []


def _pages(obj: dict[str, Any]) -> list[dict[str, str]]:
    pages = _list_field(obj, "search_results")
    out = []
    for page in pages:
        if not isinstance(page, dict) or not isinstance(page.get("page_result", ""), str):
            raise RecordError(f"field 'search_results': expected pages, got {page!r:.60}")
        out.append({k: str(page.get(k) or "") for k in PAGE_FIELDS})
    return out


def load_crag(path: Path, strict: bool = False) -> LoadReport:
    """CRAG JSON lines (.jsonl or .jsonl.bz2). Each task keeps the answer with its
    alternatives, popularity, the query time with its zone, and the search-result pages in
    ``metadata["search_results"]`` (CRAG task 1: answer from these pages)."""

    def parse(_: int, line: int, obj: dict[str, Any]) -> Task:
        qtype = _field(obj, "question_type")
        if qtype not in CRAG_FAMILIES:
            raise RecordError(f"field 'question_type': unknown {qtype!r}")
        domain = _field(obj, "domain")
        if domain not in CRAG_DOMAINS:
            raise RecordError(f"field 'domain': unknown {domain!r}")
        popularity = obj.get("popularity") or None
        if popularity not in (None, "head", "torso", "tail"):
            raise RecordError(f"field 'popularity': {popularity!r}")
        question = _field(obj, "query")
        answers = _golds(_field(obj, "answer", (str, int, float)), "answer", _alternatives(obj))
        return Task(
            id=f"crag-{_field(obj, 'interaction_id')}",
            domain=f"crag/{domain}",
            level=CRAG_LEVELS[qtype],
            family=CRAG_FAMILIES[qtype],
            question=question,
            answers=answers,
            # CRAG's set answers are free text ("a, b and c"): only false premises are typed
            # from the question type; the rest from the gold's form
            answer_type=_typed(question, answers, qtype if qtype == "false_premise" else None),
            query_time=crag_time(_field(obj, "query_time")),
            tags=TaskTags(
                question_type=qtype,
                popularity=popularity,
                dynamism=obj.get("static_or_dynamic"),
            ),
            metric="crag",
            # its pages are its world: it runs on crag-pages (task 1), not the generated
            # CRAG world its family id belongs to
            metadata={"search_results": _pages(obj), MADE_FOR: "crag-pages"},
        )

    return _load(path, _json_lines(path), parse, strict)


# --- SoAyBench ----------------------------------------------------------------------------


# SoAyBench v1-2 templates by file number: 1-7 one searchPerson call (R-Eval's soay_easy,
# 1-3 KS); 21-30 one field of a person's profile (gender, title, bio, education, email: the
# profiling kind, 2-4 KU); the rest compose APIs (R-Eval's soay_hard, 3-5 KA).
def soay_family(number: int | None) -> str:
    if number is not None and number <= 7:
        return "1-3"
    if number is not None and 21 <= number <= 30:
        return "2-4"
    return "3-5"


_SOAY_LEVELS = {"1-3": Level.KS, "2-4": Level.KU, "3-5": Level.KA}


def _soay_gold(value: Any) -> tuple[list[str], list[list[str]] | None, Any]:
    """(answers, list elements or None, the structured gold kept in metadata)."""
    if isinstance(value, list):
        items = [_text(x) for x in value if x is not None and is_answer(_text(x))]
        if not items:
            raise RecordError("field 'Answer': empty list")
        return [LIST_JOINER.join(items)], [[x] for x in items], None
    if isinstance(value, dict):
        # a venue record: {"info": {"name": ...}, "issue": ..., "volume": ...}
        info = value.get("info")
        name = info.get("name") if isinstance(info, dict) else value.get("name")
        if not isinstance(name, str) or not name.strip():
            raise RecordError(f"field 'Answer': a record without a name: {value!r:.60}")
        return [name], None, value
    if value is None or isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise RecordError(f"field 'Answer': expected str/number/list/record, got {value!r:.60}")
    if not str(value).strip():
        raise RecordError("field 'Answer': empty")
    if not is_answer(_text(value)):
        raise RecordError(f"field 'Answer': {_text(value)!r} is not an answer")
    return [_text(value)], None, None


def load_soay(path: Path, family: str | None = None, strict: bool = False) -> LoadReport:
    """SoAyBench JSON lines: {Query_en, Answer, Base_Question_en?, Entity_Information?}. A list
    gold (interests, coauthors, papers) is one list answer with its elements; a venue record
    gold is its name, the record kept in ``metadata["answer_record"]``."""
    number = int(path.stem) if path.stem.isdigit() else None
    fam = family or soay_family(number)

    def parse(index: int, line: int, obj: dict[str, Any]) -> Task:
        question = _field(obj, "Query_en", str, "Query_EN")
        answers, elements, record = _soay_gold(obj.get("Answer"))
        meta: dict[str, Any] = {"template": obj.get("Base_Question_en")}
        if record is not None:
            meta["answer_record"] = record
        return Task(
            id=f"soay-{path.stem}-{index:04d}",
            domain="scholar",
            level=_SOAY_LEVELS.get(fam, Level.KA),
            family=fam,
            question=question,
            answers=answers,
            answer_type=AnswerType.list if elements else _typed(question, answers),
            elements=elements,
            metadata=meta,
        )

    return _load(path, _json_lines(path), parse, strict)


# --- R-Eval / KoLA ------------------------------------------------------------------------

_REVAL_LEVEL = {"1": Level.KS, "2": Level.KU, "3": Level.KA}


def load_reval(path: Path, family: str | None = None, strict: bool = False) -> LoadReport:
    """R-Eval / KoLA task files: {input, outputs, environment?, dataset?, _id?}."""

    def parse(index: int, line: int, obj: dict[str, Any]) -> Task:
        fam = family or str(obj.get("dataset") or path.stem)
        question = _field(obj, "input")
        answers = _golds(_field(obj, "outputs", (str, int, float, list)), "outputs")
        return Task(
            id=str(obj.get("_id") or f"{fam}-{index:05d}"),
            domain="scholar" if obj.get("environment") == "aminer" else "wiki",
            level=_REVAL_LEVEL.get(fam[:1], Level.KS),
            family=fam,
            question=question,
            answers=answers,
            answer_type=_typed(question, answers),
        )

    return _load(path, _json_lines(path), parse, strict)


LOADERS: dict[str, Callable[..., LoadReport]] = {
    "hotpotqa": load_hotpot,
    "2wiki": lambda p, strict=False: load_hotpot(p, "3-2", strict),
    "musique": load_musique,
    "kqapro": load_kqapro,
    "crag": load_crag,
    "soay": load_soay,
    "reval": load_reval,
}


def load_report(kind: str, path: Path, strict: bool = False) -> LoadReport:
    """Load ``path`` with the loader named ``kind`` (see :data:`LOADERS`): the tasks and the
    records skipped; ``strict`` fails on the first bad record instead."""
    if kind not in LOADERS:
        raise ValueError(f"unknown task file kind {kind!r}; choose one of {', '.join(LOADERS)}")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return LOADERS[kind](path, strict=strict)


def load_file(kind: str, path: Path, strict: bool = False) -> list[Task]:
    """The tasks of ``path`` (bad records skipped; see :func:`load_report`)."""
    return load_report(kind, path, strict).tasks
