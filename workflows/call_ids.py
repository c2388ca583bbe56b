"""The ids that pair a reply's tool calls with the tool messages answering them.

OpenAI's chat completions API refuses a request whose tool message answers an id no preceding
assistant turn issued (HTTP 400), so an id travels unchanged from the reply that gave it to
every later request of the episode. The provider's own id is kept where it gave a usable one;
where it gave none (scripted and embedded models, calls parsed from a reply's text) or an
unusable one (too long, odd characters, already used in the episode), the id is derived from
the episode's position, ``call_<turn>_<i>``: the ``i``-th call of the model's ``turn``-th
reply. Never random: a replay of the same prefix sends the same request, byte for byte, and
the response cache, keyed by the request, answers it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# A provider id kept as given: what OpenAI's (``call_...``), vLLM's (``chatcmpl-tool-...``)
# and llama.cpp's ids look like, bounded (a hostile server's id is never echoed back at length)
USABLE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def position_id(turn: int, i: int) -> str:
    """The id of the ``i``-th call of the model's ``turn``-th reply (both from 0)."""
    return f"call_{turn}_{i}"


def reply_call_ids(given: Sequence[str | None], turn: int, taken: Iterable[str] = ()) -> list[str]:
    """Ids for one reply's calls: ``given[i]`` (the provider's) where usable and not already
    used in the episode (``taken``) or earlier in this reply, else :func:`position_id`."""
    used = set(taken)
    out: list[str] = []
    for i, got in enumerate(given):
        chosen = got if isinstance(got, str) and USABLE_ID.match(got) and got not in used else None
        if chosen is None:
            chosen = position_id(turn, i)
            n = 0
            while chosen in used:  # a provider that happened to use the derived form
                n += 1
                chosen = f"{position_id(turn, i)}_{n}"
        used.add(chosen)
        out.append(chosen)
    return out
