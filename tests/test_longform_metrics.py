"""CRUD-RAG's metrics of long-form answers: ROUGE-L and BLEU are rouge-score's and sacrebleu's
(the wiring and the tokenisation pinned), BERTScore through bert-score on a local model, and
RAGQuestEval over a task's key points with a reader model and the response cache."""

from __future__ import annotations

import asyncio
import json
import random
import re
from datetime import datetime, timezone

import pytest
import sacrebleu
from hypothesis import given
from hypothesis import strategies as st
from rouge_score import rouge_scorer
from typer.testing import CliRunner

from raleval import registry
from raleval.app.cli import app
from raleval.app.cli.questeval import QUESTEVAL_FILE
from raleval.grading.longform import (
    BertScoreUnavailable,
    ascii_fold,
    bert_score_f1,
    bleu,
    rouge_l,
)
from raleval.grading.questeval import (
    BLANK,
    QuestEvalReader,
    gives_an_answer,
    is_unanswerable,
    mean_scores,
    quest_eval,
    question_for,
    questions_for,
    score_replies,
)
from raleval.model import Generation, ModelBase, ModelError
from raleval.records import AgentSpec, KeyPoint, Task, Termination, Trajectory
from raleval.store import RESULTS, TASKS, ResultsFile, write_tasks

runner = CliRunner()

# --- ROUGE-L and BLEU are the libraries' --------------------------------------------------------

_TEXT = (
    "the author wrote papers on graph learning and was cited times by peers in journals "
    "professor university of oslo since joined received award for work"
)
_WORDS = _TEXT.split(" ")


def _sentence(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(_WORDS) for _ in range(n)]


def _pairs(n: int = 100, seed: int = 7) -> list[tuple[str, str, str]]:
    """``n`` (kind, reference, candidate) pairs covering what long-form answers do: share
    words, reorder them, leave text out, change case and punctuation, write numbers."""
    rng = random.Random(seed)
    kinds = [
        "identical",
        "shared",
        "reordered",
        "empty",
        "punctuation",
        "numbers",
        "case",
        "disjoint",
        "truncated",
        "extra",
    ]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        ref = _sentence(rng, rng.randint(6, 25))
        if kind == "identical":
            cand = list(ref)
        elif kind == "shared":
            cand = [w if rng.random() < 0.6 else rng.choice(_WORDS) for w in ref]
        elif kind == "reordered":
            cand = list(ref)
            rng.shuffle(cand)
        elif kind == "empty":
            cand = []
        elif kind == "punctuation":
            cand = [w + rng.choice(["", ",", ".", ";", "!", "'s", "-"]) for w in ref]
            ref = [w + rng.choice(["", ",", "."]) for w in ref]
        elif kind == "numbers":
            ref = [*ref, "cited", f"{rng.randint(1, 9)},{rng.randint(100, 999)}", "times"]
            ref += ["in", str(rng.randint(1950, 2024))]
            cand = [*ref[:-1], str(rng.randint(1950, 2024)), "."]
        elif kind == "case":
            cand = [w.upper() if rng.random() < 0.5 else w.capitalize() for w in ref]
        elif kind == "disjoint":
            cand = ["zebra", "quantum", "yellow"][: rng.randint(1, 3)]
        elif kind == "truncated":
            cand = ref[: rng.randint(1, len(ref))]
        else:
            cand = ref + _sentence(rng, rng.randint(1, 10))
        out.append((kind, " ".join(ref), " ".join(cand)))
    return out


PAIRS = _pairs()


def test_pairs_cover_every_kind_and_are_varied():
    kinds = {k for k, _, _ in PAIRS}
    assert len(PAIRS) == 100 and len(kinds) == 10
    assert len({(r, c) for _, r, c in PAIRS}) == 100
    scores = {round(rouge_l(c, [r]), 6) for _, r, c in PAIRS}
    assert len(scores) > 30  # not a handful of degenerate values


def test_rouge_l_is_rouge_score_f_measure_without_stemming():
    lib = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    for kind, ref, cand in PAIRS:
        assert rouge_l(cand, [ref]) == lib.score(ref, cand)["rougeL"].fmeasure, (kind, ref, cand)


def test_bleu_is_sacrebleu_sentence_bleu_13a_over_100():
    for kind, ref, cand in PAIRS:
        want = sacrebleu.sentence_bleu(cand, [ref], tokenize="13a").score / 100
        # capped at 1.0: sacrebleu's 100 for a copy can come back as 100.00000000000004
        assert bleu(cand, [ref]) == min(want, 1.0), (kind, ref, cand)
    # the defaults are what the docs say: 13a, case kept, exp smoothing
    metric = sacrebleu.BLEU(effective_order=True)
    metric.sentence_score("a b", ["a b"])
    assert "tok:13a" in str(metric.get_signature())
    assert "case:mixed" in str(metric.get_signature()) and "smooth:exp" in str(
        metric.get_signature()
    )


def test_tokenisation_rouge_ignores_case_and_punctuation_bleu_keeps_case():
    ref = "The author was cited 1,234 times."
    assert rouge_l("the AUTHOR, was cited 1 234 times", [ref]) == 1.0
    assert bleu(ref, [ref]) == pytest.approx(1.0)
    # 13a splits punctuation off, so spacing around it does not matter ...
    assert bleu("The author was cited 1,234 times .", [ref]) == pytest.approx(1.0)
    # ... but case does (sacrebleu's default)
    assert bleu("the author was cited 1,234 times.", [ref]) < 1.0
    # no stemming: "cites" is not "cited"
    assert rouge_l("cites", ["cited"]) == 0.0


def test_rouge_l_folds_accents_where_rouge_score_would_drop_letters():
    lib = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    ref = "Kurt Gödel and José Martí"
    # rouge-score's tokenizer alone drops non-ASCII letters: "Gödel" reads as "g del"
    assert lib.score(ref, "Kurt Godel and Jose Marti")["rougeL"].fmeasure < 1.0
    assert rouge_l("Kurt Godel and Jose Marti", [ref]) == 1.0
    assert ascii_fold(ref) == "Kurt Godel and Jose Marti"
    assert (
        rouge_l("Kurt Gödel", [ref]) == lib.score(ascii_fold(ref), "Kurt Godel")["rougeL"].fmeasure
    )


def test_several_golds_and_missing_answers():
    lib = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    golds = ["a paper on graphs", "the author wrote papers on graph learning"]
    cand = "the author wrote on graph learning"
    assert rouge_l(cand, golds) == max(lib.score(g, cand)["rougeL"].fmeasure for g in golds)
    assert bleu(cand, golds) == sacrebleu.sentence_bleu(cand, golds).score / 100
    assert rouge_l(None, golds) == 0.0 and bleu(None, golds) == 0.0
    assert rouge_l(cand, []) == 0.0 and bleu(cand, []) == 0.0


def test_registered_by_name():
    assert {"rouge_l", "bleu"} <= set(registry.metrics.names())
    assert registry.metrics.get("rouge_l") is rouge_l
    assert registry.metrics.get("bleu") is bleu


# --- BERTScore ------------------------------------------------------------------------------


def test_bert_score_refuses_a_model_that_is_not_on_disk(tmp_path):
    with pytest.raises(BertScoreUnavailable, match=r"roberta-large.*never downloads"):
        bert_score_f1(["a"], ["a"], model_type="roberta-large", num_layers=17)
    with pytest.raises(BertScoreUnavailable, match="not one"):
        bert_score_f1(["a"], ["a"], model_type=tmp_path / "absent", num_layers=1)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A two-layer BERT with random weights and a vocabulary written here: bert-score's
    wiring, with no download."""
    pytest.importorskip("torch")
    pytest.importorskip("bert_score")
    transformers = pytest.importorskip("transformers")
    import torch

    folder = tmp_path_factory.mktemp("tiny-bert")
    words = sorted(set(_WORDS) | {"cat", "dog", "sat", "mat", "on", "a"})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    transformers.BertModel(config).save_pretrained(folder)
    # bert-score truncates at the tokenizer's model_max_length, which a real checkpoint declares
    tokenizer = transformers.BertTokenizer(str(folder / "vocab.txt"), model_max_length=64)
    tokenizer.save_pretrained(folder)
    return folder


def test_bert_score_on_a_local_model(tiny_bert):
    same = "the cat sat on the mat"
    scores = bert_score_f1(
        [same, "a dog on a mat", None],
        [same, "the cat sat on the mat", same],
        model_type=tiny_bert,
        num_layers=2,
    )
    assert scores[0] == pytest.approx(1.0, abs=1e-5)
    assert scores[1] < 0.999
    assert scores[2] == 0.0


# --- RAGQuestEval ---------------------------------------------------------------------------

_POINTS = [
    KeyPoint(
        slot="citations",
        kind="number",
        value="1234",
        cues=["cited", "citations"],
        statement="Ada Lovelace was cited 1,234 times.",
    ),
    KeyPoint(slot="phd_year", kind="year", value="1999", statement="She received her PhD in 1999."),
    KeyPoint(
        slot="affiliation",
        kind="entity",
        value="University of Oslo",
        aliases=["Oslo University"],
        statement="She works at the University of Oslo.",
    ),
    KeyPoint(
        slot="interest",
        kind="member",
        value="graph learning",
        statement="Her research interests include graph learning.",
    ),
]


def _task(task_id="t1", points=_POINTS, metadata=None, family="scholar-profile") -> Task:
    reference = " ".join(p.statement for p in points)
    return Task(
        id=task_id,
        domain="scholar",
        level="KA",
        family=family,
        question="Write a short profile of Ada Lovelace.",
        answers=[reference],
        key_points=list(points),
        metadata={"subject": "Ada Lovelace"} if metadata is None else metadata,
    )


_REQUEST = re.compile(r"Text:\n(?P<text>.*)\n\nQuestion: (?P<question>.*)\nAnswer:\Z", re.S)


class _ClozeReader(ModelBase):
    """A deterministic reader: fills a cloze's blank with what the text writes between the
    words on either side of it; "unanswerable" when the text has no such place."""

    name = "questtest/cloze"
    calls = 0

    def __init__(self, name: str = "cloze", **options) -> None:
        self.name = f"questtest/{name}"
        self.broken = name == "broken"

    async def generate(self, request):
        type(self).calls += 1
        if self.broken:
            raise ModelError("reader down")
        m = _REQUEST.match(request.messages[-1].content)
        assert m is not None, request.messages[-1].content
        text, question = m.group("text"), m.group("question")
        if "___" not in question:
            return Generation(text="unanswerable")
        before, after = question.split("___", 1)
        left = " ".join(before.split()[-2:])
        right = after.split()[0] if after.split() else ""
        tail = r"\.(?:\s|$)" if right.startswith(".") else r"\s+" + re.escape(right)
        found = re.search(re.escape(left) + r"\s+(.+?)" + tail, text)
        return Generation(text=found.group(1) if found else "unanswerable")


@pytest.fixture
def reader(tmp_path):
    made = []

    def make(name="cloze"):
        r = QuestEvalReader(_ClozeReader(name), cache_path=tmp_path / "cache.sqlite")
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def _qe(reader, task, text):
    return asyncio.run(quest_eval(reader, task, text))


def test_one_cloze_per_key_point_with_the_value_blanked():
    qs = questions_for(_task())
    assert [q.question for q in qs] == [
        "Ada Lovelace was cited ___ times.",  # 1234 written 1,234 in the statement
        "She received her PhD in ___.",
        "She works at the ___.",
        "Her research interests include ___.",
    ]
    assert qs[2].golds == ("University of Oslo", "Oslo University")
    assert [q.kind for q in qs] == ["number", "year", "entity", "member"]


def test_every_occurrence_of_the_value_and_its_aliases_is_blanked():
    point = KeyPoint(
        slot="affiliation",
        kind="entity",
        value="University of Oslo",
        aliases=["Oslo"],
        statement="The University of Oslo (Oslo for short) employs her.",
    )
    assert (
        questions_for(_task(points=[point]))[0].question == "The ___ (___ for short) employs her."
    )
    year = KeyPoint(slot="phd_year", kind="year", value="1999", statement="In 1999, 1999 again.")
    assert questions_for(_task(points=[year]))[0].question == "In ___, ___ again."


@given(
    before=st.text(alphabet="abcdefg ,.", max_size=30),
    after=st.text(alphabet="abcdefg ,.", max_size=30),
    value=st.integers(min_value=0, max_value=10**7),
    grouped=st.booleans(),
)
def test_a_cloze_never_states_its_number(before, after, value, grouped):
    written = f"{value:,}" if grouped else str(value)
    point = KeyPoint(
        slot="citations", kind="number", value=str(value), statement=f"{before} {written} {after}"
    )
    question = question_for(point, "her")
    assert BLANK in question
    assert str(value) not in question.replace(",", "") or str(value) in (before + after)


def test_a_statement_without_its_value_asks_about_the_slot_of_the_subject():
    point = KeyPoint(slot="h_index", kind="number", value="12", statement="Her h-index is high.")
    assert questions_for(_task(points=[point]))[0].question == (
        "What is the h index of Ada Lovelace?"
    )
    assert questions_for(_task(points=[point], metadata={}))[0].question == (
        "What is the h index of the subject of the text?"
    )


@pytest.mark.parametrize(
    ("reply", "unanswerable"),
    [
        ("unanswerable", True),
        ("Unanswerable.", True),
        ("The text does not say.", True),
        ("not stated", True),
        ("I don't know", True),
        ("", True),
        (None, True),
        ("1,234", False),
        ("University of Oslo", False),
    ],
)
def test_unanswerable_replies(reply, unanswerable):
    assert is_unanswerable(reply) is unanswerable


@pytest.mark.parametrize(
    ("reply", "kind", "answers"),
    [
        ("graph learning", "year", False),  # what Qwen2.5-0.5B answered for a missing year
        ("in 1999", "year", True),
        ("graph learning", "number", False),
        ("twelve", "number", True),
        ("3.5 million", "number", True),
        ("University of Oslo", "entity", True),
        ("unanswerable", "entity", False),
    ],
)
def test_a_year_or_number_question_is_answered_only_by_a_year_or_number(reply, kind, answers):
    assert gives_an_answer(reply, kind) is answers


def test_the_reference_answers_every_question_right(reader):
    task = _task()
    s = _qe(reader(), task, task.answers[0])
    assert (s.recall, s.f1, s.accuracy) == (1.0, 1.0, 1.0)
    assert [q.reply for q in s.questions] == [
        "1,234",
        "1999",
        "University of Oslo",
        "graph learning",
    ]


def test_a_candidate_missing_a_key_point_loses_recall(reader):
    task = _task()
    text = " ".join(p.statement for p in _POINTS if p.slot != "affiliation")
    s = _qe(reader(), task, text)
    assert s.recall == 0.75 and s.n_answered == 3
    assert [q.answered for q in s.questions] == [True, True, False, True]
    # what it does answer, it answers right
    assert (s.f1, s.accuracy) == (1.0, 1.0)


def test_a_wrong_value_is_answered_but_not_right(reader):
    task = _task()
    # 1,240 is within grading's 0.5% for amounts, but a count is exact
    text = task.answers[0].replace("1999", "2003").replace("1,234", "1,240")
    s = _qe(reader(), task, text)
    assert s.recall == 1.0
    assert [q.correct for q in s.questions] == [False, False, True, True]
    assert s.accuracy == 0.5 and s.f1 == 0.5


def test_typed_grading_accepts_what_token_f1_does_not(reader):
    # a number written another way is right by its kind, with token F1 0 (CRUD-RAG's measure)
    task = _task()
    s = _qe(reader(), task, task.answers[0].replace("1,234", "1234.0"))
    first = s.questions[0]
    assert first.reply == "1234.0" and first.correct and first.f1 == 0.0


def test_no_answer_asks_nothing(reader):
    r = reader()
    before = _ClozeReader.calls
    for text in (None, "", "   "):
        s = _qe(r, _task(), text)
        assert (s.recall, s.f1, s.accuracy, s.n_questions) == (0.0, 0.0, 0.0, 4)
    assert _ClozeReader.calls == before and r.calls == 0


def test_a_failed_reader_call_counts_as_unanswered(reader):
    r = reader("broken")
    s = _qe(r, _task(), _task().answers[0])
    assert s.recall == 0.0 and r.failures == 4


def test_second_scoring_is_served_by_the_cache(reader):
    task = _task()
    first = reader()
    a = _qe(first, task, task.answers[0])
    assert first.calls == 4 and first.cache_hits == 0
    first.close()
    second = reader()
    before = _ClozeReader.calls
    b = _qe(second, task, task.answers[0])
    assert _ClozeReader.calls == before  # no model call at all
    assert second.calls == 0 and second.cache_hits == 4
    assert a.to_dict() == b.to_dict()


def test_mean_scores_average_per_text():
    qs = questions_for(_task())
    full = score_replies(qs, ["1,234", "1999", "University of Oslo", "graph learning"])
    half = score_replies(qs, ["1,234", "unanswerable", "Oslo", None])
    assert (half.recall, half.accuracy) == (0.5, 0.5)
    assert mean_scores([full, half]) == {
        "recall": 0.75,
        "f1": (1.0 + half.f1) / 2,
        "accuracy": 0.75,
    }


# --- raleval questeval ----------------------------------------------------------------------


def _run_dir(tmp_path, family="scholar-profile"):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    tasks = [_task("t1", family=family), _task("t2", family=family)]
    write_tasks(run_dir / TASKS, tasks)
    results = ResultsFile(run_dir / RESULTS)
    answers = {
        "t1": tasks[0].answers[0],
        "t2": " ".join(p.statement for p in _POINTS if p.slot != "phd_year"),
    }
    for task_id, answer in answers.items():
        results.append(
            Trajectory(
                task_id=task_id,
                agent=AgentSpec(workflow="react", model="scripted/oracle", env="scholar"),
                answer=answer,
                termination=Termination.finished,
                started_at=datetime.now(timezone.utc),
                wall_time_s=1.0,
            )
        )
    return run_dir


def test_questeval_cli_writes_rows_prints_the_table_and_reuses_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    if "questtest" not in registry.models:
        registry.models.register("questtest")(_ClozeReader)
    run_dir = _run_dir(tmp_path)
    res = runner.invoke(app, ["questeval", str(run_dir), "--model", "questtest/cloze"])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.replace("│", " ").split())
    assert "reader calls: 8 (cache hits 0, failed 0)" in out
    # one family: t1 all four answered, t2 three of four -> recall 0.875
    assert "scholar-profile 2 0.875 1.000 1.000" in out
    rows = [json.loads(x) for x in (run_dir / QUESTEVAL_FILE).read_text().splitlines()]
    assert [(r["task_id"], r["quest_recall"]) for r in rows] == [("t1", 1.0), ("t2", 0.75)]
    assert rows[0]["rouge_l"] == 1.0 and rows[0]["bleu"] == pytest.approx(1.0)
    assert rows[1]["rouge_l"] < 1.0 and rows[0]["bertscore"] is None
    assert rows[0]["reader"] == "questtest/cloze" and rows[0]["prompt_version"] == "questeval-v1"
    assert [q["answered"] for q in rows[1]["questions"]] == [True, False, True, True]
    again = runner.invoke(app, ["questeval", str(run_dir), "--model", "questtest/cloze", "--json"])
    assert again.exit_code == 0, again.output
    data = json.loads(again.output)
    assert data["reader_calls"] == {"calls": 0, "cache_hits": 8, "failed": 0}
    assert data["families"]["scholar-profile"]["quest_recall"] == 0.875


def test_questeval_cli_refuses_a_run_without_long_form_episodes_and_a_bad_bertscore_path(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    if "questtest" not in registry.models:
        registry.models.register("questtest")(_ClozeReader)
    run_dir = _run_dir(tmp_path)
    res = runner.invoke(
        app,
        [
            "questeval",
            str(run_dir),
            "--model",
            "questtest/cloze",
            "--bertscore-model",
            str(tmp_path / "absent"),
            "--bertscore-layers",
            "2",
        ],
    )
    assert res.exit_code == 2
    assert "BERTScore needs a model directory" in " ".join(res.output.split())
    empty = tmp_path / "empty"
    empty.mkdir()
    write_tasks(empty / TASKS, [])
    (empty / RESULTS).write_text("")
    res = runner.invoke(app, ["questeval", str(empty), "--model", "questtest/cloze"])
    assert res.exit_code == 2 and "no long-form episode" in res.output


def test_questeval_cli_checks_the_reader_on_the_reference_and_escapes_names(tmp_path, monkeypatch):
    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    if "questtest" not in registry.models:
        registry.models.register("questtest")(_ClozeReader)
    run_dir = _run_dir(tmp_path, family="[bold red]fam[/]")
    args = ["questeval", str(run_dir), "--model", "questtest/cloze", "--check-reader"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.replace("│", " ").split())
    assert "[bold red]fam[/] 2 0.875" in out  # shown as written, not as markup
    # the cloze reader reads every reference perfectly; both tasks share one reference,
    # which is t1's answer, so reading the references asks nothing new
    assert "reader on the reference texts: quest recall 1.000, quest accuracy 1.000" in out
    assert "reader calls: 8 (cache hits 8, failed 0)" in out
    rows = [json.loads(x) for x in (run_dir / QUESTEVAL_FILE).read_text().splitlines()]
    assert [r["reference_recall"] for r in rows] == [1.0, 1.0]


def test_questeval_cli_bertscore_on_a_local_model(tmp_path, monkeypatch, tiny_bert):
    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    if "questtest" not in registry.models:
        registry.models.register("questtest")(_ClozeReader)
    run_dir = _run_dir(tmp_path)
    args = ["questeval", str(run_dir), "-m", "questtest/cloze", "--bertscore-model"]
    res = runner.invoke(app, [*args, str(tiny_bert), "--bertscore-layers", "2", "--json"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (run_dir / QUESTEVAL_FILE).read_text().splitlines()]
    assert rows[0]["bertscore"] == pytest.approx(1.0, abs=1e-5)
    assert rows[1]["bertscore"] < 0.9999
