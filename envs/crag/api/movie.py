"""Movie domain: people, movies and Oscar years."""

from __future__ import annotations

import random
from datetime import date
from typing import Any

from raleval.environment import ToolSpec, render_observation
from raleval.envs.crag.api.common import (
    IdParams,
    QueryParams,
    RenderedResult,
    YearParams,
    parse_year,
    search,
    specs,
)
from raleval.envs.crag.world import CragWorld


def oscar(a: dict[str, Any]) -> dict[str, Any]:
    """An Oscar nomination as CRAG has it (the first ceremony was held in 1929)."""
    return {
        "year_ceremony": a["year_ceremony"],
        "ceremony": a["year_ceremony"] - 1928,
        "category": a["category"],
        "name": a["name"],
        "film": a["film"],
        "winner": a["winner"],
    }


def gender(person_id: int) -> int:
    """TMDB's gender code of a person (1 female, 2 male), stable per id."""
    return random.Random(f"gender/{person_id}").choice([1, 2])


def tools(w: CragWorld, as_of: date) -> list[ToolSpec]:
    """This domain's endpoints over ``w`` as of ``as_of``."""

    def oscars(awards: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [oscar(a) for a in awards if a["year_ceremony"] <= as_of.year]

    def person_view(pid: int) -> dict[str, Any]:
        p = w.people[pid]
        visible = [m for m in p["acted_movies"] if w.movies[m]["release_date"] <= as_of.isoformat()]
        directed = [
            m for m in p["directed_movies"] if w.movies[m]["release_date"] <= as_of.isoformat()
        ]
        return {
            "name": p["name"],
            "id": pid,
            "acted_movies": visible,
            "directed_movies": directed,
            "birthday": p["birthday"],
            "oscar_awards": oscars(p["oscar_awards"]),
        }

    def movie_view(mid: int) -> dict[str, Any] | None:
        m = w.movies[mid]
        if m["release_date"] > as_of.isoformat():
            return None  # not released yet at query time
        rating = [v for since, v in m["rating_history"] if since <= as_of][-1]
        out = {
            k: m[k]
            for k in (
                "title",
                "id",
                "release_date",
                "original_title",
                "original_language",
                "budget",
                "revenue",
            )
        }
        out.update(
            rating=rating,
            genres=m["genres"],
            oscar_awards=oscars(m["oscar_awards"]),
            cast=[{**c, "gender": gender(c["id"])} for c in m["cast"]],
            crew=m["crew"],
            length=m["length"],
        )
        return out

    def movie_get_person_info(query: str) -> list[dict[str, Any]]:
        return [person_view(pid) for pid in search(w.person_index, query)]

    def movie_get_movie_info(query: str) -> list[dict[str, Any]]:
        views = (movie_view(mid) for mid in search(w.movie_index, query))
        return [v for v in views if v is not None]

    def movie_get_year_info(year: int | str) -> RenderedResult | None:
        y = parse_year(year)
        if y > as_of.year:
            return None
        # a large world's year has thousands of movies: their ids are kept as text
        movies = w.movie_years.movie_list(y, as_of)
        awards = w.oscars.get(y, [])
        if not movies and not awards:
            return None
        return RenderedResult(
            f'{{"movie_list": [{movies}], "oscar_awards": {render_observation(oscars(awards))}}}'
        )

    def movie_get_movie_info_by_id(id: int) -> dict[str, Any] | None:
        return movie_view(id) if id in w.movies else None

    def movie_get_person_info_by_id(id: int) -> dict[str, Any] | None:
        return person_view(id) if id in w.people else None

    funcs = [
        (
            movie_get_person_info,
            QueryParams,
            "list[dict]",
            "fuzzy",
            "people matching the name (up to 10): name, id, acted_movies, "
            "directed_movies, birthday, oscar_awards.",
        ),
        (
            movie_get_movie_info,
            QueryParams,
            "list[dict]",
            "fuzzy",
            "movies matching the title (up to 10): title, id, release_date, budget, "
            "revenue, rating, genres, cast, crew, ...",
        ),
        (
            movie_get_year_info,
            YearParams,
            "dict | None",
            "exact",
            "movie_list (ids) and oscar_awards of a year.",
        ),
        (movie_get_movie_info_by_id, IdParams, "dict | None", "exact", "a movie by id."),
        (movie_get_person_info_by_id, IdParams, "dict | None", "exact", "a person by id."),
    ]
    return specs(funcs)
