"""The key-point builder the scholar and wiki long-form families share (raleval.longform): each
slot's statement covers its point and a planted value contradicts it; the correction's draw
never plants the true value; both environments' tasks name a shared slot with the same cues
and the same sentence."""

from __future__ import annotations

import random
import re

import pytest

from raleval import registry
from raleval.keypoints import judge_key_points
from raleval.longform import (
    SLOTS,
    USES,
    ScholarPoints,
    correction,
    plant,
    register_longform,
    with_cues,
)

K = ScholarPoints("Ada Lin")
POSITIONS = ["Professor", "Associate Professor", "Assistant Professor", "Lecturer"]


def _every_slot(shown: dict | None = None) -> list:
    shown = shown or {}
    return [
        K.point("position", "Associate Professor", shown.get("position"), POSITIONS),
        K.point("papers", 45, shown.get("papers")),
        K.point("citations", 1234, shown.get("citations")),
        K.point("phd_year", 2009, shown.get("phd_year")),
        K.point("top_paper_year", 2015, shown.get("top_paper_year")),
    ]


def test_each_statement_covers_its_own_point():
    points = [
        *_every_slot(),
        K.point("gender", "female", choices=["female", "male"]),
        K.point("organization", "Tsinghua University", choices=["Tsinghua University", "MIT"]),
        K.phd_institution("MIT", "Tsinghua University", ["Tsinghua University", "MIT"]),
        K.point("interest", "graph mining"),
        K.point("top_paper", "Deep Walks", choices=["Deep Walks", "Shallow Runs"]),
        K.point("top_paper_citations", 321),
        K.point("top_paper_venue", "KDD", choices=["KDD", "WWW"]),
        K.point("top_coauthor", "Bo Chen", choices=["Bo Chen", "Cy Dee"]),
    ]
    assert {p.slot for p in points} == set(SLOTS)
    for p in points:
        assert judge_key_points(p.statement, [p]) == ["covered"], p
        assert p.value in p.statement


def test_a_shown_value_is_written_but_the_value_stays_and_is_contradicted():
    wrong = {"position": "Lecturer", "papers": 61, "phd_year": 2001}
    for p in _every_slot(wrong):
        if p.slot in wrong:
            assert str(wrong[p.slot]) in p.statement and p.value not in p.statement
            assert judge_key_points(p.statement, [p]) == ["contradicted"], p
        else:
            assert judge_key_points(p.statement, [p]) == ["covered"], p
    assert _every_slot(wrong)[0].value == "Associate Professor"


def test_phd_choices_leave_out_the_own_organization_unless_the_phd_is_there():
    orgs = ["MIT", "Tsinghua University", "Oxford"]
    assert K.phd_institution("MIT", "Tsinghua University", orgs).choices == ["MIT", "Oxford"]
    assert K.phd_institution("MIT", "MIT", orgs).choices == orgs


def test_with_cues_adds_words_and_keeps_the_rest():
    p = K.point("interest", "graph mining")
    q = with_cues(p, "working on")
    assert q.cues == [*p.cues, "working on"] and p.cues == ["interest", "works on"]
    assert q.model_dump(exclude={"cues"}) == p.model_dump(exclude={"cues"})


def test_the_venue_sentence_names_its_subject():
    assert K.point("top_paper_venue", "KDD").statement == "It appeared in KDD."
    p = K.point("top_paper_venue", "KDD", subject="The most cited paper of Ada Lin")
    assert p.statement == "The most cited paper of Ada Lin appeared in KDD."


@pytest.mark.parametrize("seed", range(40))
def test_plant_never_plants_the_truth(seed):
    truth = {"position": "Professor", "papers": 45, "citations": 1234}
    others = [
        {"position": "Professor", "papers": 45, "citations": 99},
        {"position": "Lecturer", "papers": 12, "citations": 1234},
        {"position": "Professor", "papers": None, "citations": 7},
    ]
    shown = plant(random.Random(seed), truth, lambda: others)
    assert shown is not None and 1 <= len(shown) <= 2
    for slot, value in shown.items():
        assert value is not None and value != truth[slot]
        assert value in [o[slot] for o in others]


def test_plant_gives_up_when_no_other_scholar_differs():
    truth = {"position": "Professor", "papers": 45}
    same = [dict(truth), dict(truth)]
    assert all(plant(random.Random(s), truth, lambda: same) is None for s in range(10))


def test_correction_plants_where_shown_and_states_the_truth():
    shown = {"papers": 61, "phd_year": 2001}
    statement, planted, right = correction(shown, _every_slot)
    assert [right[i].slot for i in planted] == ["papers", "phd_year"]
    assert "61" in statement and "2001" in statement and "45" not in statement
    verdicts = judge_key_points(statement, right)
    assert [verdicts[i] for i in planted] == ["contradicted", "contradicted"]
    assert all(v == "covered" for i, v in enumerate(verdicts) if i not in planted)
    assert " ".join(p.statement for p in right) == " ".join(p.statement for p in _every_slot())


def test_registration_wants_one_maker_per_use():
    def make():
        """what it asks"""

    with pytest.raises(ValueError):
        register_longform("nowhere", "Nowhere", lambda *a: None, make, make)
    assert "nowhere-lf-profile" not in registry.task_families.names()
    assert list(USES) == ["profile", "summary", "continue", "correct"]


@pytest.fixture(scope="module")
def both():
    tasks = {}
    for env, spec in {"scholar": "scholar-longform", "wiki": "wiki-longform"}.items():
        world = registry.envs.get(env)(size="tiny")
        for family in registry.task_sets.get(spec):
            tasks[family] = registry.task_families.get(family).generate(world, 4, 3)
    return tasks


def test_both_environments_name_a_shared_slot_alike(both):
    """A slot both environments state starts with the builder's cues and, the scholar's name
    and the value put back, reads as the builder's sentence (the wiki adds cues of its own and
    names the paper in the venue sentence)."""
    seen: dict[str, set[str]] = {}
    for family, tasks in both.items():
        env = family.split("-")[0]
        for t in tasks:
            for p in t.key_points or []:
                if p.slot not in SLOTS:
                    continue
                kind, cues, template = SLOTS[p.slot]
                assert p.kind == kind and p.cues[: len(cues)] == cues, (family, p)
                name = re.escape(t.metadata.get("name", "")) or ".+"
                pattern = re.escape(template).replace(r"\{name\}", name)
                pattern = pattern.replace(r"\{value\}", ".+").replace(r"\{subject\}", ".+")
                assert re.fullmatch(pattern, p.statement), (family, p.statement)
                seen.setdefault(p.slot, set()).add(env)
    shared = {slot for slot, envs in seen.items() if envs == {"scholar", "wiki"}}
    assert {"position", "papers", "citations", "phd_institution", "phd_year"} <= shared
