"""Search / Lookup over any page backend, with ReAct's and R-Eval's observation contracts.

Per episode the agent has a current page and a Lookup cursor, so every episode gets its own
:class:`WikiSession`. ``Finish[answer]`` is not a tool here: every workflow ends an episode
with its own Finish action.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from raleval.environment import Environment, ToolResult, ToolSpec
from raleval.envs.wiki.page import Page, clean, title_key, truncate
from raleval.records import OutcomeKind

NO_MORE_RESULTS = "No more results."
NO_PAGE_AFTER_MISS = (
    "The last page Searched was not found, so you cannot Lookup a keyword in it. "
    "Please try one of the similar pages given."
)
NO_PAGE_YET = (
    "No page has been searched yet, so there is nothing to Lookup. Use Search[entity] first."
)


class Backend(Protocol):
    """Where pages come from: ``fetch`` a title, list ``similar`` titles (sync or async)."""

    def fetch(self, title: str) -> Any: ...

    def similar(self, query: str, limit: int) -> Any: ...


@dataclass(frozen=True)
class WikiOptions:
    abstract: str = "paragraph"  # or "sentences": the first ``sentences`` sentences
    sentences: int = 5
    lookup_unit: str = "sentence"  # or "paragraph"
    max_obs_tokens: int | None = 400
    max_similar: int = 5
    # "react": ReAct's wikienv strings (``Could not find X. Similar: [...].``); "reval": the
    # LangChain docstore strings R-Eval's agent saw (``Could not find [X]. Similar: [...]``)
    observations: str = "react"

    def __post_init__(self) -> None:
        if self.abstract not in ("paragraph", "sentences"):
            raise ValueError(f"abstract must be 'paragraph' or 'sentences', not {self.abstract!r}")
        if self.observations not in ("react", "reval"):
            raise ValueError(f"observations must be 'react' or 'reval', not {self.observations!r}")
        if self.lookup_unit not in ("sentence", "paragraph"):
            raise ValueError(
                f"lookup_unit must be 'sentence' or 'paragraph', not {self.lookup_unit!r}"
            )


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class SearchParams(_Params):
    entity: str = Field(min_length=1, description="the title of the page to open")


class LookupParams(_Params):
    keyword: str = Field(min_length=1, description="a word or phrase to find in the current page")


SEARCH_DESCRIPTION = (
    "searches the exact entity on Wikipedia and returns the first paragraph if it exists. "
    "If not, it will return some similar entities to search."
)
LOOKUP_DESCRIPTION = (
    "returns the next sentence containing keyword in the last passage successfully found by Search."
)


class WikiSession(Environment):
    """One episode's view of the wiki: the current page and the Lookup cursor."""

    name = "wiki"

    def __init__(self, backend: Backend, options: WikiOptions, is_async: bool) -> None:
        self.backend = backend
        self.options = options
        self.page: Page | None = None
        self.last_search_missed = False
        self._keyword: str | None = None
        self._matches: list[str] = []
        self._cursor = 0
        if is_async:

            async def search(entity: str) -> str:
                page = await backend.fetch(entity)
                similar = (
                    [] if _found(page) else await backend.similar(entity, options.max_similar + 1)
                )
                return self._searched(entity, page, similar)

        else:

            def search(entity: str) -> str:
                page = backend.fetch(entity)
                similar = [] if _found(page) else backend.similar(entity, options.max_similar + 1)
                return self._searched(entity, page, similar)

        super().__init__(
            [
                ToolSpec(
                    "Search", SEARCH_DESCRIPTION, SearchParams, "str", search, "fuzzy",
                    text_style="bracket",
                ),
                ToolSpec(
                    "Lookup", LOOKUP_DESCRIPTION, LookupParams, "str", self.lookup, "exact",
                    text_style="bracket",
                ),
            ]
        )  # fmt: skip

    def _observe(self, text: str) -> str:
        return truncate(clean(text), self.options.max_obs_tokens)

    def _searched(self, entity: str, page: Page | None, similar: list[str]) -> str:
        self._keyword, self._matches, self._cursor = None, [], 0
        if not _found(page):
            self.page, self.last_search_missed = None, True
            # a disambiguation page lists its meanings, never itself
            own = title_key(page.title) if page is not None else None
            similar = [t for t in similar if title_key(t) != own][: self.options.max_similar]
            if self.options.observations == "reval":
                return self._observe(f"Could not find [{clean(entity)}]. Similar: {similar!r}")
            return self._observe(f"Could not find {clean(entity)}. Similar: {similar!r}.")
        assert page is not None
        self.page, self.last_search_missed = page, False
        abstract = page.abstract(self.options.abstract, self.options.sentences)
        if not abstract:
            return self._observe(f"The page {page.title} exists but has no text.")
        return self._observe(abstract)

    def lookup(self, keyword: str) -> str | ToolResult:
        if self.page is None:
            message = NO_PAGE_AFTER_MISS if self.last_search_missed else NO_PAGE_YET
            return ToolResult(message, OutcomeKind.misuse, "no_current_page")
        needle = keyword.casefold()
        if needle != self._keyword:
            self._keyword = needle
            passages = self.page.passages(self.options.lookup_unit)
            self._matches = [p for p in passages if needle in p.casefold()]
            self._cursor = 0
        if self._cursor >= len(self._matches):
            return NO_MORE_RESULTS
        self._cursor += 1
        passage = self._matches[self._cursor - 1]
        return self._observe(f"(Result {self._cursor} / {len(self._matches)}) {passage}")


def _found(page: Page | None) -> bool:
    """A disambiguation page counts as not found: the agent must pick one of the meanings."""
    return page is not None and not page.is_disambiguation


class WikiEnv(Environment):
    """The Wikipedia environment: a page backend plus observation options."""

    name = "wiki"
    description = "Wikipedia: Search[entity], Lookup[keyword], Finish[answer]"

    def __init__(self, backend: Backend, options: WikiOptions | None = None) -> None:
        import inspect

        self.backend = backend
        self.options = options or WikiOptions()
        self._is_async = inspect.iscoroutinefunction(backend.fetch)
        super().__init__(self.session().tools)

    def session(self, task: Any = None) -> WikiSession:
        return WikiSession(self.backend, self.options, self._is_async)

    def example_calls(self) -> dict[str, dict[str, Any]]:
        """Search for a page the store has. Lookup has no standalone example: it reads the
        page an earlier Search opened in the same episode; a live backend has none either
        (no page is known without asking the network)."""
        store = getattr(self.backend, "store", None)
        titles = store.titles() if store is not None else []
        return {"Search": {"entity": titles[0]}} if titles else {}

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        # A call outside an episode (no session) gets a fresh, empty session.
        return await self.session().call(name, arguments)

    def call_sync(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return self.session().call_sync(name, arguments)
