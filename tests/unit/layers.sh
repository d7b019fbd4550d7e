#!/bin/sh
# The layers include only downwards (docs/engine.md): a file of a layer may include the
# headers of its own folder, of the layers below it and of include/ (the public API, which
# includes nothing of the layers).  nh-registry.h is generated into the build directory.
top=$(cd "$(dirname "$0")/../.." && pwd)
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
echo "1..$n"
exit $fail
