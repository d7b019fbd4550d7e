/*
 * fuzz-engine.h - what our libFuzzer targets share: an engine from a configuration string of
 * their own table.  Such a string failing is the target's bug, not an input's: abort.
 */
#ifndef NH_FUZZ_ENGINE_H
#define NH_FUZZ_ENGINE_H

#include <stdio.h>
#include <stdlib.h>

#include "engine.h"

static inline NhEngine *fuzz_engine(const char *who, const char *props, uint64_t capacity)
{
    NhConfig cfg;
    GError *err = NULL;
    NhEngine *e;

    nh_config_defaults(&cfg);
    if (!nh_config_parse(&cfg, props, &err) || !(e = nh_engine_new(&cfg, capacity, &err))) {
        fprintf(stderr, "%s: %s: %s\n", who, props, err->message);
        abort();
    }
    return e;
}

#endif
