"""entity search and the entity's Wikipedia record."""

from __future__ import annotations

from datetime import date
from typing import Any

from raleval.environment import ToolSpec
from raleval.envs.crag.api.common import (
    QueryParams,
    search,
    specs,
)
from raleval.envs.crag.world import CragWorld


def mediawiki(title: str, text: str, infobox: dict[str, str]) -> str:
    """A page's wikitext: the infobox template, then the lead with the title in bold."""
    kind = infobox.get("type", "entity")
    fields = "".join(f"| {k} = {v}\n" for k, v in infobox.items() if k != "type")
    lead = text.replace(title, f"'''{title}'''", 1)
    return f"{{{{Infobox {kind}\n| name = {title}\n{fields}}}}}\n{lead}\n"


def tools(w: CragWorld, as_of: date) -> list[ToolSpec]:
    """This domain's endpoints over ``w`` as of ``as_of``."""

    def open_search_entity_by_name(query: str) -> list[str]:
        return search(w.open_index, query)

    def open_get_entity(query: str) -> dict[str, Any] | None:
        name = w.open_key.get(query.casefold())
        if name is None:
            return None
        e = w.open_entities[name]
        # CRAG: the infobox's fields as the wikitext has them (strings) and the page's wikitext
        infobox = {k: str(v) for k, v in e["summary_structured"].items()}
        return {
            "summary_text": e["summary_text"],
            "summary_structured": infobox,
            "raw_mediawiki": mediawiki(name, e["summary_text"], infobox),
        }

    funcs = [
        (
            open_search_entity_by_name,
            QueryParams,
            "list[str]",
            "fuzzy",
            "search entity names (up to 10).",
        ),
        (
            open_get_entity,
            QueryParams,
            "dict | None",
            "exact",
            "summary_text, summary_structured (infobox fields) and raw_mediawiki "
            "of an entity (exact name).",
        ),
    ]
    return specs(funcs)
