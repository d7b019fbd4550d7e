/*
 * record.h - the one encoder and bounds-checked decoder of the state file's binary records
 * (engine/state.c's sections and the FTLs' own sections alike).
 *
 * Contract: values are little endian.  A writer appends to a GByteArray; a count that is known
 * only afterwards is reserved and patched.  A reader never reads past its end: every get
 * returns false, and leaves *v alone, when too few bytes are left.
 */
#ifndef NH_RECORD_H
#define NH_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

typedef struct NhReader {
    const guint8 *p, *end;
} NhReader;

void nh_put32(GByteArray *o, uint32_t v);
void nh_put64(GByteArray *o, uint64_t v);
/* A u64 to be filled in by nh_patch64() (a count); returns its position. */
guint nh_reserve64(GByteArray *o);
void nh_patch64(GByteArray *o, guint pos, uint64_t v);
void nh_patch32(GByteArray *o, guint pos, uint32_t v);
/* A string: u32 length, then its bytes (no terminator). */
void nh_put_str(GByteArray *o, const char *s);

bool nh_get32(NhReader *r, uint32_t *v);
bool nh_get64(NhReader *r, uint64_t *v);
/* @n bytes at *p, in place. */
bool nh_get_bytes(NhReader *r, uint64_t n, const guint8 **p);
/* A string written by nh_put_str(), NUL terminated; caller frees. */
bool nh_get_str(NhReader *r, char **s);

#endif
