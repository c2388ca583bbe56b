"""Chinese graded as the seeds' code grades it: the tokenizer follows the text's script
(jieba for Chinese) behind F1, EM, ROUGE-L, BLEU, key-point coverage, number finding and
abstention; the ``crud`` and ``rageval`` profiles reproduce CRUD-RAG's and RAGEval's own
metric code, checked against values that code computed (tests/data/chinese_metric_pairs.jsonl,
benchmarks/crud_metric_reference.py)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from raleval.analysis.scoring import score_trajectory
from raleval.app.cli import app
from raleval.grading.longform import (
    PROFILES,
    bleu,
    crud_bleu,
    crud_rouge_l,
    overlap_scores,
    rageval_rouge_l,
    rouge_l,
)
from raleval.grading.metrics import exact_match, f1_score, is_abstention
from raleval.keypoints import judge_key_points, numbers_in, score_key_points
from raleval.records import AgentSpec, KeyPoint, Task, Trajectory
from raleval.text import contains_tokens, has_cjk, normalize_answer, words

PAIRS = Path(__file__).parent / "data" / "chinese_metric_pairs.jsonl"
TOLERANCE = 0.005


def _pairs() -> list[dict]:
    return [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines()]


# --- the pairs and CRUD-RAG's / RAGEval's own values ---------------------------------------


def test_the_stored_pairs_are_200_varied_chinese_pairs_with_the_originals_values():
    rows = _pairs()
    assert len(rows) == 200
    assert all(has_cjk(r["reference"]) for r in rows)
    assert len({r["edit"] for r in rows}) == 12
    assert len({(r["reference"], r["answer"]) for r in rows}) >= 190
    # the values spread over 0..1, so agreement is not agreement on a constant
    crud = [r["crud_rouge_l"] for r in rows]
    assert min(crud) == 0.0 and max(crud) == 1.0 and 0.3 < sum(crud) / len(crud) < 0.9
    assert sum(r["crud_bleu"] > 0 for r in rows) > 100
    assert sum(0 < r["crud_bleu"] < 1 for r in rows) > 80


@pytest.mark.parametrize(
    ("key", "metric"),
    [
        ("crud_rouge_l", crud_rouge_l),
        ("crud_bleu", crud_bleu),
        ("crud_bleu_penalty", lambda a, g: crud_bleu(a, g, with_penalty=True)),
        ("rageval_rouge_l", rageval_rouge_l),
    ],
)
def test_profiles_equal_the_originals_code_on_every_pair(key, metric):
    off = [
        (r["edit"], r[key], got)
        for r in _pairs()
        if abs((got := metric(r["answer"], [r["reference"]])) - r[key]) > TOLERANCE
    ]
    assert off == []


def test_profile_crud_through_overlap_scores_is_crud_rag_on_every_pair():
    for r in _pairs():
        got = overlap_scores(r["answer"], [r["reference"]], "crud")
        assert got["rouge_l"] == pytest.approx(r["crud_rouge_l"], abs=TOLERANCE)
        assert got["bleu"] == pytest.approx(r["crud_bleu"], abs=TOLERANCE)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(
    "text",
    [
        "陕西西安市的游客",
        "2023年7月28日，市财政局发放500万元。",
        "同比增长20.7%，净利润达到3.2亿元",
    ],
)
def test_identical_chinese_scores_one_under_every_profile(profile, text):
    # exactly 1.0: not rouge_chinese's smoothed 0.999999995, not sacrebleu's 1.0000000000000004
    assert overlap_scores(text, [text], profile) == {"rouge_l": 1.0, "bleu": 1.0}


@pytest.mark.parametrize("text", ["陕西西安市", "同比增长20.7%"])
def test_a_copy_of_fewer_than_four_words_scores_one_the_profiles_one_departure(text):
    # CRUD-RAG's bleu_score gives these identical pairs 0.0 (run by
    # benchmarks/crud_metric_reference.py): 2-3 jieba words have no 4-gram and its BLEU is
    # unsmoothed. The profile scores a copy 1.0; anything short of a copy keeps the original's 0.
    assert overlap_scores(text, [text], "crud") == {"rouge_l": 1.0, "bleu": 1.0}
    assert crud_bleu(text + "。", [text]) == 0.0
    assert overlap_scores(text, [text], "standard") == {"rouge_l": 1.0, "bleu": 1.0}


def test_standard_profile_grades_chinese_by_words():
    assert rouge_l("陕西西安市", ["陕西西安市"]) == 1.0
    assert bleu("陕西西安市", ["陕西西安市"]) == pytest.approx(1.0)
    # one word of two shared ("陕西 | 西安市" against "陕西省 | 西安市"): F = 0.5
    assert rouge_l("陕西西安市", ["陕西省西安市"]) == pytest.approx(0.5)
    assert rouge_l("今天天气很好", ["陕西西安市"]) == 0.0
    # punctuation and case do not count, as in English
    assert rouge_l("陕西，西安市。", ["陕西西安市"]) == 1.0


def test_an_unknown_profile_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="crud, rageval"):
        overlap_scores("a", ["a"], "cruddy")


# --- tokenisation ---------------------------------------------------------------------------


def test_english_normalisation_is_unchanged():
    assert normalize_answer("The  Cat, sat!") == "cat sat"
    assert words("The  Cat, sat!") == ["cat", "sat"]
    assert normalize_answer("Gödel’s theorem") == "gödel’s theorem"  # as before: ASCII punctuation


def test_chinese_is_cut_by_jieba_for_words_and_by_character_for_containment():
    assert words("陕西西安市，发放500万元。") == ["陕西", "西安市", "发放", "500", "万元"]
    assert normalize_answer("陕西西安市。") == "陕 西 西 安 市"
    # a value inside longer text is found whatever jieba makes of its surroundings
    haystack = normalize_answer("会议在陕西西安市召开")
    assert contains_tokens(haystack.split(), normalize_answer("西安市").split())
    assert normalize_answer("ＧＤＰ达到１２６万亿元") == "gdp 达 到 126 万 亿 元"
    # an English gold inside a Chinese answer: ASCII punctuation goes as SQuAD's rule takes it
    for gold in ("20.7%", "1,312"):
        answer = normalize_answer("同比增长20.7%，共1,312万人").split()
        assert contains_tokens(answer, normalize_answer(gold).split())


def test_token_f1_and_em_on_chinese():
    assert f1_score("陕西西安市", ["陕西西安市"]) == 1.0
    assert exact_match("陕西西安市。", ["陕西西安市"]) == 1.0
    assert f1_score("西安市", ["陕西西安市"]) == pytest.approx(2 * 1.0 * 0.5 / 1.5)
    assert f1_score("北京", ["陕西西安市"]) == 0.0


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("发放500万元", [500.0]),
        ("2023年7月28日", [2023.0, 7.0, 28.0]),
        ("同比增长20.7%", [20.7]),
        ("常住人口为1,312万人", [1312.0]),
        ("共有91个国家和地区", [91.0]),
    ],
)
def test_numbers_inside_chinese_are_found(text, numbers):
    assert numbers_in(text) == numbers


@pytest.mark.parametrize(
    ("answer", "abstains"),
    [
        ("无法推断。", True),
        ("文档信息不足，因此我无法基于提供的文档回答该问题。", True),
        ("我不知道", True),
        ("根据现有资料无法确定。", True),
        ("北京", False),
        ("他说他不知道会议推迟了，但最终按时到场。", False),
        ("I don't know", True),
        ("Paris", False),
    ],
)
def test_chinese_abstention_phrases(answer, abstains):
    assert is_abstention(answer) is abstains


# --- key points in Chinese ----------------------------------------------------------------------


def _zh_points():
    return [
        KeyPoint(
            slot="funds",
            kind="number",
            value="500",
            cues=["发放"],
            statement="市财政局发放500万元救助资金。",
        ),
        KeyPoint(
            slot="year",
            kind="year",
            value="2023",
            cues=["年"],
            statement="事件发生在2023年。",
        ),
        KeyPoint(
            slot="city",
            kind="entity",
            value="西安市",
            cues=["地点"],
            statement="地点是陕西西安市。",
        ),
    ]


def test_key_facts_joined_by_chinese_commas_are_complete():
    answer = "事件发生在2023年，地点是陕西西安市，市财政局发放500万元救助资金"
    assert score_key_points(answer, _zh_points()).completeness == 1.0
    # the value without the words that name its slot does not state the fact
    assert judge_key_points("西安市", _zh_points())[2] == "missing"


def test_a_changed_chinese_number_is_contradicted():
    verdicts = judge_key_points("市财政局发放800万元。2023年，地点是西安市。", _zh_points())
    assert verdicts == ["contradicted", "covered", "covered"]


def test_long_form_episode_in_chinese_scores_under_a_profile():
    reference = "事件发生在2023年。地点是陕西西安市。市财政局发放500万元救助资金。"
    task = Task(
        id="zh-1",
        domain="news",
        level="KS",
        family="zh-lf",
        question="写一段说明。",
        answers=[reference],
        key_points=_zh_points(),
    )
    traj = Trajectory(
        task_id="zh-1",
        agent=AgentSpec(workflow="react", model="m", env="e"),
        answer=reference,
        termination="finished",
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        wall_time_s=1.0,
    )
    score_trajectory(traj, task, profile="crud")
    assert traj.scores["kp_completeness"] == 1.0
    assert traj.scores["rouge_l"] == 1.0 and traj.scores["bleu"] == 1.0
    assert traj.scores["f1"] == 1.0


def test_score_cli_refuses_an_unknown_option_and_profile(tmp_path):
    runner = CliRunner()
    bad = runner.invoke(app, ["score", str(tmp_path), "-S", "colour=red"])
    assert bad.exit_code != 0 and "profile" in bad.output
    bad = runner.invoke(app, ["score", str(tmp_path), "-S", "profile=crudd"])
    assert bad.exit_code != 0 and "crud, rageval" in bad.output


def test_score_cli_rescores_a_run_under_a_profile(tmp_path):
    from raleval.grading.longform import crud_bleu, crud_rouge_l
    from raleval.store import TASKS, read_tasks

    from .conftest import run_config

    summary, results = run_config(
        tmp_path, tasks="scholar-lf-continue", tasks_per_family=2, env_options={"size": "tiny"}
    )
    run_dir = summary.run_dir
    tasks = {t.id: t for t in read_tasks(run_dir / TASKS)}
    runner = CliRunner()
    out = runner.invoke(app, ["score", str(run_dir), "-S", "profile=crud"])
    assert out.exit_code == 0, out.output
    assert "profile crud" in out.output
    rows = [json.loads(line) for line in (run_dir / "scores.jsonl").read_text().splitlines()]
    assert len(rows) == len(results) == 2
    for row, traj in zip(rows, results, strict=True):
        assert row["metric_profile"] == "crud"
        reference = tasks[traj.task_id].answers
        assert row["scores"]["rouge_l"] == crud_rouge_l(traj.answer, reference)
        assert row["scores"]["bleu"] == crud_bleu(traj.answer, reference)
        # the continuation's oracle writes other words than the reference: neither is 1
        assert 0 < row["scores"]["rouge_l"] < 1
    standard = runner.invoke(app, ["score", str(run_dir)])
    assert standard.exit_code == 0
    rows = [json.loads(line) for line in (run_dir / "scores.jsonl").read_text().splitlines()]
    assert all("metric_profile" not in row for row in rows)
    assert [r["scores"]["rouge_l"] for r in rows] == [t.scores["rouge_l"] for t in results]


# --- properties ----------------------------------------------------------------------------------

_HAN = st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1)
_MIXED = st.text(
    alphabet=st.sampled_from(list("陕西安市发放万元年月日增长，。、 0123456789abcXYZ.%")),
    min_size=1,
)


@settings(max_examples=150, deadline=None)
@given(before=_MIXED, value=_HAN, after=_MIXED)
def test_a_chinese_value_is_found_inside_any_text_around_it(before, value, after):
    haystack = normalize_answer(before + value + after).split()
    assert contains_tokens(haystack, normalize_answer(value).split())


@settings(max_examples=150, deadline=None)
@given(text=_MIXED)
def test_chinese_text_against_itself_scores_one_where_it_has_a_word(text):
    if not words(text):
        return  # only punctuation and spaces: nothing to compare
    assert f1_score(text, [text]) == 1.0
    assert exact_match(text, [text]) == 1.0
    assert rouge_l(text, [text]) == 1.0
    assert normalize_answer(normalize_answer(text)) == normalize_answer(text)
