/*
 * nhwal-priv.h - what nhwal.c (state, setup, fd table, flusher, barriers) shares with
 * nhwal-calls.c (the intercepted libc entry points) inside libnhwal.so.
 *
 * A preload library's exported names can bind to, or be bound by, symbols of the program it
 * is loaded into, so splitting the file must not add any: everything declared here is hidden
 * (absent from the dynamic symbol table) and named nhwal_* or real_*.
 * Include it after the includer's _GNU_SOURCE / _FILE_OFFSET_BITS preamble and libc headers.
 */
#ifndef NHWAL_PRIV_H
#define NHWAL_PRIV_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "nhwal-core.h"

#pragma GCC visibility push(hidden)

#define MAX_PATTERNS    16

struct nhwal_state {
    int active;
    nhwal w;
    char *patterns[MAX_PATTERNS];
    int npatterns;
    /* per-process fd table (inherited by fork, rebuilt after exec from /proc/self/fd) */
    struct fdent { char *path; uint8_t tracked; } *fds;
    size_t nfds;
    size_t fd_hi;           /* every tracked fd is below this */
    pthread_mutex_t fd_lock;
    uint64_t seen_renames;
    /* background flusher */
    pthread_mutex_t flusher_lock;
    int flusher_started;
    uint64_t flush_after_ns;
};
extern struct nhwal_state nhwal_g;

/* The libc functions we intercept, resolved with dlsym(RTLD_NEXT) by nhwal_resolve(). */
#define REAL(name) extern __typeof__(name) *real_##name
REAL(openat); REAL(close); REAL(write); REAL(pwrite); REAL(writev); REAL(pwritev);
REAL(fsync); REAL(fdatasync); REAL(ftruncate); REAL(truncate); REAL(renameat2);
REAL(rename); REAL(renameat); REAL(unlink); REAL(unlinkat); REAL(dup); REAL(dup2); REAL(dup3);
REAL(fcntl); REAL(fopen); REAL(fopen64);
#undef REAL

void nhwal_resolve(void);
int nhwal_abs_path(int dirfd, const char *path, char *out, size_t len);
int nhwal_matches(const char *abs);
struct fdent *nhwal_fdent(int fd);
void nhwal_track(int fd, const char *abs);
void nhwal_untrack(int fd);
void nhwal_copy_track(int from, int to);
void nhwal_reresolve(void);
void nhwal_start_flusher(void);
int nhwal_barrier_at(int dirfd, const char *path, char *abs, size_t len);
void nhwal_renamed(void);
void nhwal_logged_truncate(int fd, const char *abs, uint64_t size);
void nhwal_sync_parent(const char *abs);

#pragma GCC visibility pop

#endif
