"""Shortcut audit: how far no-tool baselines get on a task set, per family, against chance.

A family passes when no baseline beats its chance level by more than a threshold. Baselines:

- ``majority``: the most frequent answer of the training half; chance is one over the number of
  distinct answers (a yes/no family is at 0.5, an aggregate whose answers repeat is caught).
- ``char_knn`` / ``word_nb``: question-only classifiers trained on a disjoint half (character
  3-5-gram nearest neighbour by cosine; multinomial naive Bayes over words and word pairs),
  evaluated both ways (2-fold); chance is the majority baseline's accuracy.
- ``string_rule``: rules over the entities the question names (quoted and capitalised spans):
  for yes/no questions, whether two named entities share a word decides the answer (the rule's
  answer per outcome is learned on the training half); otherwise the answer is the k-th named
  entity, k learned on the training half. Chance is the majority baseline's accuracy.
- ``subject_attr`` (KA families): the answer equals a field of the first call's result, the
  question's subject one call away, with the field learned on the training half; chance is the
  same rule scored against the subject of a different task of the family (a permutation).
- ``position`` (questions without a superlative, which ask for a rank on purpose): the answer is
  the first or last item of a list the gold solution observed (a JSON list anywhere in a result,
  a date-keyed series, or a list written in a page: ``Similar: [...]``, ``Label: a, b and c``);
  chance is the mean of one over the list's length. Not counted: an item the question names
  and no other (the search hit for the title it asks about, the row of the date it asks for),
  found by what it is; a list of lists (a table's columns, whose order is their shape); numeric
  answers (a number that happens to sit in a row is not an item). A list whose items the
  question all names ("... : A or B?" over ``Similar: [A, B]``) counts.
- ``echo`` and ``slot_majority`` (long-form families, tasks with key points): the question
  restated as the answer (a correction's statement left as given), and every slot's most
  frequent value(s) in the training half; chance as for the classifiers. Every baseline's
  prediction on a long-form task is graded as episodes are (aligned by its key points:
  ``raleval.grading.rules``), not by equality with the reference text.
- ``direct`` (given a model): accuracy of the ``direct`` workflow (no tools), supplied by the
  caller as per-task correctness; chance is the majority baseline's accuracy.

A family with fewer than ``MIN_ITEMS`` tasks, or a baseline with too few cases, is not judged:
its verdict says so ("too few items") instead of passing silently.

Across families, ``false_premise`` asks whether the wording alone (character n-gram nearest
neighbour) tells false-premise questions from valid ones, against the majority label's rate.

The module reads tasks and calls an environment's tools for the gold solutions; it never calls a
model or a workflow.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from raleval.families import run_solution
from raleval.grading.rules import grade_task
from raleval.records import Level, Task
from raleval.text import contains_tokens, normalize_answer

SUPERLATIVE = re.compile(
    r"\b(most|least|latest|earliest|first|last|top|highest|lowest|largest|smallest|best|"
    r"oldest|newest|youngest|longest|shortest|biggest|fewest|more|less|earlier|later)\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"'([^']{2,})'|\"([^\"]{2,})\"")
_CAPS = re.compile(r"\b([A-Z][\w.\-]*(?:\s+(?:of|de|the|and|van|von|&)?\s*[A-Z][\w.\-]*)*)")
_YES_NO = {"yes", "no"}
MAX_SLOTS = 60  # named spans of a page that count as its attributes
MIN_POSITION = 10  # fewer list answers than this say nothing about their position
MIN_ITEMS = 20  # a family smaller than this leaves each 2-fold half too small to judge


class BaselineScore(BaseModel):
    """One baseline on one family: its accuracy, chance level and the tasks it covered."""

    model_config = ConfigDict(extra="forbid")

    name: str
    accuracy: float
    chance: float
    n: int

    @property
    def excess(self) -> float:
        return self.accuracy - self.chance


class FamilyAudit(BaseModel):
    """The audit of one family: its baselines, answer spread and whether it passes."""

    model_config = ConfigDict(extra="forbid")

    family: str
    level: str
    n: int
    distinct_answers: int
    baselines: list[BaselineScore]
    popularity: dict[str, int]
    threshold: float
    not_judged: dict[str, str] = {}  # baseline (or "family") -> why it was not run
    # share of the family's tasks whose answer the workflow shows at the report's context
    # window (the executing oracle answers them right: raleval.app.views); None: not asked
    in_view: float | None = None

    @property
    def worst(self) -> BaselineScore | None:
        return max(self.baselines, key=lambda b: b.excess, default=None)

    @property
    def too_few(self) -> bool:
        return self.n < MIN_ITEMS

    @property
    def passed(self) -> bool:
        """No baseline beats chance by more than the threshold (a family too small to judge
        has not passed)."""
        if self.too_few:
            return False
        worst = self.worst
        return worst is None or worst.excess <= self.threshold

    @property
    def verdict(self) -> str:
        if self.too_few:
            return "too few items"
        return "pass" if self.passed else "FAIL"


class AuditReport(BaseModel):
    """The audit of a task set: one entry per family and the cross-family premise check."""

    model_config = ConfigDict(extra="forbid")

    env: str
    tasks: str
    threshold: float
    families: list[FamilyAudit]
    false_premise: BaselineScore | None = None
    context: int | None = None  # the context window "answerable in view" was measured at
    view_workflow: str | None = None  # the workflow whose view it was

    @property
    def failed(self) -> bool:
        """Some judged family, or the premise wording check, beats chance."""
        premise_bad = self.false_premise is not None and self.false_premise.excess > self.threshold
        return premise_bad or any(f.verdict == "FAIL" for f in self.families)

    @property
    def passed(self) -> bool:
        """Every family was judged and none failed."""
        return not self.failed and not any(f.too_few for f in self.families)

    @property
    def verdict(self) -> str:
        if self.failed:
            return "FAIL"
        return "pass" if self.passed else "too few items"

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON, with each baseline's excess and each verdict."""
        out = self.model_dump()
        for fam, f in zip(out["families"], self.families, strict=True):
            fam["passed"] = f.passed
            fam["verdict"] = f.verdict
            for b, base in zip(fam["baselines"], f.baselines, strict=True):
                b["excess"] = round(base.excess, 4)
        if self.false_premise is not None:
            out["false_premise"]["excess"] = round(self.false_premise.excess, 4)
        out["passed"] = self.passed
        out["verdict"] = self.verdict
        return out


# -- answers ---------------------------------------------------------------------------------


def answer_key(task: Task) -> str:
    """The task's answer as a class label: normalised, a list as its sorted elements."""
    if task.elements:
        return " | ".join(sorted(normalize_answer(e[0]) for e in task.elements))
    return normalize_answer(task.answers[0])


def _correct(task: Task, predicted: str | None) -> bool:
    if predicted is None:
        return False
    if task.key_points:  # a long-form answer: aligned by its key points, as episodes are graded
        return grade_task(task, predicted).correct
    return normalize_answer(predicted) in {normalize_answer(a) for a in task.answers} or (
        predicted == answer_key(task)
    )


_CHOICE = re.compile(r"(?:[:,]|\bbetween)\s*([^:,?]+?)\s+(?:or|and)\s+([^:,?]+?)\s*\?\s*$")


def options_of(question: str) -> list[str]:
    """The answers a question offers, normalised: "...: A or B?" / ", A or B?" at its end,
    yes/no for a yes/no question; none for an open question."""
    m = _CHOICE.search(question)
    if m:
        return [normalize_answer(m.group(1)), normalize_answer(m.group(2))]
    if re.match(r"\s*(is|are|was|were|do|does|did|has|have|had|can|could)\b", question, re.I):
        return ["yes", "no"]
    return []


def _credit(task: Task, predicted: str | None) -> float:
    """1 for a right prediction; for a question that offers its answers, a prediction that is
    none of them falls back to a uniform pick among them (what any guesser gets for free)."""
    if _correct(task, predicted):
        return 1.0
    options = options_of(task.question)
    key = answer_key(task)
    guess = normalize_answer(predicted) if predicted is not None else ""
    if options and key in options and guess not in options:
        return 1 / len(options)
    return 0.0


def _choice_chance(tasks: Sequence[Task]) -> float:
    """What a uniform pick among the offered answers gets (0 for open questions)."""
    total = 0.0
    for t in tasks:
        options = options_of(t.question)
        if options and answer_key(t) in options:
            total += 1 / len(options)
    return total / len(tasks) if tasks else 0.0


_COUNTED = {"count", "number", "year"}


def _count_chance(tasks: Sequence[Task]) -> float:
    """A count's chance: one over the values its generator template takes in the family (a
    template counting 0 to 3 guesses right a quarter of the time); 0 for other answers."""
    per: dict[str, set[str]] = defaultdict(set)
    for t in tasks:
        per[str(t.metadata.get("template", t.family))].add(answer_key(t))
    total = 0.0
    for t in tasks:
        kind = t.answer_type.value if t.answer_type is not None else ""
        if kind in _COUNTED:
            total += 1 / max(len(per[str(t.metadata.get("template", t.family))]), 2)
    return total / len(tasks) if tasks else 0.0


def _halves(tasks: Sequence[Task], seed: int) -> tuple[list[int], list[int]]:
    """A seeded disjoint split of a family's task indices into two halves."""
    order = list(range(len(tasks)))
    random.Random(f"audit/{seed}").shuffle(order)
    mid = len(order) // 2
    return order[:mid], order[mid:]


def _two_fold(
    tasks: Sequence[Task],
    seed: int,
    fit_predict: Callable[[list[Task], list[Task]], list[str | None]],
) -> float:
    """Accuracy of a baseline trained on one half and scored on the other, both ways."""
    a, b = _halves(tasks, seed)
    hits = 0
    total = 0
    for train, test in ((a, b), (b, a)):
        if not train or not test:
            continue
        preds = fit_predict([tasks[i] for i in train], [tasks[i] for i in test])
        hits += sum(_credit(tasks[i], p) for i, p in zip(test, preds, strict=True))
        total += len(test)
    return hits / total if total else 0.0


# -- question-only classifiers ---------------------------------------------------------------


def _char_grams(text: str, lo: int = 3, hi: int = 5) -> Counter[str]:
    text = f" {text.lower()} "
    return Counter(text[i : i + n] for n in range(lo, hi + 1) for i in range(len(text) - n + 1))


def _word_feats(text: str) -> list[str]:
    words = normalize_answer(text).split()
    return words + [f"{a}_{b}" for a, b in pairwise(words)]


def _hashed(grams: Counter[str], dim: int) -> np.ndarray:
    vec = np.zeros(dim)
    for g, c in grams.items():
        vec[int(hashlib.blake2b(g.encode(), digest_size=4).hexdigest(), 16) % dim] += c
    norm = np.linalg.norm(vec)
    return vec / norm if norm else vec


def knn_predict(
    train_x: Sequence[str], train_y: Sequence[str], test_x: Sequence[str], dim: int = 4096
) -> list[str]:
    """Nearest neighbour by cosine over hashed character 3-5-grams: the label of the closest
    training question."""
    a = np.stack([_hashed(_char_grams(q), dim) for q in train_x])
    b = np.stack([_hashed(_char_grams(q), dim) for q in test_x])
    nearest = (b @ a.T).argmax(axis=1)
    return [train_y[i] for i in nearest]


def nb_predict(
    train_x: Sequence[str], train_y: Sequence[str], test_x: Sequence[str], alpha: float = 0.5
) -> list[str]:
    """Multinomial naive Bayes over words and word pairs, Laplace-smoothed."""
    vocab: dict[str, int] = {}
    for q in train_x:
        for f in _word_feats(q):
            vocab.setdefault(f, len(vocab))
    labels = sorted(set(train_y))
    index = {y: i for i, y in enumerate(labels)}
    counts = np.zeros((len(labels), len(vocab)))
    for q, y in zip(train_x, train_y, strict=True):
        for f in _word_feats(q):
            counts[index[y], vocab[f]] += 1
    log_prior = np.log(np.bincount([index[y] for y in train_y], minlength=len(labels)))
    smoothed = counts + alpha
    log_like = np.log(smoothed / smoothed.sum(axis=1, keepdims=True))
    out = []
    for q in test_x:
        x = np.zeros(len(vocab))
        for f in _word_feats(q):
            if f in vocab:
                x[vocab[f]] += 1
        out.append(labels[int(np.argmax(log_prior + log_like @ x))])
    return out


# -- string rules over named entities --------------------------------------------------------


def named_entities(question: str) -> list[str]:
    """Quoted spans, then capitalised spans not inside a quote, in order of appearance."""
    quoted = [m.group(1) or m.group(2) for m in _QUOTED.finditer(question)]
    rest = _QUOTED.sub(" ", question)
    caps = [m.group(1) for m in _CAPS.finditer(rest)]
    # the first word of a question is capitalised by grammar, not by being a name
    first = rest.strip().split(" ", 1)[0] if rest.strip() else ""
    caps = [c for c in caps if c != first]
    return [e.strip() for e in quoted + caps if e.strip()]


def _overlap(question: str) -> bool:
    ents = [set(normalize_answer(e).split()) for e in named_entities(question)]
    return any(ents[i] & ents[j] for i in range(len(ents)) for j in range(i + 1, len(ents)))


def _string_rule(train: list[Task], test: list[Task]) -> list[str | None]:
    boolean = [t for t in train if answer_key(t) in _YES_NO]
    by_overlap: dict[bool, Counter[str]] = defaultdict(Counter)
    for t in boolean:
        by_overlap[_overlap(t.question)][answer_key(t)] += 1
    slots: Counter[int] = Counter()
    for t in train:
        ents = [normalize_answer(e) for e in named_entities(t.question)]
        key = answer_key(t)
        if key in ents:
            slots[ents.index(key)] += 1
    slot = slots.most_common(1)[0][0] if slots else None
    out: list[str | None] = []
    for t in test:
        if boolean and answer_key(t) in _YES_NO | {""}:
            seen = by_overlap.get(_overlap(t.question))
            out.append(seen.most_common(1)[0][0] if seen else None)
            continue
        ents = named_entities(t.question)
        out.append(ents[slot] if slot is not None and slot < len(ents) else None)
    return out


def _rule_chance(tasks: list[Task]) -> float:
    """What a rule picking a yes/no answer or a named entity at random gets: a comparison
    ("who has more papers, A or B") names its answer, and is at one half by design."""
    total = 0.0
    for t in tasks:
        key = answer_key(t)
        ents = [normalize_answer(e) for e in named_entities(t.question)]
        if key in _YES_NO:
            total += 0.5
        elif key in ents:
            total += 1 / len(ents)
    return total / len(tasks)


# -- the gold solution's observations --------------------------------------------------------


def _scalars(value: Any) -> Iterable[tuple[str, Any]]:
    """The (field, value) pairs of a record, list items of scalars each under the field."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(v, list):
                for item in v:
                    if not isinstance(item, (dict, list)):
                        yield str(k), item
            elif not isinstance(v, dict):
                yield str(k), v
    elif isinstance(value, str):
        yield "text", value


def subject_record(result: Any) -> Any:
    """The question's subject as the first call returned it (the first hit of a list)."""
    if isinstance(result, list):
        return result[0] if result else None
    return result


def _field_values(record: Any) -> dict[str, set[str]]:
    fields: dict[str, set[str]] = defaultdict(set)
    if isinstance(record, str):
        # a page: its attributes are its named spans by position (the organisation sits in the
        # same slot of every scholar's page), so the rule learns a slot, as it learns a field
        for k, span in enumerate(named_entities(record)[:MAX_SLOTS]):
            fields[f"slot{k}"].add(normalize_answer(span))
        return fields
    for key, value in _scalars(record):
        text = normalize_answer(str(value))
        if text:
            fields[key].add(text)
    return fields


def _subject_attr(tasks: list[Task], records: list[Any], seed: int) -> BaselineScore | None:
    """Does the answer equal a field of the first call's record, with the field learned on the
    training half; chance: the same rule against another task's subject."""
    usable = [i for i, r in enumerate(records) if r is not None]
    if len(usable) < 4:
        return None
    fields = [_field_values(records[i]) for i in usable]
    keys = [answer_key(tasks[i]) for i in usable]
    a, b = _halves([tasks[i] for i in usable], seed)
    rng = random.Random(f"audit-subject/{seed}")

    def score(train: list[int], test: list[int], shift: bool) -> tuple[int, int]:
        votes: Counter[str] = Counter()
        for j in train:
            votes.update(f for f, vals in fields[j].items() if _has(vals, keys[j]))
        if not votes:
            return 0, len(test)
        field = votes.most_common(1)[0][0]
        others = test[:]
        if shift:
            rng.shuffle(others)
        hits = sum(
            _has(fields[o].get(field, set()), keys[j]) for j, o in zip(test, others, strict=True)
        )
        return hits, len(test)

    def acc(shift: bool) -> float:
        h1, n1 = score(a, b, shift)
        h2, n2 = score(b, a, shift)
        return (h1 + h2) / max(n1 + n2, 1)

    # the permutation chance is noisy on small families: average several shuffles
    chance = sum(acc(True) for _ in range(5)) / 5
    return BaselineScore(name="subject_attr", accuracy=acc(False), chance=chance, n=len(usable))


def _has(values: set[str], key: str) -> bool:
    """Whether ``key`` is one of the values, or a whole-token span of a page's text."""
    if key in values:
        return True
    needle = key.split()
    return any(len(v) > 200 and contains_tokens(v.split(), needle) for v in values)


def _names_answer(task: Task) -> bool:
    return answer_key(task) in {normalize_answer(e) for e in named_entities(task.question)}


def _hops(task: Task, results: list[Any]) -> bool:
    """Whether the gold solution leaves its subject: a page-level question answered from the
    subject's own page (a qualifier, a count over its list) is one page by design, so only
    solutions that open a second page are asked whether the first page already had it."""
    if not isinstance(results[0], str) or not task.solution:
        return True
    first = task.solution[0]
    opened = {
        json.dumps(c.arguments, sort_keys=True) for c in task.solution if c.tool == first.tool
    }
    return len(opened) > 1


_LABELLED = re.compile(
    # "Label: a, b and c." opening a text, a line or a sentence ("(Result 1 / 1) Label: ...")
    r"(?:^|(?<=[.!?)]\s)|(?<=\n))([A-Z][a-z]+(?: [a-z]+){0,3}): (.+?)(?=\.\s|\.$|\n|$)"
)
_NUMBER = re.compile(r"[\d\s.,:/-]+")
_SIMILAR = re.compile(r"Similar: (\[.*?\])")


def _text_lists(text: str) -> Iterable[list[Any]]:
    """The lists a page or a tool message writes out: ReAct's ``Similar: [...]`` and a labelled
    enumeration (``Frequent collaborators: A, B and C.``; ``;`` between items that hold commas)."""
    for m in _SIMILAR.finditer(text):
        try:
            items = ast.literal_eval(m.group(1))
        except (SyntaxError, ValueError):
            continue
        if isinstance(items, list):
            yield items
    for m in _LABELLED.finditer(text):
        body = m.group(2)
        if body.startswith("["):  # a written-out list literal, read above
            continue
        items = body.split("; ") if "; " in body else re.split(r", | and ", body)
        if len(items) >= 2:
            yield items


def observed_lists(value: Any, depth: int = 0) -> Iterable[list[Any]]:
    """Every list of two or more items in a tool result, outermost first: JSON lists at any
    depth, series keyed by dates or numbers (as ``key value`` items), lists written in text."""
    if depth > 4:
        return
    if isinstance(value, str):
        yield from _text_lists(value)
    elif isinstance(value, list):
        if len(value) >= 2:
            yield value
        for item in value:
            if isinstance(item, (dict, list)):
                yield from observed_lists(item, depth + 1)
    elif isinstance(value, Mapping):
        keys = [str(k) for k in value]
        if len(keys) >= 2 and all(k[:1].isdigit() for k in keys):
            yield [
                {"key": k, **v} if isinstance(v, Mapping) else {"key": k, "value": v}
                for k, v in zip(keys, value.values(), strict=True)
            ]
            return
        for v in value.values():
            if isinstance(v, (dict, list, str)):
                yield from observed_lists(v, depth + 1)


def _item_has(item: Any, key: str) -> bool:
    """Whether a list item is the answer, holds it as a field, or (text) names it whole."""
    if isinstance(item, Mapping):
        # a series' key is its index (a date, a row number), not a value
        return key in {normalize_answer(str(v)) for k, v in _scalars(item) if k != "key"}
    text = normalize_answer(str(item))
    return text == key or contains_tokens(text.split(), key.split())


def _item_values(item: Any, question: str) -> set[str]:
    """The values of a list item the question could name it by: its fields (a record), or the
    question's named entities and offered answers found in it (text)."""
    if isinstance(item, Mapping):
        values = {normalize_answer(str(v)) for k, v in _scalars(item) if k != "key"}
        if "key" in item:  # a series row is named by its date
            values.add(normalize_answer(str(item["key"]).split(" ")[0]))
        return {v for v in values if len(v) >= 4}
    text = normalize_answer(str(item)).split()
    names = [normalize_answer(e) for e in named_entities(question)] + options_of(question)
    return {e for e in names if e and contains_tokens(text, e.split())}


def _named_items(data: list[Any], question: str) -> set[int]:
    """The items the question names by a value the other items do not share: a search hit for
    the title it asks about, the row of the date it asks for."""
    words = normalize_answer(question).split()
    values = [_item_values(item, question) for item in data]
    shared = set.intersection(*values) if values else set()
    return {
        i
        for i, vals in enumerate(values)
        if any(contains_tokens(words, v.split()) for v in vals - shared)
    }


def answer_position(task: Task, results: list[Any]) -> tuple[list[int], list[Any]] | None:
    """Where the answer sits in the first list the gold run observed that holds it, and that
    list; ``None`` when no list counts (see the module docstring)."""
    key = normalize_answer(task.answers[0])
    # a number that happens to sit in some row is not an item
    if not key or _NUMBER.fullmatch(key):
        return None
    for r in results:
        for data in observed_lists(r):
            # a list of lists is a table's columns: its order is its shape
            if any(isinstance(item, list) for item in data):
                continue
            where = [i for i, item in enumerate(data) if _item_has(item, key)]
            # an answer in every item says nothing about where it sits
            if where and len(where) < len(data):
                # found by what it is when the question names the answer's item and no other
                named = _named_items(data, task.question)
                if named and named <= set(where):
                    return None
                return where, data
    return None


def position_baseline(tasks: list[Task], results: list[list[Any] | None]) -> BaselineScore | str:
    """Among questions without a superlative whose answer is an item of a list the gold run
    observed: how often it is the first or the last item, against one over the list length.
    Too few such questions: the reason, as text."""
    first = last = 0
    chance = 0.0
    n = 0
    for task, res in zip(tasks, results, strict=True):
        if res is None or task.elements or SUPERLATIVE.search(task.question):
            continue
        found = answer_position(task, res)
        if found is None:
            continue
        where, data = found
        n += 1
        first += where[0] == 0
        last += where[-1] == len(data) - 1
        chance += 1 / len(data)
    if n < MIN_POSITION:
        return f"{n} answers in a list observation (< {MIN_POSITION})"
    return BaselineScore(name="position", accuracy=max(first, last) / n, chance=chance / n, n=n)


# -- the audit -------------------------------------------------------------------------------


def _gold_results(env: Any, task: Task) -> list[Any] | None:
    if not task.solution:
        return None
    try:
        # a fresh episode session: Lookup reads the page Search opened, CRAG's tools answer
        # as of the task's query time
        return [r.data for r in run_solution(env.session(task), task.solution)]
    except Exception:  # a tool that fails on a stored solution leaves the task out
        return None


def audit_family(
    family: str,
    tasks: list[Task],
    env: Any = None,
    threshold: float = 0.10,
    seed: int = 0,
    direct: Mapping[str, bool] | None = None,
) -> FamilyAudit:
    """Every applicable baseline on one family's tasks."""
    keys = [answer_key(t) for t in tasks]
    distinct = len(set(keys))

    def majority_fit(train: list[Task], test: list[Task]) -> list[str | None]:
        top = Counter(answer_key(t) for t in train).most_common(1)[0][0]
        return [top] * len(test)

    def classifier(fn: Callable[..., list[str]]):
        def fit(train: list[Task], test: list[Task]) -> list[str | None]:
            return list(
                fn(
                    [t.question for t in train],
                    [answer_key(t) for t in train],
                    [t.question for t in test],
                )
            )

        return fit

    baselines: list[BaselineScore] = []
    not_judged: dict[str, str] = {}
    if len(tasks) < MIN_ITEMS:
        not_judged["family"] = f"too few items: {len(tasks)} < {MIN_ITEMS}"
    if len(tasks) >= 4:
        # "invalid question" is a decision about the premise, judged by the wording check
        # across families: always rejecting earns the false-premise share, not a shortcut
        share = sum(is_false_premise(t) for t in tasks) / len(tasks)
        choice = max(_choice_chance(tasks), share, _count_chance(tasks))
        majority = _two_fold(tasks, seed, majority_fit)
        baselines.append(
            BaselineScore(
                name="majority", accuracy=majority, chance=max(1 / distinct, choice), n=len(tasks)
            )
        )
        by_template = _two_fold(tasks, seed, _template_majority)
        constant = distinct == 1  # CRAG's false premises: judged across families below
        baselines.append(
            BaselineScore(
                name="template_majority",
                accuracy=by_template,
                chance=1.0 if constant else max(_template_chance(tasks), choice),
                n=len(tasks),
            )
        )
        # a classifier that only recognises the template earns the template's majority answer
        chance = max(majority, by_template, 1 / distinct, choice)
        for name, fn in (("char_knn", knn_predict), ("word_nb", nb_predict)):
            baselines.append(
                BaselineScore(
                    name=name,
                    accuracy=_two_fold(tasks, seed, classifier(fn)),
                    chance=chance,
                    n=len(tasks),
                )
            )
        baselines.append(
            BaselineScore(
                name="string_rule",
                accuracy=_two_fold(tasks, seed, _string_rule),
                chance=max(chance, _rule_chance(tasks)),
                n=len(tasks),
            )
        )
        if tasks[0].key_points:  # long-form: what a writer without tools could put down
            for name, fit in (("echo", _echo), ("slot_majority", _slot_majority)):
                baselines.append(
                    BaselineScore(
                        name=name,
                        accuracy=_two_fold(tasks, seed, fit),
                        chance=chance,
                        n=len(tasks),
                    )
                )
        if env is not None:
            results = [_gold_results(env, t) for t in tasks]
            if tasks[0].level is Level.KA:
                records = [
                    # a comparison names its answer: the string rule judges those
                    subject_record(r[0]) if r and _hops(t, r) and not _names_answer(t) else None
                    for t, r in zip(tasks, results, strict=True)
                ]
                subject = _subject_attr(tasks, records, seed)
                if subject is None:
                    not_judged["subject_attr"] = "fewer than 4 subjects one call away"
                else:
                    baselines.append(subject)
            position = position_baseline(tasks, results)
            if isinstance(position, str):
                not_judged["position"] = position
            else:
                baselines.append(position)
        if direct:
            judged = [t for t in tasks if t.id in direct]
            if judged:
                acc = sum(direct[t.id] for t in judged) / len(judged)
                baselines.append(
                    BaselineScore(name="direct", accuracy=acc, chance=chance, n=len(judged))
                )
    popularity = Counter(t.tags.popularity or "-" for t in tasks)
    return FamilyAudit(
        family=family,
        level=tasks[0].level.value if tasks else "",
        n=len(tasks),
        distinct_answers=distinct,
        baselines=baselines,
        popularity=dict(sorted(popularity.items())),
        threshold=threshold,
        not_judged=not_judged,
    )


def _echo(train: list[Task], test: list[Task]) -> list[str | None]:
    """A long-form answer that restates the question (a correction's statement as given)."""
    return [t.question for t in test]


def _slot_majority(train: list[Task], test: list[Task]) -> list[str | None]:
    """A long-form answer naming, for every slot, the training half's most frequent values
    (three for a list's members): the family's typical profile, written without tools."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    members: set[str] = set()
    for task in train:
        for point in task.key_points or []:
            counts[point.slot][point.value] += 1
            if point.kind == "member":
                members.add(point.slot)
    parts = []
    for slot, values in sorted(counts.items()):
        top = values.most_common(3 if slot in members else 1)
        parts.append(f"{slot}: {', '.join(v for v, _ in top)}.")
    text = " ".join(parts)
    return [text] * len(test)


def template_of(task: Task) -> str:
    """The surface template a generated task was written from: a format string with slots;
    anything else (a generator's function name) is not visible in the wording, so the tasks
    count as one surface, their family."""
    template = str(task.metadata.get("template") or "")
    return template if "{" in template else task.family


def _template_majority(train: list[Task], test: list[Task]) -> list[str | None]:
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for t in train:
        per[template_of(t)][answer_key(t)] += 1
    overall = Counter(answer_key(t) for t in train).most_common(1)[0][0]
    return [
        per[template_of(t)].most_common(1)[0][0] if template_of(t) in per else overall for t in test
    ]


def _template_chance(tasks: list[Task]) -> float:
    """Mean over tasks of one over the number of distinct answers its template has."""
    per: dict[str, set[str]] = defaultdict(set)
    for t in tasks:
        per[template_of(t)].add(answer_key(t))
    # a constant template sits at one half, so it fails like an unbalanced yes/no one
    return sum(1 / max(len(per[template_of(t)]), 2) for t in tasks) / len(tasks)


def is_false_premise(task: Task) -> bool:
    """Whether a task's premise is false (CRAG's false-premise questions)."""
    return task.tags.question_type == "false_premise" or (
        task.answer_type is not None and task.answer_type.value == "invalid_premise"
    )


def false_premise_check(tasks: list[Task], seed: int = 0) -> BaselineScore | None:
    """Can the wording alone tell false-premise questions from valid ones (character n-gram
    nearest neighbour, 2-fold) better than the majority label."""
    labels = ["false" if is_false_premise(t) else "valid" for t in tasks]
    if len(set(labels)) < 2:
        return None
    pool = list(tasks)
    labels = ["false" if is_false_premise(t) else "valid" for t in pool]
    a, b = _halves(pool, seed)
    hits = total = 0
    for train, test in ((a, b), (b, a)):
        preds = knn_predict(
            [pool[i].question for i in train],
            [labels[i] for i in train],
            [pool[i].question for i in test],
        )
        hits += sum(p == labels[i] for i, p in zip(test, preds, strict=True))
        total += len(test)
    majority = Counter(labels).most_common(1)[0][1] / len(labels)
    return BaselineScore(name="false_premise", accuracy=hits / total, chance=majority, n=len(pool))


def audit_tasks(
    tasks: list[Task],
    env: Any = None,
    *,
    env_name: str = "",
    spec: str = "",
    threshold: float = 0.10,
    seed: int = 0,
    direct: Mapping[str, bool] | None = None,
    in_view: Mapping[str, bool] | None = None,
    context: int | None = None,
    view_workflow: str | None = None,
) -> AuditReport:
    """Audit a task set family by family (gold solutions run against ``env`` when given).
    ``in_view``: task id -> whether its answer is visible at ``context`` tokens in
    ``view_workflow``'s view (``raleval.app.views.answerable_in_view``); each family then
    reports the share that is."""
    by_family: dict[str, list[Task]] = defaultdict(list)
    for t in tasks:
        by_family[t.family].append(t)
    families = [
        audit_family(fid, fam_tasks, env, threshold, seed, direct)
        for fid, fam_tasks in by_family.items()
    ]
    if in_view is not None:
        for f in families:
            judged = [in_view[t.id] for t in by_family[f.family] if t.id in in_view]
            f.in_view = sum(judged) / len(judged) if judged else None
    return AuditReport(
        env=env_name,
        tasks=spec,
        threshold=threshold,
        families=families,
        false_premise=false_premise_check(tasks, seed),
        context=context if in_view is not None else None,
        view_workflow=view_workflow if in_view is not None else None,
    )


def _view_column(report: AuditReport) -> list[str]:
    """The "answerable in view" column's heading, when the report measured it."""
    return [f"in view @{report.context}"] if report.context is not None else []


def _view_cell(f: FamilyAudit, report: AuditReport) -> list[str]:
    if report.context is None:
        return []
    return ["-" if f.in_view is None else f"{f.in_view:.2f}"]


def audit_table(report: AuditReport) -> Any:
    """The audit as a rich table: one row per family, accuracy/chance per baseline."""
    from rich.table import Table

    names = _columns(report)
    table = Table(
        title=f"shortcut audit: {report.tasks} on {report.env} "
        f"(fail when accuracy - chance > {report.threshold:.2f})"
    )
    view = _view_column(report)
    for col in ("family", "level", "n", "answers", *names, *view, "popularity", "verdict"):
        table.add_column(col)
    for f in report.families:
        cells = {b.name: b for b in f.baselines}
        row = [f.family, f.level, str(f.n), str(f.distinct_answers)]
        for name in names:
            b = cells.get(name)
            row.append(_missing(f, name) if b is None else _cell(b, report.threshold))
        row += _view_cell(f, report)
        pop = " ".join(f"{k}:{v}" for k, v in f.popularity.items())
        verdict = {"FAIL": "[red]FAIL[/]", "too few items": "[yellow]too few items[/]"}
        row += [pop, verdict.get(f.verdict, f.verdict)]
        table.add_row(*row)
    lines = _not_judged_lines(report)
    if report.false_premise is not None:
        fp = report.false_premise
        lines.append(
            f"false premise vs valid by wording alone: {_cell(fp, report.threshold)} "
            f"over {fp.n} questions -> {'pass' if fp.excess <= report.threshold else 'FAIL'}"
        )
    if report.context is not None:
        lines.append(_view_note(report))
    lines.append(f"verdict: {report.verdict}")
    table.caption = "\n".join(lines)
    return table


def _view_note(report: AuditReport) -> str:
    return (
        f"in view @{report.context}: share of tasks whose answer the {report.view_workflow} "
        f"workflow shows at {report.context} context tokens (the oracle answers from its view)"
    )


def _columns(report: AuditReport) -> list[str]:
    """Every baseline run or left unjudged somewhere, in the order they first appear."""
    names: list[str] = []
    for f in report.families:
        for name in [b.name for b in f.baselines] + [k for k in f.not_judged if k != "family"]:
            if name not in names:
                names.append(name)
    return names


def _cell(b: BaselineScore, threshold: float) -> str:
    text = f"{b.accuracy:.2f}/{b.chance:.2f}"
    return f"[red]{text}[/]" if b.excess > threshold else text


def _missing(f: FamilyAudit, name: str) -> str:
    """A baseline's empty cell: "few" when it had too few cases, "-" when it does not apply."""
    return "few" if name in f.not_judged else "-"


def _not_judged_lines(report: AuditReport) -> list[str]:
    """One line per baseline left unjudged and its reason, the families it names with their
    counts ("position: 1-3 0, 2-4 3 answers in a list observation (< 10)")."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for f in report.families:
        for name, why in f.not_judged.items():
            m = re.match(r"(\d+) (.*)", why)
            count, rest = (m.group(1), m.group(2)) if m else ("", why)
            groups[(name, rest)].append(f"{f.family} {count}".strip())
    return [f"{name}: {', '.join(fams)} {rest}" for (name, rest), fams in groups.items()]


def markdown_table(report: AuditReport) -> str:
    """The audit as a Markdown table (for the README)."""
    names = _columns(report)
    head = ["family", "level", "n", "answers", *names, *_view_column(report), "popularity"]
    head.append("verdict")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f in report.families:
        cells = {b.name: b for b in f.baselines}
        row = [f.family, f.level, str(f.n), str(f.distinct_answers)]
        row += [
            _missing(f, n)
            if cells.get(n) is None
            else f"{cells[n].accuracy:.2f}/{cells[n].chance:.2f}"
            for n in names
        ]
        row += _view_cell(f, report)
        row += [" ".join(f"{k}:{v}" for k, v in f.popularity.items()), f.verdict]
        lines.append("| " + " | ".join(row) + " |")
    fp = report.false_premise
    if fp is not None:
        verdict = "pass" if fp.excess <= report.threshold else "FAIL"
        lines.append(
            f"\nFalse premise vs valid by wording alone (character n-gram nearest neighbour): "
            f"{fp.accuracy:.2f} against a majority rate of {fp.chance:.2f} over {fp.n} "
            f"questions: {verdict}."
        )
    notes = _not_judged_lines(report)
    if notes:
        lines.append("\nNot judged: " + "; ".join(notes) + ".")
    if report.context is not None:
        lines.append(f"\n{_view_note(report)}.")
    return "\n".join(lines)


def dumps(report: AuditReport) -> str:
    """The report as indented JSON."""
    return json.dumps(report.to_json(), indent=2)
