"""Importing an OAG / AMiner JSON-lines dump and serving it through the same seven APIs."""

from __future__ import annotations

import json

import pytest

from raleval.envs.scholar import make_scholar_env
from raleval.envs.scholar.oag import OAGFormatError, import_oag

from .conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "oag"


@pytest.fixture(scope="module")
def oag_env(tmp_path_factory):
    out = tmp_path_factory.mktemp("oag") / "world.sqlite"
    import_oag(FIXTURE / "authors.jsonl", FIXTURE / "papers.jsonl", out)
    return make_scholar_env(path=str(out))


def test_namesakes_from_the_dump(oag_env):
    hits = oag_env.call_sync("searchPerson", {"name": "Ada Lin"}).data
    assert [(h["person_id"], h["organization"], h["num_citation"]) for h in hits] == [
        ("53f4a1", "Qerrin Institute of Technology", 40),  # n_citation given by the dump
        ("53f4a3", "Vorn University", 0),  # derived from its papers (p4 has none)
    ]
    assert hits[0]["interests"] == ["entity linking", "knowledge graphs"]  # by tag weight
    only = oag_env.call_sync("searchPerson", {"name": "Ada Lin", "organization": "QIT"}).data
    assert [h["person_id"] for h in only] == ["53f4a1"]


def test_getters_over_imported_data(oag_env):
    pubs = oag_env.call_sync("getPersonPubs", {"person_id": "53f4a1"}).data
    assert [(p["pub_id"], p["num_citation"]) for p in pubs] == [("p1", 30), ("p2", 6), ("p3", 4)]
    assert pubs[1]["authors_name_list"] == ["Ada Lin", "Chen Tamar"]  # unprofiled author dropped
    co = oag_env.call_sync("getCoauthors", {"person_id": "53f4a1"}).data
    assert [c["person_id"] for c in co] == ["53f4a2", "53f4a4"]  # 2 joint papers, then 1
    pub = oag_env.call_sync("getPublication", {"pub_id": "p1"}).data
    assert (pub["venue"], pub["year"], pub["abstract"]) == ("EMNLP", 2019, "We link entities.")
    info = oag_env.call_sync("getPersonBasicInfo", {"person_id": "53f4a2"}).data
    assert info["organization"] == "Vorn University" and info["position"] is None
    found = oag_env.call_sync("searchPublication", {"publication_info": "linking entities"})
    assert found.data[0]["pub_id"] == "p1"
    by_interest = oag_env.call_sync("searchPerson", {"interest": "compilers"}).data
    assert [h["person_id"] for h in by_interest] == ["53f4a2"]


def test_citation_edges_inside_the_dump_only(oag_env):
    assert oag_env.store.query("SELECT src, dst FROM citations") == [(1, 3)]


def test_malformed_line_names_file_line_and_field(tmp_path):
    bad = tmp_path / "authors.jsonl"
    bad.write_text(json.dumps({"id": "a", "name": "A"}) + "\n" + json.dumps({"id": "b"}) + "\n")
    with pytest.raises(OAGFormatError, match=r"authors.jsonl:2: field name: Field required"):
        import_oag(bad, FIXTURE / "papers.jsonl", tmp_path / "w.sqlite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["authors.jsonl"]
    broken = tmp_path / "papers.jsonl"
    broken.write_text('{"id": "p1", "title": "x", "year": "soon"}\n')
    with pytest.raises(OAGFormatError, match=r"papers.jsonl:1: field year"):
        import_oag(FIXTURE / "authors.jsonl", broken, tmp_path / "w.sqlite")
