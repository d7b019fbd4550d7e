#!/bin/bash
# The guest half of scripts/soak: for SECONDS seconds (passes start until then), keep the
# namespace about 95% full and busy.  Each pass:
#   1. fio over the filled region: 4 KiB random writes with crc32c verify headers, verified
#      while it runs (verify_backlog) and at its end, beside a reader job;
#   2. 16 random 1 MiB ranges deallocated (blkdiscard) and checked to read zeroes (fio's own
#      trim_percentage/trim_verify_zero crash bookworm's fio 3.33 with a double free);
#   3. nvme flush;
#   4. a controller reset (nvme reset), waiting for the namespace to answer again;
#   5. every third pass: one Dataset Management deallocate of the whole namespace, a check
#      that all of it reads zeroes, and the region written again (sequential, verified).
# Every step is a line in /mnt/share/steps ("<pass> <step> <seconds>"), written when it has
# ended; a failed step ends the run with its output in /mnt/share/failed and exit status 1.
set -u
duration=$1
share=/mnt/share
dev=$(nvme-hybrid-dev)
ctrl=$(nvme-hybrid-dev --ctrl)
lba=$(blockdev --getss "$dev")
bytes=$(blockdev --getsize64 "$dev")
region=$(( bytes * 95 / 100 / 1048576 * 1048576 ))
: > $share/steps

fail() {
    { echo "pass $pass: $1 failed"; cat /tmp/out; } > $share/failed
    exit 1
}

step() {    # step NAME COMMAND...: run it, log it, stop the soak when it fails
    local name=$1 t0=$SECONDS
    shift
    "$@" > /tmp/out 2>&1 || fail "$name"
    echo "$pass $name $((SECONDS - t0))" >> $share/steps
}

fill() {
    fio --name=fill --filename="$dev" --direct=1 --ioengine=libaio --iodepth=8 \
        --rw=write --bs=128k --size=$region --verify=crc32c --do_verify=1 --verify_fatal=1
}

mixed() {
    fio --filename="$dev" --direct=1 --ioengine=libaio --size=$region --randrepeat=0 \
        --name=writer --rw=randwrite --bs=4k --iodepth=8 --io_size=$((region / 2)) \
        --verify=crc32c --verify_backlog=512 --verify_fatal=1 --do_verify=1 \
        --name=reader --rw=randread --bs=16k --iodepth=4 --io_size=$((region / 8))
}

trim_ranges() {
    local mib=$((region / 1048576)) off
    for _ in $(seq 16); do
        off=$(( (RANDOM * 32768 + RANDOM) % mib * 1048576 ))
        blkdiscard -o $off -l 1048576 "$dev" || return 1
        cmp -n 1048576 -i $off:0 "$dev" /dev/zero || return 1
    done
}

reset_ctrl() {
    nvme reset "$ctrl" || return 1
    for _ in $(seq 300); do
        dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct 2>/dev/null && return 0
        sleep 0.2
    done
    echo "the namespace did not answer within 60 s of the reset"
    return 1
}

deallocate_all() {
    nvme dsm "$dev" --namespace-id=1 --ad --slbs=0 --blocks=$((bytes / lba)) || return 1
    cmp -n "$bytes" "$dev" /dev/zero
}

pass=0
step fill fill
while [ $SECONDS -lt "$duration" ]; do
    pass=$((pass + 1))
    step mixed mixed
    step trim trim_ranges
    step flush nvme flush "$dev" --namespace-id=1
    step reset reset_ctrl
    if [ $((pass % 3)) = 0 ]; then
        step deallocate deallocate_all
        step fill fill
    fi
done
echo "$pass done 0" >> $share/steps
