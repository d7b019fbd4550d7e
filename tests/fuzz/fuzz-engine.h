/*
 * fuzz-engine.h - what our libFuzzer targets share: an engine from a configuration string of
 * their own table (parsed once, where a target makes many engines: the parse's string
 * comparisons would cost more than a short input).  Such a string failing is the target's
 * bug, not an input's: abort.
 */
#ifndef NH_FUZZ_ENGINE_H
#define NH_FUZZ_ENGINE_H

#include <stdio.h>
#include <stdlib.h>

#include "engine.h"

static inline void fuzz_config(const char *who, const char *props, NhConfig *cfg)
{
    GError *err = NULL;

    /* the corpus was grown on the keys' own defaults (no preset): its inputs' geometry and
     * timing stay what they were */
    nh_config_defaults(cfg);
    if (!nh_config_parse(cfg, "preset=none", &err) || !nh_config_parse(cfg, props, &err)) {
        fprintf(stderr, "%s: %s: %s\n", who, props, err->message);
        abort();
    }
}

static inline NhEngine *fuzz_engine_of(const char *who, const NhConfig *cfg, uint64_t capacity)
{
    GError *err = NULL;
    NhEngine *e = nh_engine_new(cfg, capacity, &err);

    if (!e) {
        fprintf(stderr, "%s: %s\n", who, err->message);
        abort();
    }
    return e;
}

static inline NhEngine *fuzz_engine(const char *who, const char *props, uint64_t capacity)
{
    NhConfig cfg;

    fuzz_config(who, props, &cfg);
    return fuzz_engine_of(who, &cfg, capacity);
}

#endif
