/*
 * nh-heap.h - a binary min-heap of 32-bit items (block numbers, slot numbers) ordered by a key
 * the caller computes: the free-block pools of ftl/blocks.c (least worn first) and
 * ftl/hybrid.c (least worn, then spread over planes), and the requests in flight of the
 * simulator (earliest completion first).  The caller owns the array and the count: push with
 * the count before the push, pop with the count before the pop, and update the count itself.
 * @key orders the items; it is called with @ctx.  Header only: no symbol of the engine.
 */
#ifndef NH_HEAP_H
#define NH_HEAP_H

#include <stdint.h>

typedef uint64_t (*NhHeapKey)(const void *ctx, uint32_t item);

static inline void nh_heap_push(uint32_t *heap, uint64_t n, uint32_t item, NhHeapKey key,
                                const void *ctx)
{
    uint64_t i = n, kb = key(ctx, item);

    while (i) {
        uint64_t parent = (i - 1) / 2;
        if (key(ctx, heap[parent]) <= kb) {
            break;
        }
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = item;
}

/* The smallest item; @n > 0 is the count before the pop. */
static inline uint32_t nh_heap_pop(uint32_t *heap, uint64_t n, NhHeapKey key, const void *ctx)
{
    uint32_t top = heap[0], last = heap[--n];
    uint64_t i = 0, kl = key(ctx, last);

    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && key(ctx, heap[c + 1]) < key(ctx, heap[c])) {
            c++;
        }
        if (kl <= key(ctx, heap[c])) {
            break;
        }
        heap[i] = heap[c];
        i = c;
    }
    if (n) {
        heap[i] = last;
    }
    return top;
}

#endif
