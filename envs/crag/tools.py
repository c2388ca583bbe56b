"""CRAG's 38 mock-API endpoints over a :class:`CragWorld`, answered as of a query date.

Names, parameters and result shapes follow CRAG's mock API (tests/data/crag_real_shapes.json
holds the shapes of its real outputs): searches return names, getters take the exact name /
ticker / id and return ``None`` for an unknown key (never raise); malformed arguments (a date
that is not a date, a rank that is not a number) are misuse. Each domain's endpoints live in
:mod:`raleval.envs.crag.api`.
"""

from __future__ import annotations

from datetime import date

from raleval.environment import ToolSpec
from raleval.envs.crag.api import finance, movie, music, open, sports
from raleval.envs.crag.api.common import (  # noqa: F401  (parameter models, re-exported)
    ArtistParams,
    BandParams,
    BillboardAttrParams,
    GameIdsParams,
    GamesParams,
    IdParams,
    QueryParams,
    RankDateParams,
    SongParams,
    TickerParams,
    YearParams,
)
from raleval.envs.crag.world import CragWorld

DOMAINS = (open, movie, finance, music, sports)


def build_tools(w: CragWorld, as_of: date) -> list[ToolSpec]:
    """Declare all 38 endpoints over ``w``; facts after ``as_of`` do not exist yet."""
    return [spec for domain in DOMAINS for spec in domain.tools(w, as_of)]
