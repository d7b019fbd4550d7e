#!/bin/sh
# Replays every case of tests/data/golden/cases through the simulator and compares its --json
# output with the recorded one byte for byte: a refactoring of the engine must not change a
# single number.  `golden.sh SIM --update` rewrites the recorded files, for a change in
# behaviour that is meant (say why in the commit).
set -u
sim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
update=${2:-}
data=$(cd "$(dirname "$0")/../data" && pwd)
# The traces are named relative to tests/data, as the documents record them (trace.file): the
# recorded files do not depend on where the clone is.
cd "$data" || exit 1
fail=0
n=0
while read -r name trace format args; do
    case $name in ''|'#'*) continue ;; esac
    n=$((n + 1))
    out=$(mktemp)
    # $args is split on purpose: it is the simulator's argument list
    # shellcheck disable=SC2086
    if ! "$sim" --trace "$trace" --format "$format" --json $args >"$out"; then
        echo "not ok $n $name: the simulator failed"
        fail=1
    elif [ "$update" = --update ]; then
        cp "$out" "$data/golden/$name.json"
        echo "ok $n $name # updated"
    elif ! cmp -s "$out" "$data/golden/$name.json"; then
        echo "not ok $n $name: output differs from golden/$name.json"
        diff -u "$data/golden/$name.json" "$out" | head -n 40 | sed 's/^/# /'
        fail=1
    else
        echo "ok $n $name"
    fi
    rm -f "$out"
done <"$data/golden/cases"
echo "1..$n"
exit $fail
