"""Public task-file loaders on small fixtures in each format, and their errors."""

import bz2
from pathlib import Path

import pytest

from raleval.tasks.loaders import TaskFileError, load_file

FIX = Path(__file__).parent / "fixtures" / "tasks"


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
    assert a.query_time.isoformat() == "2024-03-19T23:49:30"
    assert (a.tags.popularity, a.tags.dynamism) == ("head", "static")
    assert a.answers == ["the incredibles", "The Incredibles"] and a.metric == "crag"
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
        ("hotpotqa", "h.json", '{"not": "a list"}', "expected a JSON list"),
        (
            "reval",
            "r.jsonl",
            '{"input": "q", "outputs": []}\n',
            "r.jsonl:1: field 'outputs': no gold",
        ),
        ("soay", "s.jsonl", '{"Answer": 1}\n', "s.jsonl:1: field 'Query_en'"),
    ],
)
def test_malformed_files_name_path_line_and_field(tmp_path, kind, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(TaskFileError, match=message.replace("(", r"\(")):
        load_file(kind, path)


def test_unknown_kind_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="unknown task file kind"):
        load_file("squad", FIX / "hotpot.json")
    with pytest.raises(FileNotFoundError):
        load_file("crag", tmp_path / "none.jsonl")
