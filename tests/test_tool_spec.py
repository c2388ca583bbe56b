"""The shared tool machinery: one declaration, three renderings, classified outcomes."""

from raleval.environment import Environment, ToolSpec
from raleval.envs.scholar.tools import PersonIdParams
from raleval.records import OutcomeKind


def test_unknown_tool_is_misuse(scholar_env):
    res = scholar_env.call_sync("fly", {"to": "moon"})
    assert (res.kind, res.cause) == (OutcomeKind.misuse, "unknown_tool")
    assert "Valid tools: searchPerson(" in res.observation


def test_backend_exception_is_a_tool_fault():
    def broken(person_id):
        raise ConnectionError("backend down")

    env = Environment([ToolSpec("getX", "d", PersonIdParams, "dict", broken)])
    res = env.call_sync("getX", {"person_id": "a"})
    assert res.kind is OutcomeKind.tool_fault
    assert res.cause == "backend_exception:ConnectionError"
    assert res.observation == "getX failed: ConnectionError: backend down"
    assert res.latency_s > 0


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
    tool = spec.langchain_tool(scholar_env)
    assert tool.name == "searchPerson"
    assert set(tool.args) == {"name", "organization", "interest"}


def test_langchain_tool_runs_through_the_environment(scholar_env):
    import asyncio

    tool = scholar_env.tool("getPersonInterest").langchain_tool(scholar_env)
    out = asyncio.run(tool.ainvoke({"person_id": "9dc60fe1eff61126913926f0"}))
    assert out.startswith('["compilers", "robotics"')
