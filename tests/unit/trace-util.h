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

/* The simulator on @args, under the tests' keys (UNIT_KEYS) */
static inline char *run_sim(char **args, int *status, char **errs)
{
    GPtrArray *argv = g_ptr_array_new();
    const char *sim = g_getenv("NH_SIM");
    char *out = NULL, *device = NULL;

    if (!sim) {
        g_error("NH_SIM must name the simulator binary (meson test sets it)");
    }
    g_ptr_array_add(argv, (char *)sim);
    /* the tests' keys (UNIT_KEYS) first in the --device string, or as one */
    for (char **a = args; *a; a++) {
        if (a != args && (!strcmp(a[-1], "--device") || !strcmp(a[-1], "-d"))) {
            device = g_strconcat(UNIT_KEYS ",", *a, NULL);
            g_ptr_array_add(argv, device);
        } else {
            g_ptr_array_add(argv, *a);
        }
    }
    if (!device) {
        g_ptr_array_add(argv, "--device");
        g_ptr_array_add(argv, UNIT_KEYS);
    }
    g_ptr_array_add(argv, NULL);
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, 0, NULL, NULL, &out, errs,
                               status, NULL));
    g_ptr_array_free(argv, TRUE);
    g_free(device);
    return out;
}

#endif
