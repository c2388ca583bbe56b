#!/bin/sh
# A command agent in POSIX sh with curl (and sed) only, for
#   raleval run --workflow command:"sh examples/agents/curl_agent.sh" ...
# It reads the question on stdin, asks the model at $OPENAI_BASE_URL in the text protocol of
# $RALEVAL_INSTRUCTIONS (Action: {...} / Answer: ...), runs each action as an MCP tools/call at
# $RALEVAL_MCP_URL, and ends with the MCP Finish tool. raleval records both sides.
set -eu
MAX_TURNS=${MAX_TURNS:-12}

# one JSON string's inside: backslashes, quotes, tabs, carriage returns, then newlines
escape() {
    printf '%s' "$1" | tr -d '\000-\010\013\014\016-\037' |
        sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\r/\\r/g' -e 's/\t/\\t/g' |
        sed -e ':a' -e 'N' -e '$!ba' -e 's/\n/\\n/g'
}
# undo one level of escaping (\\ and \"; a placeholder keeps \\\" right)
unescape() { printf '%s' "$1" | sed -e 's/\\\\/\x01/g' -e 's/\\"/"/g' -e 's/\x01/\\/g'; }
# the raw (still escaped) value of the last string field $1 in JSON read on stdin
field() { sed -n "s/.*\"$1\": *\"\(\([^\"\\\\]\|\\\\.\)*\)\".*/\1/p"; }

post() { # URL BODY
    printf '%s' "$2" | curl -sS --max-time 300 -X POST "$1" \
        -H "Authorization: Bearer $RALEVAL_TOKEN" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' --data-binary @-
}
rpc() { # ID METHOD PARAMS
    post "$RALEVAL_MCP_URL" "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"$2\",\"params\":$3}"
}

question=$(cat)
rpc 0 initialize '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl-agent","version":"1"}}' >/dev/null
post "$RALEVAL_MCP_URL" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null

messages="{\"role\":\"system\",\"content\":\"$(escape "$RALEVAL_INSTRUCTIONS")\"}"
messages="$messages,{\"role\":\"user\",\"content\":\"Question: $(escape "$question")\"}"
turn=1
while [ "$turn" -le "$MAX_TURNS" ]; do
    reply=$(post "$OPENAI_BASE_URL/chat/completions" \
        "{\"model\":\"$RALEVAL_MODEL\",\"messages\":[$messages]}")
    case $reply in *'"error"'*) echo "model error: $reply" >&2; exit 3 ;; esac
    content=$(printf '%s' "$reply" | field content | head -n 1)
    messages="$messages,{\"role\":\"assistant\",\"content\":\"$content\"}"
    case $content in
    "Answer: "*)
        answer=${content#Answer: }
        rpc "$turn" tools/call "{\"name\":\"Finish\",\"arguments\":{\"answer\":\"$answer\"}}" >/dev/null
        unescape "$answer"
        echo
        exit 0
        ;;
    "Action: "*)
        result=$(rpc "$turn" tools/call "$(unescape "${content#Action: }")")
        observation=$(printf '%s' "$result" | field text | head -n 1)
        messages="$messages,{\"role\":\"user\",\"content\":\"Observation: $observation\"}"
        ;;
    *)
        messages="$messages,{\"role\":\"user\",\"content\":\"Reply with one line: Action: {...} or Answer: ...\"}"
        ;;
    esac
    turn=$((turn + 1))
done
echo "no answer in $MAX_TURNS turns" >&2
exit 4
