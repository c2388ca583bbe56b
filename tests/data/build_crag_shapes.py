"""Rebuild crag_real_shapes.json from CRAG's published example outputs.

Source: facebookresearch/CRAG, mock_api/apiwrapper/example_call.ipynb (commit ad15188), the
notebook in which CRAG's authors call all 38 endpoints of their mock API with CRAG's client and
keep the printed results. Only the shapes (keys, value types, nesting) are kept, no data.

    python tests/data/build_crag_shapes.py path/to/example_call.ipynb
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

from raleval.envs.crag.shapes import derive, merge

OUT = Path(__file__).with_name("crag_real_shapes.json")
CALL = re.compile(r"api\.(\w+)\((.*)\)\s*$", re.S)
# Keys CRAG's source documents that the notebook's sample records happen not to show
# (mock_api/cragapi/movie.py: a person's directed_movies; oscar_awards only when there are any).
DOCUMENTED_OPTIONAL = {
    "movie_get_person_info": {"directed_movies": {"list": "int"}},
    "movie_get_person_info_by_id": {"directed_movies": {"list": "int"}},
}


# CRAG's by-id getters return the same records as its searches (mock_api/cragapi/movie.py:
# both read one record store, "MAY contain the following fields"), so their shapes merge.
SAME_RECORDS = {
    "movie_get_movie_info_by_id": "movie_get_movie_info",
    "movie_get_person_info_by_id": "movie_get_person_info",
}


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except SyntaxError:
        # the notebook cuts very long outputs with "...": keep the complete records before it
        cut = text[: text.rfind("},\n")] + "}}}"
        return ast.literal_eval(cut)


def _drop_elided(value: object) -> object:
    """Without the ``...`` the notebook prints where it cuts a long list."""
    if isinstance(value, list):
        return [_drop_elided(v) for v in value if v is not Ellipsis]
    if isinstance(value, dict):
        return {k: _drop_elided(v) for k, v in value.items()}
    return value


def main(notebook: str) -> None:
    cells = json.loads(Path(notebook).read_text())["cells"]
    shapes: dict[str, dict[str, object]] = {}
    for cell in cells:
        src = "".join(cell["source"]).strip()
        m = CALL.match(src)
        if not m:
            continue
        for out in cell.get("outputs", []):
            text = out.get("text") or out.get("data", {}).get("text/plain")
            if not text:
                continue
            result = _drop_elided(_literal("".join(text))["result"])
            entry = shapes.setdefault(m.group(1), {"calls": [], "shape": None})
            entry["calls"].append(m.group(2))
            entry["shape"] = merge(entry["shape"], derive(result))
    for name, extra in DOCUMENTED_OPTIONAL.items():
        shape = shapes[name]["shape"]
        for rec in [shape] + [s for s in (shape.get("list"),) if isinstance(s, dict)]:
            if "object" in rec:
                rec["object"].update(extra)
                rec["optional"] = sorted(set(rec["optional"]) | set(extra))
    for by_id, search in SAME_RECORDS.items():
        record = merge(shapes[by_id]["shape"], shapes[search]["shape"]["list"])
        shapes[by_id]["shape"] = record
        shapes[search]["shape"] = {"list": record}
    OUT.write_text(json.dumps(dict(sorted(shapes.items())), indent=1) + "\n")
    print(f"{len(shapes)} endpoints -> {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
