"""Two embedded model servers on two cores slow each other ~20x (the study measured 1.1
tokens/s per server instead of ~20 when a second run started its own): starting one next to
servers that already use the cores warns, naming them and what to do."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings

from raleval.agents.local import (
    SERVER_MODULE,
    OversubscribedWarning,
    other_servers,
    oversubscription,
)


def test_more_threads_than_cores_is_named():
    assert oversubscription(2, [], cores=2) is None
    assert oversubscription(1, [(101, 1)], cores=2) is None
    why = oversubscription(2, [(101, 2)], cores=2)
    assert why is not None and "pid 101" in why and "-M threads=1" in why


def test_a_running_server_is_found_by_its_command_line():
    fake = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", SERVER_MODULE, "--threads", "3"]
    )
    try:
        for _ in range(50):  # the command line is readable once the process has exec'd
            if (fake.pid, 3) in other_servers():
                break
            time.sleep(0.1)
        assert (fake.pid, 3) in other_servers()
        assert fake.pid not in {pid for pid, _ in other_servers(own={fake.pid})}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            why = oversubscription(2, other_servers(), cores=2)
            if why:
                warnings.warn(why, OversubscribedWarning, stacklevel=1)
        assert any(issubclass(w.category, OversubscribedWarning) for w in caught)
    finally:
        fake.kill()
        fake.wait()


def test_starting_a_server_next_to_a_crowd_warns(tmp_path, monkeypatch):
    from raleval.agents import local

    class Started:
        def __init__(self, *args):
            self.proc = subprocess.Popen([sys.executable, "-c", "pass"])
            self.proc.wait()
            self.proc.poll = lambda: None  # alive, as far as ensure_server asks

        def wait_ready(self):
            pass

    monkeypatch.setattr(local, "LlamaServer", Started)
    monkeypatch.setattr(local, "_servers", {})
    fake = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", SERVER_MODULE, "--threads", "64"]
    )
    try:
        for _ in range(50):
            if any(pid == fake.pid for pid, _ in other_servers()):
                break
            time.sleep(0.1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            local.ensure_server(tmp_path / "m.gguf", 2048, 2, 1, tmp_path)
        messages = [str(w.message) for w in caught if w.category is OversubscribedWarning]
        assert messages and str(fake.pid) in messages[0]
    finally:
        fake.kill()
        fake.wait()
