"""Is an OpenAI-style endpoint there for a run: one ``GET <base>/models`` before anything
starts (``raleval run``'s preflight). Standard library only, so the check costs no import of
the HTTP client the run itself uses (aiohttp: about a second of CPU on a loaded machine)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any


def spec_endpoint(
    provider: str, name: str, options: Mapping[str, Any]
) -> tuple[str, str, str | None] | None:
    """(base URL, model, API key) an ``openai`` or ``openai-compatible`` spec calls; None for
    another provider or a malformed spec (the provider says what is wrong with it)."""
    key = options.get("api_key") or os.environ.get("OPENAI_API_KEY")
    if provider == "openai":
        return os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1", name, key
    if provider == "openai-compatible":
        model, sep, base_url = name.partition("@")
        if sep and base_url.startswith(("http://", "https://")):
            return base_url, model, key
    return None


def endpoint_problem(
    base_url: str, model: str, api_key: str | None = None, timeout_s: float = 5.0
) -> str | None:
    """Why a run against ``base_url`` cannot start: unreachable, the key refused (401/403),
    or the server lists models and not ``model``; None when it may run. A server without the
    route (404), an error status, or one model listed (llama.cpp answers any name) is not
    refused here: the run meets the server's own errors, retried and recorded."""
    url = base_url.rstrip("/") + "/models"
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            body = reply.read(4_000_000)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return (
                f"model endpoint refused the API key: {url} answered HTTP {exc.code} "
                "(set OPENAI_API_KEY or -M api_key=...)"
            )
        return None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"model endpoint unreachable: {url} ({reason})"[:300]
    try:
        entries = json.loads(body).get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(entries, list):
        return None
    ids = [str(e["id"]) for e in entries if isinstance(e, dict) and e.get("id")]
    if len(ids) > 1 and model not in ids:
        shown = ", ".join(repr(i) for i in sorted(ids)[:5]) + (", ..." if len(ids) > 5 else "")
        return f"unknown model: {model!r} is not among the {len(ids)} models {url} lists ({shown})"
    return None
