"""The scholar tools through the shared tool machinery (full golden tests live with issue 3)."""

from raleval.records import OutcomeKind


def test_search_person_finds_and_ranks(scholar_env):
    world = scholar_env.world
    s = max(world.scholars.values(), key=lambda s: s.n_citation)
    res = scholar_env.call_sync("searchPerson", {"name": s.name})
    assert res.kind is OutcomeKind.ok
    assert res.data[0]["name"] == s.name
    assert set(res.data[0]) == {
        "person_id",
        "name",
        "interests",
        "num_citation",
        "num_pubs",
        "organization",
    }
    assert res.latency_s > 0


def test_bad_arguments_are_misuse_with_a_clear_message(scholar_env):
    res = scholar_env.call_sync("searchPerson", {})
    assert res.kind is OutcomeKind.misuse and res.cause == "bad_arguments"
    assert "give at least one of name, organization, interest" in res.observation
    res = scholar_env.call_sync("getCoauthors", {"person": "x"})
    assert res.kind is OutcomeKind.misuse
    assert "person_id: Field required" in res.observation


def test_unknown_tool_is_misuse(scholar_env):
    res = scholar_env.call_sync("fly", {"to": "moon"})
    assert (res.kind, res.cause) == (OutcomeKind.misuse, "unknown_tool")
    assert "Valid tools: searchPerson(" in res.observation


def test_unknown_id_gives_empty_message(scholar_env):
    res = scholar_env.call_sync("getPersonBasicInfo", {"person_id": "nope"})
    assert (res.kind, res.observation) == (OutcomeKind.ok, "No person found.")


def test_backend_exception_is_a_tool_fault(scholar_env):
    from raleval.envs.scholar.tools import PersonIdParams
    from raleval.envs.spec import Environment, ToolSpec

    def broken(person_id):
        raise ConnectionError("backend down")

    env = Environment([ToolSpec("getX", "d", PersonIdParams, "dict", broken)])
    res = env.call_sync("getX", {"person_id": "a"})
    assert res.kind is OutcomeKind.tool_fault
    assert res.cause == "backend_exception:ConnectionError"
    assert res.observation == "getX failed: ConnectionError: backend down"


def test_renderings_from_one_declaration(scholar_env):
    spec = scholar_env.tool("searchPerson")
    assert spec.react_signature() == "searchPerson(name=..., organization=..., interest=...)"
    assert spec.react_call({"name": "Ada"}) == 'searchPerson(name="Ada")'
    assert spec.python_stub().startswith(
        "def searchPerson(name: str | None = None, organization: str | None = None, "
        "interest: str | None = None) -> list[dict]:"
    )
    schema = spec.json_schema()
    assert schema["function"]["name"] == "searchPerson"
    assert set(schema["function"]["parameters"]["properties"]) == {
        "name",
        "organization",
        "interest",
    }


def test_world_is_deterministic():
    from raleval.envs.scholar.world import generate_world

    a, b = generate_world("tiny", 3), generate_world("tiny", 3)
    assert [s.name for s in a.scholars.values()] == [s.name for s in b.scholars.values()]
    assert list(a.pubs) == list(b.pubs)
    assert list(generate_world("tiny", 4).pubs) != list(a.pubs)
