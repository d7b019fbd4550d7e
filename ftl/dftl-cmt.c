/*
 * dftl-cmt.c - DFTL's cached mapping table (contract in dftl.h; the rules in ftl-dftl.c).
 */
#include "dftl.h"

static inline uint32_t hslot(const Dftl *f, uint32_t lpn)
{
    return (lpn * 0x9E3779B1u) & f->hmask;
}

uint32_t dftl_cmt_find(const Dftl *f, uint32_t lpn)
{
    for (uint32_t s = hslot(f, lpn);; s = (s + 1) & f->hmask) {
        uint32_t i1 = f->hash[s];
        if (!i1) {
            return NH_NONE;
        }
        if (f->e[i1 - 1].lpn == lpn) {
            return i1 - 1;
        }
    }
}

void dftl_hash_insert(Dftl *f, uint32_t idx)
{
    uint32_t s = hslot(f, f->e[idx].lpn);
    while (f->hash[s]) {
        s = (s + 1) & f->hmask;
    }
    f->hash[s] = idx + 1;
}

/* Linear probing deletion by backward shift, so lookups never need tombstones. */
void dftl_hash_remove(Dftl *f, uint32_t lpn)
{
    uint32_t s = hslot(f, lpn);
    while (f->e[f->hash[s] - 1].lpn != lpn) {
        s = (s + 1) & f->hmask;
    }
    for (uint32_t j = (s + 1) & f->hmask; f->hash[j]; j = (j + 1) & f->hmask) {
        uint32_t home = hslot(f, f->e[f->hash[j] - 1].lpn);
        /* move j's entry into the hole unless its home lies cyclically in (s, j] */
        if (((j - home) & f->hmask) >= ((j - s) & f->hmask)) {
            f->hash[s] = f->hash[j];
            s = j;
        }
    }
    f->hash[s] = 0;
}

void dftl_lru_unlink(Dftl *f, uint32_t i)
{
    Entry *x = &f->e[i];
    if (x->prev != NH_NONE) {
        f->e[x->prev].next = x->next;
    } else {
        f->lru_head = x->next;
    }
    if (x->next != NH_NONE) {
        f->e[x->next].prev = x->prev;
    } else {
        f->lru_tail = x->prev;
    }
}

void dftl_lru_push_head(Dftl *f, uint32_t i)
{
    Entry *x = &f->e[i];
    x->prev = NH_NONE;
    x->next = f->lru_head;
    if (f->lru_head != NH_NONE) {
        f->e[f->lru_head].prev = i;
    } else {
        f->lru_tail = i;
    }
    f->lru_head = i;
}

void dftl_set_dirty(Dftl *f, uint32_t i)
{
    uint32_t tv = f->e[i].lpn / f->epp;

    if (f->e[i].dirty) {
        return;
    }
    f->e[i].dirty = true;
    f->e[i].tprev = NH_NONE;
    f->e[i].tnext = f->dhead[tv];
    if (f->dhead[tv] != NH_NONE) {
        f->e[f->dhead[tv]].tprev = i;
    }
    f->dhead[tv] = i;
}


/* ------------------------------------------------------------------ consistency */

char *dftl_check_cmt(Dftl *f)
{
    uint32_t n = 0, ndirty = 0, listed = 0;
    char *err = NULL;

    for (uint32_t i = f->lru_head; i != NH_NONE && !err; i = f->e[i].next) {
        ndirty += f->e[i].dirty;
        if (++n > f->count) {
            err = g_strdup("CMT LRU list longer than the CMT");
        } else if (dftl_cmt_find(f, f->e[i].lpn) != i) {
            err = g_strdup_printf("CMT entry %u (lpn %u) not found by its hash", i, f->e[i].lpn);
        } else if (f->e[i].next != NH_NONE && f->e[f->e[i].next].prev != i) {
            err = g_strdup_printf("CMT LRU list broken at entry %u", i);
        }
    }
    if (!err && (n != f->count || f->count > f->cap)) {
        err = g_strdup_printf("CMT holds %u entries, LRU list %u, capacity %u", f->count, n,
                              f->cap);
    }
    for (uint32_t tv = 0; tv < f->ntp && !err; tv++) {
        for (uint32_t i = f->dhead[tv]; i != NH_NONE && !err; i = f->e[i].tnext) {
            if (++listed > ndirty || !f->e[i].dirty || f->e[i].lpn / f->epp != tv) {
                err = g_strdup_printf("CMT entry for lpn %u wrongly on the dirty list of "
                                      "translation page %u", f->e[i].lpn, tv);
            }
        }
    }
    if (!err && listed != ndirty) {
        err = g_strdup_printf("%u dirty CMT entries, %u on dirty lists", ndirty, listed);
    }
    /* a mapping that is not dirty in the CMT must be on flash */
    for (uint64_t lpn = 0; lpn < f->pm.env.lpages && !err; lpn++) {
        uint32_t tv = (uint32_t)(lpn / f->epp), i;
        if (!f->pm.l2p[lpn] || f->gtd[tv]) {
            continue;
        }
        i = dftl_cmt_find(f, (uint32_t)lpn);
        if (i == NH_NONE || !f->e[i].dirty) {
            err = g_strdup_printf("lpn %" G_GUINT64_FORMAT " is mapped, not dirty in the CMT, "
                                  "and its translation page %u was never written", lpn, tv);
        }
    }
    return err;
}


/* Entry @from moves to the free index @to: every link to it follows. */
static void move_entry(Dftl *f, uint32_t from, uint32_t to)
{
    Entry *x = &f->e[to];
    uint32_t s = hslot(f, f->e[from].lpn);

    *x = f->e[from];
    while (f->hash[s] != from + 1) {
        s = (s + 1) & f->hmask;
    }
    f->hash[s] = to + 1;
    if (x->prev != NH_NONE) {
        f->e[x->prev].next = to;
    } else {
        f->lru_head = to;
    }
    if (x->next != NH_NONE) {
        f->e[x->next].prev = to;
    } else {
        f->lru_tail = to;
    }
    if (x->dirty) {
        if (x->tprev != NH_NONE) {
            f->e[x->tprev].tnext = to;
        } else {
            f->dhead[x->lpn / f->epp] = to;
        }
        if (x->tnext != NH_NONE) {
            f->e[x->tnext].tprev = to;
        }
    }
}

uint64_t dftl_cmt_resize(Dftl *f, uint32_t cap, uint64_t now)
{
    uint64_t done = now;

    g_assert(cap <= f->maxcap);
    while (f->count > cap) {
        uint32_t i = f->lru_tail;
        if (f->e[i].dirty) {    /* the write-back cleans it, and so unlinks it */
            uint64_t t = dftl_write_tpage(f, f->e[i].lpn / f->epp, NH_NONE, now);
            done = MAX(done, t);
        }
        dftl_lru_unlink(f, i);
        dftl_hash_remove(f, f->e[i].lpn);
        if (i != --f->count) {
            move_entry(f, f->count, i);     /* entries stay in [0, count) */
        }
    }
    f->cap = cap;
    return done;
}
