/* trace-util.h - helpers of the trace and simulator tests: a temporary trace file, a sample of
 * tests/data, and the simulator binary (NH_SIM) run on arguments. */
#ifndef NH_TEST_TRACE_UTIL_H
#define NH_TEST_TRACE_UTIL_H

#include "unit.h"

#include <unistd.h>
#include <glib/gstdio.h>

static inline char *write_tmp(const char *text)
{
    char *path = NULL;
    int fd = g_file_open_tmp("nh-trace-XXXXXX", &path, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

static inline char *sample_path(const char *name)
{
    return g_test_build_filename(G_TEST_DIST, "..", "data", name, NULL);
}

static inline char *run_sim(char **args, int *status, char **errs)
{
    GPtrArray *argv = g_ptr_array_new();
    const char *sim = g_getenv("NH_SIM");
    char *out = NULL;

    if (!sim) {
        g_error("NH_SIM must name the simulator binary (meson test sets it)");
    }
    g_ptr_array_add(argv, (char *)sim);
    for (char **a = args; *a; a++) {
        g_ptr_array_add(argv, *a);
    }
    g_ptr_array_add(argv, NULL);
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, 0, NULL, NULL, &out, errs,
                               status, NULL));
    g_ptr_array_free(argv, TRUE);
    return out;
}

#endif
