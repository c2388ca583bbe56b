"""A validation set for judges: typed gold answers with known truth, and the agreement a judge
reaches on it (accuracy, false accepts, false rejects, Cohen's kappa).

The golds come from the built-in environments' generated tasks (tiny worlds, seeded): every
family's tasks are drawn, so every answer type a family produces is covered. For each gold
the generators below write answers whose truth is known by construction, never by asking the
rules: right answers reworded (number formats, units and scale words, rounding, aliases, list
orders and separators, dates written out) are *accurate*; near misses (a year or count off by
one, a wrong scale word, a list missing or adding one member, the right entity's sibling, an
answer that hedges between two candidates or contradicts itself, "invalid question" on an
answerable question) are *hallucinated*; abstentions are *missing* (CRAG's convention, also
for "I don't know, maybe X").

Some answers have a known truth that raleval's rule grading gets wrong (a hedge or a
contradiction whose first value is the gold, a list of dates written out, ...). They are kept
apart as ``rule_gap`` items: never in the agreement numbers, always reported beside them, so
the rules' blind spots stay visible (``docs/judge.md`` lists them).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from raleval.answers import AnswerType
from raleval.grading.agreement import ACCURATE, HALLUCINATED, MISSING, cohen_kappa
from raleval.grading.judge import Judge, judge_answer
from raleval.grading.metrics import normalize_answer
from raleval.grading.rules import DEFAULT_GRAMMAR, NUMBER_WORDS
from raleval.records import Task

BUILTIN_ENVS = ("scholar", "crag", "wiki")
SET_VERSION = "judge-set-v1"
RESULTS_FILE = "judge_validation.jsonl"
ABSTENTIONS = (
    "I don't know.",
    "I'm not sure.",
    "There is not enough information to answer.",
    "Unknown.",
    "There is no information available about that.",
)
# A plain abstention the phrase grammar does not recognise (no continuation word after
# "determine"): the rules grade it hallucinated, CRAG would count it missing.
UNRECOGNISED_ABSTENTION = "I cannot determine the answer from the available data."


class ValidationItem(BaseModel):
    """One answer to grade, with the verdict it deserves."""

    model_config = ConfigDict(extra="forbid")

    id: str
    family: str
    task_id: str
    question: str
    answer_type: str
    golds: list[str]
    elements: list[list[str]] | None = None
    variant: str  # how the answer was written: "reword:scale_word", "miss:year_off_by_one", ...
    answer: str
    truth: str  # accurate | missing | hallucinated
    rule_gap: bool = False  # the truth is known and raleval's rules get it wrong


class Agreement(BaseModel):
    """A judge's agreement with the truth over some items."""

    model_config = ConfigDict(extra="forbid")

    n: int
    accuracy: float  # share of items whose three-way verdict equals the truth
    false_accept: float | None  # share of items not accurate that the judge called accurate
    false_reject: float | None  # share of accurate items the judge did not call accurate
    kappa: float | None  # Cohen's kappa over the three verdicts; None when undefined


class ValidationResult(BaseModel):
    """What ``raleval judge validate`` stores for one judge (one JSON line)."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    prompt_version: str
    set_version: str
    set_id: str
    seed: int
    n: int
    overall: Agreement
    per_type: dict[str, Agreement]
    per_variant: dict[str, Agreement]
    rule_gaps: Agreement | None = None
    # items decided before the judge is asked (abstentions; "invalid question" against a
    # false premise): the same for every judge, so they measure the phrase grammar
    by_rule: int = 0
    unreadable: int = 0
    elapsed_s: float
    created: float


# --- statistics ---------------------------------------------------------------------------------


def agreement(truth: Sequence[str], verdicts: Sequence[str]) -> Agreement:
    """Accuracy, false-accept and false-reject rates and kappa of ``verdicts`` against
    ``truth`` (both three-way)."""
    n = len(truth)
    pairs = list(zip(truth, verdicts, strict=True))
    wrong = [v for t, v in pairs if t != ACCURATE]
    right = [v for t, v in pairs if t == ACCURATE]
    return Agreement(
        n=n,
        accuracy=sum(t == v for t, v in pairs) / n if n else 0.0,
        false_accept=sum(v == ACCURATE for v in wrong) / len(wrong) if wrong else None,
        false_reject=sum(v != ACCURATE for v in right) / len(right) if right else None,
        kappa=cohen_kappa(truth, verdicts),
    )


# --- answer writers -------------------------------------------------------------------------------

Variant = tuple[str, str, str, bool]  # (variant, answer, truth, rule_gap)


def _num_text(v: float, decimals: int | None = None) -> str:
    """``v`` written plainly: integers without a decimal point, others as given."""
    if decimals is None:
        return str(int(v)) if float(v).is_integer() else repr(float(v))
    text = f"{v:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _with_separators(v: float) -> str:
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.2f}"


def _unit(question: str) -> tuple[str, str]:
    """Prefix and suffix the question's unit takes ("$" for money, "%" for a percentage)."""
    q = question.lower()
    if "percent" in q:
        return "", "%"
    if any(w in q for w in ("usd", "price", "budget", "profit", "dividend", "revenue", "market")):
        return "$", ""
    if "feet" in q:
        return "", " feet"
    if "metres" in q or "meters" in q:
        return "", " metres"
    if "how old" in q:
        return "", " years old"
    return "", ""


_SCALES = (
    (1e12, "trillion", "T"),
    (1e9, "billion", "B"),
    (1e6, "million", "M"),
    (1e3, "thousand", "k"),
)


def _money(prefix: str, body: str, suffix: str, negative: bool) -> str:
    return ("-" if negative else "") + prefix + body + suffix


def number_variants(gold: str, question: str, rng: random.Random) -> list[Variant]:
    v = float(gold)
    pre, suf = _unit(question)
    neg, a = v < 0, abs(v)
    out: list[Variant] = [
        ("reword:separators_and_unit", _money(pre, _with_separators(a), suf, neg), ACCURATE, False),
        (
            "reword:sentence",
            f"The answer is {_money(pre, _num_text(a), suf, neg)}.",
            ACCURATE,
            False,
        ),
    ]
    sig = max(0, 3 - int(np.floor(np.log10(a)))) if a >= 1 else 4
    rounded = round(a, sig)
    if rounded != a:  # rounding the last digits stays well inside 0.5%
        out.append(
            ("reword:rounded", _money(pre, _num_text(rounded, sig), suf, neg), ACCURATE, False)
        )
    scale = next(((f, w, s) for f, w, s in _SCALES if a >= f * 0.9995), None)
    if scale is not None and a >= 1e6:
        f, word, short = scale
        body = _num_text(a / f, 3)
        out.append(("reword:scale_word", _money(pre, f"{body} {word}", suf, neg), ACCURATE, False))
        out.append(
            ("reword:scale_suffix", _money(pre, f"{body}{short}", suf, neg), ACCURATE, False)
        )
        wrong = {"trillion": "billion", "billion": "million", "million": "billion"}[word]
        out.append(
            ("miss:wrong_scale_word", _money(pre, f"{body} {wrong}", suf, neg), HALLUCINATED, False)
        )
    else:
        out.append(
            (
                "miss:wrong_scale_word",
                _money(pre, f"{_num_text(a)} thousand", suf, neg),
                HALLUCINATED,
                False,
            )
        )
    off = a * rng.choice((1.1, 0.9, 1.25))
    if float(a).is_integer():
        off = float(round(off)) if abs(round(off) - a) >= 1 else a + 1
        off_text = _with_separators(off)
    else:
        off_text = f"{off:,.2f}"
    out.append(("miss:value_off", _money(pre, off_text, suf, neg), HALLUCINATED, False))
    if neg:
        out.append(
            ("miss:sign_flipped", _money(pre, _num_text(a), suf, False), HALLUCINATED, False)
        )
    other = _money(pre, off_text, suf, neg)
    gold_text = _money(pre, _with_separators(a), suf, neg)
    out.append(("miss:hedged", f"Either {other} or {gold_text}.", HALLUCINATED, False))
    out.append(("miss:self_contradicting", f"{other}. No, it is {gold_text}.", HALLUCINATED, False))
    out.append(("gap:hedged_gold_first", f"{gold_text}, or possibly {other}.", HALLUCINATED, True))
    return out


def count_variants(gold: str, question: str, rng: random.Random) -> list[Variant]:
    n = int(gold.replace(",", ""))
    out: list[Variant] = [
        ("reword:sentence", f"There are {n:,} in total.", ACCURATE, False),
        ("reword:plain", f"{n:,}", ACCURATE, False),
    ]
    if n <= 20:
        out.append(("reword:number_word", NUMBER_WORDS[n].capitalize() + ".", ACCURATE, False))
    near = n + rng.choice((1, -1)) if n > 0 else n + 1
    out += [
        ("miss:off_by_one", f"{near:,}", HALLUCINATED, False),
        ("miss:hedged", f"Either {near} or {n}.", HALLUCINATED, False),
        ("miss:self_contradicting", f"{near}. No, wait: {n}.", HALLUCINATED, False),
        ("gap:hedged_gold_first", f"{n}, or possibly {near}.", HALLUCINATED, True),
    ]
    return out


def year_variants(gold: str, question: str, rng: random.Random) -> list[Variant]:
    y = int(gold)
    near = y + rng.choice((1, -1))
    return [
        ("reword:sentence", f"It was in {y}.", ACCURATE, False),
        ("reword:plain", str(y), ACCURATE, False),
        ("reword:the_year", f"The year {y}", ACCURATE, False),
        ("miss:year_off_by_one", str(near), HALLUCINATED, False),
        ("miss:year_off_by_one_sentence", f"It was in {near}.", HALLUCINATED, False),
        ("miss:hedged", f"Either {near} or {y}.", HALLUCINATED, False),
        ("miss:self_contradicting", f"{near}. No, it was {y}.", HALLUCINATED, False),
        ("gap:hedged_gold_first", f"{y}, or possibly {near}.", HALLUCINATED, True),
    ]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _written(d: date, style: int) -> str:
    """``d`` written out: 0 "August 25, 1984", 1 "25 August 1984", 2 "Aug 25, 1984",
    3 "August 25th, 1984"."""
    return (
        f"{d:%B} {d.day}, {d.year}",
        f"{d.day} {d:%B} {d.year}",
        f"{d:%b} {d.day}, {d.year}",
        f"{d:%B} {_ordinal(d.day)}, {d.year}",
    )[style]


def date_variants(gold: str, question: str, rng: random.Random) -> list[Variant]:
    d = date.fromisoformat(gold[:10])
    day_off = d + timedelta(days=rng.choice((1, -1)))
    try:
        year_off = d.replace(year=d.year + rng.choice((1, -1)))
    except ValueError:  # 29 February
        year_off = d.replace(year=d.year + 4)
    out: list[Variant] = [
        ("reword:date_written_out", _written(d, 0), ACCURATE, False),
        ("reword:date_day_first", _written(d, 1), ACCURATE, False),
        ("reword:date_abbreviated", _written(d, 2), ACCURATE, False),
        ("reword:date_ordinal", f"On {_written(d, 3)}.", ACCURATE, False),
        ("miss:day_off_by_one", _written(day_off, 0), HALLUCINATED, False),
        ("miss:year_off_by_one", _written(year_off, 0), HALLUCINATED, False),
        (
            "miss:self_contradicting",
            f"{_written(day_off, 0)}. No, {_written(d, 0)}.",
            HALLUCINATED,
            False,
        ),
        (
            "gap:hedged_gold_first",
            f"{_written(d, 0)} or possibly {_written(day_off, 0)}",
            HALLUCINATED,
            True,
        ),
    ]
    if d.day > 12:  # month and day cannot be confused
        out.append(
            ("reword:date_us_numeric", f"{d.month:02d}/{d.day:02d}/{d.year}", ACCURATE, False)
        )
    return out


def boolean_variants(gold: str, question: str, rng: random.Random) -> list[Variant]:
    yes = normalize_answer(gold) in ("yes", "true")
    right, wrong = ("Yes", "No") if yes else ("No", "Yes")
    return [
        (
            "reword:with_reason",
            f"{right}, that is right." if yes else "No, that is not the case.",
            ACCURATE,
            False,
        ),
        ("reword:plain", f"{right.lower()}", ACCURATE, False),
        ("reword:true_false", "True." if yes else "False.", ACCURATE, False),
        ("miss:opposite", f"{wrong}.", HALLUCINATED, False),
        ("miss:hedged", "Possibly, possibly not.", HALLUCINATED, False),
        (
            "miss:self_contradicting",
            f"{wrong}. Well, actually {right.lower()}.",
            HALLUCINATED,
            False,
        ),
        (
            "gap:self_contradicting_gold_first",
            f"{right}. Well, actually {wrong.lower()}.",
            HALLUCINATED,
            True,
        ),
    ]


_SEPARATOR = re.compile(r"[,;/&]")


def entity_variants(task: Task, siblings: Sequence[str], rng: random.Random) -> list[Variant]:
    gold = task.answers[0]
    sib = _sibling(gold, siblings, rng)
    out: list[Variant] = [
        ("reword:exact", gold, ACCURATE, False),
        ("reword:lower_case", gold.lower(), ACCURATE, False),
        # a gold holding a list separator ("Toronto, Ontario", a URL's "/") is not found as a
        # token run inside a sentence by the entity rule: a known gap of the rules
        (
            "gap:sentence_around_separator" if _SEPARATOR.search(gold) else "reword:sentence",
            f"The answer is {gold}.",
            ACCURATE,
            bool(_SEPARATOR.search(gold)),
        ),
    ]
    for alias in task.answers[1:2]:
        out.append(("reword:alias", alias, ACCURATE, False))
    # the name with or without its article ("The Garden of X" / "Garden of X")
    bare = gold[4:] if gold.lower().startswith("the ") else f"the {gold}"
    out.append(("reword:alias_article", bare, ACCURATE, False))
    if sib is not None:
        out += [
            ("miss:sibling_entity", sib, HALLUCINATED, False),
            ("miss:hedged", f"Either {sib} or {gold}.", HALLUCINATED, False),
            ("miss:self_contradicting", f"{gold}; no, {sib}.", HALLUCINATED, False),
            ("miss:extra_entity", f"{gold} and {sib}", HALLUCINATED, False),
        ]
    out.append(("miss:hedged_single", f"Possibly {gold}, but I am guessing.", HALLUCINATED, False))
    return out


def list_variants(task: Task, siblings: Sequence[str], rng: random.Random) -> list[Variant]:
    members = [e[0] for e in (task.elements or [])]
    shuffled = members[:]
    rng.shuffle(shuffled)
    if len(members) > 1 and shuffled == members:
        shuffled = members[1:] + members[:1]
    out: list[Variant] = [
        ("reword:list_reordered", ", ".join(shuffled), ACCURATE, False),
        ("reword:list_semicolons", "; ".join(shuffled), ACCURATE, False),
        ("reword:list_bullets", "\n".join(f"- {m}" for m in shuffled), ACCURATE, False),
    ]
    if len(shuffled) > 1:
        out.append(
            ("reword:list_and", ", ".join(shuffled[:-1]) + f" and {shuffled[-1]}", ACCURATE, False)
        )
        drop = rng.randrange(len(shuffled))
        out.append(
            (
                "miss:list_missing_one",
                ", ".join(m for i, m in enumerate(shuffled) if i != drop),
                HALLUCINATED,
                False,
            )
        )
    norm = {normalize_answer(m) for m in members}
    extra = [s for s in siblings if normalize_answer(s) not in norm and s.strip()]
    if extra:
        out.append(
            ("miss:list_extra_one", ", ".join([*shuffled, rng.choice(extra)]), HALLUCINATED, False)
        )
    if all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", m) for m in members):
        written = "; ".join(_written(date.fromisoformat(m), 1) for m in shuffled)
        out.append(("gap:list_dates_written_out", written, ACCURATE, True))
    return out


def invalid_variants(task: Task, siblings: Sequence[str], rng: random.Random) -> list[Variant]:
    other = rng.choice(siblings) if siblings else "2019"
    return [
        ("reword:invalid_question", "invalid question", ACCURATE, False),
        ("reword:invalid_capitalised", "Invalid question.", ACCURATE, False),
        ("reword:false_premise", "The question is based on a false premise.", ACCURATE, False),
        ("miss:answers_false_premise", other, HALLUCINATED, False),
        ("miss:answers_in_sentence", f"The answer is {other}.", HALLUCINATED, False),
        ("gap:hedged_invalid", f"Invalid question, or possibly {other}.", HALLUCINATED, True),
    ]


def _sibling(gold: str, siblings: Sequence[str], rng: random.Random) -> str | None:
    """Another gold of the same family that is a different entity (the right entity's kin)."""
    g = normalize_answer(gold)
    pool = [s for s in siblings if normalize_answer(s) and normalize_answer(s) != g]
    pool = [s for s in pool if g not in normalize_answer(s) and normalize_answer(s) not in g]
    return rng.choice(sorted(set(pool))) if pool else None


def common_variants(task: Task, rng: random.Random) -> list[Variant]:
    """Abstentions (missing, whatever follows) and "invalid question" on an answerable one."""
    out: list[Variant] = [
        ("abstain:" + str(i), text, MISSING, False) for i, text in enumerate(ABSTENTIONS)
    ]
    if task.answer_type is AnswerType.invalid_premise:
        # the rules let "invalid question" win over the abstention on a false premise;
        # CRAG's evaluator counts any "I don't know" as missing first
        out.append(
            ("gap:abstain_then_invalid", "I don't know, maybe invalid question.", MISSING, True)
        )
    else:
        out.append(
            ("abstain:with_guess", f"I don't know, maybe {task.answers[0]}.", MISSING, False)
        )
    out.append(("gap:abstention_unrecognised", UNRECOGNISED_ABSTENTION, MISSING, True))
    if task.answer_type is not AnswerType.invalid_premise:
        out.append(("miss:invalid_on_answerable", "invalid question", HALLUCINATED, False))
        out.append(
            (
                "miss:false_premise_on_answerable",
                "The question is based on a false premise.",
                HALLUCINATED,
                False,
            )
        )
    return out


_SCALAR: dict[AnswerType, Callable[[str, str, random.Random], list[Variant]]] = {
    AnswerType.number: number_variants,
    AnswerType.count: count_variants,
    AnswerType.year: year_variants,
    AnswerType.date: date_variants,
    AnswerType.boolean: boolean_variants,
}


def task_variants(task: Task, siblings: Sequence[str], rng: random.Random) -> list[Variant]:
    """Every answer written for one task, with its truth."""
    kind = task.answer_type or AnswerType.entity
    if not task.tags.answerable or kind is AnswerType.free_text:
        return []  # no generated family writes free text; unanswerable tasks grade as declines
    if kind in _SCALAR:
        out = _SCALAR[kind](task.answers[0], task.question, rng)
    elif kind is AnswerType.list:
        out = list_variants(task, siblings, rng)
    elif kind is AnswerType.invalid_premise:
        out = invalid_variants(task, siblings, rng)
    else:
        out = entity_variants(task, siblings, rng)
    return out + common_variants(task, rng)


# --- the set --------------------------------------------------------------------------------------


def source_tasks(seed: int = 0, per_family: int = 12, size: str = "tiny") -> list[Task]:
    """Generated tasks of every short-answer family of the built-in environments, seeded.
    Long-form families (tasks with key points) are not judged: their key points are graded by
    rule (docs/longform.md), and a judge of a typed short answer has nothing to say of them."""
    from raleval import registry

    names = registry.task_families.names()
    tasks: list[Task] = []
    for env_name in BUILTIN_ENVS:
        env = registry.envs.get(env_name)(size=size)
        for name in names:
            family = registry.task_families.get(name)
            if family.env == env_name:
                generated = family.generate(env, per_family, seed)
                tasks.extend(t for t in generated if not t.key_points)
    return tasks


def build_set(
    seed: int = 0, per_type: int = 40, per_family: int = 12, size: str = "tiny"
) -> list[ValidationItem]:
    """The validation set: up to ``per_type`` items per answer type, drawn round-robin over the
    type's variants so each kind of rewording and near miss is present, plus every rule-gap
    item's kind once per type. Deterministic for a seed."""
    return items_from_tasks(source_tasks(seed, per_family, size), seed, per_type)


def items_from_tasks(
    tasks: Sequence[Task], seed: int = 0, per_type: int = 40
) -> list[ValidationItem]:
    """:func:`build_set` over given tasks."""
    rng = random.Random(seed)
    golds_by_family: dict[str, list[str]] = defaultdict(list)
    for t in tasks:
        if t.answer_type is AnswerType.list:
            golds_by_family[t.family] += [e[0] for e in t.elements or []]
        elif t.answer_type is not AnswerType.invalid_premise:
            golds_by_family[t.family].append(t.answers[0])
    by_type: dict[str, dict[str, list[ValidationItem]]] = defaultdict(lambda: defaultdict(list))
    for t in tasks:
        for variant, answer, truth, gap in task_variants(t, golds_by_family[t.family], rng):
            kind = (t.answer_type or AnswerType.entity).value
            key = hashlib.sha256(f"{t.id}|{variant}|{answer}".encode()).hexdigest()[:12]
            by_type[kind][variant].append(
                ValidationItem(
                    id=key,
                    family=t.family,
                    task_id=t.id,
                    question=t.question,
                    answer_type=kind,
                    golds=list(t.answers),
                    elements=t.elements if t.answer_type is AnswerType.list else None,
                    variant=variant,
                    answer=answer,
                    truth=truth,
                    rule_gap=gap,
                )
            )
    items: list[ValidationItem] = []
    for kind in sorted(by_type):
        variants = by_type[kind]
        # abstentions share one pool: five phrasings must not outweigh each near miss
        grouped: dict[str, list[ValidationItem]] = defaultdict(list)
        for v, xs in sorted(variants.items()):
            if not v.startswith("gap:"):
                grouped[v.split(":")[0] if v.startswith("abstain") else v] += xs
        pools = {v: rng.sample(xs, len(xs)) for v, xs in grouped.items()}
        picked: list[ValidationItem] = []
        while len(picked) < per_type and any(pools.values()):
            for v in sorted(pools):
                if pools[v] and len(picked) < per_type:
                    picked.append(pools[v].pop())
        items += picked
        for v in sorted(k for k in variants if k.startswith("gap:")):
            items += rng.sample(variants[v], min(3, len(variants[v])))
    return items


def set_id(items: Sequence[ValidationItem]) -> str:
    """A fingerprint of the set's items (what was asked and what the truth is)."""
    blob = json.dumps([i.model_dump() for i in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(f"{SET_VERSION}|{blob}".encode()).hexdigest()[:16]


# --- running a judge ---------------------------------------------------------------------------


async def judge_items(
    judge: Judge,
    items: Sequence[ValidationItem],
    concurrency: int = 2,
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """The judge's three-way verdict on every item, in order (abstentions are missing)."""
    gate = asyncio.Semaphore(max(1, concurrency))
    done = 0

    async def one(item: ValidationItem) -> str:
        nonlocal done
        async with gate:
            verdict = await judge_answer(
                judge, item.question, item.golds, item.answer, item.answer_type, item.elements
            )
        done += 1
        if progress is not None:
            progress(done)
        return verdict

    return list(await asyncio.gather(*(one(i) for i in items)))


def measure(
    judge: Judge,
    items: Sequence[ValidationItem],
    verdicts: Sequence[str],
    seed: int,
    elapsed_s: float,
) -> ValidationResult:
    """The agreement of ``verdicts`` with the items' truth, overall, per type and per variant
    (rule-gap items apart)."""
    scored = [(i, v) for i, v in zip(items, verdicts, strict=True) if not i.rule_gap]
    gaps = [(i, v) for i, v in zip(items, verdicts, strict=True) if i.rule_gap]

    def of(pairs: Sequence[tuple[ValidationItem, str]]) -> Agreement:
        return agreement([i.truth for i, _ in pairs], [v for _, v in pairs])

    per_type: dict[str, list[tuple[ValidationItem, str]]] = defaultdict(list)
    per_variant: dict[str, list[tuple[ValidationItem, str]]] = defaultdict(list)
    for i, v in scored:
        per_type[i.answer_type].append((i, v))
        family = "abstain" if i.variant.startswith("abstain") else i.variant
        per_variant[family].append((i, v))
    return ValidationResult(
        judge=judge.spec,
        prompt_version=judge.prompt_version,
        set_version=SET_VERSION,
        set_id=set_id(items),
        seed=seed,
        n=len(scored),
        overall=of(scored),
        per_type={k: of(v) for k, v in sorted(per_type.items())},
        per_variant={k: of(v) for k, v in sorted(per_variant.items())},
        rule_gaps=of(gaps) if gaps else None,
        by_rule=sum(decided_by_rule(i) for i, _ in scored),
        unreadable=int(getattr(judge, "unreadable", 0)),
        elapsed_s=round(elapsed_s, 2),
        created=time.time(),
    )


def decided_by_rule(item: ValidationItem) -> bool:
    """Whether :func:`~raleval.grading.judge.judge_answer` settles ``item`` without a judge."""
    if DEFAULT_GRAMMAR.abstains(item.answer):
        return True
    return item.answer_type == AnswerType.invalid_premise.value and DEFAULT_GRAMMAR.claims_invalid(
        item.answer
    )


def validate(
    judge: Judge,
    items: Sequence[ValidationItem],
    seed: int = 0,
    concurrency: int = 2,
    progress: Callable[[int], None] | None = None,
) -> tuple[ValidationResult, list[str]]:
    """Run ``judge`` over ``items`` and measure it."""
    start = time.monotonic()
    verdicts = asyncio.run(judge_items(judge, items, concurrency, progress))
    return measure(judge, items, verdicts, seed, time.monotonic() - start), verdicts


# --- storage beside the judge's cached verdicts --------------------------------------------------


def results_path(cache_path: Path) -> Path:
    """Where validation results live: beside the response cache that holds the verdicts."""
    return cache_path.parent / RESULTS_FILE


def store_result(result: ValidationResult, cache_path: Path) -> Path:
    """Append ``result`` as one JSON line beside the cache."""
    path = results_path(cache_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(result.model_dump_json() + "\n")
    return path


def measured(judge: str, prompt_version: str, cache_path: Path) -> ValidationResult | None:
    """The latest stored validation of ``judge`` with ``prompt_version``, if any."""
    path = results_path(cache_path)
    if not path.exists():
        return None
    latest: ValidationResult | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            r = ValidationResult.model_validate_json(line)
        except ValueError:
            continue  # a line from another version of this file is skipped, not fatal
        if r.judge == judge and r.prompt_version == prompt_version:
            latest = r
    return latest


def counts(items: Sequence[ValidationItem]) -> dict[str, Counter[str]]:
    """Truth counts per answer type (rule-gap items left out)."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for i in items:
        if not i.rule_gap:
            out[i.answer_type][i.truth] += 1
    return dict(out)


def as_rows(result: ValidationResult) -> list[dict[str, Any]]:
    """One row per answer type and one for all, for printing."""
    rows = [{"type": k, **v.model_dump()} for k, v in result.per_type.items()]
    rows.append({"type": "all", **result.overall.model_dump()})
    return rows
