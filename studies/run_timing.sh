#!/usr/bin/env bash
# A study's timing pass (`raleval study timing`, studies/<study>.timing.yaml), resumable on a
# new machine: it runs in runs/study-<study>-timing/, first given back the timing.jsonl lines
# kept in studies/<study>-timing/<env>/ (the pass times only the episodes they lack), and at
# its end, or when interrupted (Ctrl-C), copies each environment's lines back there. The
# pass is hours long; stop it when the session must end and commit studies/<study>-timing/.
#
#   bash studies/run_timing.sh [STUDY]       # STUDY defaults to local-models-3
#
# MAX_LOAD (default 1.5): each episode waits until the 1-minute load average is below it.
# Exit status: the pass's (0 done; 130 interrupted: the episodes timed so far are kept).
set -uo pipefail
cd "$(dirname "$0")/.."
STUDY=${1:-local-models-3}
OUT=${OUT:-runs/study-$STUDY-timing}
KEPT=studies/$STUDY-timing
MAX_LOAD=${MAX_LOAD:-1.5}

for kept in "$KEPT"/*/timing.jsonl; do
    [ -f "$kept" ] || continue
    env=$(basename "$(dirname "$kept")")
    mkdir -p "$OUT/$env"
    # the longer file wins: lines are only ever appended
    if [ ! -f "$OUT/$env/timing.jsonl" ] \
        || [ "$(wc -l < "$kept")" -gt "$(wc -l < "$OUT/$env/timing.jsonl")" ]; then
        cp "$kept" "$OUT/$env/timing.jsonl"
    fi
done

echo "timing start $(date -u +%FT%TZ): $(uptime)"
trap 'echo "interrupted: keeping the recorded episodes"' INT
nice -n 10 raleval study timing --config "studies/$STUDY.timing.yaml" --out "$OUT" \
    --scored "studies/$STUDY" --max-load "$MAX_LOAD"
status=$?
trap - INT
echo "timing end $(date -u +%FT%TZ) (exit $status): $(uptime)"
for made in "$OUT"/*/timing.jsonl; do
    [ -f "$made" ] || continue
    env=$(basename "$(dirname "$made")")
    mkdir -p "$KEPT/$env"
    cp "$made" "$KEPT/$env/timing.jsonl"
done
exit $status
