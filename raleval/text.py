"""Answer text as every layer compares it: SQuAD normalisation and token-aligned containment.

Task generators (checking that an answer shows in a tool result), the metrics and the taxonomy
(checking that evidence shows in an observation) must agree on what "appears" means, so the
one definition lives here, below all of them.
"""

from __future__ import annotations

import re
import string

_DROP_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = text.translate(_DROP_PUNCT)  # a C loop; scoring normalises every observation
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def contains_tokens(haystack: list[str], needle: list[str]) -> bool:
    """Whether ``needle`` occurs in ``haystack`` as a contiguous run of whole tokens."""
    n = len(needle)
    if n == 0:
        return False
    first = needle[0]
    return any(tok == first and haystack[i : i + n] == needle for i, tok in enumerate(haystack))
