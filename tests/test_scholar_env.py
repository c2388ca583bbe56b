"""The scholar environment: golden tests per API on the tiny world, and world properties."""

from __future__ import annotations

import json
import mmap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raleval.envs.scholar.world import content_hash, generate_world
from raleval.records import OutcomeKind

P1 = "9dc60fe1eff61126913926f0"  # person rowid 1 of tiny/seed 0


def call(env, tool, **args):
    return env.call_sync(tool, args)


# --- golden observations (tiny world, seed 0; a generator change must bump its version) ---


def test_get_person_basic_info_golden(scholar_env):
    res = call(scholar_env, "getPersonBasicInfo", person_id=P1)
    assert res.kind is OutcomeKind.ok
    assert res.observation == (
        '{"person_id": "9dc60fe1eff61126913926f0", "name": "Gryn Bikimard", "gender": "male", '
        '"organization": "Teiquigrort Research Laboratory", "position": "Associate Professor", '
        '"bio": "Gryn Bikimard is a Associate Professor at Teiquigrort Research Laboratory. He '
        "works on compilers, robotics, network security, social network analysis and entity "
        'linking, and received a Ph.D., Trosial Research Laboratory, 1992.", '
        '"education_experience": "Ph.D., Trosial Research Laboratory, 1992", '
        '"email": "g.bikimard78@trl.edu.invalid"}'
    )


def test_get_person_interest_golden(scholar_env):
    assert call(scholar_env, "getPersonInterest", person_id=P1).data == [
        "compilers",
        "robotics",
        "network security",
        "social network analysis",
        "entity linking",
    ]


def test_namesakes_are_both_returned_most_cited_first(scholar_env):
    hits = call(scholar_env, "searchPerson", name="Bork Dycylini").data
    assert [(h["name"], h["organization"], h["num_citation"]) for h in hits[:2]] == [
        ("Bork Dycylini", "Kraifain Institute of Technology", 29),
        ("Bork Dycylini", "Fakol Academy of Sciences", 10),
    ]
    # the organization tells them apart, by full name or by abbreviation
    for org in ("Fakol Academy of Sciences", "FAS"):
        only = call(scholar_env, "searchPerson", name="Bork Dycylini", organization=org).data
        assert [h["num_citation"] for h in only] == [10]


def test_search_person_tolerates_typos_and_case(scholar_env):
    # P1 has a namesake at another organization, as cited: equal matches keep rowid order
    hits = call(scholar_env, "searchPerson", name="gryn bikimard").data
    assert [h["num_citation"] for h in hits[:2]] == [8, 8] and hits[0]["person_id"] == P1
    hits = call(scholar_env, "searchPerson", name="Gryn Bikimrad").data
    assert hits[0]["person_id"] == P1


def test_search_by_organization_alias_and_interest(scholar_env):
    by_alias = call(scholar_env, "searchPerson", organization="FAS").data
    assert by_alias and {h["organization"] for h in by_alias} == {"Fakol Academy of Sciences"}
    cits = [h["num_citation"] for h in by_alias]
    assert cits == sorted(cits, reverse=True)
    by_interest = call(scholar_env, "searchPerson", interest="knowledge graph").data
    assert len(by_interest) == 10
    assert all("knowledge graphs" in h["interests"] for h in by_interest)
    both = call(scholar_env, "searchPerson", organization="FAS", interest="compilers").data
    assert both and all(
        h["organization"] == "Fakol Academy of Sciences" and "compilers" in h["interests"]
        for h in both
    )


@pytest.mark.parametrize(
    ("tool", "args", "observation"),
    [
        ("searchPerson", {"name": "Zzyzx Qqqq"}, "No person found."),
        ("searchPerson", {"organization": "Nowhere Polytechnic of Xq"}, "No person found."),
        ("searchPublication", {"publication_info": "zzzz qqqq"}, "No publication found."),
        ("getCoauthors", {"person_id": "000000000000000000000000"}, "No coauthors found."),
        ("getPersonInterest", {"person_id": "nope"}, "No interests found."),
        ("getPublication", {"pub_id": "nope"}, "No publication found."),
        ("getPersonBasicInfo", {"person_id": "nope"}, "No person found."),
        ("getPersonPubs", {"person_id": "nope"}, "No publication found."),
    ],
)
def test_unknown_ids_and_empty_results(scholar_env, tool, args, observation):
    res = scholar_env.call_sync(tool, args)
    assert (res.kind, res.observation) == (OutcomeKind.ok, observation)


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("searchPerson", {}, "give at least one of name, organization, interest"),
        ("searchPerson", {"name": 3}, "name: Input should be a valid string"),
        ("searchPerson", {"nam": "x"}, "nam: Extra inputs are not permitted"),
        ("getCoauthors", {}, "person_id: Field required"),
        ("getCoauthors", {"person_id": ""}, "person_id: String should have at least 1"),
        ("getPublication", {"pub_id": ["a"]}, "pub_id: Input should be a valid string"),
        ("searchPublication", {"publication_info": None}, "publication_info: Input should be"),
    ],
)
def test_bad_arguments_are_misuse(scholar_env, tool, args, message):
    res = scholar_env.call_sync(tool, args)
    assert res.kind is OutcomeKind.misuse and res.cause == "bad_arguments"
    assert message in res.observation
    assert res.observation.endswith(f"Usage: {scholar_env.tool(tool).react_signature()}")


def test_publication_round_trip(scholar_env):
    pubs = call(scholar_env, "getPersonPubs", person_id=P1).data
    assert len(pubs) == 5  # num_pubs of this person
    cits = [p["num_citation"] for p in pubs]
    assert cits == sorted(cits, reverse=True)
    top = pubs[0]
    found = call(scholar_env, "searchPublication", publication_info=top["title"]).data
    assert found[0] == {"pub_id": top["pub_id"], "title": top["title"], "year": top["year"]}
    detail = call(scholar_env, "getPublication", pub_id=top["pub_id"]).data
    assert [a["name"] for a in detail["author_list"]] == top["authors_name_list"]
    assert P1 in [a["person_id"] for a in detail["author_list"]]
    assert detail["num_citation"] == top["num_citation"]
    assert detail["pdf_link"].endswith(f"{top['pub_id']}.pdf")


def test_coauthors_are_ordered_by_joint_papers(scholar_env):
    store = scholar_env.store
    rows = store.coauthors(1)
    weights = [w for _, _, w in rows]
    assert weights == sorted(weights, reverse=True)
    listed = [c["person_id"] for c in call(scholar_env, "getCoauthors", person_id=P1).data]
    assert listed == [cid for cid, _, _ in rows]


# --- properties -------------------------------------------------------------------------------

person_rowids = st.integers(min_value=1, max_value=120)
PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rowid=person_rowids, field=st.sampled_from(["name", "organization", "interest"]))
def test_search_results_resolve_in_the_getters(scholar_env, rowid, field):
    p = scholar_env.store.persons_by_rowid([rowid])[rowid]
    query = {"name": p["name"], "organization": p["organization"], "interest": p["interests"][0]}[
        field
    ]
    hits = call(scholar_env, "searchPerson", **{field: query}).data
    assert hits
    for h in hits:
        info = call(scholar_env, "getPersonBasicInfo", person_id=h["person_id"]).data
        assert (info["name"], info["organization"]) == (h["name"], h["organization"])
        pubs = call(scholar_env, "getPersonPubs", person_id=h["person_id"]).data
        assert len(pubs) == h["num_pubs"]  # counts agree with the lists
        assert sum(x["num_citation"] for x in pubs) == h["num_citation"]
        for x in pubs[:3]:
            assert call(scholar_env, "getPublication", pub_id=x["pub_id"]).data["year"] == x["year"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rowid=person_rowids)
def test_coauthor_relation_is_symmetric(scholar_env, rowid):
    p = scholar_env.store.persons_by_rowid([rowid])[rowid]
    for c in call(scholar_env, "getCoauthors", person_id=p["id"]).data:
        back = [
            x["person_id"] for x in call(scholar_env, "getCoauthors", person_id=c["person_id"]).data
        ]
        assert p["id"] in back


def test_citation_counts_are_in_degrees(scholar_env):
    store = scholar_env.store
    mismatched = store.query(
        "SELECT COUNT(*) FROM pubs p WHERE p.n_citation != "
        "(SELECT COUNT(*) FROM citations c WHERE c.dst = p.rowid)"
    )
    assert mismatched == [(0,)]
    backwards = store.query(
        "SELECT COUNT(*) FROM citations c JOIN pubs s ON s.rowid = c.src "
        "JOIN pubs d ON d.rowid = c.dst WHERE d.year > s.year"
    )
    assert backwards == [(0,)]  # papers only cite papers that already exist


def test_same_seed_gives_byte_identical_worlds(tmp_path):
    a = generate_world("tiny", 3, tmp_path / "a.sqlite")
    b = generate_world("tiny", 3, tmp_path / "b.sqlite")
    c = generate_world("tiny", 4, tmp_path / "c.sqlite")
    assert a.read_bytes() == b.read_bytes()
    assert content_hash(a) == content_hash(b) != content_hash(c)


def test_small_world_has_skew_namesakes_and_popularity_buckets():
    from raleval.envs.scholar import make_scholar_env

    store = make_scholar_env("small").store
    cits = sorted((r[0] for r in store.query("SELECT n_citation FROM persons")), reverse=True)
    top_share = sum(cits[: len(cits) // 10]) / max(1, sum(cits))
    assert top_share > 0.4  # the top 10% hold a large share of citations (heavy tail)
    (most_led,) = store.query(
        "SELECT COUNT(*) FROM authorship WHERE position = 0 GROUP BY person ORDER BY 1 DESC LIMIT 1"
    )[0]
    assert most_led < 0.1 * store.n_pubs  # heavy-tailed, but no one scholar leads the field
    dup = store.query(
        "SELECT COUNT(*) FROM (SELECT name FROM persons GROUP BY name "
        "HAVING COUNT(DISTINCT org) > 1)"
    )[0][0]
    assert dup >= 100  # namesakes at different organizations
    buckets = [store.popularity(c) for c in cits]
    assert buckets.count("head") >= len(cits) // 10 - 5
    assert {"head", "torso", "tail"} == set(buckets)


def test_world_file_is_reused(tmp_path, monkeypatch):
    from raleval.envs.scholar import store as store_mod

    monkeypatch.setenv("RALEVAL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(store_mod, "_open_stores", {})
    first = store_mod.load_world("tiny", 7)
    mtime = Path(first.path).stat().st_mtime_ns
    monkeypatch.setattr(store_mod, "_open_stores", {})
    again = store_mod.load_world("tiny", 7)
    assert again.path == first.path and Path(again.path).stat().st_mtime_ns == mtime
    assert json.loads(json.dumps(again.meta))["seed"] == "7"


def test_search_indexes_are_saved_beside_the_world_and_mapped(tmp_path):
    from raleval.envs.scholar.store import ScholarStore, index_folder

    path = generate_world("tiny", 5, tmp_path / "w.sqlite")
    assert {p.name for p in index_folder(path).iterdir()} == {"names", "titles"}
    store = ScholarStore(path)
    first = store.persons_by_rowid([1])[1]["name"]
    assert store.names.strings[0] == first  # position i is rowid i + 1
    assert store.names.search(first, 1)[0] == (0, 100.0)
    assert isinstance(store.names.strings._data, mmap.mmap)  # mapped from the saved file


def test_a_parallel_build_writes_the_same_world_and_indexes(tmp_path):
    a = generate_world("tiny", 6, tmp_path / "a" / "w.sqlite", parallel=False)
    b = generate_world("tiny", 6, tmp_path / "b" / "w.sqlite", parallel=True)
    assert a.read_bytes() == b.read_bytes()
    for name in ("names", "titles"):
        files = sorted(p.name for p in (a.parent / "w.index" / name).iterdir())
        assert files == sorted(p.name for p in (b.parent / "w.index" / name).iterdir())
        for f in files:
            assert (a.parent / "w.index" / name / f).read_bytes() == (
                b.parent / "w.index" / name / f
            ).read_bytes()
    assert sorted(p.name for p in b.parent.iterdir()) == ["w.index", "w.sqlite"]  # no side files


def test_a_failed_build_step_fails_the_build_and_leaves_no_world(tmp_path, monkeypatch):
    from raleval.envs.scholar import world

    def broken(d, path):
        raise OSError("disk full")

    monkeypatch.setattr(world, "_write_people", broken)
    with pytest.raises(RuntimeError, match="'people' failed"):
        generate_world("tiny", 0, tmp_path / "w.sqlite", parallel=True)
    with pytest.raises(OSError, match="disk full"):
        generate_world("tiny", 0, tmp_path / "w.sqlite", parallel=False)
    assert not [p for p in tmp_path.iterdir() if p.suffix != ".index"]  # no world, no tmp


_KILLED_BUILD = """
import multiprocessing, sys, time
from pathlib import Path
from raleval.envs.scholar import world

def hang(*args):  # a step still running when the build is killed
    time.sleep(600)

def links(db, d):
    for _ in range(600):  # the people step's process, once it has started
        pids = [p.pid for p in multiprocessing.active_children() if p.name.endswith("people")]
        if pids:
            break
        time.sleep(0.05)
    # written whole, then renamed: the test never reads a file still being written
    out = Path(sys.argv[2] + ".part")
    out.write_text(" ".join(map(str, pids)))
    out.replace(sys.argv[2])
    time.sleep(600)

slow = float(sys.argv[3])
if slow:  # a step slow to start: the build is killed before it asks to die with it
    ask = world._die_with_parent

    def late(*parent):
        time.sleep(slow)
        ask(*parent)

    world._die_with_parent = late
world._write_people = hang
world._write_links = links
world.generate_world("tiny", 0, Path(sys.argv[1]), parallel=True)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("slow", [0.0, 1.0])
def test_a_killed_build_leaves_no_world_and_no_running_steps(tmp_path, slow):
    import os
    import signal
    import subprocess
    import sys
    import time

    world, pids = tmp_path / "w.sqlite", tmp_path / "pids"
    build = subprocess.Popen(
        [sys.executable, "-c", _KILLED_BUILD, str(world), str(pids), str(slow)]
    )
    steps: list[int] = []
    try:
        for _ in range(600):
            if pids.exists() or build.poll() is not None:
                break
            time.sleep(0.1)
        steps = [int(p) for p in pids.read_text().split()]
        assert len(steps) == 1 and _alive(steps[0])
        build.send_signal(signal.SIGKILL)
        build.wait()
        for _ in range(100):
            if not any(_alive(p) for p in steps):
                break
            time.sleep(0.1)
        survivors = [p for p in steps if _alive(p)]
    finally:  # never leave a hanging build behind, whatever failed
        build.kill()
        build.wait()
        for pid in steps:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert survivors == []  # the steps died with the build
    assert not world.exists()
    from raleval.envs.scholar.store import ScholarStore

    with pytest.raises(FileNotFoundError):
        ScholarStore(world)
