"""The free-text key-point judge (RAGEval's relevant / irrelevant / wrong): its reply parser,
its rules (an abstention is irrelevant without asking; a tie or an unreadable reply is
irrelevant, never wrong), the request it sends, and its validation on the hand-labelled set."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from raleval.grading.keypoint_judge import (
    IRRELEVANT,
    RELEVANT,
    WRONG,
    KeyPointJudge,
    parse_keypoint_verdict,
    scores_of,
)
from raleval.grading.keypoint_validation import load_items, validate_keypoints
from raleval.model import Capabilities, GenerateRequest, Generation


@dataclass
class FakeJudgeModel:
    """Replies with a fixed text per key point (the user message's last line)."""

    replies: dict[str, str]
    prefill: bool = False
    seen: list[GenerateRequest] = field(default_factory=list)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(prefill=self.prefill)

    async def generate(self, request: GenerateRequest) -> Generation:
        self.seen.append(request)
        point = next(m for m in request.messages if m.role == "user").content.splitlines()[-1]
        return Generation(text=self.replies.get(point.split("：")[-1].split(": ")[-1], ""))


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("The answer gives 20.7%, the key point 21.6%. Conclusion: [[[Wrong]]]", WRONG),
        ("片段一致。结论：[[[Relevant]]]", RELEVANT),
        ("[[[Relevant]]] at first, but on reflection [[[Irrelevant]]]", IRRELEVANT),
        ("irrelevant", IRRELEVANT),
        ("relevant or wrong, hard to say", None),
        ("", None),
    ],
)
def test_the_last_marker_decides(reply, label):
    assert parse_keypoint_verdict(reply) == label


def _judge(replies: dict[str, str], n: int = 1, prefill: bool = False) -> KeyPointJudge:
    models = [FakeJudgeModel(replies, prefill) for _ in range(n)]
    return KeyPointJudge(["fake"] * n, models=models)


def test_labels_become_rageval_shares_and_raleval_verdicts():
    judge = _judge({"A": "[[[Relevant]]]", "B": "[[[Wrong]]]", "C": "[[[Irrelevant]]]"})
    shares = asyncio.run(judge.judge("Q?", "some answer", ["A", "B", "C", "A"]))
    assert (shares.completeness, shares.hallucination, shares.irrelevance) == (0.5, 0.25, 0.25)
    assert shares.verdicts == ["covered", "contradicted", "missing", "covered"]
    assert scores_of([]).completeness == 0.0


def test_an_abstention_is_irrelevant_without_asking_the_model():
    judge = _judge({"A": "[[[Wrong]]]"})
    label = asyncio.run(judge.judge_point("Q?", "I don't know.", "A"))
    assert label == IRRELEVANT and judge.models[0].seen == []


def test_an_unreadable_reply_counts_irrelevant_and_is_counted():
    judge = _judge({"A": "I think it is fine"})
    assert asyncio.run(judge.judge_point("Q?", "an answer", "A")) == IRRELEVANT
    assert judge.unreadable == 1


def test_a_panel_takes_the_majority_and_a_split_is_irrelevant():
    judge = _judge({"A": "[[[Wrong]]]"}, n=3)
    judge.models[0].replies = {"A": "[[[Relevant]]]"}
    assert asyncio.run(judge.judge_point("Q?", "x", "A")) == WRONG
    judge.models[1].replies = {"A": "[[[Relevant]]]"}
    assert asyncio.run(judge.judge_point("Q?", "x", "A")) == RELEVANT
    split = _judge({"A": "[[[Wrong]]]"}, n=2)
    split.models[0].replies = {"A": "[[[Relevant]]]"}
    assert asyncio.run(split.judge_point("Q?", "x", "A")) == IRRELEVANT


def test_the_request_is_in_the_question_language_and_held_to_the_form_on_prefill():
    judge = _judge({"交易金额为2.3亿元": "Relevant"}, prefill=True)
    asyncio.run(judge.judge_point("交易金额是多少？", "2.3亿元", "交易金额为2.3亿元"))
    request = judge.models[0].seen[0]
    system, user, prefill = request.messages
    assert "信息不足" in system.content and "[[[Wrong]]]" in system.content
    assert user.content.startswith("问题：交易金额是多少？")
    assert (prefill.role, prefill.content, request.stop) == ("assistant", "[[[", ("]]]",))
    english = _judge({})
    asyncio.run(english.judge_point("How much?", "20 dollars", "It cost 20 dollars."))
    assert "not enough information" in english.models[0].seen[0].messages[0].content


def test_the_hand_labelled_set_has_every_label_in_both_languages():
    items = load_items()
    assert len({i.id for i in items}) == len(items) >= 30
    for lang in ("en", "zh"):
        labels = {i.truth for i in items if i.language == lang}
        assert labels == {RELEVANT, IRRELEVANT, WRONG}, lang
    assert all(i.source.startswith("local/") for i in items)  # real model answers


def test_validation_measures_agreement_with_the_labels():
    items = load_items()
    # a judge that repeats each item's label agrees perfectly (abstentions are decided by
    # rule before it is asked, and labelled irrelevant in the set too)
    truth = {(i.answer, i.key_point): i.truth for i in items}

    class Oracle(FakeJudgeModel):
        async def generate(self, request):
            user = next(m for m in request.messages if m.role == "user").content
            for (answer, point), label in truth.items():
                if answer in user and user.rstrip().endswith(point):
                    return Generation(text=f"[[[{label}]]]")
            return Generation(text="?")

    perfect, _ = validate_keypoints(KeyPointJudge(["oracle"], models=[Oracle({})]), items)
    assert perfect.overall.accuracy == 1.0 and perfect.overall.kappa == 1.0
    constant, labels = validate_keypoints(_judge({}), items)  # always unreadable
    assert set(labels) == {IRRELEVANT}
    assert constant.overall.kappa == 0.0
    assert constant.overall.accuracy == pytest.approx(constant.labels[IRRELEVANT] / len(items))


def test_judge_validate_keypoints_prints_the_agreement(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from raleval.app.cli import app

    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path))
    # scripted/abstain replies "I don't know": no label, so every point is irrelevant
    result = CliRunner().invoke(
        app, ["judge", "validate", "--keypoints", "--judge", "scripted/abstain"]
    )
    assert result.exit_code == 0, result.output
    items = load_items()
    share = sum(i.truth == IRRELEVANT for i in items) / len(items)
    assert f"{len(items)} hand-labelled key points" in result.output
    assert f"all      │ {len(items)} │    {share:.3f}" in result.output.replace("┃", "│")
    assert "unreadable judge replies (counted irrelevant): 53" in result.output
