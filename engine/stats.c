/* stats.c - quantiles and the statistics document (contract in stats.h). */
#include "stats.h"
#include "nand.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

uint64_t nh_hist_quantile(const NhHist *h, double q)
{
    uint64_t want, seen = 0;

    if (!h->count) {
        return 0;
    }
    want = (uint64_t)(q * (double)h->count);
    if (want < 1) {
        want = 1;
    }
    for (unsigned i = 0; i < NH_HIST_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= want) {
            uint64_t hi;
            if (i < 64) {
                hi = i;
            } else {
                unsigned e = (i - 64) / 32 + 6, m = (i - 64) % 32 + 32;
                unsigned shift = e - NH_HIST_SUB_BITS;
                hi = ((uint64_t)m << shift) + ((1ull << shift) - 1);
            }
            return hi < h->max ? hi : h->max;
        }
    }
    return h->max;
}

static void add_uint(JsonBuilder *b, const char *key, uint64_t v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_int_value(b, (gint64)v);
}

static void add_hist(JsonBuilder *b, const char *key, const NhHist *h)
{
    json_builder_set_member_name(b, key);
    json_builder_begin_object(b);
    add_uint(b, "count", h->count);
    json_builder_set_member_name(b, "mean");
    json_builder_add_double_value(b, h->count ? (double)h->sum / (double)h->count : 0.0);
    add_uint(b, "p50", nh_hist_quantile(h, 0.50));
    add_uint(b, "p99", nh_hist_quantile(h, 0.99));
    add_uint(b, "max", h->max);
    json_builder_end_object(b);
}

char *nh_stats_json(const NhStats *s, const NhConfig *cfg, const NhNand *nand,
                    uint64_t capacity, uint64_t logical_bytes, bool pretty)
{
    JsonBuilder *b = json_builder_new();
    JsonGenerator *gen;
    JsonNode *root;
    uint32_t wmin, wmax;
    double wmean;
    char *out;

    json_builder_begin_object(b);

    json_builder_set_member_name(b, "host");
    json_builder_begin_object(b);
    add_uint(b, "read_cmds", s->host_read_cmds);
    add_uint(b, "write_cmds", s->host_write_cmds);
    add_uint(b, "trim_cmds", s->host_trim_cmds);
    add_uint(b, "flush_cmds", s->host_flush_cmds);
    add_uint(b, "read_bytes", s->host_read_bytes);
    add_uint(b, "write_bytes", s->host_write_bytes);
    add_uint(b, "trim_bytes", s->host_trim_bytes);
    add_uint(b, "write_pages", s->host_write_pages);
    json_builder_end_object(b);

    json_builder_set_member_name(b, "nand");
    json_builder_begin_object(b);
    add_uint(b, "page_reads", s->nand_page_reads);
    add_uint(b, "page_programs", s->nand_page_programs);
    add_uint(b, "block_erases", s->nand_block_erases);
    add_uint(b, "program_ops", s->nand_program_ops);
    add_uint(b, "read_ops", s->nand_read_ops);
    json_builder_end_object(b);

    json_builder_set_member_name(b, "ftl");
    json_builder_begin_object(b);
    add_uint(b, "gc_page_copies", s->ftl_gc_page_copies);
    add_uint(b, "gc_blocks", s->ftl_gc_blocks);
    add_uint(b, "gc_foreground_blocks", s->ftl_gc_foreground_blocks);
    add_uint(b, "wl_page_copies", s->ftl_wl_page_copies);
    add_uint(b, "wl_blocks", s->ftl_wl_blocks);
    add_uint(b, "rmw_reads", s->ftl_rmw_reads);
    add_uint(b, "stripe_merges", s->ftl_stripe_merges);
    add_uint(b, "stripe_partial", s->ftl_stripe_partial);
    add_uint(b, "stripe_pages", s->ftl_stripe_pages);
    add_uint(b, "stripe_overwrites", s->ftl_stripe_overwrites);
    add_uint(b, "stripe_padding", s->ftl_stripe_padding);
    json_builder_set_member_name(b, "merges");
    json_builder_begin_object(b);
    add_uint(b, "switch", s->ftl_merges_switch);
    add_uint(b, "partial", s->ftl_merges_partial);
    add_uint(b, "full", s->ftl_merges_full);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "cmt");
    json_builder_begin_object(b);
    add_uint(b, "hits", s->ftl_cmt_hits);
    add_uint(b, "misses", s->ftl_cmt_misses);
    json_builder_end_object(b);
    add_uint(b, "translation_page_reads", s->ftl_translation_page_reads);
    add_uint(b, "translation_page_writes", s->ftl_translation_page_writes);
    json_builder_end_object(b);

    json_builder_set_member_name(b, "waf");
    json_builder_add_double_value(b, s->host_write_pages
                                  ? (double)s->nand_page_programs / (double)s->host_write_pages
                                  : 0.0);

    nh_nand_wear(nand, &wmin, &wmax, &wmean);
    json_builder_set_member_name(b, "wear");
    json_builder_begin_object(b);
    add_uint(b, "erase_min", wmin);
    add_uint(b, "erase_max", wmax);
    json_builder_set_member_name(b, "erase_mean");
    json_builder_add_double_value(b, wmean);
    add_uint(b, "pe_cycles", nand->t.pe_cycles);
    json_builder_end_object(b);

    json_builder_set_member_name(b, "latency_ns");
    json_builder_begin_object(b);
    add_hist(b, "read", &s->lat_read);
    add_hist(b, "write", &s->lat_write);
    json_builder_end_object(b);

    json_builder_set_member_name(b, "buffer");
    json_builder_begin_object(b);
    add_uint(b, "write_hits", s->buf_write_hits);
    add_uint(b, "read_hits", s->buf_read_hits);
    add_uint(b, "evictions", s->buf_evictions);
    add_uint(b, "destage_pages", s->buf_destage_pages);
    add_hist(b, "destage_length", &s->buf_destage_len);
    add_uint(b, "padding_reads", s->buf_padding_reads);
    add_uint(b, "merge_on_flush_pages", s->buf_merge_on_flush_pages);
    add_uint(b, "metadata_bytes", s->buf_metadata_bytes);
    /* only lbuf sets these; for another policy an alpha of -1 and a lambda of 0 would read as
     * settings in force */
    if (!strcmp(cfg->buffer, "lbuf")) {
        json_builder_set_member_name(b, "lbuf");
        json_builder_begin_object(b);
        add_uint(b, "sessions", s->lbuf_sessions);
        json_builder_set_member_name(b, "alpha");
        json_builder_add_double_value(b, ((double)s->lbuf_alpha_milli - 1000.0) / 1000.0);
        json_builder_set_member_name(b, "lambda");
        json_builder_add_double_value(b, (double)s->lbuf_lambda_milli / 1000.0);
        /* sessions won by each instance, keyed by its alpha; none run with a fixed lbuf-alpha */
        json_builder_set_member_name(b, "alpha_sessions");
        json_builder_begin_object(b);
        uint32_t ninst = (uint32_t)nh_config_uint(cfg, "lbuf-instances");
        for (uint32_t i = 0; isnan(nh_config_fraction(cfg, "lbuf-alpha")) && i < ninst &&
                             i < G_N_ELEMENTS(s->lbuf_alpha_sessions); i++) {
            char key[16];
            g_snprintf(key, sizeof(key), "%.2f", -1.0 + 2.0 * i / (ninst - 1));
            add_uint(b, key, s->lbuf_alpha_sessions[i]);
        }
        json_builder_end_object(b);
        add_uint(b, "sim_bytes", s->lbuf_sim_bytes);
        json_builder_end_object(b);
    }
    json_builder_end_object(b);

    json_builder_set_member_name(b, "cache");
    json_builder_begin_object(b);
    add_uint(b, "read_hits", s->cache_read_hits);
    add_uint(b, "read_misses", s->cache_read_misses);
    json_builder_end_object(b);

    json_builder_set_member_name(b, "config");
    json_builder_begin_object(b);
    for (size_t i = 0; i < nh_config_nkeys(); i++) {
        char *v = nh_config_get(cfg, nh_config_key(i)->name);
        json_builder_set_member_name(b, nh_config_key(i)->name);
        json_builder_add_string_value(b, v);
        g_free(v);
    }
    json_builder_end_object(b);

    json_builder_set_member_name(b, "geometry");
    json_builder_begin_object(b);
    add_uint(b, "capacity_bytes", capacity);
    add_uint(b, "logical_bytes", logical_bytes);
    add_uint(b, "physical_bytes", nand->g.npages * nand->g.page_size);
    add_uint(b, "parallel_units", nand->g.npu);
    add_uint(b, "blocks_total", nand->g.nblocks);
    add_uint(b, "blocks_per_plane", nand->g.blocks);
    /* beyond the plane's share of the logical space, as blocks=auto counts them */
    add_uint(b, "spare_blocks_per_plane",
             nand->g.blocks - ((capacity + nand->g.page_size - 1) / nand->g.page_size +
                               (uint64_t)nand->g.pages * nand->g.npu - 1) /
                              ((uint64_t)nand->g.pages * nand->g.npu));
    add_uint(b, "pages_total", nand->g.npages);
    add_uint(b, "t_read_ns", nand->t.t_read);
    add_uint(b, "t_prog_ns", nand->t.t_prog);
    add_uint(b, "t_erase_ns", nand->t.t_erase);
    add_uint(b, "t_xfer_ns", nand->t.t_xfer);
    json_builder_end_object(b);

    json_builder_end_object(b);

    root = json_builder_get_root(b);
    gen = json_generator_new();
    json_generator_set_pretty(gen, pretty);
    json_generator_set_root(gen, root);
    out = json_generator_to_data(gen, NULL);
    json_node_unref(root);
    g_object_unref(gen);
    g_object_unref(b);
    return out;
}
