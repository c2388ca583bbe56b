"""Golden and property tests of the ReAct action parser."""

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raleval.workflows.parsing import FINISH, ActionParseError, parse_action


@pytest.fixture(scope="module")
def tools(scholar_env):
    return scholar_env.tools


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        (
            'searchPerson(name="Ada Lin", organization="MIT")',
            "searchPerson",
            {"name": "Ada Lin", "organization": "MIT"},
        ),
        (
            "searchPerson(name=Ada Lin, organization=Qerrin Institute)",
            "searchPerson",
            {"name": "Ada Lin", "organization": "Qerrin Institute"},
        ),
        ("searchperson(name='Ada Lin')", "searchPerson", {"name": "Ada Lin"}),
        ("getCoauthors(abc123)", "getCoauthors", {"person_id": "abc123"}),
        ("getCoauthors[abc123]", "getCoauthors", {"person_id": "abc123"}),
        ('getCoauthors(person_id="abc123").', "getCoauthors", {"person_id": "abc123"}),
        (
            "I will now call getPersonPubs(person_id='x1') to read them",
            "getPersonPubs",
            {"person_id": "x1"},
        ),
        (
            "Action 3: searchPublication(Sparse Attention for Robotics)",
            "searchPublication",
            {"publication_info": "Sparse Attention for Robotics"},
        ),
        (
            "```python\ngetPersonInterest(person_id='p9')\n```",
            "getPersonInterest",
            {"person_id": "p9"},
        ),
        # several actions: the first counts
        ("getCoauthors(a1)\nAction 2: getCoauthors(b2)", "getCoauthors", {"person_id": "a1"}),
    ],
)
def test_parses_tool_calls(tools, text, tool, args):
    parsed = parse_action(text, tools)
    assert (parsed.tool, parsed.arguments) == (tool, args)


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Finish[17]", "17"),
        ("finish[Qerrin Institute of Technology]", "Qerrin Institute of Technology"),
        ('Finish("yes")', "yes"),
        ("Finish[answer=42]", "42"),
        ("Finish[]", ""),
        ("Finish[[1, 2]]", "[1, 2]"),
    ],
)
def test_parses_finish(tools, text, answer):
    parsed = parse_action(text, tools)
    assert parsed.tool == FINISH and parsed.answer == answer


def test_unknown_tool_is_returned_for_misuse_reporting(tools):
    parsed = parse_action("browse(query=answer)", tools)
    assert parsed.tool == "browse"


@pytest.mark.parametrize("text", ["", "I will search the person", "   ", "(unbalanced"])
def test_unparseable_raises(tools, text):
    with pytest.raises(ActionParseError):
        parse_action(text, tools)


def test_never_evaluates_code(tools, tmp_path):
    marker = tmp_path / "pwned"
    text = f"searchPerson(name=__import__('os').system('touch {marker}'))"
    parsed = parse_action(text, tools)
    assert not marker.exists()
    assert isinstance(parsed.arguments["name"], str)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_random_text_only_raises_parse_error(tools, text):
    try:
        parsed = parse_action(text, tools)
    except ActionParseError:
        return
    assert isinstance(parsed.arguments, dict)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["searchPerson", "getCoauthors", "Finish", "Search", "x"]),
    st.sampled_from(["[", "(", "(("]),
    st.text(max_size=80),
    st.sampled_from(["]", ")", ""]),
)
def test_call_shaped_noise_only_raises_parse_error(tools, name, opener, inner, closer):
    with contextlib.suppress(ActionParseError):
        parse_action(f"{name}{opener}{inner}{closer}", tools)


def test_bracket_text_with_parentheses_is_one_string():
    # Wikipedia titles are often qualified: Search[Paris (mythology)] is text, not a call
    from raleval.workflows.parsing import parse_arguments

    assert parse_arguments("Paris (mythology)", ["entity"]) == {"entity": "Paris (mythology)"}
    assert parse_arguments("Ada Lin (Qerrin Institute)", ["entity"]) == {
        "entity": "Ada Lin (Qerrin Institute)"
    }
    assert parse_arguments("'x', org='y'", ["a", "org"]) == {"a": "x", "org": "y"}


@pytest.mark.parametrize("literal", ["...", "b'x'", "1j", "{1, 2}", "[..., 1]"])
def test_non_json_literals_stay_text(literal):
    # a real SmolLM2 run wrote getCoauthors(person_id=...): Ellipsis reached the results file
    # and its serialiser raised, which lost the run's last batch of episodes
    import json

    from raleval.workflows.parsing import parse_arguments

    args = parse_arguments(f"person_id={literal}", ["person_id"])
    assert args == {"person_id": literal}
    json.dumps(args)
