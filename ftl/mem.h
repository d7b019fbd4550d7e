/*
 * mem.h - large tables that cost nothing until they are used.
 *
 * Mapping tables for a 1 TiB space are gigabytes but start all zero and are mostly never
 * written.  Anonymous mappings give zero pages on first touch, whatever the malloc tunables
 * (MALLOC_PERTURB_, which meson test sets, makes calloc touch every byte).
 */
#ifndef NH_MEM_H
#define NH_MEM_H

#include <stddef.h>

/* Zero-filled memory for @n elements of @size bytes, or NULL (on overflow or no memory). */
void *nh_lazy_alloc(size_t n, size_t size);
void nh_lazy_free(void *p, size_t n, size_t size);

#endif
