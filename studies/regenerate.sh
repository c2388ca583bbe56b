#!/usr/bin/env bash
# Regenerate, from the stored cells alone (no model), everything docs/study.md and the README
# show of the studies (issues 48 and 62): their tables, claims (declared comparisons only) and
# figures. Run it after each `raleval study store`; tests check the result. The timing pass's
# table comes from studies/local-models-2-timing/ once that holds the pass's timing.jsonl files
# (`raleval study timing --config studies/local-models-2.yaml --out DIR`, then copy each
# DIR/<env>/timing.jsonl there).
#
#   bash studies/regenerate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# The first study's tables (studies/local-models, complete): they change only when the analysis
# does, as when a verdict's note gained the kinds of format failure.
raleval study tables studies/local-models --into docs/study.md
STUDY=studies/local-models-2
DESIGN=studies/local-models-2.design.yaml
TIMING=()
[ -d studies/local-models-2-timing ] && TIMING=(--timing studies/local-models-2-timing)
raleval study tables "$STUDY" --design "$DESIGN" "${TIMING[@]}" --into docs/study.md \
    --block study-rerun-tables
raleval study claims "$STUDY" --design "$DESIGN" --into docs/study.md
raleval study figures "$STUDY" --into docs/study2 --figure radar-react --figure errors \
    --figure tokens
raleval study figures "$STUDY" --arm "generated @ 4000 tokens" --into docs/study2/matched \
    --figure tokens --figure errors

# The third study (issue 62), as far as its stored cells go: its tables and claims in
# docs/study.md, its claims as one table in the README (a cell still running says how many of
# its tasks it has answered), its budget sweep's figure and the 8,000-token arm's figures.
STUDY3=studies/local-models-3
DESIGN3=studies/local-models-3.design.yaml
TIMING3=()
[ -d studies/local-models-3-timing ] && TIMING3=(--timing studies/local-models-3-timing)
raleval study tables "$STUDY3" --design "$DESIGN3" "${TIMING3[@]}" --into docs/study.md \
    --block study3-tables
raleval study claims "$STUDY3" --design "$DESIGN3" --into docs/study.md --block study3-claims
raleval study claims "$STUDY3" --design "$DESIGN3" --table --into README.md
raleval study figures "$STUDY3" --into docs/study3 --figure budgets
# with the timing pass, seconds per episode against F1 too (the README's time figure), the
# seconds from the pass, each environment at its share of the arm's tasks as the F1 is; a pass
# under way draws it as far as it has gone (it rotates the cells per task, so at any point they
# have timed the same tasks, the one under way aside)
DEPLOYMENT3=()
[ ${#TIMING3[@]} -gt 0 ] && DEPLOYMENT3=(--figure deployment "${TIMING3[@]}")
raleval study figures "$STUDY3" --arm "generated @ 8000 tokens" --into docs/study3 \
    --figure errors --figure radar-react "${DEPLOYMENT3[@]}"
