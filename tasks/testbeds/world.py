"""Robustness testbeds (RGB / CRAG) derived from any task family.

A testbed turns verified tasks into variants and, where the world must change for one episode,
records the change in ``task.metadata["testbed"]``; the package's ``wrap_session`` applies
it to that episode's environment session, so every environment (local or remote) and every
workflow gets the same treatment. Each variant is checked by executing its gold solution
through the wrapped session; a task the transform cannot change cleanly is left out, never
emitted broken.

- ``negative``: every record, field or sentence holding the answer (or the evidence) is
  withheld from tool results; the expected answer is an abstention ("I don't know").
- ``false-premise``: the question's entity is replaced by a look-alike that does not exist in
  the world; the expected answer is "invalid question".
- ``counterfactual``: the answer is replaced everywhere in tool results by another value of the
  same kind (another family answer, a shifted number or year); the gold answer becomes that
  value, and the real one is kept as ``original_answers``, so answering from memory scores 0.
- ``noise``: search-style (fuzzy-matching) tools get look-alike records that hold no gold
  answer, mixed in so they make up ``ratio`` of the results (0, 0.2, 0.4, 0.6, 0.8).

Interface testbeds (``rename-tools``, ``bare-tools``, ``distractors=K``, ``inject``) change
how the tools are presented rather than what they know: :mod:`raleval.tasks.testbeds.interface`.

Task sets name a testbed after ``@``: ``crag-kg@negative``, ``reval-12@noise=0.4``,
``scholar-...@distractors=3``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from raleval.answers import AnswerType
from raleval.environment import ToolResult, render_observation
from raleval.families import SolutionMismatch, answer_of, run_solution
from raleval.grading.metrics import split_items
from raleval.records import OutcomeKind, Task, ToolCall
from raleval.tasks.testbeds.lookalike import PROPER_NAME, data_text, lookalike, mention_pattern

NOISE_RATIOS = (0.0, 0.2, 0.4, 0.6, 0.8)
REJECTION_ANSWER = "I don't know"
INVALID_ANSWER = "invalid question"
_SUFFIX = {"negative": "neg", "false-premise": "fp", "counterfactual": "cf", "noise": "noise"}


# --- matching answer strings inside tool results ------------------------------------------


def _mentions(pattern: re.Pattern[str] | None, text: str) -> bool:
    return pattern is not None and pattern.search(text) is not None


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


def data_sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text) if s]


def withhold(data: Any, pattern: re.Pattern[str]) -> Any:
    """``data`` without the records, fields and sentences that mention ``pattern``."""
    if isinstance(data, str):
        if not _mentions(pattern, data):
            return data
        kept = [s for s in data_sentences(data) if not _mentions(pattern, s)]
        return " ".join(kept) if kept else None
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            if _mentions(pattern, str(key)) or _mentions(pattern, data_text(value)):
                continue
            out[key] = value
        return out
    if isinstance(data, (list, tuple)):
        return [withhold(x, pattern) if isinstance(x, str) else x
                for x in data if not _mentions(pattern, data_text(x))]  # fmt: skip
    if data is not None and _mentions(pattern, str(data)):
        return None
    return data


def swap(data: Any, old: str, new: str) -> Any:
    """``data`` with every whole-word occurrence of ``old`` replaced by ``new`` (numbers equal
    to ``old`` become numbers equal to ``new``)."""
    pattern = mention_pattern([old])
    assert pattern is not None

    def one(x: Any) -> Any:
        if isinstance(x, str):
            return pattern.sub(new, x)
        if isinstance(x, dict):
            return {one(k): one(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [one(v) for v in x]
        if isinstance(x, bool) or x is None:
            return x
        if isinstance(x, (int, float)) and str(x) == old:
            try:
                return type(x)(new)
            except ValueError:
                return new
        return x

    return one(data)


def add_noise(
    data: Any, ratio: float, rng: random.Random, protect: re.Pattern[str] | None
) -> tuple[Any, int]:
    """Mix look-alike, answerless items into a list (or sentences into a text) so that they
    make up ``ratio`` of it; returns the new data and how many items were added."""
    if ratio <= 0:
        return data, 0
    if isinstance(data, list) and data:
        items: list[Any] = list(data)
    elif isinstance(data, str) and len(data.split()) >= 6:
        items = data_sentences(data)
    else:
        return data, 0
    words = sorted(set(PROPER_NAME.findall(data_text(data))))
    wanted = round(len(items) * ratio / (1 - ratio))
    added: list[Any] = []
    for i in range(wanted * 4):
        if len(added) == wanted:
            break
        fake = lookalike(items[i % len(items)], rng, words, protect)
        if fake in items or fake in added or _mentions(protect, data_text(fake)):
            continue
        added.append(fake)
    for fake in added:
        items.insert(rng.randrange(len(items) + 1), fake)
    if isinstance(data, str):
        return " ".join(items), len(added)
    return items, len(added)


# --- the per-episode wrapper ----------------------------------------------------------------


class TestbedSession:
    """An episode's environment session with a testbed's transform applied to tool results."""

    __test__ = False  # not a pytest class

    def __init__(self, session: Any, task: Task) -> None:
        self._session = session
        self.tools, self.name = session.tools, session.name
        spec = task.metadata["testbed"]
        self.kind = spec["kind"]
        if self.kind == "negative":
            self._pattern = mention_pattern(spec["withhold"])
        elif self.kind == "counterfactual":
            self._old, self._new = spec["swap"]
        elif self.kind == "noise":
            self._ratio = float(spec["ratio"])
            self._seed = f"{spec['seed']}:{task.id}"
            self._pattern = mention_pattern(spec["protect"])

    def __getattr__(self, item: str) -> Any:
        return getattr(self._session, item)

    def session(self, task: Any = None) -> TestbedSession:
        return self

    def _transform(self, name: str, data: Any) -> tuple[Any, bool]:
        if self.kind == "negative":
            assert self._pattern is not None
            out = withhold(data, self._pattern)
            return out, out != data
        if self.kind == "counterfactual":
            out = swap(data, self._old, self._new)
            return out, out != data
        if self.kind == "noise":
            spec = self._session.tool(name)
            if spec is None or spec.matching != "fuzzy" or _NOT_FOUND in data_text(data)[:20]:
                return data, False
            # Seeded by the call's clean result, not by the calls before it: a call made again
            # (the oracle executes its solution, then its PAL program repeats the calls) sees
            # the same look-alikes in the same places.
            rng = random.Random(f"{self._seed}:{name}:{data_text(data)}")
            out, added = add_noise(data, self._ratio, rng, self._pattern)
            return out, added > 0
        return data, False

    def _apply(self, name: str, result: ToolResult) -> ToolResult:
        if result.kind is not OutcomeKind.ok or result.data is None:
            return result
        data, changed = self._transform(name, result.data)
        if not changed:
            return result
        spec = self._session.tool(name)
        result.data = data
        result.observation = render_observation(data, spec.empty_message if spec else None)
        return result

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return self._apply(name, await self._session.call(name, arguments))

    def call_sync(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return self._apply(name, self._session.call_sync(name, arguments))


_NOT_FOUND = "Could not find"  # the wiki's not-found observation: nothing to add noise to


# --- deriving variants ----------------------------------------------------------------------


def _run_solution(session: Any, calls: list[ToolCall]) -> list[ToolResult] | None:
    try:
        return run_solution(session, calls)
    except SolutionMismatch:
        return None


def _variant(task: Task, kind: str, **changes: Any) -> Task:
    data = task.model_dump()
    data["id"] = f"{task.id}@{_SUFFIX[kind]}"
    data["metadata"] = {**task.metadata, **changes.pop("metadata", {})}
    data.update(changes)
    return Task.model_validate(data)


def _observed(env: Any, task: Task) -> list[ToolResult] | None:
    if not task.solution:
        return None
    return _run_solution(env.session(task), task.solution)


def negative(
    env: Any, task: Task, observed: list[ToolResult] | None, pools: dict[str, list[str]],
    rng: random.Random,
) -> Task | None:  # fmt: skip
    if observed is None:
        return None
    # sorted: a set's order changes with the process's hash seed, and seasons must not
    items = (
        sorted({i for a in task.answers for i in split_items(a)}) if task.metric == "set_f1" else []
    )
    values = [a for a in [*task.answers, *items, *(task.evidence or [])]
              if len(a.strip()) >= 2 and a.strip().lower() not in ("yes", "no")]  # fmt: skip
    pattern = mention_pattern(values)
    if pattern is None or not any(_mentions(pattern, r.observation) for r in observed):
        return None  # nothing verbatim to withhold (a computed answer, yes/no)
    variant = _variant(
        task,
        "negative",
        answers=[REJECTION_ANSWER],
        evidence=None,
        answer_type=AnswerType.free_text,
        elements=None,
        tags=task.tags.model_copy(update={"answerable": False}),
        metadata={
            "testbed": {"kind": "negative", "withhold": values},
            "original_answers": task.answers,
            "answer_expr": None,
        },
    )
    results = _run_solution(TestbedSession(env.session(variant), variant), task.solution or [])
    if results is None or any(_mentions(pattern, r.observation) for r in results):
        return None
    return variant


def counterfactual(
    env: Any, task: Task, observed: list[ToolResult] | None, pools: dict[str, list[str]],
    rng: random.Random,
) -> Task | None:  # fmt: skip
    if observed is None:
        return None
    old = task.answers[0]
    old_pattern = mention_pattern([old])
    seen = " ".join(r.observation for r in observed)
    if len(old.strip()) < 2 or not _mentions(old_pattern, seen):
        return None
    if _mentions(old_pattern, task.question):  # a choice between named options: no fact to change
        return None
    # values found in the same place of other tasks' results (the same field, or after the
    # same word in a text), then other answers of the same template: never a value of
    # another kind (a position for an organization)
    place = _result_place(task, observed, old)
    pool = [*pools.get(f"place:{place}", []), *pools.get(_kind(task), [])]
    new = _counter_value(old, pool, seen, task.question, rng)
    if new is None:
        return None
    expr = task.metadata.get("answer_expr")
    variant = _variant(
        task,
        "counterfactual",
        answers=[new],
        evidence=[swap(e, old, new) for e in task.evidence] if task.evidence else None,
        metadata={
            "testbed": {"kind": "counterfactual", "swap": [old, new]},
            "original_answers": task.answers,
        },
    )
    results = _run_solution(TestbedSession(env.session(variant), variant), task.solution or [])
    if results is None:
        return None
    text = " ".join(r.observation for r in results)
    if _mentions(old_pattern, text) or not _mentions(mention_pattern([new]), text):
        return None
    if expr and answer_of(expr, [r.data for r in results]) != new:
        return None
    return variant


def _counter_value(
    old: str, pool: list[str], seen: str, question: str, rng: random.Random
) -> str | None:
    """Another value of the same kind as ``old`` that the tool results do not mention."""
    if re.fullmatch(r"\d{4}", old) and 1000 <= int(old) <= 2100:
        return str(int(old) + rng.choice([-7, -5, -3, 3, 5, 7]))
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", old):
        return f"{int(old[:4]) + rng.choice([-3, -2, 2, 3])}{old[4:]}"
    if re.fullmatch(r"-?\d+", old):
        value = int(old)
        return str(value + max(1, round(abs(value) * rng.uniform(0.2, 0.6))))
    if re.fullmatch(r"-?\d+\.\d+", old):
        places = len(old.split(".")[1])
        return f"{float(old) * rng.uniform(1.2, 1.6):.{places}f}"
    candidates = sorted({v for v in pool if v.casefold() != old.casefold() and _shape(v, old)})
    rng.shuffle(candidates)
    # the same last word first (an organization for an organization), then any of that shape
    candidates.sort(key=lambda v: v.split()[-1] != old.split()[-1])
    for value in candidates:
        if not _mentions(mention_pattern([value]), seen + " " + question):
            return value
    return None


def _result_place(task: Task, observed: list[ToolResult], value: str) -> str | None:
    """The tool and the place in its result where ``value`` first occurs."""
    for call, result in zip(task.solution or [], observed, strict=False):
        place = _place(result.data, value)
        if place is not None:
            return f"{call.tool}:{place}"
    return None


def _place(data: Any, value: str) -> str | None:
    """Where ``value`` first occurs in tool results: the field holding it, or in a text the
    word before it."""
    pattern = mention_pattern([value])
    if isinstance(data, dict):
        for key, item in data.items():
            if _mentions(pattern, data_text(item)):
                inner = _place(item, value)
                return inner if inner and inner.startswith("field:") else f"field:{key}"
        return None
    if isinstance(data, list):
        return next((p for p in (_place(x, value) for x in data) if p), None)
    if isinstance(data, str) and pattern is not None and (m := pattern.search(data)):
        before = re.findall(r"[\w.]+", data[: m.start()])
        return f"after:{before[-1].lower()}" if before else "after:"
    if data is not None and str(data) == value:
        return "value"
    return None


def _shape(value: str, like: str) -> bool:
    """Whether ``value`` could stand in for ``like``: text (not a number), the same case of the
    first letter and about as many words."""
    if len(value.strip()) < 2 or re.fullmatch(r"[\d.,\-]+", value):
        return False
    return (
        value[0].isupper() == like[0].isupper() and abs(len(value.split()) - len(like.split())) <= 1
    )


def false_premise(
    env: Any, task: Task, observed: list[ToolResult] | None, pools: dict[str, list[str]],
    rng: random.Random,
) -> Task | None:  # fmt: skip
    if not task.solution:
        return None
    first = task.solution[0]
    key = _subject_key(task)
    if key is None:
        return None
    real = first.arguments[key]
    # donors: other tasks' subjects, and the names the first call itself returns (a search
    # lists look-alikes of the same kind)
    probe = env.session(task).call_sync(first.tool, first.arguments)
    found = [v for v in _strings(probe.data) if len(v) < 80] if probe.kind is OutcomeKind.ok else []
    others = [n for n in [*pools.get(f"{task.family}:{task.domain}:{key}", []), *found]
              if n != real]  # fmt: skip
    for _ in range(8):
        fake = _fake_name(real, others, rng)
        if fake is None or fake.casefold() == real.casefold():
            continue
        call = ToolCall(tool=first.tool, arguments={**first.arguments, key: fake})
        probe = env.session(task).call_sync(call.tool, call.arguments)
        if probe.kind is OutcomeKind.ok and _exists(probe.data, fake):
            continue
        return _variant(
            task,
            "false-premise",
            question=_replace_subject(task.question, real, fake),
            answers=[INVALID_ANSWER],
            evidence=None,
            answer_type=AnswerType.invalid_premise,
            elements=None,
            solution=[call],
            tags=task.tags.model_copy(update={"question_type": "false_premise"}),
            metadata={
                "testbed": {"kind": "false-premise", "real": real, "fake": fake},
                "original_answers": task.answers,
                "answer_expr": None,
            },
        )
    return None


def _strings(data: Any) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for v in data.values() for s in _strings(v)]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return []


def _subject_key(task: Task) -> str | None:
    """The first call's argument that names the question's subject: of the string arguments
    quoted in the question, the one it mentions first."""
    if not task.solution:
        return None
    args = task.solution[0].arguments
    question = task.question.casefold()
    quoted = [k for k, v in args.items()
              if isinstance(v, str) and len(v) >= 3 and v.casefold() in question]  # fmt: skip
    return min(quoted, key=lambda k: question.index(args[k].casefold()), default=None)


def _replace_subject(question: str, real: str, fake: str) -> str:
    """``question`` with every mention of ``real`` (any case) replaced by ``fake``, written in
    the case the question used."""

    def written(m: re.Match[str]) -> str:
        return fake[:1].lower() + fake[1:] if m.group(0)[:1].islower() else fake

    return re.sub(re.escape(real), written, question, flags=re.IGNORECASE)


def _kind(task: Task) -> str:
    """Tasks of the same family and template ask for the same kind of value."""
    return f"{task.family}:{task.metadata.get('template', '')}"


def _exists(data: Any, name: str) -> bool:
    """Whether a call made with ``name`` found something by that name: a getter answered (not
    null), a search listed it, a page exists (not the wiki's "Could not find name.")."""
    if data is None or data == [] or data == {}:
        return False
    if isinstance(data, str) and data.startswith(_NOT_FOUND):
        # ReAct's "Could not find X." or R-Eval's "Could not find [X]."
        rest = data.replace(f"{_NOT_FOUND} [{name}]", "").replace(f"{_NOT_FOUND} {name}.", "")
        return _mentions(mention_pattern([name]), rest)
    if isinstance(data, list):
        return _mentions(mention_pattern([name]), data_text(data))
    return True


def _fake_name(real: str, others: list[str], rng: random.Random) -> str | None:
    """A look-alike of ``real`` built from another name of the family of the same shape: one
    capitalised word swapped for the word in the same place (``Ada Lin`` -> ``Ada Moreno``), or
    for a single word, its first half joined to the other's second half."""
    words = real.split()
    donors = [o.split() for o in others if len(o.split()) == len(words)]
    if not donors:
        return None
    donor = rng.choice(donors)
    if len(words) == 1:
        a, b = words[0], donor[0]
        return a[: max(2, len(a) // 2)] + b[len(b) // 2 :]
    places = [i for i, (w, d) in enumerate(zip(words, donor, strict=True))
              if w != d and w[:1].isupper() and d[:1].isupper()]  # fmt: skip
    if not places:
        return None
    i = rng.choice(places)
    return " ".join([*words[:i], donor[i], *words[i + 1 :]])


def noise(
    env: Any, task: Task, observed: list[ToolResult] | None, pools: dict[str, list[str]],
    rng: random.Random, ratio: float = 0.0,
) -> Task | None:  # fmt: skip
    if not task.solution:
        return None
    protect = [a for a in [*task.answers, *(task.evidence or [])] if len(a.strip()) >= 2]
    variant = _variant(
        task,
        "noise",
        metadata={
            "testbed": {"kind": "noise", "ratio": ratio, "seed": rng.randrange(2**31),
                        "protect": protect},
            "noise_ratio": ratio,
        },
    )  # fmt: skip
    variant.id = f"{task.id}@noise{ratio:g}"
    results = _run_solution(TestbedSession(env.session(variant), variant), task.solution)
    if results is None:
        return None
    expr = task.metadata.get("answer_expr")
    # The expression was written for clean results; when noise moves the record it reads,
    # it is no longer a gold program, so the variant keeps only the answer.
    if expr and answer_of(expr, [r.data for r in results]) != task.answers[0]:
        variant.metadata["answer_expr"] = None
    return variant


_DERIVE: dict[str, Callable[..., Task | None]] = {
    "negative": negative,
    "false-premise": false_premise,
    "counterfactual": counterfactual,
    "noise": noise,
}


def derive_world(
    tasks: list[Task], env: Any, kind: str, seed: int, *, ratio: float = 0.0, label: str
) -> list[Task]:
    """The world testbed's verified variants of ``tasks`` (tasks it cannot transform are left
    out); ``label`` seeds each variant's draws."""
    # the base solutions' results, run once: negative and counterfactual start from them
    needs_results = kind in ("negative", "counterfactual")
    observed = {t.id: _observed(env, t) for t in tasks} if needs_results else {}
    pools: dict[str, list[str]] = {}
    for t in tasks:
        pools.setdefault(_kind(t), []).append(t.answers[0])
        if kind == "counterfactual" and (results := observed[t.id]):
            place = _result_place(t, results, t.answers[0])
            pools.setdefault(f"place:{place}", []).append(t.answers[0])
        key = _subject_key(t)
        if key is not None and t.solution:
            pools.setdefault(f"{t.family}:{t.domain}:{key}", []).append(
                t.solution[0].arguments[key]
            )
    out = []
    for t in tasks:
        rng = random.Random(f"{seed}:{label}:{t.id}")
        extra = {"ratio": ratio} if kind == "noise" else {}
        variant = _DERIVE[kind](env, t, observed.get(t.id), pools, rng, **extra)
        if variant is not None:
            out.append(variant)
    return out
