/*
 * replay.c - run a libFuzzer target's inputs without libFuzzer: each argument is a file, or a
 * directory whose files are all run, in name order.  Linked with tests/fuzz/state-file.c into
 * build/tests/fuzz/fuzz-replay-state-file, which `make check-unit` runs over the seeds and the
 * inputs that once crashed (tests/fuzz/regressions/): a fixed crash stays fixed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <glib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    g_autofree char *data = NULL;
    gsize len;
    g_autoptr(GError) err = NULL;

    if (!g_file_get_contents(path, &data, &len, &err)) {
        fprintf(stderr, "replay: %s\n", err->message);
        return 1;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)data, len);
    printf("ok %s\n", path);
    return 0;
}

int main(int argc, char **argv)
{
    int bad = 0, n = 0;

    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
            g_autoptr(GDir) d = g_dir_open(argv[i], 0, NULL);
            g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
            const char *e;
            while (d && (e = g_dir_read_name(d))) {
                g_ptr_array_add(names, g_build_filename(argv[i], e, NULL));
            }
            g_ptr_array_sort(names, (GCompareFunc)g_strcmp0);
            for (guint j = 0; j < names->len; j++, n++) {
                bad |= run_file(*(char **)&names->pdata[j]);
            }
        } else {
            bad |= run_file(argv[i]);
            n++;
        }
    }
    printf("%d inputs replayed\n", n);
    return bad || n == 0;
}
