/*
 * nhwal-core.h - a walring (walring.h) in the BAR1 window of nvme-hybrid: find a ring by name
 * in the window, attach the shared control block (/dev/shm/nhwal-<ctrl>-<name>), replay the
 * ring when this is the first process since boot.  Shared by the preload library
 * (bar-pm/nhwal.c) and the `nhwal` tool (bar-pm/nhwal-tool.c).  Files are reached with raw
 * system calls, never through the interposed libc functions.
 */
#ifndef NHWAL_CORE_H
#define NHWAL_CORE_H

#include "libba.h"
#include "walring.h"

typedef struct nhwal {
    ba_dev *dev;
    uint64_t ring_off;          /* window offset of the ring */
    walring ring;
    wr_ctl *ctl;
    char name[16];
    long replayed;              /* records replayed by this attach (-1: none attempted) */
    uint64_t replayed_bytes;
} nhwal;

/* Window offset of the ring called @name: 0 found, -ENOENT (none), message in @err. */
int nhwal_find(ba_dev *dev, const char *name, uint64_t *off, char *err, size_t errlen);
/* Open the window of @ctrl (NULL: first nvme-hybrid) without admin commands, find ring @name,
 * attach or create its control block, replay when first.  0 or -errno with @err set. */
int nhwal_attach(nhwal *w, const char *ctrl, const char *name, char *err, size_t errlen);
/* The same on an already opened device (the tool, which opened it with admin rights). */
int nhwal_attach_dev(nhwal *w, ba_dev *dev, const char *name, char *err, size_t errlen);
void nhwal_detach(nhwal *w);

/* fdatasync of the file at @path through raw system calls (the ring's sync callback). */
int nhwal_sync_path(void *ctx, const char *path);
void nhwal_persist(void *ctx);

#endif
