"""The key-point rules catch one changed fact in a long-form oracle answer on every long-form
family (issue 47): an entity replaced from the world's vocabulary, two numbers swapped, a year
far from its cue; a word-shuffled reference is not correct. Plus the rules' parts: sentences,
values bound to the nearest cue, a fact stated only with its cue."""

from __future__ import annotations

import random

import pytest

from raleval import registry
from raleval.grading.rules import grade_task
from raleval.keypoints import judge_key_points, score_key_points, sentences
from raleval.records import KeyPoint

from .keypoint_variants import far_year, oracle_answer, shuffled, swapped_numbers, variants

SETS = {"scholar": "scholar-longform", "wiki": "wiki-longform"}
FAMILIES = [(env, f) for env, spec in SETS.items() for f in registry.task_sets.get(spec)]
N = 10
FLOOR = 0.95


@pytest.fixture(scope="module")
def generated():
    envs = {name: registry.envs.get(name)(size="tiny") for name in SETS}
    return {
        family: registry.task_families.get(family).generate(envs[env], N, 0)
        for env, family in FAMILIES
    }


@pytest.mark.parametrize(("env", "family"), FAMILIES)
def test_one_changed_fact_is_contradicted_on_every_family(generated, env, family):
    tasks = generated[family]
    assert len(tasks) >= 5
    caught: dict[str, list[bool]] = {}
    for t in tasks:
        # the unchanged oracle answer states every key point and contradicts none
        assert set(judge_key_points(oracle_answer(t.key_points), t.key_points)) == {"covered"}
        for v in variants(t):
            verdicts = judge_key_points(v.answer, t.key_points)
            caught.setdefault(v.kind, []).append(
                all(verdicts[i] == "contradicted" for i in v.changed)
            )
            # the facts left alone stay covered
            assert all(verdicts[i] == "covered" for i in range(len(verdicts)) if i not in v.changed)
    assert set(caught) == {"replaced_entity", "swapped_numbers", "far_year"}, caught.keys()
    for kind, hits in caught.items():
        assert sum(hits) / len(hits) >= FLOOR, (kind, hits)


@pytest.mark.parametrize(("env", "family"), FAMILIES)
def test_a_word_shuffled_reference_is_not_correct(generated, env, family):
    for t in generated[family]:
        text = shuffled(t.answers[0], random.Random(t.id))
        assert not grade_task(t, text).correct, (t.id, text)


# --- the rules' parts on hand-written text ------------------------------------------------------


def _points():
    return [
        KeyPoint(
            slot="papers",
            kind="number",
            value="45",
            cues=["paper", "published"],
            statement="Ada Lin has published 45 papers.",
        ),
        KeyPoint(
            slot="citations",
            kind="number",
            value="1234",
            cues=["cit"],
            statement="The papers of Ada Lin have been cited 1234 times.",
        ),
        KeyPoint(
            slot="phd_year",
            kind="year",
            value="2009",
            cues=["Ph.D", "doctorate"],
            statement="Ada Lin received a Ph.D. in 2009.",
        ),
        KeyPoint(
            slot="phd_institution",
            kind="entity",
            value="Qerrin Institute",
            cues=["Ph.D", "doctorate"],
            choices=["Qerrin Institute", "Oslo University", "Brask College"],
            statement="Ada Lin received a Ph.D. from Qerrin Institute.",
        ),
    ]


def test_sentences_do_not_end_at_ph_d_or_inside_a_value():
    text = "Ada Lin received a Ph.D. in 2009. Her paper Why Now? Then What. appeared in KDD."
    assert sentences(text, ["Why Now? Then What."]) == [
        "Ada Lin received a Ph.D. in 2009.",
        " Her paper Why Now? Then What. appeared in KDD.",
    ]
    assert sentences("事件发生在2023年。地点是西安。") == ["事件发生在2023年。", "地点是西安。"]


def test_swapped_counts_are_both_contradicted():
    text = "Ada Lin has published 1234 papers. Her papers have been cited 45 times."
    assert judge_key_points(text, _points())[:2] == ["contradicted", "contradicted"]


def test_a_year_far_from_its_cue_is_read_within_the_sentence():
    far = "Ada Lin received a Ph.D. from Qerrin Institute after many long years, in {}."
    assert judge_key_points(far.format(2011), _points())[2:] == ["contradicted", "covered"]
    assert judge_key_points(far.format(2009), _points())[2:] == ["covered", "covered"]
    # a value in another sentence is not bound to the cue
    assert judge_key_points("Ada Lin holds a Ph.D. It rained in 2011.", _points())[2] == "missing"


def test_a_replaced_entity_from_the_vocabulary_is_contradicted_another_sentence_is_not():
    points = _points()
    assert judge_key_points("She took her Ph.D. at Oslo University.", points)[3] == "contradicted"
    # the vocabulary's name in a sentence without the slot's words says nothing about it
    assert judge_key_points("She visited Oslo University.", points)[3] == "missing"


def test_a_value_without_its_cue_does_not_state_the_fact():
    shares = score_key_points("45, 1234, 2009, Qerrin Institute.", _points())
    assert shares.completeness == 0.0 and shares.hallucination == 0.0


def test_the_variants_change_what_they_say():
    points = _points()
    rng = random.Random(0)
    swap = swapped_numbers(points, rng)
    assert swap is not None and swap.changed == (0, 1)
    assert "published 1234 papers" in swap.answer and "cited 45 times" in swap.answer
    far = far_year(points, rng)
    assert far is not None and far.changed == (2,) and "2009" not in far.answer
    words = oracle_answer(points).split()
    assert sorted(shuffled(oracle_answer(points), rng).split()) == sorted(words)
