"""Record shapes of CRAG results: derive a shape from a value and compare two shapes.

A shape says what a JSON value looks like without its data: scalar type names
("str", "int", "float", "bool", "null"), ``{"list": shape}``, ``{"object": {key: shape},
"optional": [...]}`` for records with fixed keys, and ``{"map": shape, "key": kind}`` for
dicts whose keys are data (dates, pandas row indexes, soccer match indexes, infobox fields).
tests/data/crag_real_shapes.json holds the shapes of CRAG's real endpoint outputs; the test
compares every endpoint of the generated world against them.
"""

from __future__ import annotations

import re
from typing import Any

# Dicts whose keys are data, recognised by the form of every key.
KEY_KINDS: dict[str, re.Pattern[str]] = {
    "datetime-est": re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d EST"),
    "row-index": re.compile(r"\d+"),
    "soccer-index": re.compile(r"\('[^']*', '\d{4}', '[^']*', '\d{4}-\d\d-\d\d [^']*'\)"),
}
# Dicts at these keys are maps whatever their keys look like (an infobox's fields).
MAP_FIELDS = frozenset({"summary_structured"})

Shape = Any


def _key_kind(keys: list[str]) -> str | None:
    for kind, pattern in KEY_KINDS.items():
        if keys and all(pattern.fullmatch(k) for k in keys):
            return kind
    return None


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def derive(value: Any, field: str | None = None) -> Shape:
    """The shape of one JSON value (lists and map values merge their elements' shapes)."""
    if isinstance(value, (list, tuple)):
        return {"list": merge_all([derive(v) for v in value])}
    if isinstance(value, dict):
        keys = [str(k) for k in value]
        kind = "any" if field in MAP_FIELDS else _key_kind(keys)
        if kind is not None:
            return {"map": merge_all([derive(v) for v in value.values()]), "key": kind}
        return {"object": {str(k): derive(v, str(k)) for k, v in value.items()}, "optional": []}
    return _scalar(value)


def _scalars(shape: Shape) -> set[str]:
    if isinstance(shape, str):
        return {shape}
    if isinstance(shape, list):
        return {s for s in shape if isinstance(s, str)}
    return set()


def _structured(shape: Shape) -> list[dict[str, Any]]:
    if isinstance(shape, dict):
        return [shape]
    if isinstance(shape, list):
        return [s for s in shape if isinstance(s, dict)]
    return []


def merge(a: Shape, b: Shape) -> Shape:
    """The shape of a value that may have shape ``a`` or shape ``b``."""
    if a is None:
        return b
    if b is None:
        return a
    scalars = _scalars(a) | _scalars(b)
    structured: dict[str, dict[str, Any]] = {}
    for s in _structured(a) + _structured(b):
        tag = next(iter(k for k in ("list", "map", "object") if k in s))
        prev = structured.get(tag)
        structured[tag] = s if prev is None else _merge_same(tag, prev, s)
    parts: list[Any] = sorted(scalars) + [structured[t] for t in sorted(structured)]
    return parts[0] if len(parts) == 1 else parts


def _merge_same(tag: str, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    if tag == "list":
        return {"list": merge(a["list"], b["list"])}
    if tag == "map":
        key = a["key"] if a["key"] == b["key"] else "any"
        return {"map": merge(a["map"], b["map"]), "key": key}
    ka, kb = a["object"], b["object"]
    keys = list(ka) + [k for k in kb if k not in ka]
    optional = set(a["optional"]) | set(b["optional"]) | (set(ka) ^ set(kb))
    return {
        "object": {k: merge(ka.get(k), kb.get(k)) for k in keys},
        "optional": sorted(optional),
    }


def merge_all(shapes: list[Shape]) -> Shape:
    out = None
    for s in shapes:
        out = merge(out, s)
    return out


def differences(ours: Shape, real: Shape, path: str = "$") -> list[str]:
    """Where ``ours`` does not fit ``real`` (empty when it fits).

    A value of ours fits when its scalar types are among the real ones, allowing null (a
    value the world does not have); a real type seen only as null accepts any scalar; an
    empty list or map of ours fits any element shape; object keys must be the real keys,
    optional ones may be absent.
    """
    if ours is None or real is None:
        return []
    out: list[str] = []
    real_scalars = _scalars(real)
    extra = _scalars(ours) - real_scalars - {"null"}
    if extra and real_scalars != {"null"}:
        want = "|".join(sorted(real_scalars)) or "structured"
        out.append(f"{path}: {'|'.join(sorted(extra))} where CRAG has {want}")
    real_by_tag = {
        next(k for k in ("list", "map", "object") if k in s): s for s in _structured(real)
    }
    for s in _structured(ours):
        tag = _tag(s)
        r = real_by_tag.get(tag)
        if r is None:
            if real_scalars != {"null"}:
                out.append(f"{path}: {tag} where CRAG has {_describe(real)}")
            continue
        if tag == "list":
            out += differences(s["list"], r["list"], path + "[]")
        elif tag == "map":
            if r["key"] != "any" and s["key"] != r["key"]:
                out.append(f"{path}: keys are {s['key']} where CRAG has {r['key']}")
            out += differences(s["map"], r["map"], path + "{}")
        else:
            ours_keys, real_keys = s["object"], r["object"]
            missing = [k for k in real_keys if k not in ours_keys and k not in r["optional"]]
            added = [k for k in ours_keys if k not in real_keys]
            if missing:
                out.append(f"{path}: missing keys {missing}")
            if added:
                out.append(f"{path}: keys CRAG does not have {added}")
            for k in ours_keys:
                if k in real_keys:
                    out += differences(ours_keys[k], real_keys[k], f"{path}.{k}")
    return out


def _describe(shape: Shape) -> str:
    parts = sorted(_scalars(shape)) + [
        next(k for k in ("list", "map", "object") if k in s) for s in _structured(shape)
    ]
    return "|".join(parts)


def _tag(shape: dict[str, Any]) -> str:
    return next(k for k in ("list", "map", "object") if k in shape)
