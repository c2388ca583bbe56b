"""Loaders for the seeds' own benchmarks, whose questions come with the documents they are
asked about: CRUD-RAG, RAGEval's DragonBall and RGB.

Each returns a :class:`CollectionReport`: the tasks, the records skipped (``path:line: why``, as
:mod:`raleval.tasks.loaders` reports them) and the collection, one ``{id, title, text}`` per
document, which :func:`write_collection` writes as a corpus for the ``docs`` environment
(``raleval run --env docs -E corpus=...``). Every task carries a gold solution the oracle
executes there (``search`` for each gold document by its title or opening words, ``read`` it)
and the gold documents' ids as its ``evidence``: a right answer counts as grounded when the
tools returned those documents. Document ids are a hash of the text, so a document shared by
several questions is stored once.

Formats (read from the originals' code and released files):

- **CRUD-RAG** ``split_merged.json``: one JSON object of task lists: ``event_summary`` ({ID,
  event, text, summary}), ``continuing_writing`` ({ID, beginning, continuing}),
  ``hallu_modified`` ({ID, newsBeginning, hallucinatedContinuation, hallucinatedMod,
  newsRemainder}), ``questanswer_1doc`` / ``_2docs`` / ``_3docs`` ({ID, event, news1..3,
  questions, answers}). The key information its RAGQuestEval uses lives in
  ``<Task>_quest_gt_save.json`` files keyed by ID ({key_info, question, answers}); found beside
  the task file or in a ``quest_eval`` folder beside it, it becomes the tasks' free-text key
  points (``metadata["key_points"]``) with their questions and answers.
- **RAGEval DragonBall** ``dragonball_queries.jsonl``: {domain, language, query: {query_id,
  query_type, content}, ground_truth: {doc_ids, content, references, keypoints}}; the
  documents ({domain, language, doc_id, content, company_name | court_name |
  hospital_patient_name}) from ``dragonball_docs.jsonl`` beside it. A question whose gold is
  RAGEval's refusal ("Unable to answer", "无法回答": its unanswerable questions) is loaded as
  unanswerable: declining is the right answer.
- **RGB** ``en.json`` / ``zh.json`` / ``*_refine.json`` (noise robustness: {id, query, answer,
  positive, negative}), ``*_int.json`` (information integration: ``positive`` is one passage
  list per answer), ``*_fact.json`` (counterfactual robustness: ``fakeanswer`` and
  ``positive_wrong``). ``answer`` is a list of required answers, each a string or a list of
  aliases. Negative rejection (``rgb-negative``) asks the noise file's questions over its
  ``negative`` passages alone: declining is right.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raleval.answers import LIST_JOINER, AnswerType
from raleval.grading.metrics import is_abstention
from raleval.records import Level, Task, TaskTags, ToolCall
from raleval.tasks.catalog import MADE_FOR
from raleval.tasks.loaders import LoadReport, Record, RecordError, Skipped, TaskFileError

SEARCH_WORDS = 40  # characters of a document's opening the gold search looks for
_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass
class CollectionReport(LoadReport):
    """A load whose tasks come with their documents (``collection``: ``{id, title, text}``)."""

    collection: list[dict[str, str]] = field(default_factory=list)
    _seen: dict[str, str] = field(default_factory=dict, repr=False)

    def add_document(self, text: str, title: str = "", prefix: str = "doc") -> str:
        """The id of ``text`` in the collection, adding it the first time it is seen."""
        key = hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:12]
        if key not in self._seen:
            doc_id = f"{prefix}-{key}"
            self._seen[key] = doc_id
            self.collection.append({"id": doc_id, "title": title, "text": text})
        return self._seen[key]

    def summary(self) -> str:
        return f"{super().summary()}, {len(self.collection)} documents in the collection"


def _search_query(title: str, text: str) -> str:
    """What the gold solution searches to find a document: its title, else its opening."""
    if title.strip():
        return title.strip()
    return " ".join(text.split())[:SEARCH_WORDS].strip()


def gold_solution(report: CollectionReport, doc_ids: list[str]) -> list[ToolCall]:
    """Search each gold document by its title or opening words, then read it."""
    docs = {d["id"]: d for d in report.collection}
    calls = []
    for doc_id in doc_ids:
        doc = docs[doc_id]
        calls.append(
            ToolCall(tool="search", arguments={"query": _search_query(doc["title"], doc["text"])})
        )
        calls.append(ToolCall(tool="read", arguments={"doc_id": doc_id}))
    return calls


def _json_lines(path: Path) -> Iterator[Record]:
    """(line, object or why not) of every non-blank line."""
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                yield n, RecordError(f"not JSON: {exc.msg}")
                continue
            yield (
                n,
                obj
                if isinstance(obj, dict)
                else RecordError(f"expected an object, got {type(obj).__name__}"),
            )


def _load(
    report: CollectionReport,
    records: Iterator[Record],
    parse: Callable[[int, int, dict], Task | None],
    strict: bool,
) -> CollectionReport:
    for index, (line, obj) in enumerate(records):
        try:
            if isinstance(obj, RecordError):
                raise obj
            task = parse(index, line, obj)
            if task is not None:
                report.tasks.append(task)
        except RecordError as exc:
            if strict:
                raise TaskFileError(f"{report.path}:{line}: {exc}") from None
            report.skipped.append(Skipped(report.path, line, str(exc)))
    return report


def _text(obj: dict[str, Any], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"field {name!r}: missing or not text")
    return value.strip()


def _language(text: str) -> str:
    return "zh" if _CJK.search(text) else "en"


# --- CRUD-RAG -----------------------------------------------------------------------------

# CRUD-RAG's task lists -> (family, level, the class name its quest_eval files carry)
CRUD_SPLITS: dict[str, tuple[str, Level, str]] = {
    "event_summary": ("crud-summary", Level.KU, "Summary"),
    "continuing_writing": ("crud-continuation", Level.KU, "ContinueWriting"),
    "hallu_modified": ("crud-hallucination", Level.KA, "HalluModified"),
    "questanswer_1doc": ("crud-qa-1doc", Level.KS, "QuestAnswer1Doc"),
    "questanswer_2docs": ("crud-qa-2docs", Level.KA, "QuestAnswer2Docs"),
    "questanswer_3docs": ("crud-qa-3docs", Level.KA, "QuestAnswer3Docs"),
}
# CRUD-RAG records carry "request openai failed" where their generator failed
_CRUD_FAILED = "request openai failed"


def _crud_key_info(path: Path, split: str) -> dict[str, Any]:
    """RAGQuestEval's saved key information for ``split``, by task ID ({} if not found)."""
    name = f"{CRUD_SPLITS[split][2]}_quest_gt_save.json"
    for folder in (path.parent, path.parent / "quest_eval"):
        candidate = folder / name
        if candidate.is_file():
            try:
                data = json.loads(candidate.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise TaskFileError(f"{candidate}:{exc.lineno}: not JSON: {exc.msg}") from None
            return data if isinstance(data, dict) else {}
    return {}


def _crud_records(path: Path) -> Iterator[tuple[str, int, dict[str, Any] | RecordError]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TaskFileError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(data, dict) or not any(k in data for k in CRUD_SPLITS):
        raise TaskFileError(
            f"{path}:1: expected CRUD-RAG's object of task lists ({', '.join(CRUD_SPLITS)})"
        )
    for split in CRUD_SPLITS:
        items = data.get(split) or []
        if not isinstance(items, list):
            raise TaskFileError(f"{path}: {split!r} is not a list")
        for i, item in enumerate(items):
            yield (
                split,
                i,
                item
                if isinstance(item, dict)
                else RecordError(f"expected an object, got {type(item).__name__}"),
            )


def load_crud(path: Path, strict: bool = False) -> CollectionReport:
    """CRUD-RAG's ``split_merged.json`` (every task list), with its key information where
    the ``*_quest_gt_save.json`` files are found. A skipped record is named
    ``path:N: <task list>[i]: why`` (N counts records through the file)."""
    report = CollectionReport(path)
    key_info = {split: _crud_key_info(path, split) for split in CRUD_SPLITS}

    def parse(split: str, obj: dict[str, Any]) -> Task:
        family, level, _ = CRUD_SPLITS[split]
        rid = obj.get("ID", obj.get("id"))
        if not isinstance(rid, (str, int)) or isinstance(rid, bool) or str(rid) == "":
            raise RecordError("field 'ID': missing")
        prefix = "crud"
        if split == "event_summary":
            event = _text(obj, "event")
            docs = [report.add_document(_text(obj, "text"), obj.get("title") or "", prefix)]
            question = f"请根据资料概括以下事件的主要内容：{event}"
            reference = _text(obj, "summary")
        elif split == "continuing_writing":
            beginning = _text(obj, "beginning")
            reference = _text(obj, "continuing")
            # the source news: its own field where the record has one, else the two halves
            source = obj.get("news") or obj.get("text") or f"{beginning}{reference}"
            docs = [report.add_document(str(source), obj.get("title") or "", prefix)]
            question = f"请根据资料续写以下新闻：{beginning}"
        elif split == "hallu_modified":
            beginning = _text(obj, "newsBeginning")
            continuation = _text(obj, "hallucinatedContinuation")
            reference = _text(obj, "hallucinatedMod")
            if _CRUD_FAILED in reference:
                raise RecordError("field 'hallucinatedMod': the generator failed on this record")
            source = f"{beginning}{_text(obj, 'newsRemainder')}"
            docs = [report.add_document(source, obj.get("headLine") or "", prefix)]
            question = (
                "以下新闻续写中含有错误。请根据资料找出错误并给出修改后的续写。\n"
                f"新闻开头：{beginning}\n续写：{continuation}"
            )
        else:
            n = int(split[12])  # questanswer_<n>doc(s)
            texts = [_text(obj, f"news{i}") for i in range(1, n + 1)]
            docs = [report.add_document(t, "", prefix) for t in texts]
            question = _text(obj, "questions")
            reference = _text(obj, "answers")
        meta: dict[str, Any] = {"source": "crud", "crud_split": split, "crud_id": str(rid)}
        if obj.get("event"):
            meta["event"] = obj["event"]
        info = key_info[split].get(str(rid))
        if isinstance(info, dict) and isinstance(info.get("key_info"), list):
            meta["key_points"] = [str(k) for k in info["key_info"]]
            meta["key_questions"] = info.get("question") or []
            meta["key_answers"] = info.get("answers") or []
        return Task(
            id=f"{family}-{rid}",
            domain="news",
            level=level,
            family=family,
            question=question,
            answers=[reference],
            answer_type=AnswerType.free_text,
            solution=gold_solution(report, docs),
            evidence=list(docs),
            metric="f1",
            metadata=meta,
        )

    for n, (split, i, obj) in enumerate(_crud_records(path), 1):
        try:
            if isinstance(obj, RecordError):
                raise obj
            report.tasks.append(parse(split, obj))
        except RecordError as exc:
            if strict:
                raise TaskFileError(f"{path}:{n}: {split}[{i}]: {exc}") from None
            report.skipped.append(Skipped(path, n, f"{split}[{i}]: {exc}"))
    return report


# --- RAGEval DragonBall -------------------------------------------------------------------

_DRAGONBALL_TITLES = ("company_name", "court_name", "hospital_patient_name", "title")


def _dragonball_docs(path: Path, report: CollectionReport) -> dict[int | str, str]:
    """DragonBall's documents (the file beside the queries) added to the collection: their
    doc_id -> collection id."""
    candidates = [path.parent / "dragonball_docs.jsonl", *sorted(path.parent.glob("*docs*.jsonl"))]
    docs_path = next((p for p in candidates if p.is_file() and p != path), None)
    if docs_path is None:
        raise TaskFileError(
            f"{path}: DragonBall's documents (dragonball_docs.jsonl) are not beside the queries"
        )
    ids: dict[int | str, str] = {}
    for line, obj in _json_lines(docs_path):
        if isinstance(obj, RecordError) or not isinstance(obj.get("content"), str):
            report.skipped.append(Skipped(docs_path, line, "document without text content"))
            continue
        title = next((str(obj[k]) for k in _DRAGONBALL_TITLES if obj.get(k)), "")
        ids[obj.get("doc_id")] = report.add_document(obj["content"], title, "dragonball")
    return ids


def load_rageval(path: Path, strict: bool = False) -> CollectionReport:
    """RAGEval's DragonBall queries (JSON lines), English and Chinese, with their documents
    (``dragonball_docs.jsonl`` beside them) as the collection. The ground truth's key points
    are kept as free text (``metadata["key_points"]``), as RAGEval judges them."""
    report = CollectionReport(path)
    doc_ids = _dragonball_docs(path, report)

    def parse(_: int, line: int, obj: dict[str, Any]) -> Task:
        query = obj.get("query")
        truth = obj.get("ground_truth")
        if not isinstance(query, dict) or not isinstance(truth, dict):
            raise RecordError("fields 'query' and 'ground_truth': expected objects")
        question = _text(query, "content")
        qid = query.get("query_id")
        if qid is None:
            raise RecordError("field 'query.query_id': missing")
        answer = _text(truth, "content")
        points = truth.get("keypoints") or []
        if not isinstance(points, list) or not all(isinstance(p, str) for p in points):
            raise RecordError("field 'ground_truth.keypoints': expected a list of text")
        gold = truth.get("doc_ids") or []
        if not isinstance(gold, list):
            raise RecordError("field 'ground_truth.doc_ids': expected a list")
        missing = [d for d in gold if d not in doc_ids]
        if missing:
            raise RecordError(f"field 'ground_truth.doc_ids': {missing} not among the documents")
        docs = [doc_ids[d] for d in gold]
        qtype = str(query.get("query_type") or "unknown")
        slug = re.sub(r"[\W_]+", "-", qtype.lower()).strip("-") or "unknown"
        language = str(obj.get("language") or _language(question))
        # RAGEval's unanswerable questions ("Irrelevant Unsolvable Question", "无关无解问")
        # have its refusal as the gold ("Unable to answer", "无法回答"): declining is right
        answerable = not is_abstention(answer)
        return Task(
            id=f"rageval-{language}-{qid}",
            domain=f"rageval/{str(obj.get('domain') or 'unknown').lower()}",
            level=Level.KA if len(docs) > 1 else Level.KS,
            family=f"rageval-{slug}",
            question=question,
            answers=[answer],
            answer_type=AnswerType.free_text,
            tags=TaskTags(question_type=qtype, answerable=answerable),
            solution=gold_solution(report, docs),
            evidence=docs or None,
            metadata={
                "source": "rageval",
                "language": language,
                "key_points": points,
                "references": truth.get("references") or [],
                "dragonball_doc_ids": gold,
            },
        )

    return _load(report, _json_lines(path), parse, strict)


# --- RGB ----------------------------------------------------------------------------------


def _rgb_json(path: Path) -> Iterator[Record]:
    """RGB's files are JSON lines (one question a line)."""
    return _json_lines(path)


def _passages(obj: dict[str, Any], name: str, nested: bool = False) -> list[Any]:
    value = obj.get(name)
    if not isinstance(value, list):
        raise RecordError(f"field {name!r}: expected a list of passages")
    items = [x for group in value for x in group] if nested else value
    if nested and not all(isinstance(g, list) for g in value):
        raise RecordError(f"field {name!r}: expected one passage list per answer")
    if not all(isinstance(p, str) for p in items):
        raise RecordError(f"field {name!r}: expected passages as text")
    return value


def _rgb_answers(value: Any) -> list[list[str]]:
    """RGB's ``answer``: required answers, each a string or a list of aliases."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value:
        raise RecordError("field 'answer': expected a non-empty list")
    out = []
    for item in value:
        aliases = item if isinstance(item, list) else [item]
        aliases = [str(a) for a in aliases if isinstance(a, (str, int, float)) and str(a).strip()]
        if not aliases:
            raise RecordError(f"field 'answer': an answer without text: {item!r:.60}")
        out.append(aliases)
    return out


def _holding(passages: list[str], aliases: list[str]) -> int:
    """Index of the first passage that states one of ``aliases`` (0 if none does)."""
    lowered = [p.lower() for p in passages]
    for i, p in enumerate(lowered):
        if any(a.lower() in p for a in aliases):
            return i
    return 0


def _group_answers(obj: dict[str, Any], golds: list[list[str]]) -> list[list[str]]:
    """The answers each of an integration record's passage groups holds: RGB splits its
    questions in two parts (``asnwer1`` [sic] and ``answer2``, one passage group each);
    without them, one group per answer."""
    groups = obj["positive"]
    parts = [obj.get("asnwer1", obj.get("answer1")), obj.get("answer2")]
    if len(groups) == 2 and all(isinstance(p, list) for p in parts):
        return [[str(a) for x in p for a in (x if isinstance(x, list) else [x])] for p in parts]
    if len(groups) == len(golds):
        return golds
    raise RecordError(f"field 'positive': {len(groups)} passage lists for {len(golds)} answers")


def load_rgb(path: Path, strict: bool = False, negative: bool = False) -> CollectionReport:
    """An RGB file: noise robustness (``en.json``, ``zh.json``, ``*_refine.json``),
    information integration (``*_int.json``) or counterfactual robustness (``*_fact.json``),
    told apart by their fields; ``negative=True`` asks the noise file's questions over its
    negative passages alone (negative rejection). Passages become the collection."""
    report = CollectionReport(path)
    stem = path.stem.split("_")[0]
    prefix = f"rgb-{stem}" if stem in ("en", "zh") else "rgb"

    def parse(index: int, line: int, obj: dict[str, Any]) -> Task:
        from raleval.tasks.testbeds.world import REJECTION_ANSWER

        qid = obj.get("id", index)
        question = _text(obj, "query")
        language = _language(question) if stem not in ("en", "zh") else stem
        golds = _rgb_answers(obj.get("answer"))
        negatives = _passages(obj, "negative")
        meta: dict[str, Any] = {"source": "rgb", "language": language}
        tags = TaskTags(question_type=None)
        if "fakeanswer" in obj:
            kind = "counterfactual"
            fake = _rgb_answers(obj.get("fakeanswer"))
            wrong = _passages(obj, "positive_wrong")
            if not wrong:
                raise RecordError("field 'positive_wrong': no passage")
            ids = [report.add_document(p, "", prefix) for p in wrong]
            gold_docs = [ids[_holding(wrong, fake[0])]]
            answers, elements = fake[0], None
            meta.update(
                testbed={"kind": "counterfactual", "swap": [golds[0][0], fake[0][0]]},
                original_answers=golds[0],
            )
        elif negative:
            kind = "negative"
            for p in negatives:
                report.add_document(p, "", prefix)
            gold_docs = []
            answers, elements = [REJECTION_ANSWER], None
            tags = TaskTags(answerable=False)
            meta.update(
                testbed={"kind": "negative", "withhold": [a for g in golds for a in g]},
                original_answers=[LIST_JOINER.join(g[0] for g in golds)],
            )
        else:
            integration = bool(obj.get("positive")) and isinstance(obj["positive"][0], list)
            positives = _passages(obj, "positive", nested=integration)
            if not positives:
                raise RecordError("field 'positive': no passage")
            if integration:
                kind = "integration"
                gold_docs = []
                for group, aliases in zip(positives, _group_answers(obj, golds), strict=True):
                    ids = [report.add_document(p, "", prefix) for p in group]
                    gold_docs.append(ids[_holding(group, aliases)] if ids else None)
                if None in gold_docs:
                    raise RecordError("field 'positive': a part of the question without a passage")
            else:
                kind = "noise"
                ids = [report.add_document(p, "", prefix) for p in positives]
                gold_docs = list(
                    dict.fromkeys(ids[_holding(positives, aliases)] for aliases in golds)
                )
            if len(golds) == 1:
                answers, elements = golds[0], None
            else:
                answers, elements = [LIST_JOINER.join(g[0] for g in golds)], golds
        if kind != "negative":
            for p in negatives:
                report.add_document(p, "", prefix)
        answer_type = AnswerType.list if elements else None
        if kind == "negative":
            answer_type = AnswerType.free_text
        return Task(
            id=f"rgb-{kind}-{language}-{qid}",
            domain="rgb",
            level=Level.KA if kind == "integration" else Level.KS,
            family=f"rgb-{kind}",
            question=question,
            answers=answers,
            answer_type=answer_type,
            elements=elements,
            tags=tags,
            solution=gold_solution(report, [d for d in gold_docs if d])
            if gold_docs
            else [ToolCall(tool="search", arguments={"query": question})],
            evidence=[d for d in gold_docs if d] or None,
            metadata=meta,
        )

    return _load(report, _rgb_json(path), parse, strict)


COLLECTION_LOADERS: dict[str, Callable[..., CollectionReport]] = {
    "crud": load_crud,
    "rageval": load_rageval,
    "rgb": load_rgb,
    "rgb-negative": lambda p, strict=False: load_rgb(p, strict, negative=True),
}


def load_collection(kind: str, path: Path, strict: bool = False) -> CollectionReport:
    """Load ``path`` with the collection loader named ``kind``."""
    if kind not in COLLECTION_LOADERS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(COLLECTION_LOADERS)}")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return COLLECTION_LOADERS[kind](path, strict=strict)


def corpus_path(out: Path) -> Path:
    """Where the collection of the tasks written to ``out`` goes: ``<out stem>.corpus.jsonl``."""
    stem = out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out.with_name(f"{stem}.corpus.jsonl")


def write_collection(report: CollectionReport, out: Path) -> Path:
    """Write ``report``'s collection as a docs corpus beside ``out`` and record it in each
    task as the world the task was made for (``docs:corpus=<path>``), so ``raleval run
    --tasks OUT --env docs`` finds it."""
    path = corpus_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for doc in report.collection:
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
    made_for = f"docs:corpus={path.resolve()}"
    for task in report.tasks:
        task.metadata[MADE_FOR] = made_for
    return path
