"""Wikipedia environment: ReAct's Search / Lookup / Finish over live Wikipedia, an offline
SQLite store built from corpus files, or the encyclopedia of a generated world."""

from __future__ import annotations

from pathlib import Path

from raleval.envs.wiki.page import Page
from raleval.envs.wiki.store import WikiStore
from raleval.envs.wiki.tools import WikiEnv, WikiOptions, WikiSession
from raleval.registry import register_env


class OfflineBackend:
    """Pages from a :class:`WikiStore`."""

    def __init__(self, store: WikiStore) -> None:
        self.store = store

    def fetch(self, title: str) -> Page | None:
        return self.store.get(title)

    def similar(self, query: str, limit: int) -> list[str]:
        return self.store.similar(query, limit)


def _optional_int(value: object) -> int | None:
    if value in (None, "", "none", "None", 0, "0"):
        return None
    return int(value)  # type: ignore[arg-type]


@register_env("wiki", default_tasks="wiki")
def make_wiki_env(
    backend: str = "generated",
    path: str | None = None,
    world: str = "scholar",
    size: str = "small",
    seed: int = 0,
    language: str = "en",
    http_cache: str | None = None,
    requests_per_second: float = 5.0,
    abstract: str = "paragraph",
    sentences: int = 5,
    lookup_unit: str = "sentence",
    max_obs_tokens: object = 400,
    observations: str = "react",
) -> WikiEnv:
    """Wikipedia: ``-E backend=generated`` (pages of the generated scholar world, ``size``,
    ``seed``), ``-E backend=offline -E path=store.sqlite`` (built with ``raleval wiki build``)
    or ``-E backend=live`` (MediaWiki API, responses cached in ``http_cache``)."""
    options = WikiOptions(
        abstract=abstract,
        sentences=int(sentences),
        lookup_unit=lookup_unit,
        max_obs_tokens=_optional_int(max_obs_tokens),
        observations=observations,
    )
    if backend == "live":
        from raleval.cache import cache_dir
        from raleval.envs.wiki.live import LiveBackend

        cache = Path(http_cache) if http_cache else cache_dir() / "wiki" / "http-cache.sqlite"
        env = WikiEnv(LiveBackend(language, cache, float(requests_per_second)), options)
        env.world_options = {"backend": "live", "language": language}
        return env
    if backend == "offline":
        if not path:
            raise ValueError("the offline wiki backend needs -E path=<store.sqlite>")
        env = WikiEnv(OfflineBackend(WikiStore(Path(path))), options)
        env.world_options = {"backend": "offline", "path": Path(path).name}
        return env
    if backend == "generated":
        from raleval.envs.wiki.generated import generated_store

        env = WikiEnv(OfflineBackend(generated_store(world, size, int(seed))), options)
        env.world_options = {"backend": "generated", "world": world, "size": size}
        env.world_options["seed"] = int(seed)
        return env
    raise ValueError(f"unknown wiki backend {backend!r}; choose generated, offline or live")


from raleval.envs.wiki import families  # noqa: E402  (registers the task families)

__all__ = [
    "OfflineBackend",
    "Page",
    "WikiEnv",
    "WikiOptions",
    "WikiSession",
    "WikiStore",
    "families",
]
