"""The generated wiki families on the tiny world: no answer fills a template, no entity is asked
twice, and the families the shortcut audit failed there pass it (issue 20)."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from raleval import registry
from raleval.analysis.audit import audit_family
from raleval.envs.wiki.families.common import MAX_ANSWER_SHARE
from raleval.tasks.catalog import load_tasks
from raleval.text import normalize_answer


@pytest.fixture(scope="module")
def env():
    return registry.envs.get("wiki")(size="tiny")


def test_no_answer_fills_more_than_its_share_of_a_template(env):
    for family, makers in (("3-1", 4), ("3-3", 4), ("3-4", 6)):
        tasks = load_tasks(family, env, "wiki", 100, 0)
        cap = max(2, math.ceil(MAX_ANSWER_SHARE * 100 / makers))
        counts = Counter((t.metadata["template"], normalize_answer(t.answers[0])) for t in tasks)
        assert max(counts.values()) <= cap, (family, counts.most_common(3))


def test_a_person_is_compared_once(env):
    # in a small world one prolific author won every comparison he was in
    named: Counter[str] = Counter()
    for t in load_tasks("3-1", env, "wiki", 100, 0):
        m = re.fullmatch(r"Who has published more papers, (.+) or (.+)\?", t.question)
        if m:
            named.update(m.groups())
    assert named and max(named.values()) == 1


def test_generation_is_deterministic_per_seed(env):
    first = load_tasks("3-3", env, "wiki", 30, 0)
    again = load_tasks("3-3", env, "wiki", 30, 0)
    other = load_tasks("3-3", env, "wiki", 30, 1)
    assert [t.question for t in first] == [t.question for t in again]
    assert [t.question for t in first] != [t.question for t in other]


TINY_3_3_LEAK = (
    "known, tiny world only (the small and large worlds pass): on the tiny scholar world of "
    "generator v4 (issue 25) a paper's field word "
    "predicts its first author's organisation and position, and 3-3 yields only 53 items; a "
    "question-only 4-gram neighbour gets 8 of 53 right (leave one out) against chance 0.05"
)


@pytest.mark.parametrize(
    "family",
    ["3-1", pytest.param("3-3", marks=pytest.mark.xfail(strict=True, reason=TINY_3_3_LEAK)), "3-4"],
)
def test_families_that_failed_the_audit_on_the_tiny_world_pass(env, family):
    # before: 3-3 char n-gram neighbour 0.26 against chance 0.05, 3-4 0.25 against 0.10
    tasks = load_tasks(family, env, "wiki", 100, 0)
    audit = audit_family(family, tasks, env)
    assert audit.verdict == "pass", [(b.name, b.accuracy, b.chance) for b in audit.baselines]
