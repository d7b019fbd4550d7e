/*
 * cache.c - the read cache: an LRU of clean pages in device DRAM (`cache-size`), filled by host
 * reads that went to flash.  Its pages live in the buffer's page and block indexes (buffer.h),
 * so cbm's merge-on-flush finds a victim block's clean pages on the block entry; for the other
 * policies the cache works on its own.  A write drops the page's clean copy (it is stale), a
 * trim drops it too; a destage never adds to the cache.
 */
#include "buffer.h"

void nh_cache_drop(NhBuf *b, NhBufPage *pg)
{
    NhBufBlock *k = pg->blk;

    g_assert(!pg->dirty);
    g_queue_unlink(&b->cache_lru, &pg->lru);
    g_queue_unlink(&k->clean, &pg->link);
    g_hash_table_remove(b->pages_idx, &pg->lpn);
    g_free(pg);
    b->cached--;
    nh_buf_block_put(b, k);
}

void nh_cache_touch(NhBuf *b, NhBufPage *pg)
{
    g_queue_unlink(&b->cache_lru, &pg->lru);
    g_queue_push_tail_link(&b->cache_lru, &pg->lru);
}

/* @lpn was just read from flash and is neither dirty nor cached. */
void nh_cache_insert(NhBuf *b, uint64_t lpn)
{
    NhBufBlock *k;
    NhBufPage *pg;

    if (g_hash_table_contains(b->pages_idx, &lpn)) {
        return;
    }
    if (b->cached == b->cache_cap) {
        nh_cache_drop(b, b->cache_lru.head->data);
    }
    k = nh_buf_block_get(b, lpn / b->pages);
    pg = nh_buf_page_new(b, k, lpn, false);
    g_queue_push_tail_link(&b->cache_lru, &pg->lru);
    b->cached++;
}
