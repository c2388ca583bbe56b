"""`raleval serve`: a real uvicorn server on 127.0.0.1 serving the CRAG env (and wiki), CRAG's
routes, the generic route, token auth, schema fuzzing with no 500s, and the remote-env client
driving a full run."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raleval.app.serve import create_app
from raleval.envs.crag import make_crag_env
from raleval.envs.crag.http import crag_route

from .conftest import run_config


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, app) -> None:
        import uvicorn

        self.port = _free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def env():
    return make_crag_env("tiny")


@pytest.fixture(scope="module")
def server(env):
    s = Server(create_app(env))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def secured(env):
    s = Server(create_app(env, token="s3cret"))
    yield s
    s.stop()


def _example_args(env) -> dict[str, dict]:
    w = env.world
    company = w.graph.nodes[w.core("company")[0]]["name"]
    ticker = w.core("company")[0].split(":")[1]
    movie = w.movies[1]
    artist = w.graph.nodes[w.core("artist")[0]]["name"]
    song = w.artists[artist]["works"][0]
    game = w.nba[0]
    return {
        "open_search_entity_by_name": {"query": w.graph.nodes[w.core("open")[0]]["name"]},
        "open_get_entity": {"query": w.graph.nodes[w.core("open")[0]]["name"]},
        "movie_get_person_info": {"query": movie["cast"][0]["name"]},
        "movie_get_movie_info": {"query": movie["title"]},
        "movie_get_year_info": {"year": int(movie["release_date"][:4])},
        "movie_get_movie_info_by_id": {"id": movie["id"]},
        "movie_get_person_info_by_id": {"id": movie["cast"][0]["id"]},
        "finance_get_company_name": {"query": company},
        "finance_get_ticker_by_name": {"query": company},
        **{
            n: {"ticker": ticker}
            for n in (
                "finance_get_price_history",
                "finance_get_detailed_price_history",
                "finance_get_dividends_history",
                "finance_get_market_capitalization",
                "finance_get_eps",
                "finance_get_pe_ratio",
                "finance_get_info",
            )
        },
        "music_search_artist_entity_by_name": {"query": artist},
        "music_search_song_entity_by_name": {"query": song},
        "music_get_billboard_rank_date": {"rank": 1, "date": "2024-01-06"},
        "music_get_billboard_attributes": {
            "date": "2024-01-06",
            "attribute": "rank",
            "song_name": w.charts[min(w.charts)][0]["song"],
        },
        "music_grammy_get_best_artist_by_year": {"year": 2010},
        "music_grammy_get_award_count_by_artist": {"artist_name": artist},
        "music_grammy_get_award_count_by_song": {"song_name": song},
        "music_grammy_get_best_song_by_year": {"year": 2011},
        "music_grammy_get_award_date_by_artist": {"artist_name": artist},
        "music_grammy_get_best_album_by_year": {"year": 2012},
        "music_grammy_get_all_awarded_artists": {},
        "music_get_artist_birth_place": {"artist_name": artist},
        "music_get_artist_birth_date": {"artist_name": artist},
        "music_get_members": {"band_name": artist},
        "music_get_lifespan": {"artist_name": artist},
        "music_get_song_author": {"song_name": song},
        "music_get_song_release_country": {"song_name": song},
        "music_get_song_release_date": {"song_name": song},
        "music_get_artist_all_works": {"artist_name": artist},
        "sports_soccer_get_games_on_date": {"date": w.soccer[0]["date"]},
        "sports_nba_get_games_on_date": {
            "date": game["game_date"],
            "team_name": game["team_name_home"],
        },
        "sports_nba_get_play_by_play_data_by_game_ids": {"game_ids": [game["game_id"]]},
    }


def test_every_crag_route_matches_the_local_env(env, server):
    examples = _example_args(env)
    assert set(examples) == {t.name for t in env.tools}
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for tool in env.tools:
            args = examples[tool.name]
            expected = env.call_sync(tool.name, args).data
            body = {"query": next(iter(args.values()))} if len(tool.param_names) == 1 else args
            r = client.post(crag_route(tool.name), json=body)
            assert r.status_code == 200, (tool.name, r.text)
            assert r.json() == {"result": json.loads(json.dumps(expected))}, tool.name
            g = client.post(f"/tools/{tool.name}", json=args)
            assert g.status_code == 200 and g.json()["kind"] == "ok"
            assert g.json()["result"] == r.json()["result"]


def _as_crags_client_sends(tool: str, args: dict) -> tuple[str, dict | None]:
    """Path and JSON body exactly as CRAG's Python client (mock_api/apiwrapper/pycragapi.py)
    sends them, written out here rather than derived from crag_route: the domain is the first
    segment, only sports nests a league; one-argument calls send ``{"query": value}``;
    billboard and sports calls send their named fields (sports always with ``team_name``),
    play-by-play sends ``{"game_ids": [...]}``; grammy_get_all_awarded_artists sends no body."""
    domain, rest = tool.split("_", 1)
    if domain == "sports":
        league, rest = rest.split("_", 1)
        path = f"/sports/{league}/{rest}"
    else:
        path = f"/{domain}/{rest}"
    if tool == "music_grammy_get_all_awarded_artists":
        return path, None
    if tool.startswith("sports_") and "game_ids" not in args:
        return path, {"team_name": args.get("team_name"), "date": args["date"]}
    if tool == "sports_nba_get_play_by_play_data_by_game_ids":
        return path, {"game_ids": args["game_ids"]}
    if len(args) == 1:
        return path, {"query": next(iter(args.values()))}
    return path, dict(args)


def test_crags_own_client_requests_get_the_local_answers(env, server):
    examples = _example_args(env)
    answered = 0
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for tool in env.tools:
            args = examples[tool.name]
            path, body = _as_crags_client_sends(tool.name, args)
            headers = {"accept": "application/json"}
            r = (
                client.post(path, json=body, headers=headers)
                if body
                else client.post(path, headers=headers)
            )
            assert r.status_code == 200, (tool.name, path, r.text)
            expected = env.call_sync(tool.name, args).data
            assert r.json() == {"result": json.loads(json.dumps(expected))}, tool.name
            answered += 1
    assert answered == 38


def test_crags_client_gets_crags_real_result_shapes(env, server):
    # the catalog's example calls (each finds data), sent as CRAG's client sends them; every
    # result over the wire has the shape of CRAG's real output (tests/data/crag_real_shapes.json)
    from raleval.envs.crag.shapes import derive, differences

    real = json.loads((Path(__file__).parent / "data" / "crag_real_shapes.json").read_text())
    matching = []
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for name, args in env.example_calls().items():
            path, body = _as_crags_client_sends(name, args)
            r = client.post(path, json=body) if body else client.post(path)
            assert r.status_code == 200, (name, r.text)
            result = r.json()["result"]
            assert result not in (None, [], {}, [None, None]), name
            assert differences(derive(result), real[name]["shape"]) == [], name
            matching.append(name)
    assert len(matching) == 38


def test_crag_route_names_follow_crag():
    assert crag_route("finance_get_price_history") == "/finance/get_price_history"
    assert (
        crag_route("music_grammy_get_best_artist_by_year")
        == "/music/grammy_get_best_artist_by_year"
    )
    assert crag_route("sports_nba_get_games_on_date") == "/sports/nba/get_games_on_date"
    assert crag_route("open_get_entity") == "/open/get_entity"


def test_generic_route_errors(server):
    with httpx.Client(base_url=server.url) as client:
        assert client.post("/tools/no_such_tool", json={}).status_code == 404
        bad = client.post("/tools/sports_nba_get_games_on_date", json={"date": "soon"})
        assert bad.status_code == 400 and "YYYY-MM-DD" in bad.json()["detail"]
        assert client.post("/tools/finance_get_eps", content=b"not json").status_code == 400
        assert client.post("/tools/finance_get_eps", json=[1, 2]).status_code == 400
        assert client.post("/finance/get_eps", json={"wrong": 1}).status_code == 422
        tools = client.get("/tools").json()
        assert len(tools) == 38 and tools[0]["parameters"]["type"] == "object"


def test_token_is_enforced_on_every_route(env, secured):
    with httpx.Client(base_url=secured.url) as client:
        for method, path, body in [
            ("GET", "/tools", None),
            ("POST", "/tools/finance_get_eps", {"ticker": "X"}),
            ("POST", "/finance/get_eps", {"query": "X"}),
        ]:
            assert client.request(method, path, json=body).status_code == 401
            wrong = {"Authorization": "Bearer nope"}
            assert client.request(method, path, json=body, headers=wrong).status_code == 401
            ok = {"Authorization": "Bearer s3cret"}
            assert client.request(method, path, json=body, headers=ok).status_code == 200


def test_non_loopback_bind_needs_a_token(env):
    from raleval.app.serve import serve

    with pytest.raises(ValueError, match="--token"):
        serve(env, host="0.0.0.0", port=_free_port())


def from_schema(schema: dict) -> st.SearchStrategy:
    """Values valid for the (flat) JSON schemas raleval's tools declare."""
    if "anyOf" in schema:
        return st.one_of([from_schema(s) for s in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: from_schema(v) for k, v in props.items() if k in required},
            optional={k: from_schema(v) for k, v in props.items() if k not in required},
        )
    simple = {
        "string": st.text(max_size=30) | st.dates().map(str),
        "integer": st.integers(-(10**12), 10**12),
        "number": st.floats(allow_nan=False, allow_infinity=False),
        "boolean": st.booleans(),
        "null": st.none(),
    }
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {})), max_size=4)
    return simple.get(kind, st.none() | st.text(max_size=10))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_requests_never_get_a_500(env, server, data):
    schema = httpx.get(f"{server.url}/openapi.json").json()
    paths = sorted(p for p, ops in schema["paths"].items() if "post" in ops)
    path = data.draw(st.sampled_from(paths))
    ref = schema["paths"][path]["post"].get("requestBody", {})
    body_schema = ref.get("content", {}).get("application/json", {}).get("schema", {})
    if "$ref" in body_schema:
        body_schema = schema["components"]["schemas"][body_schema["$ref"].split("/")[-1]]
    junk = st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=20),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=8), children, max_size=3)
        ),
        max_leaves=6,
    )
    if "{name}" in path:
        path = path.replace(
            "{name}", data.draw(st.sampled_from([t.name for t in env.tools] + ["nope"]))
        )
        body = data.draw(junk)
    else:
        body = data.draw(from_schema(body_schema) | junk)
    r = httpx.post(f"{server.url}{path}", json=body, timeout=30)
    assert r.status_code < 500, (path, body, r.text)


def test_remote_env_runs_the_oracle_against_a_served_env(tmp_path, env, server):
    from raleval import registry
    from raleval.store import write_tasks

    tasks = registry.task_families.get("crag-simple").generate(env, 6, 0)
    # the served env answers as of its default date; keep tasks without a query_time
    tasks = [
        t.model_copy(update={"query_time": None}) for t in tasks if t.tags.dynamism == "static"
    ]
    path = tmp_path / "tasks.jsonl"
    write_tasks(path, tasks)
    for workflow in ("react", "function_calling"):
        summary, results = run_config(
            tmp_path / workflow,
            env="remote",
            env_options={"url": server.url},
            workflow=workflow,
            tasks=str(path),
        )
        assert summary.ran == len(tasks) and summary.mean_f1 == 1.0
        assert {r.error_type.value for r in results} == {"EM"}


def test_served_wiki_keeps_a_session_per_header():
    from raleval.envs.wiki import make_wiki_env

    wiki = make_wiki_env(size="tiny")
    s = Server(create_app(wiki))
    try:
        title = wiki.backend.store.titles()[0]
        with httpx.Client(base_url=s.url) as client:
            h = {"X-Raleval-Session": "episode-1"}
            client.post("/tools/Search", json={"entity": title}, headers=h)
            hit = client.post("/tools/Lookup", json={"keyword": "Contact"}, headers=h).json()
            assert hit["observation"].startswith("(Result 1 / 1) Contact:")
            other = client.post(
                "/tools/Lookup",
                json={"keyword": "Contact"},
                headers={"X-Raleval-Session": "episode-2"},
            )
            assert other.status_code == 400
    finally:
        s.stop()
