"""Live Wikipedia through wikipedia-api's async client.

The HTTP stack, outermost first: hishel's cache transport (a repeated run is free and sees the
same pages), a per-host rate limit, then the network (or any transport a test passes, e.g. one
that replays recorded responses). wikipedia-api retries 429 / 5xx / timeouts with tenacity and
honours Retry-After; what still fails becomes a tool fault, never "page not found".
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx

from raleval.environment import ToolFault
from raleval.envs.wiki.page import Page

USER_AGENT = "raleval/0.1 (LLM agent evaluation; https://github.com/raleval/raleval)"


class RateLimitedTransport(httpx.AsyncBaseTransport):
    """At most ``per_second`` requests per host (requests are spaced, not dropped)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, per_second: float) -> None:
        self.inner = inner
        self.interval = 1.0 / per_second if per_second > 0 else 0.0
        self._next_slot: dict[str, float] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.interval:
            host = request.url.host
            now = time.monotonic()
            # No await between reading and writing the slot: atomic within the event loop.
            slot = max(now, self._next_slot.get(host, 0.0))
            self._next_slot[host] = slot + self.interval
            if slot > now:
                await asyncio.sleep(slot - now)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class LiveBackend:
    """Pages and similar titles from the MediaWiki API of ``language``.wikipedia.org."""

    def __init__(
        self,
        language: str = "en",
        cache_path: Path | None = None,
        requests_per_second: float = 5.0,
        timeout_s: float = 10.0,
        max_retries: int = 3,
        retry_wait_s: float = 1.0,
        transport: httpx.AsyncBaseTransport | None = None,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.language = language
        self.cache_path = cache_path
        self.requests_per_second = requests_per_second
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.retry_wait_s = retry_wait_s
        self._transport = transport
        self.user_agent = user_agent
        # httpx clients belong to one event loop; a run may create several loops over time.
        self._clients: dict[int, Any] = {}

    def _client(self) -> Any:
        loop = id(asyncio.get_running_loop())
        if loop not in self._clients:
            import wikipediaapi

            inner = self._transport or httpx.AsyncHTTPTransport()
            transport: httpx.AsyncBaseTransport = RateLimitedTransport(
                inner, self.requests_per_second
            )
            if self.cache_path is not None:
                from hishel import AsyncSqliteStorage
                from hishel.httpx import AsyncCacheTransport

                Path(self.cache_path).parent.mkdir(parents=True, exist_ok=True)
                storage = AsyncSqliteStorage(database_path=str(self.cache_path))
                transport = AsyncCacheTransport(transport, storage=storage)
            self._clients[loop] = wikipediaapi.AsyncWikipedia(
                user_agent=self.user_agent,
                language=self.language,
                transport=transport,
                timeout=self.timeout_s,
                max_retries=self.max_retries,
                retry_wait=self.retry_wait_s,
            )
        return self._clients[loop]

    async def fetch(self, title: str) -> Page | None:
        wiki = self._client()
        page = wiki.page(title)
        with _as_tool_fault():
            text = await page.text
            exists = await page.exists()
        if not exists:
            return None
        resolved = page._attributes.get("title") or title
        return Page(resolved, _sections_as_paragraphs(text))

    async def similar(self, query: str, limit: int) -> list[str]:
        wiki = self._client()
        with _as_tool_fault():
            results = await wiki.search(query, limit=limit)
        return [p.title for p in results.pages.values()][:limit]


def _sections_as_paragraphs(text: str) -> str:
    # wikipedia-api renders section headings on their own line; make each its own paragraph so
    # a heading never glues onto the next paragraph's first sentence.
    return "\n\n".join(line for line in text.splitlines() if line.strip())


class _as_tool_fault:
    """Turn wikipedia-api's transport exceptions into classified tool faults."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None:
            return False
        import wikipediaapi

        causes = [
            (wikipediaapi.WikiRateLimitError, "rate_limited"),
            (wikipediaapi.WikiHttpTimeoutError, "timeout"),
            (wikipediaapi.WikiConnectionError, "connection_error"),
            (wikipediaapi.WikiInvalidJsonError, "malformed_payload"),
            (wikipediaapi.WikiHttpError, "http_error"),
            (httpx.HTTPError, "http_error"),
        ]
        for cls, cause in causes:
            if isinstance(exc, cls):
                raise ToolFault(f"Wikipedia is unreachable ({cause}): {exc}", cause) from exc
        return False
