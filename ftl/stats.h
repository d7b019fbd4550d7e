/*
 * stats.h - counters and latency histograms, which every layer increments (the JSON document
 * built from them is the engine's: engine/stats.c).
 *
 * Contract:
 *  - Everything here is a plain counter incremented on the hot path; rates and ratios (waf,
 *    means, percentiles) are derived when the document is built, never stored.
 *  - The JSON key of every field is given next to it; docs/statistics.md says what increments
 *    each one and when.  Keys that no FTL in the build increments yet are still emitted (as 0),
 *    so consumers can rely on the schema.
 *  - Latency histograms are log-linear: exact below 64 ns, then 32 buckets per power of two, so
 *    a percentile is at most 1/32 (3.1%) above the true value.
 */
#ifndef NH_STATS_H
#define NH_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define NH_HIST_SUB_BITS 5
#define NH_HIST_BUCKETS (64 + (64 - 6) * 32)

typedef struct NhHist {
    uint64_t count, sum, max;
    uint64_t bucket[NH_HIST_BUCKETS];
} NhHist;

typedef struct NhStats {
    uint64_t host_read_cmds;            /* host.read_cmds */
    uint64_t host_write_cmds;           /* host.write_cmds */
    uint64_t host_trim_cmds;            /* host.trim_cmds */
    uint64_t host_flush_cmds;           /* host.flush_cmds */
    uint64_t host_read_bytes;           /* host.read_bytes */
    uint64_t host_write_bytes;          /* host.write_bytes */
    uint64_t host_trim_bytes;           /* host.trim_bytes */
    uint64_t host_write_pages;          /* host.write_pages: flash pages host writes touched */
    uint64_t nand_page_reads;           /* nand.page_reads */
    uint64_t nand_page_programs;        /* nand.page_programs */
    uint64_t nand_block_erases;         /* nand.block_erases */
    uint64_t ftl_gc_page_copies;        /* ftl.gc_page_copies */
    uint64_t ftl_gc_blocks;             /* ftl.gc_blocks */
    uint64_t ftl_gc_foreground_blocks;  /* ftl.gc_foreground_blocks */
    uint64_t ftl_wl_page_copies;        /* ftl.wl_page_copies */
    uint64_t ftl_wl_blocks;             /* ftl.wl_blocks */
    uint64_t ftl_rmw_reads;             /* ftl.rmw_reads */
    uint64_t ftl_merges_switch;         /* ftl.merges.switch */
    uint64_t ftl_merges_partial;        /* ftl.merges.partial */
    uint64_t ftl_merges_full;           /* ftl.merges.full */
    uint64_t ftl_cmt_hits;              /* ftl.cmt.hits */
    uint64_t ftl_cmt_misses;            /* ftl.cmt.misses */
    uint64_t ftl_translation_page_reads;  /* ftl.translation_page_reads */
    uint64_t ftl_translation_page_writes; /* ftl.translation_page_writes */
    /* write buffer and read cache (buffers/); all pages are flash pages */
    uint64_t buf_write_hits;            /* buffer.write_hits: pages written that were dirty */
    uint64_t buf_read_hits;             /* buffer.read_hits: pages read from the write buffer */
    uint64_t buf_evictions;             /* buffer.evictions: victims destaged to make room */
    uint64_t buf_destage_pages;         /* buffer.destage_pages: pages the buffer wrote to the FTL */
    uint64_t buf_padding_reads;         /* buffer.padding_reads */
    uint64_t buf_merge_on_flush_pages;  /* buffer.merge_on_flush_pages */
    uint64_t buf_metadata_bytes;        /* buffer.metadata_bytes: peak, buffer and cache */
    uint64_t cache_read_hits;           /* cache.read_hits */
    uint64_t cache_read_misses;         /* cache.read_misses */
    uint64_t lbuf_sessions;             /* buffer.lbuf.sessions */
    uint64_t lbuf_alpha_sessions[9];    /* buffer.lbuf.alpha_sessions: sessions per instance */
    uint64_t lbuf_alpha_milli;          /* buffer.lbuf.alpha: (alpha in force + 1) * 1000 */
    uint64_t lbuf_lambda_milli;         /* buffer.lbuf.lambda: lambda in force * 1000 */
    uint64_t lbuf_sim_bytes;            /* buffer.lbuf.sim_bytes: peak meta-simulation memory */
    NhHist   buf_destage_len;           /* buffer.destage_length: pages per destage */
    NhHist   lat_read;                  /* latency_ns.read */
    NhHist   lat_write;                 /* latency_ns.write */
    /* Added after the histograms so that a state file's counter section from before them is a
     * prefix of this one (state.c loads it with these at 0). */
    uint64_t nand_program_ops;          /* nand.program_ops: tPROGs (multi-plane, one-shot) */
    uint64_t nand_read_ops;             /* nand.read_ops: tRs (multi-plane reads) */
    uint64_t ftl_stripe_merges;         /* ftl.stripe_merges: full stripes programmed */
    uint64_t ftl_stripe_partial;        /* ftl.stripe_partial: partial stripes forced out */
    uint64_t ftl_stripe_pages;          /* ftl.stripe_pages: staged pages programmed */
    uint64_t ftl_stripe_overwrites;     /* ftl.stripe_overwrites: staged pages rewritten */
    uint64_t ftl_stripe_padding;        /* ftl.stripe_padding: one-shot word-line fill pages */
} NhStats;

/* Words of NhStats up to lat_write: the counter section of every state file written before
 * nand_program_ops was added. */
#define NH_STATS_V1_WORDS (offsetof(NhStats, nand_program_ops) / 8)

static inline unsigned nh_hist_index(uint64_t v)
{
    unsigned e;
    if (v < 64) {
        return (unsigned)v;
    }
    e = 63 - (unsigned)__builtin_clzll(v);
    return 64 + (e - 6) * 32 + (unsigned)((v >> (e - NH_HIST_SUB_BITS)) & 31);
}

static inline void nh_hist_add(NhHist *h, uint64_t v)
{
    h->count++;
    h->sum += v;
    if (v > h->max) {
        h->max = v;
    }
    h->bucket[nh_hist_index(v)]++;
}

#endif
