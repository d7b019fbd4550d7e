/* mem.c - lazily zeroed large tables (contract in mem.h). */
#include "mem.h"

#include <stdint.h>
#include <sys/mman.h>

void *nh_lazy_alloc(size_t n, size_t size)
{
    void *p;

    if (size && n > SIZE_MAX / size) {
        return NULL;
    }
    p = mmap(NULL, n * size > 0 ? n * size : 1, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void nh_lazy_free(void *p, size_t n, size_t size)
{
    if (p) {
        munmap(p, n * size > 0 ? n * size : 1);
    }
}
