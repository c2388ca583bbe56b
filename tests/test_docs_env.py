"""The docs environment: BM25 search over a JSON-lines collection (Chinese segmented), read by
id, the index saved beside the corpus and reopened, bad corpora refused with their line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raleval import registry
from raleval.envs.docs import CorpusError, CorpusIndex, tokenize
from raleval.envs.docs.index import index_dir
from raleval.records import OutcomeKind

DOCS = [
    {
        "id": "sh",
        "title": "上海体育消费券",
        "text": "上海市体育局联合美团发放总额500万元的体育消费券。",
    },
    {"id": "cd", "title": "", "text": "成都市体育局利用大运会契机发放惠民运动券。"},
    {
        "id": "en1",
        "title": "Harbor report",
        "text": "The harbor handled 1.36 million tons of cargo.",
    },
    {
        "id": "en2",
        "title": "Library",
        "text": "The new town library opened with eighty thousand books.",
    },
]


def _corpus(tmp_path: Path, docs=DOCS) -> Path:
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs) + "\n", "utf-8")
    return path


def test_chinese_is_segmented_and_english_tokenised_as_bm25s_does():
    assert "体育局" in tokenize("上海市体育局发放消费券")
    # bm25s's default: lower case, words of 2+ characters, English stop words dropped
    assert tokenize("The Harbor handled a cargo of 5 tons") == [
        "harbor",
        "handled",
        "cargo",
        "tons",
    ]


def test_search_ranks_the_document_that_answers_and_read_returns_it(tmp_path):
    env = registry.envs.get("docs")(corpus=str(_corpus(tmp_path)))
    hits = env.call_sync("search", {"query": "上海市体育局发放的消费券总额是多少？"}).data
    assert hits[0]["doc_id"] == "sh"
    assert env.call_sync("search", {"query": "cargo harbor"}).data[0]["doc_id"] == "en1"
    read = env.call_sync("read", {"doc_id": "cd"})
    assert read.data == {"doc_id": "cd", "title": "", "text": DOCS[1]["text"]}
    assert env.fingerprint() == f"docs:corpus={(tmp_path / 'c.jsonl').resolve()}"


def test_misses_and_unknown_ids_are_classified(tmp_path):
    env = registry.envs.get("docs")(corpus=str(_corpus(tmp_path)))
    miss = env.call_sync("search", {"query": "zebra xylophone"})
    assert (miss.kind, miss.observation) == (OutcomeKind.ok, "No document matches.")
    bad = env.call_sync("read", {"doc_id": "nope"})
    assert (bad.kind, bad.cause) == (OutcomeKind.misuse, "unknown_id")


def test_long_documents_are_cut_with_a_marker(tmp_path):
    docs = [{"id": "long", "text": "word " * 2000}]
    env = registry.envs.get("docs")(corpus=str(_corpus(tmp_path, docs)), read_chars=100)
    text = env.call_sync("read", {"doc_id": "long"}).data["text"]
    assert len(text) == 100 + len(" [... truncated]") and text.endswith("[... truncated]")


def test_the_index_is_saved_reused_and_rebuilt_when_the_corpus_changes(tmp_path):
    corpus = _corpus(tmp_path)
    CorpusIndex(corpus)
    manifest = index_dir(corpus) / "manifest.json"
    stamp = manifest.read_text()
    assert len(CorpusIndex(corpus)) == 4 and manifest.read_text() == stamp  # reused
    _corpus(tmp_path, [*DOCS, {"id": "new", "text": "a brand new zebra document"}])
    index = CorpusIndex(corpus)
    assert len(index) == 5 and manifest.read_text() != stamp
    assert index.get(index.ids[index.search("zebra", 1)[0][0]]).id == "new"


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("not json", "not JSON"),
        ('{"text": "no id"}', "field 'id'"),
        ('{"id": "x", "text": 3}', "field 'text'"),
        ('["a", "list"]', "expected an object"),
    ],
)
def test_a_bad_corpus_line_is_refused_with_its_line(tmp_path, line, why):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "ok", "text": "fine"}\n' + line + "\n")
    with pytest.raises(CorpusError, match=rf"bad.jsonl:.*2.*{why}"):
        CorpusIndex(path)


def test_duplicate_ids_and_missing_corpus_are_refused(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    with pytest.raises(CorpusError, match="appears twice"):
        CorpusIndex(path)
    with pytest.raises(ValueError, match="corpus="):
        registry.envs.get("docs")()
    with pytest.raises(FileNotFoundError):
        registry.envs.get("docs")(corpus=str(tmp_path / "absent.jsonl"))


def test_every_workflow_has_a_docs_prompt(tmp_path):
    env = registry.envs.get("docs")(corpus=str(_corpus(tmp_path)))
    for workflow in ("react", "function_calling", "pal", "dfsdt"):
        text = env.prompt_template(workflow)
        assert text and "document collection" in text, workflow


@pytest.mark.parametrize(
    "query", ["the of and a", "？！。，", "x" * 20000, "'; DROP TABLE docs; --", "\x00\x01"]
)
def test_hostile_or_empty_queries_find_nothing_or_rank_and_leave_the_index_whole(tmp_path, query):
    env = registry.envs.get("docs")(corpus=str(_corpus(tmp_path)))
    result = env.call_sync("search", {"query": query})
    assert result.kind is OutcomeKind.ok
    assert result.observation == "No document matches." or isinstance(result.data, list)
    assert env.call_sync("search", {"query": "cargo harbor"}).data[0]["doc_id"] == "en1"


def test_read_takes_ids_only_never_paths(tmp_path):
    env = registry.envs.get("docs")(corpus=str(_corpus(tmp_path)))
    for doc_id in ("../../etc/passwd", "/etc/passwd", "sh/../cd", "0"):
        result = env.call_sync("read", {"doc_id": doc_id})
        assert (result.kind, result.cause) == (OutcomeKind.misuse, "unknown_id"), doc_id


def test_processes_opening_a_new_corpus_at_once_build_it_once(tmp_path):
    import multiprocessing

    corpus = _corpus(tmp_path)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(3) as pool:
        sizes = pool.map(_open_size, [str(corpus)] * 3)
    assert sizes == [4, 4, 4]
    assert CorpusIndex(corpus).get("sh").title == "上海体育消费券"


def _open_size(path: str) -> int:
    return len(CorpusIndex(Path(path)))
