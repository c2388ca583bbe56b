"""The metadata of a GGUF file (llama.cpp's model format): its key-value header, read without
loading a tensor. ``local/<path>.gguf`` uses it to serve any GGUF file the way the built-in
models are served: the context window from ``<architecture>.context_length``; llama.cpp itself
reads the chat template (``tokenizer.chat_template``) from the same header.

The layout is GGUF v2/v3 (github.com/ggml-org/ggml, docs/gguf.md): magic ``GGUF``, a uint32
version, uint64 tensor and key-value counts, then each key as a uint64-length UTF-8 string, a
uint32 value type and the value (arrays: element type, uint64 count, elements). All little
endian. Arrays (the tokenizer's vocabulary) are skipped, not decoded; the reader is a few ms
where the ``gguf`` package's reader maps every field.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

# value type -> struct format of one scalar
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
MAX_STRING = 1 << 24  # a key or a chat template; longer is a corrupt file, not a model


class GGUFError(ValueError):
    """The file is not a GGUF file this reader understands; the message says why."""


def _read(fh: BinaryIO, n: int) -> bytes:
    data = fh.read(n)
    if len(data) != n:
        raise GGUFError("the file ends inside its header")
    return data


def _string(fh: BinaryIO) -> str:
    (n,) = struct.unpack("<Q", _read(fh, 8))
    if n > MAX_STRING:
        raise GGUFError(f"a header string of {n} bytes")
    return _read(fh, n).decode("utf-8", errors="replace")


def _value(fh: BinaryIO, kind: int) -> Any:
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, _read(fh, struct.calcsize(fmt)))[0]
    if kind == _STRING:
        return _string(fh)
    if kind == _ARRAY:
        (item, count) = struct.unpack("<IQ", _read(fh, 12))
        if item in _SCALARS:
            fh.seek(count * struct.calcsize(_SCALARS[item]), 1)
        elif item == _STRING:
            for _ in range(count):
                (n,) = struct.unpack("<Q", _read(fh, 8))
                fh.seek(n, 1)
        else:
            for _ in range(count):
                _value(fh, item)
        return None  # arrays are skipped
    raise GGUFError(f"unknown value type {kind}")


def read_metadata(path: Path) -> dict[str, Any]:
    """The header's scalar and string values by key (arrays are left out)."""
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF":
            raise GGUFError(f"{path} is not a GGUF file (no GGUF magic)")
        (version,) = struct.unpack("<I", _read(fh, 4))
        if version < 2:
            raise GGUFError(f"{path} is GGUF version {version}; llama.cpp reads 2 and later")
        _tensors, n_kv = struct.unpack("<QQ", _read(fh, 16))
        out: dict[str, Any] = {}
        for _ in range(n_kv):
            key = _string(fh)
            (kind,) = struct.unpack("<I", _read(fh, 4))
            value = _value(fh, kind)
            if value is not None:
                out[key] = value
        return out


def context_length(metadata: dict[str, Any]) -> int | None:
    """The context the model was trained for (``<architecture>.context_length``)."""
    arch = metadata.get("general.architecture")
    value = metadata.get(f"{arch}.context_length") if arch else None
    return int(value) if isinstance(value, int) and value > 0 else None
