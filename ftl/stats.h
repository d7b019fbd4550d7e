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

/* Room for every policy's own counters together (the engine asserts that they fit). */
#define NH_STATS_POLICY_SLOTS 1024

/*
 * The counters every device has.  The JSON key of each is its entry in the engine's statistics
 * table (engine/stats.c), which also names it in the state file.
 */
typedef struct NhStats {
    uint64_t host_read_cmds;            /* host.read_cmds */
    uint64_t host_write_cmds;           /* host.write_cmds */
    uint64_t host_trim_cmds;            /* host.trim_cmds */
    uint64_t host_flush_cmds;           /* host.flush_cmds */
    uint64_t host_read_bytes;           /* host.read_bytes */
    uint64_t host_write_bytes;          /* host.write_bytes */
    uint64_t host_trim_bytes;           /* host.trim_bytes */
    uint64_t host_write_pages;          /* host.write_pages: flash pages host writes touched */
    uint64_t host_unwritten_read_pages; /* host.unwritten_read_pages */
    uint64_t nand_page_reads;           /* nand.page_reads */
    uint64_t nand_page_programs;        /* nand.page_programs */
    uint64_t nand_block_erases;         /* nand.block_erases */
    uint64_t nand_program_ops;          /* nand.program_ops: tPROGs (multi-plane, one-shot) */
    uint64_t nand_read_ops;             /* nand.read_ops: tRs (multi-plane reads) */
    uint64_t nand_die_busy_ns;          /* nand.die_busy_ns: summed over the dies */
    uint64_t nand_channel_busy_ns;      /* nand.channel_busy_ns: summed over the channels */
    uint64_t ftl_gc_page_copies;        /* ftl.gc_page_copies */
    uint64_t ftl_gc_blocks;             /* ftl.gc_blocks */
    uint64_t ftl_gc_foreground_blocks;  /* ftl.gc_foreground_blocks */
    uint64_t ftl_wl_page_copies;        /* ftl.wl_page_copies */
    uint64_t ftl_wl_blocks;             /* ftl.wl_blocks */
    uint64_t ftl_rmw_reads;             /* ftl.rmw_reads */
    /* log blocks (bast, fast, sast; lbuf's meta-simulation models them) */
    uint64_t ftl_merges_switch;         /* ftl.merges.switch */
    uint64_t ftl_merges_partial;        /* ftl.merges.partial */
    uint64_t ftl_merges_full;           /* ftl.merges.full */
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
    /* the end of a run (nh_engine_finish): what its drain did, also counted above */
    uint64_t drain_destage_pages;       /* drain.destage_pages */
    uint64_t drain_page_programs;       /* drain.page_programs */
    uint64_t drain_block_erases;        /* drain.block_erases */
    uint64_t drain_gc_page_copies;      /* drain.gc_page_copies */
    uint64_t drain_time_ns;             /* drain.time_ns */
    uint64_t drain_die_busy_ns;         /* drain.die_busy_ns */
    uint64_t drain_channel_busy_ns;     /* drain.channel_busy_ns */
    /* how the device was conditioned (nh_engine_set_conditioning) */
    uint64_t cond_fill_bytes;           /* conditioning.fill_bytes */
    uint64_t cond_seq_writes;           /* conditioning.seq_writes */
    uint64_t cond_rand_writes;          /* conditioning.rand_writes */
    uint64_t cond_rand_erases;          /* conditioning.rand_erases */
    uint64_t cond_idle_gc_blocks;       /* conditioning.idle_gc_blocks */
    uint64_t cond_steady;               /* conditioning.steady: 1 or 0 */
    /* the run's span (run.duration_ns, run.iops are derived from it) */
    uint64_t run_first_ns;              /* run.first_ns: arrival of the first request */
    uint64_t run_last_ns;               /* run.last_ns: the latest completion since then */
    NhHist   buf_destage_len;           /* buffer.destage_length: pages per destage */
    NhHist   lat_read;                  /* latency_ns.read */
    NhHist   lat_write;                 /* latency_ns.write */
    /* the policies' own counters (NhStat tables in their ops), one slot each */
    uint64_t policy[NH_STATS_POLICY_SLOTS];
} NhStats;

/*
 * One entry of a policy's or part's counter table (NhFtlOps.counters, NhBufPolicy.counters,
 * NhPart.counters; ended by an entry without a path).  The engine lists them in the statistics
 * document and saves them in the state file by path; the policy finds them, in its table's
 * order, at the counters pointer of its environment (a part: NhParts.counters).
 */
typedef enum NhStatKind {
    NH_STAT_COUNT,          /* a counter */
    NH_STAT_MILLI,          /* a gauge in thousandths, printed as (value + bias) / 1000 */
    NH_STAT_ARRAY,          /* n counters, printed as an object keyed by the element hook */
    NH_STAT_NOW,            /* a fact of the moment, read by the now hook when the document is
                             * built: no slot, neither saved nor reset */
} NhStatKind;

struct NhNand;

typedef struct NhStat {
    const char *path;       /* the JSON key below the document's root, dot separated */
    NhStatKind  kind;
    uint32_t    n;          /* NH_STAT_ARRAY: slots */
    int32_t     bias;       /* NH_STAT_MILLI */
    /* NH_STAT_ARRAY: the key of element @i in @key, or false when it is not shown; @own is
     * the owner's decoded settings (a part's, part.h) or its keys' values (a policy's, in its
     * table's order) */
    bool (*element)(const void *own, uint32_t i, char *key, size_t len);
    /* NH_STAT_NOW: its value, from the NAND model (the scheduler's queue is there) or the
     * part's model of the moment (NhParts.model: the zone table) */
    uint64_t (*now)(const struct NhNand *nand, const void *model);
} NhStat;

/* Slots a counter takes. */
static inline uint32_t nh_stat_slots(const NhStat *st)
{
    return st->kind == NH_STAT_ARRAY ? st->n : st->kind == NH_STAT_NOW ? 0 : 1;
}

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
