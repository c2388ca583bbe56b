"""Public task-file loaders on small fixtures in each format and on real public files; a bad
record is skipped with file:line and the reason, or fails the load with --strict."""

import bz2
import json
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from raleval.answers import AnswerType
from raleval.app.cli import app
from raleval.records import Level
from raleval.store import read_tasks
from raleval.tasks.loaders import TaskFileError, load_file, load_report

FIX = Path(__file__).parent / "fixtures" / "tasks"
DATA = Path(__file__).parent / "data"


def test_hotpot_and_2wiki():
    tasks = load_file("hotpotqa", FIX / "hotpot.json")
    assert [t.answers for t in tasks] == [["yes"], ["Chief of Protocol"]]
    assert tasks[0].tags.question_type == "comparison" and tasks[0].family == "3-1"
    assert tasks[1].metadata["supporting_titles"] == ["Kiss and Tell (1945 film)", "Shirley Temple"]
    (w,) = load_file("2wiki", FIX / "2wiki.json")
    assert w.family == "3-2" and w.answers == ["Małgorzata Braunek"]


def test_musique_keeps_aliases_and_hops():
    a, b = load_file("musique", FIX / "musique.jsonl")
    assert a.answers == ["June 1982", "1982"] and a.tags.question_type == "2hop"
    assert b.tags.question_type == "3hop1"


def test_kqapro_keeps_program():
    a, b = load_file("kqapro", FIX / "kqapro.json")
    assert a.metadata["program"][0]["function"] == "FindAll" and "choices" in a.metadata
    assert b.answers == ["26"]


def test_crag_reads_time_popularity_and_false_premise(tmp_path):
    a, b = load_file("crag", FIX / "crag.jsonl")
    # PT is US Pacific time: PDT (-7 h) on 19 March 2024, PST (-8 h) on 28 February
    assert a.query_time.isoformat() == "2024-03-19T23:49:30-07:00"
    assert b.query_time.utcoffset() == timedelta(hours=-8)
    assert (a.tags.popularity, a.tags.dynamism) == ("head", "static")
    assert a.answers == ["the incredibles", "The Incredibles"] and a.metric == "crag"
    assert a.family == "crag-simple" and b.family == "crag-false-premise"
    assert b.tags.question_type == "false_premise" and b.tags.popularity is None
    packed = tmp_path / "crag.jsonl.bz2"
    packed.write_bytes(bz2.compress((FIX / "crag.jsonl").read_bytes()))
    assert [t.id for t in load_file("crag", packed)] == [a.id, b.id]


def test_soay_and_reval():
    (s,) = load_file("soay", FIX / "3.jsonl")
    assert s.family == "1-3" and s.answers == ["19432"]
    a, b = load_file("reval", FIX / "1-3.jsonl")
    assert a.domain == "scholar" and a.family == "1-3" and a.level.value == "KS"
    assert b.domain == "wiki" and b.level.value == "KA" and b.answers[1].startswith("Massachusetts")


@pytest.mark.parametrize(
    ("kind", "name", "text", "message"),
    [
        ("crag", "c.jsonl", "\n{oops\n", "c.jsonl:2: not JSON"),
        ("crag", "c.jsonl", '{"interaction_id": "x", "query": "q"}\n', "field 'question_type'"),
        (
            "crag",
            "c.jsonl",
            '{"interaction_id": "x", "question_type": "simple", "domain": "open", "query": "q",'
            ' "answer": "a", "query_time": "yesterday"}\n',
            "c.jsonl:1: field 'query_time'",
        ),
        (
            "musique",
            "m.jsonl",
            '\n\n{"id": "2hop__1", "question": 7}\n',
            "m.jsonl:3: field 'question'",
        ),
        (
            "hotpotqa",
            "h.json",
            '[\n{"_id": "a", "question": "q", "answer": "a"},\n{"_id": "b"}\n]',
            "h.json:3: field 'question'",
        ),
        ("hotpotqa", "h.json", '{"not": "a record"}', "h.json:1: field 'question': missing"),
        (
            "reval",
            "r.jsonl",
            '{"input": "q", "outputs": []}\n',
            "r.jsonl:1: field 'outputs': no gold",
        ),
        ("soay", "s.jsonl", '{"Answer": 1}\n', "s.jsonl:1: field 'Query_en'"),
    ],
)
def test_a_bad_record_is_skipped_with_path_line_and_reason(tmp_path, kind, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    report = load_report(kind, path)
    assert message in str(report.skipped[-1])
    assert report.summary().endswith("records skipped") and f"{len(report.skipped)} records" in (
        report.summary()
    )
    with pytest.raises(TaskFileError, match=message.replace("(", r"\(")):
        load_file(kind, path, strict=True)


def test_only_an_unsplittable_file_fails_as_a_whole(tmp_path):
    path = tmp_path / "h.json"
    path.write_text('[{"_id": "a", "question": "q", "answer": "a"},')
    with pytest.raises(TaskFileError, match=r"h\.json:1: not JSON"):
        load_file("hotpotqa", path)


def test_good_records_around_a_bad_one_still_load(tmp_path):
    path = tmp_path / "m.jsonl"
    rows = [
        {"id": "2hop__1", "question": "q1", "answer": "a1"},
        {"id": "2hop__2", "question": "q2", "answer": ""},
        "not an object",
        {"id": "2hop__3", "question": "q3", "answer": "a3", "answerable": "yes"},
        {"id": "3hop1__4", "question": "q4", "answer": 1982},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{oops\n")
    report = load_report("musique", path)
    assert [t.answers for t in report.tasks] == [["a1"], ["1982"]]
    assert [(s.line, s.reason) for s in report.skipped] == [
        (2, "field 'answer': empty"),
        (3, "expected an object, got str"),
        (4, "field 'answerable': expected bool, got 'yes'"),
        (6, "not JSON: Expecting property name enclosed in double quotes"),
    ]


def test_kqapro_validates_choices_and_skips_unanswered_test_records(tmp_path):
    path = tmp_path / "k.json"
    path.write_text(
        json.dumps(
            [
                {"question": "q1", "answer": "b", "choices": ["a", "b"]},
                {"question": "q2", "answer": "z", "choices": ["a", "b"]},
                {"question": "q3", "choices": ["a", "b"]},
                {"question": "q4", "answer": "4", "program": [{"inputs": []}]},
            ],
            indent=1,
        )
    )
    report = load_report("kqapro", path)
    assert [t.question for t in report.tasks] == ["q1"]
    assert [s.reason for s in report.skipped] == [
        "field 'answer': 'z' is not one of the choices",
        "field 'answer': missing",
        "field 'program': expected steps with a 'function'",
    ]


@pytest.mark.parametrize(
    "record",
    [
        # LongBench's 2wikimqa.jsonl
        {"_id": "x1", "input": "Who is older?", "answers": ["Ann"], "context": "..."},
        # FlashRAG's 2wikimultihopqa dev.jsonl
        {"id": "x1", "question": "Who is older?", "golden_answers": ["Ann"], "metadata": {}},
        # IRCoT's processed 2wikimultihopqa
        {
            "question_id": "x1",
            "question_text": "Who is older?",
            "answers_objects": [{"number": "", "date": {}, "spans": ["Ann"]}],
            "contexts": [],
        },
    ],
)
def test_2wiki_derived_formats(tmp_path, record):
    path = tmp_path / "2wiki.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (task,) = load_file("2wiki", path, strict=True)
    assert (task.id, task.question, task.answers, task.family) == (
        "3-2-x1",
        "Who is older?",
        ["Ann"],
        "3-2",
    )


def test_crag_real_dev_records_keep_pages_alternatives_and_zone():
    # CRAG's example_data/dev_data.jsonl.bz2, page HTML cut to 1,000 characters
    report = load_report("crag", DATA / "crag_dev_data_head.jsonl")
    # line 8's answer is the string 'nan' (a missing value written out): not an answer, so
    # the record is skipped and listed, never graded against
    assert len(report.tasks) == 9
    assert [(s.line, s.reason) for s in report.skipped] == [
        (8, "field 'answer': 'nan' is not an answer")
    ]
    families = sorted({t.family for t in report.tasks})
    assert families == [
        "crag-comparison",
        "crag-false-premise",
        "crag-multihop",
        "crag-set",
        "crag-simple",
    ]
    first = report.tasks[0]
    assert first.query_time.isoformat() == "2024-02-28T10:04:54-08:00"
    pages = first.metadata["search_results"]
    assert len(pages) == 5 and set(pages[0]) == {
        "page_name",
        "page_url",
        "page_snippet",
        "page_result",
        "page_last_modified",
    }
    assert pages[0]["page_result"].startswith("<!doctype html>")
    # "alternative_answers" holds the text "[]" in CRAG's file: no alternatives
    assert first.answers == ["yes"]


def test_crag_alternative_answers_as_list_or_text(tmp_path):
    base = {
        "interaction_id": "i",
        "query_time": "03/01/2024, 10:00:00 PT",
        "domain": "movie",
        "question_type": "multi-hop",
        "query": "q?",
        "answer": "a",
    }
    path = tmp_path / "c.jsonl"
    rows = [
        {**base, "alternative_answers": ["b", "c"]},
        {**base, "alternative_answers": "['b']"},
        {**base, "alt_ans": ["d"]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [t.answers for t in load_file("crag", path, strict=True)] == [
        ["a", "b", "c"],
        ["a", "b"],
        ["a", "d"],
    ]


SOAY = DATA / "soaybench_v1-2"


def test_soaybench_v1_2_all_44_files_load_with_typed_answers():
    files = sorted(SOAY.glob("*.jsonl"), key=lambda p: int(p.stem))
    assert len(files) == 44
    answered = loaded = 0
    for path in files:
        raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        gold = [r["Answer"] for r in raw if r["Answer"] not in ("", None, [], {})]
        report = load_report("soay", path)
        answered += len(gold)
        loaded += len(report.tasks)
        assert len(report.tasks) == len(gold), (path.name, [str(s) for s in report.skipped])
        assert all(s.reason == "field 'Answer': empty" for s in report.skipped)
        for task, g in zip(report.tasks, gold, strict=True):
            if isinstance(g, list):  # list answers stay lists, element by element
                assert task.answer_type is AnswerType.list
                assert task.elements == [[str(x)] for x in g]
            elif isinstance(g, dict):  # a venue record: its name, the record kept
                assert task.answers == [g.get("info", g)["name"]]
                assert task.metadata["answer_record"] == g
            else:
                assert task.answers == [str(g)] and task.elements is None
    assert (answered, loaded) == (770, 770)


@pytest.mark.parametrize(
    ("number", "family", "level"),
    [(1, "1-3", Level.KS), (7, "1-3", Level.KS), (8, "3-5", Level.KA), (21, "2-4", Level.KU),
     (30, "2-4", Level.KU), (31, "3-5", Level.KA), (44, "3-5", Level.KA)],
)  # fmt: skip
def test_soaybench_levels_by_template(number, family, level):
    task = load_file("soay", SOAY / f"{number}.jsonl")[0]
    assert (task.family, task.level) == (family, level)


def test_tasks_load_prints_skips_and_summary_and_strict_fails(tmp_path):
    runner = CliRunner()
    out = tmp_path / "tasks.jsonl"
    src = SOAY / "23.jsonl"  # 5 of its 18 records have an empty Answer
    result = runner.invoke(app, ["tasks", "load", "soay", str(src), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "23.jsonl:" in result.output and "field 'Answer': empty" in result.output
    assert "13 tasks loaded, 5 records skipped" in result.output
    assert len(read_tasks(out)) == 13
    strict = runner.invoke(app, ["tasks", "load", "soay", str(src), "--strict", "--out", str(out)])
    assert strict.exit_code != 0 and "field 'Answer': empty" in strict.output


def test_unknown_kind_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="unknown task file kind"):
        load_file("squad", FIX / "hotpot.json")
    with pytest.raises(FileNotFoundError):
        load_file("crag", tmp_path / "none.jsonl")
