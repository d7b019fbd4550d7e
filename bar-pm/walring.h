/*
 * walring.h - a write-through redo ring for database logs in persistent memory (the BAR1
 * window of nvme-hybrid, issue 12, docs/dblog.md).  This is the mechanism only: the ring's
 * format in persistent memory, appends by several processes, the flush that frees space, and
 * the replay after a power loss.  It knows nothing of libc interposition (bar-pm/nhwal.c) or
 * of the device: the persistent region is any memory (the window, or in tests a shared mmap of
 * a file), made durable by a caller-supplied persist function.
 *
 * Two regions:
 *  - the ring (persistent): a 4 KiB superblock (magic, name, geometry, the persisted tail) and the
 *    record area.  A record is a 64-byte header (position, file offset, lengths, CRC-32C),
 *    the file's path and the bytes written (or, for a truncation, the new size), padded to
 *    64 bytes; it never wraps (a pad record
 *    fills the end of the area).  A record is valid when its magic, its position (the 64-bit
 *    byte position since the ring was formatted, so stale records of an earlier lap fail) and
 *    its CRC match.
 *  - the control block (volatile, shared by every process using the ring: a file in
 *    /dev/shm): robust process-shared locks, head and tail, the set of files with records
 *    not yet flushed.  It does not survive a reboot, and need not: a fresh one means "replay
 *    the ring first".
 *
 * Appends are serialized by the order lock (wr_lock), which the caller holds across its write
 * to the file and the append, so the ring's order is the files' write order.  An append stores
 * the record, persists it, and only then publishes the new head: a process killed before that
 * leaves the head where it was and the next appender overwrites the torn record, so the valid
 * records always form one contiguous run from the tail.  When the ring is full, the appender
 * flushes (back-pressure): the flush syncs every file with records in the ring (a callback:
 * fdatasync), persists the new tail, and the space is free.  Nothing is ever dropped.
 */
#ifndef WALRING_H
#define WALRING_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WR_SB_SIZE          4096u
#define WR_MIN_SIZE         (64u * 1024)       /* superblock + 60 KiB of records */
#define WR_PATH_MAX         256                 /* tracked paths are shorter than this */
#define WR_PENDING_MAX      64                  /* files with unflushed records at once */

/* Persist every store made so far into the ring (window: sfence + PMRSTS read). */
typedef void (*wr_persist_fn)(void *ctx);
/* Make the file at @path durable (fdatasync); 0, -ENOENT (the file is gone: its records need
 * no replay) or another negative errno (the flush fails and frees nothing). */
typedef int (*wr_sync_fn)(void *ctx, const char *path);
/* Replay: write @len bytes at @off of @path. 0 or a negative errno. */
typedef int (*wr_apply_fn)(void *ctx, const char *path, uint64_t off, const void *buf,
                           size_t len);
/* Replay: set the size of @path to @size (creating it if missing). 0 or a negative errno. */
typedef int (*wr_truncate_fn)(void *ctx, const char *path, uint64_t size);

typedef struct wr_pending {
    uint64_t max_end;                   /* ring position after this file's last record */
    char path[WR_PATH_MAX];
} wr_pending;

/* The shared volatile control block; lives in a MAP_SHARED mapping. */
typedef struct wr_ctl {
    uint64_t magic;
    uint32_t ready;                     /* replay done, head/tail valid */
    uint32_t pad;
    uint64_t data_size;                 /* of the ring it belongs to */
    pthread_mutex_t order;              /* appends, across the file write */
    pthread_mutex_t flush;              /* one flush at a time */
    pthread_mutex_t state;              /* tail and the pending set */
    uint64_t head;                      /* next record position (published after persist) */
    uint64_t tail;                      /* oldest record still needed */
    uint32_t npending;
    uint32_t pad2;
    wr_pending pending[WR_PENDING_MAX];
    /* counters, for nhwal status and the benchmarks */
    uint64_t appends, append_bytes, flushes, full_waits, replayed;
    uint64_t renames;                   /* renames/unlinks seen (the preload library's) */
} wr_ctl;

typedef struct walring {
    volatile uint8_t *base;             /* the ring's persistent region */
    size_t size;
    uint64_t data_size;                 /* size - WR_SB_SIZE */
    wr_ctl *ctl;
    wr_persist_fn persist;
    wr_sync_fn sync;
    void *ctx;
    /* Test hook: called after a record's stores, before its persist; may _exit(). */
    void (*after_store)(void *ctx);
} walring;

/* Write a new, empty superblock into @region (@size bytes, at least WR_MIN_SIZE, a multiple
 * of 64) and persist it. */
int wr_format(volatile void *region, size_t size, const char *name, wr_persist_fn persist,
              void *ctx);
/* Is there a valid superblock in @region?  0, or -EINVAL with the reason in @err. */
int wr_check(const volatile void *region, size_t size, char *err, size_t errlen);
/* Ring size recorded in a valid superblock. */
uint64_t wr_ring_size(const volatile void *region);
/* Its name (at most 15 characters), NUL-terminated into @name. */
void wr_ring_name(const volatile void *region, char name[16]);

/* Initialize a zeroed control block (first process since boot); the caller then replays. */
int wr_ctl_init(wr_ctl *ctl, uint64_t data_size);

/* Bind @r to its regions.  The superblock must be valid (wr_check). */
void wr_bind(walring *r, volatile void *region, size_t size, wr_ctl *ctl, wr_persist_fn persist,
             wr_sync_fn sync, void *ctx);

/* Replay every valid record from the persisted tail through @apply, then (when @apply
 * succeeded for all) sync each file replayed, persist the new tail and set the control
 * block's head and tail: the ring is empty.  Returns the number of records replayed, or a
 * negative errno (then the ring is left untouched, for another try).  @nbytes: bytes replayed. */
long wr_replay(walring *r, wr_apply_fn apply, wr_truncate_fn truncate, uint64_t *nbytes);
/* Only scan: count the valid records and bytes from the tail (no writes). */
long wr_scan(const walring *r, uint64_t *nbytes);

/* The order lock, held by the caller across its file write and wr_append. */
void wr_lock(walring *r);
void wr_unlock(walring *r);
/* Append a record (caller holds wr_lock): split into several when larger than a quarter of
 * the ring; waits for space by flushing.  Returns once every record is persisted: 0 or a
 * negative errno (a flush failed: nothing was lost, but this write is not in the ring). */
int wr_append(walring *r, const char *path, uint64_t off, const void *buf, size_t len);
/* Record that @path's size became @size (ftruncate, O_TRUNC), under wr_lock like an append:
 * the replay cuts the file there, between the writes before and after. */
int wr_append_truncate(walring *r, const char *path, uint64_t size);
/* Sync the files of every record published so far and free their space. 0 or -errno. */
int wr_flush(walring *r);
/* Is @path among the files with records not yet flushed? */
int wr_pending_has(walring *r, const char *path);
/* Bytes of the ring in use. */
uint64_t wr_used(const walring *r);

/* CRC-32C of @buf continuing @crc (0 to start): with SSE4.2's crc32 instruction when the CPU
 * has it.  wr_crc32c_portable is the table loop used otherwise, exposed so that the tests hold
 * the two to the same answers. */
uint32_t wr_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t wr_crc32c_portable(uint32_t crc, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
