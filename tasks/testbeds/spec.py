"""A testbed as a task set names it after ``@``: its kind and value, checked."""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("negative", "false-premise", "counterfactual", "noise")
INTERFACE = ("rename-tools", "bare-tools", "distractors", "inject")  # interface.py
MAX_DISTRACTORS = 20


@dataclass(frozen=True)
class Testbed:
    __test__ = False  # not a pytest class

    kind: str
    ratio: float = 0.0  # noise only
    count: int = 0  # distractors only

    @property
    def label(self) -> str:
        if self.kind == "distractors":
            return f"distractors={self.count}"
        return f"noise={self.ratio:g}" if self.kind == "noise" else self.kind


def parse_spec(spec: str) -> tuple[str, Testbed | None]:
    """``"crag-kg@noise=0.4"`` -> ``("crag-kg", Testbed("noise", 0.4))``."""
    if "@" not in spec:
        return spec, None
    base, _, name = spec.rpartition("@")
    kind, _, value = name.partition("=")
    if kind not in KINDS + INTERFACE:
        known = ", ".join(KINDS + INTERFACE)
        raise ValueError(f"unknown testbed {kind!r} in {spec!r}; choose one of {known}")
    if kind == "distractors":
        if not value.isdigit() or not 1 <= int(value) <= MAX_DISTRACTORS:
            raise ValueError(
                f"distractors needs a count from 1 to {MAX_DISTRACTORS}, e.g. "
                f"{base}@distractors=3 (got {name!r})"
            )
        return base, Testbed("distractors", count=int(value))
    if kind != "noise":
        if value:
            raise ValueError(f"testbed {kind!r} takes no value (got {name!r})")
        return base, Testbed(kind)
    try:
        ratio = float(value)
    except ValueError:
        raise ValueError(f"noise needs a ratio, e.g. {base}@noise=0.4 (got {name!r})") from None
    if not 0.0 <= ratio <= 0.8:
        raise ValueError(f"noise ratio must be between 0 and 0.8 (got {ratio})")
    return base, Testbed("noise", ratio)
