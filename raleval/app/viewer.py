"""``raleval view``: a local web viewer that reads run directories lazily.

The server answers from a :class:`raleval.analysis.log_index.LogIndex` that fills in a
background thread, so its first page is served while a 100,000-episode log is still being
indexed; an episode is read from its byte offset and validated only when it is opened. Pages:
the episode list with filters (run, family, level, label, cause, copied demonstration, right or
wrong, text), the pairs of two runs (tasks where one is right and the other wrong first), and
two or more runs' transcripts of one task side by side with the first divergent step marked.

It binds to 127.0.0.1 by default, serves only GETs, and refuses requests whose Host is not
the address it serves (a page elsewhere cannot read the log through DNS rebinding). Every
text from a run is sent as JSON and escaped by the page before it is shown.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

from aiohttp import web

from raleval.analysis.log_index import LogIndex, first_divergence
from raleval.analysis.report import episode_view, report_asset
from raleval.analysis.runs import Run
from raleval.analysis.taxonomy import DEFAULT_THRESHOLD


def _int(request: web.Request, name: str, default: int | None = None) -> int:
    value = request.query.get(name)
    if value is None:
        if default is None:
            raise web.HTTPBadRequest(text=f"missing ?{name}=")
        return default
    try:
        return int(value)
    except ValueError:
        raise web.HTTPBadRequest(text=f"?{name}= must be a whole number") from None


class Viewer:
    """The viewer's routes over one index."""

    def __init__(self, index: LogIndex, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.index, self.threshold = index, threshold
        self.headers: dict[int, Any] = {}
        self.allowed_hosts: set[str] = set()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._host_check])
        app.router.add_get("/", self.page)
        app.router.add_get("/api/status", self.status)
        app.router.add_get("/api/episodes", self.episodes)
        app.router.add_get("/api/episode", self.episode)
        app.router.add_get("/api/pairs", self.pairs)
        app.router.add_get("/api/side", self.side)
        return app

    @web.middleware
    async def _host_check(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.allowed_hosts and request.host not in self.allowed_hosts:
            raise web.HTTPForbidden(text="unknown Host")
        response = await handler(request)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "connect-src 'self'; img-src data:"
        )
        return response

    async def page(self, request: web.Request) -> web.Response:
        text = report_asset("viewer.html").replace("@@episode_js@@", report_asset("episode.js"))
        return web.Response(text=text, content_type="text/html")

    async def status(self, request: web.Request) -> web.Response:
        facets = self.index.facets()
        return web.json_response(
            {
                "done": self.index.done,
                "indexed": len(self.index.rows),
                "error": self.index.error,
                **facets,
            }
        )

    async def episodes(self, request: web.Request) -> web.Response:
        total, rows = self.index.query(
            dict(request.query), _int(request, "offset", 0), _int(request, "limit", 50)
        )
        return web.json_response({"total": total, "rows": rows, "done": self.index.done})

    def _view(self, run: int, task_id: str, epoch: int) -> dict[str, Any]:
        if not 0 <= run < len(self.index.runs):
            raise web.HTTPNotFound(text="no such run")
        row = self.index.find(run, task_id, epoch)
        if row is None:
            raise web.HTTPNotFound(text="no such episode")
        traj = self.index.trajectory(row)
        task = self.index.task(run, task_id)
        if run not in self.headers:
            self.headers[run] = self.index.header(run)
        header = self.headers[run]
        holder = Run(self.index.runs[run].path, header, {task_id: task} if task else {}, [traj])
        view = episode_view(0, holder, traj, self.threshold)
        view["run"], view["run_name"] = run, self.index.runs[run].name
        prompts = (header.prompts if header else None) or {}
        view["prompts"] = {
            "template": prompts.get("template") or "",
            "rendered": prompts.get("rendered") or {},
            "ids": prompts.get("demonstrations") or {},
        }
        view["_trajectory"] = traj
        return view

    async def episode(self, request: web.Request) -> web.Response:
        view = await asyncio.to_thread(
            self._view,
            _int(request, "run"),
            request.query.get("task", ""),
            _int(request, "epoch", 0),
        )
        view.pop("_trajectory")
        return web.json_response(view)

    async def pairs(self, request: web.Request) -> web.Response:
        a, b = _int(request, "a"), _int(request, "b")
        n = len(self.index.runs)
        if not (0 <= a < n and 0 <= b < n) or a == b:
            raise web.HTTPBadRequest(text="?a= and ?b= must name two different runs")
        return web.json_response({"pairs": self.index.pairs(a, b), "done": self.index.done})

    async def side(self, request: web.Request) -> web.Response:
        try:
            runs = [int(x) for x in request.query.get("runs", "").split(",") if x != ""]
        except ValueError:
            raise web.HTTPBadRequest(
                text="?runs= is a comma-separated list of run numbers"
            ) from None
        if len(runs) < 2:
            raise web.HTTPBadRequest(text="side by side needs two runs or more (?runs=0,1)")
        task, epoch = request.query.get("task", ""), _int(request, "epoch", 0)
        views = await asyncio.to_thread(lambda: [self._view(r, task, epoch) for r in runs])
        divergence = first_divergence([v.pop("_trajectory") for v in views])
        return web.json_response({"columns": views, "divergence": divergence})


async def serve_viewer(
    run_dirs: list[Path], host: str = "127.0.0.1", port: int = 0, ready: Any = None
) -> None:
    """Serve the viewer until cancelled; ``ready(url)`` is called once it listens."""
    index = LogIndex(run_dirs)
    index.start()
    viewer = Viewer(index)
    runner = web.AppRunner(viewer.app(), access_log=None)
    await runner.setup()
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    await web.SockSite(runner, sock).start()
    viewer.allowed_hosts = {f"{host}:{bound}", f"localhost:{bound}", f"127.0.0.1:{bound}"}
    if ready is not None:
        ready(f"http://{host}:{bound}/")
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
