"""Set-up of the Ray worker processes in tests/test_ray_backend.py (runs in each worker).

``install`` fences the test's directory: any file operation a worker attempts under it raises
PermissionError, so a worker that read or wrote the run directory would fail the run. With the
control directory's ``arm`` file present, the first worker to start its third episode since exits
the process at once (a lost worker), once per ``arm``.
"""

from __future__ import annotations

import os
import sys

FENCE = "TEST_RAY_FENCE"
CONTROL = "TEST_RAY_CONTROL"
FILE_EVENTS = {"open", "os.listdir", "os.scandir", "os.mkdir", "os.rename", "os.remove",
               "os.rmdir", "os.truncate", "os.chmod", "shutil.rmtree"}  # fmt: skip


def install() -> None:
    fence = os.environ[FENCE]

    def audit(event: str, args: tuple) -> None:
        if event in FILE_EVENTS and args and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.fsdecode(args[0])
            if os.path.abspath(path).startswith(fence):
                raise PermissionError(f"a Ray worker touched {path}")

    sys.addaudithook(audit)
    _arm_crash(os.environ[CONTROL])


def _arm_crash(control: str) -> None:
    from raleval.app import episodes

    run_episode = episodes.run_episode
    started = 0

    async def crashing(*args, **kwargs):
        nonlocal started
        armed = os.path.exists(os.path.join(control, "arm"))
        started += armed  # episodes started while armed (worker processes are reused)
        if armed and started >= 3:
            try:  # one worker crashes per arming
                os.rename(os.path.join(control, "arm"), os.path.join(control, "fired"))
            except FileNotFoundError:
                pass
            else:
                os._exit(1)
        return await run_episode(*args, **kwargs)

    episodes.run_episode = crashing
