"""An environment served by ``raleval serve`` in another process (or on another machine),
evaluated as if it were local: its tools are declared from ``GET /tools`` and every call is a
``POST /tools/{name}`` in this episode's server-side session."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from pydantic import ConfigDict, create_model

from raleval.environment import Environment, ToolFault, ToolResult, ToolSpec
from raleval.records import OutcomeKind
from raleval.registry import register_env

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _annotation(schema: dict[str, Any]) -> Any:
    if "anyOf" in schema:
        options = [_annotation(s) for s in schema["anyOf"]]
        out = options[0]
        for option in options[1:]:
            out = out | option
        return out
    if schema.get("type") == "null":
        return type(None)
    return _JSON_TYPES.get(schema.get("type", ""), Any)


def _params_model(name: str, schema: dict[str, Any]) -> Any:
    required = set(schema.get("required", []))
    fields = {
        pname: (_annotation(p), ... if pname in required else p.get("default"))
        for pname, p in schema.get("properties", {}).items()
    }
    # The server validates for real; the local model only renders prompts and schemas.
    return create_model(f"{name}_params", __config__=ConfigDict(extra="allow"), **fields)


class RemoteEnv(Environment):
    """Tools of a served environment; each :meth:`session` is a server-side session."""

    relays = True  # the served environment's tasks run here

    def __init__(self, url: str, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout_s = timeout_s
        try:
            response = httpx.get(f"{self.url}/tools", headers=self.headers, timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise ValueError(f"cannot reach the environment server at {self.url}: {exc}") from exc
        if response.status_code == 401:
            raise ValueError(f"{self.url} refused the API token (pass -E token=...)")
        response.raise_for_status()
        self.declared = response.json()
        self.name = "remote"
        self._session_id = uuid.uuid4().hex
        super().__init__(self._tools(self._session_id))

    def _tools(self, session_id: str) -> list[ToolSpec]:
        specs = []
        for decl in self.declared:
            specs.append(
                ToolSpec(
                    decl["name"],
                    decl["description"],
                    _params_model(decl["name"], decl["parameters"]),
                    decl.get("returns", "Any"),
                    self._caller(decl["name"], session_id),
                    text_style=decl.get("text_style", "call"),
                )
            )
        return specs

    def _caller(self, name: str, session_id: str):
        async def call(**arguments: Any) -> ToolResult:
            headers = {**self.headers, "X-Raleval-Session": session_id}
            body = {k: v for k, v in arguments.items() if v is not None}
            try:
                async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                    r = await client.post(f"{self.url}/tools/{name}", json=body, headers=headers)
            except httpx.TimeoutException as exc:
                raise ToolFault(f"the environment server timed out: {exc}", "timeout") from exc
            except httpx.HTTPError as exc:
                raise ToolFault(
                    f"the environment server is unreachable: {exc}", "connection_error"
                ) from exc
            payload = (
                r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
            )
            if r.status_code == 200:
                kind = OutcomeKind(payload["kind"])
                return ToolResult(
                    payload["observation"], kind, payload.get("cause"), payload["result"]
                )
            detail = payload.get("detail", r.text)
            if r.status_code in (400, 404, 422):
                return ToolResult(
                    str(detail), OutcomeKind.misuse, payload.get("cause") or "bad_arguments"
                )
            return ToolResult(
                str(detail), OutcomeKind.tool_fault, payload.get("cause") or f"http_{r.status_code}"
            )

        return call

    def session(self, task: Any = None) -> RemoteEnv:
        clone = object.__new__(RemoteEnv)
        clone.__dict__.update(self.__dict__)
        Environment.__init__(clone, self._tools(uuid.uuid4().hex))
        return clone


@register_env("remote")
def make_remote_env(url: str = "http://127.0.0.1:8000", token: str | None = None) -> RemoteEnv:
    """An environment served by ``raleval serve``: ``-E url=http://host:8000 -E token=...``."""
    return RemoteEnv(url, token)


__all__ = ["RemoteEnv", "make_remote_env"]
