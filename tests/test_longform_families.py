"""The long-form families (issue 39) on the tiny worlds: typed key points from the world, none
given away by the question, every one shown by the executed gold calls; the correction
tasks' planted errors are contradicted when the statement is echoed unchanged."""

from __future__ import annotations

import re

import pytest

from raleval import registry
from raleval.answers import AnswerType
from raleval.families import run_solution
from raleval.grading.rules import grade_task
from raleval.keypoints import judge_key_points, oracle_text, score_key_points
from raleval.longform import rejection, unstated
from raleval.records import KeyPoint
from raleval.text import contains_tokens, normalize_answer

from .conftest import run_config

SETS = {"scholar": "scholar-longform", "wiki": "wiki-longform"}
FAMILIES = [(env, f) for env, spec in SETS.items() for f in registry.task_sets.get(spec)]
N = 6


@pytest.fixture(scope="module")
def envs():
    return {name: registry.envs.get(name)(size="tiny") for name in SETS}


@pytest.fixture(scope="module")
def generated(envs):
    return {
        family: registry.task_families.get(family).generate(envs[env], N, 0)
        for env, family in FAMILIES
    }


def _in_text(point: KeyPoint, text: str) -> bool:
    """Whether ``text`` writes the point's value: the number among its numbers, else the
    value's normalised tokens in a row (checked here without raleval.keypoints)."""
    if point.kind in ("number", "year"):
        return point.value in re.findall(r"\d+", text)
    return contains_tokens(normalize_answer(text).split(), normalize_answer(point.value).split())


def test_the_sets_hold_four_families_each_outside_the_defaults():
    for env, spec in SETS.items():
        families = registry.task_sets.get(spec)
        assert len(families) == 4
        assert {f.rsplit("-", 1)[1] for f in families} == {
            "profile",
            "summary",
            "continue",
            "correct",
        }
        assert not set(families) & set(registry.task_sets.get(env))
        assert not set(families) & set(registry.task_sets.get("reval-12"))
        levels = {registry.task_families.get(f).level.value for f in families}
        assert levels == {"KS", "KU", "KA"}


@pytest.mark.parametrize(("env", "family"), FAMILIES)
def test_each_task_has_typed_key_points_from_the_world(generated, env, family):
    tasks = generated[family]
    assert len(tasks) == N
    for t in tasks:
        assert t.answer_type is AnswerType.long_form
        assert t.key_points is not None and 3 <= len(t.key_points) <= 8
        assert {p.kind for p in t.key_points} <= {"entity", "number", "year", "member"}
        assert t.evidence == [p.value for p in t.key_points]
        assert t.solution
        for p in t.key_points:
            assert p.cues and p.statement
            if p.kind in ("number", "year"):
                assert p.value.isdigit()
            if p.slot in ("position", "gender"):  # closed vocabularies carry the world's
                assert p.value in p.choices and len(p.choices) >= 2


@pytest.mark.parametrize(("env", "family"), FAMILIES)
def test_no_value_is_in_the_question_except_a_corrections_right_ones(generated, env, family):
    for t in generated[family]:
        planted = t.metadata.get("planted", {})
        for p in t.key_points:
            if family.endswith("-correct") and p.slot not in planted:
                # the statement to correct states the facts it gets right
                assert _in_text(p, t.question), (t.id, p.slot)
            else:
                # a planted "Associate Professor" holds the true "Professor": the value may
                # appear only inside the wrong one (the rules read it as the wrong one)
                text = t.question.replace(str(planted.get(p.slot, "\0")), " ")
                assert not _in_text(p, text), (t.id, p.slot, p.value)


@pytest.mark.parametrize(("env", "family"), FAMILIES)
def test_the_oracle_answer_and_the_reference_cover_every_key_point(envs, generated, env, family):
    for t in generated[family]:
        session = envs[env].session(t) if env == "wiki" else envs[env]
        shown = [r.observation for r in run_solution(session, t.solution)]
        for answer in (oracle_text(t.key_points, shown), t.answers[0]):
            shares = score_key_points(answer, t.key_points)
            assert (shares.completeness, shares.hallucination) == (1.0, 0.0), (t.id, answer)
            assert grade_task(t, answer).correct


@pytest.mark.parametrize(("env", "family"), FAMILIES)
def test_generation_is_deterministic_per_seed(envs, generated, env, family):
    fam = registry.task_families.get(family)
    again = fam.generate(envs[env], N, 0)
    assert [t.model_dump() for t in again] == [t.model_dump() for t in generated[family]]
    other = fam.generate(envs[env], N, 1)
    assert [t.question for t in other] != [t.question for t in again]


@pytest.mark.parametrize("env", sorted(SETS))
def test_a_correction_echoed_unchanged_is_contradicted_where_planted(generated, env):
    tasks = generated[f"{env}-lf-correct"]
    counts = set()
    for t in tasks:
        statement = t.metadata["statement"]
        assert statement in t.question
        planted = t.metadata["planted"]
        counts.add(len(planted))
        verdicts = judge_key_points(statement, t.key_points)
        for p, verdict in zip(t.key_points, verdicts, strict=True):
            if p.slot in planted:
                assert planted[p.slot] != p.value
                assert verdict == "contradicted", (t.id, p.slot)
            else:
                assert verdict == "covered", (t.id, p.slot)
        # the echo is never aligned with the standard answer: it hallucinates
        verdict = grade_task(t, t.question)
        assert not verdict.correct
        assert verdict.hallucination == len(planted) / len(t.key_points)
    assert counts <= {1, 2}


def test_continuation_key_points_come_from_the_unshown_part(generated):
    for family in ("scholar-lf-continue", "wiki-lf-continue"):
        for t in generated[family]:
            opening = t.metadata["opening"]
            assert opening in t.question
            assert not any(_in_text(p, opening) for p in t.key_points)
            assert all(_in_text(p, t.answers[0]) for p in t.key_points)
    # the wiki reference is the page itself after its opening sentence
    t = generated["wiki-lf-continue"][0]
    assert "Selected publications:" in t.answers[0]


@pytest.mark.parametrize(("env", "workflow"), [("scholar", "react"), ("wiki", "function_calling")])
def test_the_oracle_run_scores_completeness_one(tmp_path, env, workflow):
    summary, results = run_config(
        tmp_path,
        env=env,
        env_options={"size": "tiny"},
        workflow=workflow,
        tasks=SETS[env],
        tasks_per_family=2,
    )
    assert summary.ran == len(results) == 8
    assert [r.task_id for r in results if r.scores["correct"] != 1.0] == []
    assert {r.error_type.value for r in results} == {"EM"}


def _point(kind: str, value: str, cues: list[str], statement: str) -> KeyPoint:
    return KeyPoint(slot=kind, kind=kind, value=value, cues=cues, statement=statement)


POINTS = [
    _point("number", "26", ["paper"], "She has published 26 papers."),
    _point("number", "52", ["cit"], "They have been cited 52 times."),
    _point("year", "1996", ["Ph.D"], "She received a Ph.D. in 1996."),
]
REFERENCE = " ".join(p.statement for p in POINTS)
SHOWN = ['{"num_pubs": 26, "num_citation": 52, "education": "Ph.D., X, 1996"}']


def test_rejection_passes_a_sound_task():
    assert rejection(POINTS, REFERENCE, SHOWN, "Write a profile of Ada Lin.") is None


def test_rejection_refuses_a_value_in_the_question_or_unshown_or_too_few():
    assert rejection(POINTS, REFERENCE, SHOWN, "Profile Ada Lin, cited 52 times.")
    assert rejection(POINTS, REFERENCE, SHOWN[:0], "Write a profile of Ada Lin.")
    assert rejection(POINTS[:2], REFERENCE, SHOWN, "Write a profile of Ada Lin.")
    assert rejection(POINTS, "She has published 26 papers.", SHOWN, "Write a profile.")
    same = [*POINTS, _point("number", "52", ["h-index"], "Her h-index is 52.")]
    assert rejection(same, REFERENCE + " Her h-index is 52.", SHOWN, "Write a profile.")
    assert unstated(POINTS, "Profile Ada Lin, cited 52 times.") == [POINTS[0], POINTS[2]]


def test_rejection_of_a_correction_needs_each_planted_error_contradicted():
    wrong = (
        "She has published 31 papers. They have been cited 52 times. She received a Ph.D. in 1996."
    )
    assert rejection(POINTS, REFERENCE, SHOWN, wrong, planted=(0,)) is None
    # an error the rules would not catch (no cue beside it) is not planted
    vague = "She has 31. They have been cited 52 times. She received a Ph.D. in 1996."
    assert rejection(POINTS, REFERENCE, SHOWN, vague, planted=(0,))


@pytest.mark.parametrize("family", ["scholar-lf-profile", "wiki-lf-profile"])
def test_a_wrong_position_in_plain_words_is_contradicted(generated, family):
    for t in generated[family]:
        point = next(p for p in t.key_points if p.slot == "position")
        name = point.statement.split(" holds the position of ")[0]
        assert name and name in t.question
        other = next(c for c in point.choices if c != point.value)
        right, wrong = f"{name} is a {point.value}.", f"{name} is an {other}."
        assert judge_key_points(right, [point]) == ["covered"]
        assert judge_key_points(wrong, [point]) == ["contradicted"], (t.id, wrong)
