"""What a run header keeps of its options: everything but credentials.

A credential is recognised by its key (``api_key``, ``authorization``, ``password``,
``hf_token``: the key's last word is a secret's name) or by the shape of its value (an OpenAI
``sk-`` key, a Hugging Face ``hf_`` token, a GitHub token, a bearer header, a JWT, a password
in a URL), never by a word somewhere in the key: ``max_tokens``, ``max_context_tokens``,
``max_obs_tokens``, ``tokenize_url`` and ``key_points`` are settings a replay needs (a header
that hid them could not be diagnosed or retried).
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"

# The last word of a key that names a credential (``api_key``, ``hf_token``, ``secret``).
_SECRET_LAST_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "authorization",
        "auth",
        "credential",
        "credentials",
        "cookie",
        "bearer",
    }
)
# First words that make a key a count or a limit, whatever it ends with (``max_token``).
_COUNT_WORDS = frozenset({"max", "min", "num", "n", "count"})
# Values shaped like credentials, wherever they appear (a key named ``extra``, a header list).
_SECRET_VALUE = re.compile(
    r"^\s*(?:"
    r"sk-[A-Za-z0-9_-]{16,}"  # OpenAI (sk-..., sk-proj-...), Anthropic (sk-ant-...)
    r"|hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|AIza[0-9A-Za-z_-]{30,}"  # Google API key
    r"|(?:Bearer|Basic)\s+\S{8,}"  # an Authorization header's value
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # a JWT
    r")\s*$"
)
# A password inside a URL (``https://user:pass@host``): only the password is hidden.
_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^/:@\s]*:)(?P<pw>[^/@\s]+)(?=@)", re.I)


def _words(key: str) -> list[str]:
    """``hfToken`` / ``HF-TOKEN`` / ``hf_token`` -> ``["hf", "token"]``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_secret_key(key: str) -> bool:
    """Whether an option named ``key`` holds a credential (by its last word)."""
    words = _words(str(key))
    if not words or words[0] in _COUNT_WORDS:
        return False
    return words[-1] in _SECRET_LAST_WORDS


def is_secret_value(value: Any) -> bool:
    """Whether ``value`` is a string shaped like a credential."""
    return isinstance(value, str) and bool(_SECRET_VALUE.match(value))


def redact(value: Any) -> Any:
    """A copy of ``value`` with credentials replaced by ``<redacted>``: the values of secret
    keys and secret-looking strings (a password in a URL: the password alone)."""
    if isinstance(value, dict):
        return {
            k: REDACTED if is_secret_key(str(k)) and v not in (None, "") else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if is_secret_value(value):
        return REDACTED
    if isinstance(value, str) and "@" in value:
        return _URL_PASSWORD.sub(lambda m: m.group("head") + REDACTED, value)
    return value
