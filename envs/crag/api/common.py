"""What CRAG's 38 endpoints share: parameter models, argument parsing and name search.

Names, parameters and result shapes follow CRAG's mock API: searches return names, getters
take the exact name / ticker / id and return ``None`` for an unknown key (never raise);
malformed arguments (a date that is not a date, a rank that is not a number) are misuse.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from raleval.environment import OutcomeKind, ToolMisuse, ToolResult, ToolSpec
from raleval.envs.crag.world import BILLBOARD_ATTRIBUTES

MAX_HITS = 10
CUTOFF = 60.0


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class QueryParams(Params):
    query: str = Field(min_length=1, description="a name (or words of it) to search for")


class TickerParams(Params):
    references: ClassVar[tuple[str, ...]] = ("ticker",)  # a ticker an earlier result gave
    ticker: str = Field(
        min_length=1, description="a ticker symbol, e.g. from finance_get_ticker_by_name"
    )


class YearParams(Params):
    year: int | str = Field(description="a year, e.g. 2021")


class IdParams(Params):
    references: ClassVar[tuple[str, ...]] = ("id",)
    id: int = Field(description="an id from a search result")


class ArtistParams(Params):
    artist_name: str = Field(min_length=1, description="the exact artist or band name")


class BandParams(Params):
    band_name: str = Field(min_length=1, description="the exact band name")


class SongParams(Params):
    song_name: str = Field(min_length=1, description="the exact song name")


class RankDateParams(Params):
    rank: int = Field(ge=1, le=100, description="a chart position, 1-100")
    date: str | None = Field(
        None, description="YYYY-MM-DD, the exact date of a chart; every chart if omitted"
    )


class BillboardAttrParams(Params):
    date: str = Field(description="YYYY-MM-DD")
    attribute: str = Field(description=", ".join(BILLBOARD_ATTRIBUTES))
    song_name: str = Field(min_length=1)


class GamesParams(Params):
    date: str = Field(description="YYYY-MM-DD, or YYYY-MM for a whole month")
    team_name: str | None = Field(None, description="only this team's games")


class GameIdsParams(Params):
    references: ClassVar[tuple[str, ...]] = ("game_ids",)
    game_ids: list[str] = Field(min_length=1, description="NBA game ids")


def parse_date(value: str, field: str = "date") -> date:
    try:
        return datetime.strptime(value.strip()[:10], "%Y-%m-%d").date()
    except ValueError as exc:
        raise ToolMisuse(f"{field} must be YYYY-MM-DD, got {value!r}") from exc


def parse_year(value: int | str) -> int:
    try:
        return int(str(value).strip())
    except ValueError as exc:
        raise ToolMisuse(f"year must be a number, got {value!r}") from exc


def search(index: tuple[Any, list[Any]], query: str) -> list[Any]:
    """The keys of the (up to ``MAX_HITS``) names that match ``query``."""
    return [index[1][i] for i in search_ids(index, query)]


def search_ids(index: tuple[Any, list[Any]], query: str) -> list[int]:
    """The index ids of the (up to ``MAX_HITS``) names that match ``query``, best first."""
    return [i for i, _ in index[0].search(query, MAX_HITS, CUTOFF)]


_UNREAD = object()


class RenderedResult(ToolResult):
    """A result whose observation was rendered straight from stored arrays (a price history:
    thousands of bars); its ``data`` is decoded from that text when something reads it (PAL's
    programs, the HTTP server), so an agent that only reads the text pays nothing for it."""

    def __init__(self, observation: str) -> None:
        super().__init__(observation, OutcomeKind.ok, data=_UNREAD)

    @property  # type: ignore[override]
    def data(self) -> Any:
        if self._data is _UNREAD:
            self._data = json.loads(self.observation)
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        self._data = value


def specs(funcs: list[tuple[Any, type[BaseModel], str, str, str]]) -> list[ToolSpec]:
    """Tool specs from (function, parameters, returns, matching, description) rows."""
    return [
        ToolSpec(f.__name__, desc, params, returns, f, matching)
        for f, params, returns, matching, desc in funcs
    ]
