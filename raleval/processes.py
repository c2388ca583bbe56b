"""Child processes that must not outlive the process that started them."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None) -> bool:
    """Ask Linux to SIGKILL this process when its parent dies, however the parent dies (even
    by SIGKILL or ``os._exit``); elsewhere a no-op. SIGKILL rather than SIGTERM: a handler
    runs only when the interpreter next gets control, which code inside a native library (a
    model loading in llama.cpp) does not give it for many seconds on a busy machine.

    Returns False when ``parent`` (the pid that started this process) is already gone: it
    died before the request was made (a child can take a second to get this far under load),
    this process now belongs to another parent and nothing will kill it, so the caller
    should exit at once."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return parent is None or os.getppid() == parent
