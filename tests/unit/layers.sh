#!/bin/sh
# The layers include only downwards (docs/engine.md): a file of a layer may include the
# headers of its own folder, of the layers below it and of include/ (the public API, which
# includes nothing of the layers).  nh-registry.h is generated into the build directory.
# `layers.sh BUILD` also checks the calls of the engine library built in BUILD: a folder's
# objects use only what its own folder and the layers below it define, so that no call goes
# up through include/ either (the parts once read their keys through engine/config.c).
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-}
fail=0
n=0
check() {   # folder, then the folders whose headers it may include
    dir=$1
    bad=0
    shift
    allowed=" nh-registry.h "
    for d in "$@"; do
        for h in "$top/$d"/*.h; do
            [ -e "$h" ] && allowed="$allowed$(basename "$h") "
        done
    done
    for f in "$top/$dir"/*.c "$top/$dir"/*.h; do
        [ -e "$f" ] || continue
        for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
            case $allowed in
                *" $inc "*) ;;
                *) echo "# $dir/$(basename "$f") includes $inc, which is not below it"; bad=1 ;;
            esac
        done
    done
    n=$((n + 1))
    if [ $bad = 0 ]; then echo "ok $n $dir"; else echo "not ok $n $dir"; fail=1; fi
}
check include include
check ftl ftl include
check buffers buffers ftl include
check engine engine buffers ftl include
check bar-pm bar-pm include
check tools tools include

# calls: folder, then the folders whose definitions its objects may use
calls() {
    dir=$1
    bad=0
    shift
    objs=$build/libnh-engine.a.p
    for f in "$objs/$dir"_*.o; do
        for sym in $(nm -u "$f" | awk '$2 ~ /^(nh|hy|pmap)_/ { print $2 }'); do
            where=$(grep -l "^[0-9a-f]* [TDRB] $sym\$" "$tmp"/*.defs | xargs -r -n1 basename |
                    sed 's/\.defs$//')
            where=${where:-no folder}
            case " $dir $* " in
                *" $where "*) ;;
                *) echo "# $dir: $(basename "$f") calls $sym of $where"; bad=1 ;;
            esac
        done
    done
    n=$((n + 1))
    if [ $bad = 0 ]; then echo "ok $n calls of $dir"; else echo "not ok $n calls of $dir"; fail=1; fi
}
if [ -n "$build" ]; then
    tmp=$(mktemp -d)
    for d in ftl buffers engine bar-pm; do
        for f in "$build/libnh-engine.a.p/$d"_*.o; do nm --defined-only "$f"; done >"$tmp/$d.defs"
    done
    calls ftl
    calls buffers ftl
    calls engine buffers ftl bar-pm
    calls bar-pm ftl
    rm -rf "$tmp"
fi
echo "1..$n"
exit $fail
