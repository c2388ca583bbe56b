"""Golden and property tests of the ReAct action parser."""

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
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


# --- arguments by tool signature (issue 21) ---------------------------------------------------

REAL_ACTIONS = Path(__file__).parent / "data" / "react_actions_real.jsonl"


@pytest.fixture(scope="module")
def env_tools(scholar_env):
    from raleval import registry

    return {
        "scholar": scholar_env.tools,
        "wiki": registry.envs.get("wiki")(size="tiny").tools,
        "crag": registry.envs.get("crag")(size="tiny").tools,
    }


def _corpus() -> list[dict]:
    return [json.loads(line) for line in REAL_ACTIONS.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("row", _corpus(), ids=lambda r: r["text"][:40])
def test_real_model_actions(env_tools, row):
    # ReAct's published HotpotQA trajectories and a real SmolLM2 run's Action completions,
    # each labelled by hand with the call it means (or parse_error for prose)
    tools = env_tools[row["env"]]
    if "error" in row:
        with pytest.raises(ActionParseError):
            parse_action(row["text"], tools)
        return
    parsed = parse_action(row["text"], tools)
    assert (parsed.tool, parsed.arguments) == (row["tool"], row["arguments"])


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("Search[Paris, Texas]", {"entity": "Paris, Texas"}),
        ('Search["Paris, Texas"]', {"entity": "Paris, Texas"}),
        ("Search[entity=Paris, Texas]", {"entity": "Paris, Texas"}),
        ('Search[{"entity": "Paris, Texas"}]', {"entity": "Paris, Texas"}),
        ("Search[E=mc2]", {"entity": "E=mc2"}),
        ("Search[Tunnels & Trolls]", {"entity": "Tunnels & Trolls"}),
        ("Lookup[1, 2 and 3]", {"keyword": "1, 2 and 3"}),
    ],
)
def test_one_parameter_tool_takes_the_whole_bracket(env_tools, text, args):
    parsed = parse_action(text, env_tools["wiki"])
    assert parsed.arguments == args


def test_a_misspelled_keyword_reaches_the_tool_as_written(env_tools, scholar_env):
    """``getPersonPubs(preson_id="...")`` names a parameter the tool lacks: the call keeps the
    name, and the tool refuses it, rather than looking up the text ``preson_id="..."``."""
    parsed = parse_action('getPersonPubs(preson_id="cb44ce0e")', env_tools["scholar"])
    assert parsed.arguments == {"preson_id": "cb44ce0e"}
    result = scholar_env.call_sync(parsed.tool, parsed.arguments)
    assert (result.kind.value, result.cause) == ("misuse", "bad_arguments")
    crag = parse_action("movie_get_person_info(qeury='Tom Hanks')", env_tools["crag"])
    assert crag.arguments == {"qeury": "Tom Hanks"}


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        (
            'searchPerson({"name": "Ada Lin", "organization": "MIT"})',
            "searchPerson",
            {"name": "Ada Lin", "organization": "MIT"},
        ),
        (
            "searchPublication(Attention, for robots)",
            "searchPublication",
            {"publication_info": "Attention, for robots"},
        ),
        (
            'music_get_billboard_rank_date({"rank": 1, "date": "2024-01-06"})',
            "music_get_billboard_rank_date",
            {"rank": 1, "date": "2024-01-06"},
        ),
        (
            # unquoted values stay text; the tool's pydantic model turns "1" into 1
            "music_get_billboard_rank_date(rank=1, date=2024-01-06)",
            "music_get_billboard_rank_date",
            {"rank": "1", "date": "2024-01-06"},
        ),
        (
            'sports_nba_get_play_by_play_data_by_game_ids(["0022300001", "0022300002"])',
            "sports_nba_get_play_by_play_data_by_game_ids",
            {"game_ids": ["0022300001", "0022300002"]},
        ),
        (
            'sports_nba_get_play_by_play_data_by_game_ids(game_ids="0022300001")',
            "sports_nba_get_play_by_play_data_by_game_ids",
            {"game_ids": ["0022300001"]},
        ),
        (
            "searchPublication(Arthur's Magazine)",
            "searchPublication",
            {"publication_info": "Arthur's Magazine"},
        ),
        (
            "searchPerson(name=O'Brien, organization=MIT)",
            "searchPerson",
            {"name": "O'Brien", "organization": "MIT"},
        ),
        ("movie_get_movie_info_by_id(603)", "movie_get_movie_info_by_id", {"id": 603}),
        ("finance_get_info(ticker=META, Inc)", "finance_get_info", {"ticker": "META, Inc"}),
    ],
)
def test_arguments_follow_the_signature(env_tools, text, tool, args):
    tools = env_tools["crag"] + env_tools["scholar"]
    parsed = parse_action(text, tools)
    assert (parsed.tool, parsed.arguments) == (tool, args)


_title_chars = st.characters(
    codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp"), exclude_characters="[]`"
)


@settings(max_examples=300, deadline=None)
@given(st.text(_title_chars, min_size=1, max_size=60))
def test_bracket_content_reaches_a_one_parameter_tool_whole(env_tools, content):
    text = content.strip()
    assume(text and text[0] not in "\"'{" and text[-1] not in "\"',")
    assume(not text.lower().startswith(("entity=", "entity:", "entity ")))
    parsed = parse_action(f"Search[{text}]", env_tools["wiki"])
    assert parsed.arguments == {"entity": text}


_values = st.text(_title_chars, min_size=1, max_size=30).map(str.strip).filter(bool)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["name", "organization", "interest"]), _values, min_size=1))
def test_several_parameters_as_json_or_key_value_pairs(env_tools, args):
    tools = env_tools["scholar"]
    as_json = parse_action(f"searchPerson({json.dumps(args, ensure_ascii=False)})", tools)
    pairs = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    as_pairs = parse_action(f"searchPerson({pairs})", tools)
    assert as_json.arguments == args
    assert as_pairs.arguments == args


def test_react_step_searches_the_whole_bracket(tmp_path):
    # the acceptance line of issue 21, through the ReAct workflow on an offline wiki store
    import asyncio

    from raleval import registry
    from raleval.app.runner import run_episode
    from raleval.envs.wiki import OfflineBackend, WikiEnv, WikiStore
    from raleval.envs.wiki.loaders import build_store
    from raleval.model import Generation, ModelBase
    from raleval.records import AgentSpec, Task

    corpus = tmp_path / "pages.jsonl"
    pages = [
        {"title": "Paris", "text": "Paris is the capital of France."},
        {"title": "Paris, Texas", "text": "Paris is a city in Lamar County, Texas."},
    ]
    corpus.write_text("".join(json.dumps(p) + "\n" for p in pages), encoding="utf-8")
    build_store(tmp_path / "s.sqlite", [corpus], progress=False)
    env = WikiEnv(OfflineBackend(WikiStore(tmp_path / "s.sqlite")))

    class Replies(ModelBase):
        name = "replies"

        def __init__(self) -> None:
            self.texts = [
                "I should search Paris, Texas.\nAction 1: Search[Paris, Texas]",
                "It is in Lamar County.\nAction 2: Finish[Lamar County]",
            ]

        async def generate(self, request):
            return Generation(text=self.texts.pop(0))

    task = Task(id="t", domain="wiki", level="KS", family="x", question="Where?", answers=["Lamar"])
    traj = asyncio.run(
        run_episode(
            task,
            Replies(),
            env,
            registry.workflows.get("react").configure({"react_style": "single"}),
            AgentSpec(workflow="react", model="replies", env="wiki"),
        )
    )
    assert traj.termination_cause is None, traj.termination_cause
    first = traj.steps[0]
    assert (first.tool, first.arguments) == ("Search", {"entity": "Paris, Texas"})
    assert first.observation == "Paris is a city in Lamar County, Texas."
