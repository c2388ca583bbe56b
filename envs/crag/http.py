"""CRAG's mock-API routes, so CRAG's own client (``pycragapi.py``) works against
``raleval serve --env crag`` unchanged: ``finance_get_price_history`` is
``POST /finance/get_price_history`` with ``{"query": ...}``; tools with several parameters take
them by name; sports nests a league (``/sports/nba/...``), grammy does not
(``/music/grammy_get_...``)."""

from __future__ import annotations

from raleval.environment import HttpRoute, ToolSpec

_SUBGROUPS = ("nba", "soccer")  # CRAG nests these; grammy_* stays one segment


def crag_route(tool_name: str) -> str:
    """The path CRAG's client posts to: ``music_grammy_get_best_artist_by_year`` ->
    ``/music/grammy_get_best_artist_by_year``, ``sports_nba_get_games_on_date`` ->
    ``/sports/nba/get_games_on_date``."""
    domain, _, rest = tool_name.partition("_")
    sub, _, tail = rest.partition("_")
    if sub in _SUBGROUPS:
        return f"/{domain}/{sub}/{tail}"
    return f"/{domain}/{rest}"


def crag_routes(tools: list[ToolSpec]) -> list[HttpRoute]:
    """One native route per CRAG tool."""
    routes = []
    for spec in tools:
        n = len(spec.params.model_fields)
        body = "none" if n == 0 else "query" if n == 1 else "fields"
        routes.append(HttpRoute(crag_route(spec.name), spec.name, body))
    return routes
