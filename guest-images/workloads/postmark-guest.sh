#!/bin/bash
# The guest half of scripts/bench-seed001 (seed 001's informed cleaning): PostMark on a fresh
# ext4 file system on the namespace, mounted with or without online discard, and the device's
# statistics before and after it.
#
# usage: postmark-guest.sh discard|nodiscard TRANSACTIONS FILES MIN_BYTES MAX_BYTES SEED COLD_MB
# COLD_MB: a file of that many MiB written first and kept (cold data: a fuller file system).
# Writes to /mnt/share: before.json, after.json (nvme-hybrid-stats --json), postmark.txt
# (PostMark's report), df.txt (the file system's use at the end).
set -euo pipefail
mode=$1 transactions=$2 files=$3 min=$4 max=$5 seed=$6 cold=$7
share=/mnt/share
dev=$(nvme-hybrid-dev)
case $mode in
    discard|nodiscard) ;;
    *) echo "postmark-guest.sh: mode must be discard or nodiscard, got '$mode'" >&2; exit 2 ;;
esac
# Both modes make the same file system: mkfs's own discard of the whole namespace is off (a
# fresh device holds nothing), and the inode tables and journal are written now rather than by
# ext4lazyinit in the middle of the run.
mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$dev"
# At most 4 MiB dirty (writeback from 1 MiB on) and none older than a second, as in a file
# system under load whose writes reach the device: otherwise most of PostMark's short-lived
# files would live and die in the page cache of a 1 GiB guest, and how many did would depend on
# how fast TCG ran the guest (with the time limits alone, the pages GC moved without discard
# ranged from 63,000 to 186,000 between neighbouring transaction counts).
sysctl -q vm.dirty_background_bytes=1048576 vm.dirty_bytes=4194304 \
    vm.dirty_expire_centisecs=100 vm.dirty_writeback_centisecs=50
mkdir -p /mnt/pm
mount -o "$mode" "$dev" /mnt/pm
if [ "$cold" -gt 0 ]; then
    dd if=/dev/urandom of=/mnt/pm/cold bs=1M count="$cold" conv=fsync status=none
fi
nvme-hybrid-stats --json > $share/before.json
cat > /tmp/pm.cfg <<CFG
set location /mnt/pm
set number $files
set size $min $max
set transactions $transactions
set seed $seed
set buffering false
run
quit
CFG
postmark /tmp/pm.cfg > $share/postmark.txt
df -k /mnt/pm > $share/df.txt
# Unmounting writes back what is dirty and, with discard, issues the last frees.
umount /mnt/pm
nvme-hybrid-stats --json > $share/after.json
