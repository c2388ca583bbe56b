#!/usr/bin/env bash
# One chunk of a study: new episodes for at most MAX_TIME seconds (default 6000 s, 1 h 40 min:
# with the last episodes finishing, the process stays under two hours), under nice; then the
# finished cells are copied compactly into studies/<study>/ (`raleval study store`), and the
# unfinished cells' finished episodes into studies/<study>.partial/, so a cell longer than a
# session resumes on a new machine (runs/ is never committed).
# A study whose run config keeps a response cache at runs/study-<study>-responses.sqlite has it
# carried the same way, in studies/<study>.responses.jsonl.gz (`raleval cache export|import`):
# a budget's cell that starts on a new machine then pays only for the calls the smaller
# budget's cell could not afford, as on the machine that ran that one.
# It commits nothing: review and commit studies/<study>/, studies/<study>.partial/ and
# studies/<study>.responses.jsonl.gz yourself.
#
#   bash studies/run_chunk.sh [STUDY]        # STUDY defaults to local-models
#
# Run it again until it exits 0. Exit status: 0 the study is complete; 3 --max-time reached
# (more chunks to run); 1 some episodes failed for infrastructure reasons (the next chunk
# retries them only with RETRY=1); 2 a usage error; 130 interrupted (finished episodes are
# saved; the next chunk resumes).
set -uo pipefail
cd "$(dirname "$0")/.."
STUDY=${1:-local-models}
LOG_DIR=${LOG_DIR:-runs/study-$STUDY}
MAX_TIME=${MAX_TIME:-6000}
EXTRA=()
[ "${RETRY:-0}" = 1 ] && EXTRA+=(--retry-failed)

# the real-data arm's offline wiki, built from the repository's HotpotQA file (deterministic)
WIKI=runs/study-data/hotpot-wiki.sqlite
if [ ! -f "$WIKI" ]; then
    mkdir -p "$(dirname "$WIKI")"
    raleval wiki build "$WIKI" tests/data/hotpot_dev_distractor_v1_head.json || exit 2
fi

# the study's stored cells, back into the log directory (a fresh clone has no runs/): the run
# resumes after them instead of running them again; cells already there are kept
if [ -d "studies/$STUDY" ]; then
    raleval study restore "studies/$STUDY" --into "$LOG_DIR" > /dev/null || exit 2
fi
# then the unfinished cells' episodes stored by earlier chunks (after the finished cells, so a
# stale copy of a cell since finished is kept out: the finished one is already there)
PARTIAL=studies/$STUDY.partial
if [ -d "$PARTIAL" ] && [ -n "$(ls -A "$PARTIAL")" ]; then
    raleval study restore "$PARTIAL" --into "$LOG_DIR" || exit 2
fi

# then the response cache the earlier chunks exported (a reply this machine already has stands)
CACHE=runs/study-$STUDY-responses.sqlite
RESPONSES=studies/$STUDY.responses.jsonl.gz
if [ -f "$RESPONSES" ]; then
    raleval cache import "$RESPONSES" --cache-path "$CACHE" || exit 2
fi

echo "chunk start $(date -u +%FT%TZ): $(uptime)"
nice -n 10 raleval run --config "studies/$STUDY.yaml" --log-dir "$LOG_DIR" \
    --max-time "$MAX_TIME" --display plain "${EXTRA[@]}"
status=$?
echo "chunk end $(date -u +%FT%TZ) (exit $status): $(uptime)"
raleval study store "$LOG_DIR" --into "studies/$STUDY" --unfinished-into "$PARTIAL" || exit 2
if [ -f "$CACHE" ]; then
    raleval cache export "$RESPONSES" --cache-path "$CACHE" || exit 2
fi
exit $status
