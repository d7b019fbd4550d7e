/*
 * dftl.h - DFTL's insides, shared by ftl-dftl.c (mapping, translation pages, the ops) and
 * dftl-cmt.c (the cached mapping table: hash, LRU, dirty lists, live resizing, its check).
 */
#ifndef NH_DFTL_H
#define NH_DFTL_H

#include "pagemap.h"

enum { FRONT_TRANS = FRONT_GC + 1, NFRONT };
enum { KIND_TRANS = KIND_DATA + 1 };

#define ENTRY_BYTES 8       /* a CMT entry: 4-byte lpn and 4-byte ppn, as DFTL counts it */

typedef struct Entry {
    uint32_t lpn;
    uint32_t prev, next;    /* LRU list, MRU at head */
    uint32_t tprev, tnext;  /* dirty entries of the same translation page, while dirty */
    bool     dirty;
} Entry;

typedef struct Dftl {
    PmapFtl    pm;          /* pm.l2p: the current mapping, see ftl-dftl.c's file comment */
    uint32_t   epp;         /* entries per translation page */
    uint32_t   ntp;         /* translation pages */
    uint32_t  *gtd;         /* [ntp] ppn + 1 of each translation page, 0 never written */
    uint32_t  *dhead;       /* [ntp] first dirty cached entry of the page: cleaning a page
                             * after its write-back touches only its dirty entries */
    uint32_t  *stamp;       /* [ntp] batch number that last queued the page for an update */
    uint32_t  *batch;       /* [pages] translation pages queued by one GC step */
    uint32_t   nbatch, batch_no;
    /* CMT: entries, an LRU list and an open-addressing hash from lpn to entry */
    Entry     *e;
    uint32_t   cap, count, lru_head, lru_tail;
    uint32_t   maxcap;      /* entries allocated: cap at DStream's k = 1, else cap */
    uint32_t  *hash;        /* entry + 1, 0 empty */
    uint32_t   hmask;
    uint64_t   cmt_size;    /* the cmt-size key, bytes */
    uint64_t   mem, sbuf;   /* DStream: device memory, a stream's buffer (mem 0: cmt-size) */
} Dftl;

/* DFTL's own counters (docs/statistics.md), in env.counters */
enum { CMT_HITS, CMT_MISSES, TP_READS, TP_WRITES };

/* the CMT (dftl-cmt.c) */
uint32_t dftl_cmt_find(const Dftl *f, uint32_t lpn);
void dftl_hash_insert(Dftl *f, uint32_t idx);
void dftl_hash_remove(Dftl *f, uint32_t lpn);
void dftl_lru_unlink(Dftl *f, uint32_t i);
void dftl_lru_push_head(Dftl *f, uint32_t i);
void dftl_set_dirty(Dftl *f, uint32_t i);
/* Capacity @cap (at most f->maxcap): least recently used entries beyond it are evicted, the
 * dirty ones written back first.  Returns when that flash work ends. */
uint64_t dftl_cmt_resize(Dftl *f, uint32_t cap, uint64_t now);
char *dftl_check_cmt(Dftl *f);

/* ftl-dftl.c: rewrite translation page @tv (see there) */
uint64_t dftl_write_tpage(Dftl *f, uint32_t tv, uint32_t pu, uint64_t start);

#endif
