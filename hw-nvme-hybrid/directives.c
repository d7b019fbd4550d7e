/*
 * directives.c - Directives: the Directive Receive (1Ah) and Directive Send (19h) admin commands
 * with the Identify and Streams directives, and the Streams directive of a Write.  Sections are
 * those of the NVMe Base Specification 2.2 (8.1.8 Directives, 5.1.6/5.1.7 the commands; NVMe
 * 1.4 section 9 defines the same operations and structures); docs/device.md states every
 * decision.
 *
 * State is per namespace (enabled, exclusive allocation, open streams) and is not kept across a
 * Controller Level Reset: the Return Parameters of the Identify directive say so (SDIRCLR 0), so
 * a reset disables Streams and releases every stream, and nothing of it goes to the state file.
 *
 * Stream resources are the engine's stream tags 1..MSL (MSL = nh_engine_stream_limit()).  An
 * open stream holds one tag: the tag equal to its identifier when that is free (so a host using
 * identifiers 1..MSL, as Linux and fio do, sees its own numbers in the engine's per-stream
 * counters), else the lowest free one.
 */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "qemu/log.h"

#include "nvme-hybrid.h"
#include "trace.h"

/* Directive Types (Figure 598) and Operations (Figures 600, 605). */
#define NHC_DIR_IDENTIFY            0x00
#define NHC_DIR_STREAMS             0x01
#define NHC_DIR_PLACEMENT           0x02    /* Data Placement: enabled with FDP */
#define NHC_DOPER_RETURN_PARAMS     0x01    /* Receive, Identify and Streams */
#define NHC_DOPER_GET_STATUS        0x02    /* Receive, Streams */
#define NHC_DOPER_ALLOCATE          0x03    /* Receive, Streams */
#define NHC_DOPER_ENABLE            0x01    /* Send, Identify */
#define NHC_DOPER_RELEASE_ID        0x01    /* Send, Streams */
#define NHC_DOPER_RELEASE_RES       0x02    /* Send, Streams */

#define NHC_NAMESPACES              NHC_NSID    /* NSIDs 1..NHC_NSID (Identify NN) */
#define NHC_DIR_IDENTIFY_SIZE       4096    /* Figure 601 */
#define NHC_STREAMS_PARAMS_SIZE     32      /* Figure 608 */

typedef struct NhcStream {
    uint16_t id;            /* the host's stream identifier */
    uint16_t tag;           /* the engine's stream, 1..MSL */
    uint64_t last_write;    /* sequence number of its latest write */
} NhcStream;

/* One namespace's Streams state. */
typedef struct NhcDirNs {
    bool       enabled;
    uint16_t   nsa;         /* Namespace Streams Allocated (exclusive resources) */
    uint16_t   nso;         /* Namespace Streams Open: open[0..nso) */
    NhcStream *open;
} NhcDirNs;

struct NhcDirectives {
    uint16_t       msl;     /* Max Streams Limit; 0: Streams not supported */
    uint64_t       seq;     /* write sequence, for choosing the stream to release */
    unsigned long *tags;    /* engine tags held by open streams (bit tag - 1) */
    NhcDirNs       ns[NHC_NAMESPACES];  /* indexed by NSID - 1 */
};

/* An error path: its trace event (and -d guest_errors) says why; @status comes from NHC_ERR. */
static uint16_t nhc_dir_error(NhcReq *req, uint16_t status, const char *why)
{
    NHC_GUEST_ERR(trace_nhc_err_directive(req->cmd.opcode, le32_to_cpu(req->cmd.nsid), status,
                                          why),
                  "directive (opcode 0x%x): %s", req->cmd.opcode, why);
    return status;
}
#define NHC_DIR_ERR(req, sc, why) nhc_dir_error(req, NHC_ERR(sc), why)

void nhc_dir_realize(NhcCtrl *n)
{
    NhcDirectives *d = g_new0(NhcDirectives, 1);

    /* With FDP the engine's tags are its reclaim unit handles: Streams is not supported. */
    d->msl = n->fdp ? 0 : MIN(nh_engine_stream_limit(n->engine), UINT16_MAX);
    d->tags = bitmap_new(MAX(d->msl, 1));
    for (int i = 0; i < NHC_NAMESPACES; i++) {
        d->ns[i].open = g_new0(NhcStream, MAX(d->msl, 1));
    }
    n->dir = d;
    if (!n->fdp) {
        n->write_hooks.place = nhc_io_write_stream;
    }
}

void nhc_dir_free(NhcDirectives *d)
{
    for (int i = 0; i < NHC_NAMESPACES; i++) {
        g_free(d->ns[i].open);
    }
    g_free(d->tags);
    g_free(d);
}

/* ------------------------------------------------------------------------------ streams */

/* Close open stream @i of @ns: its tag goes back to the pool and its logical stream ends. */
static void nhc_stream_close(NhcCtrl *n, NhcDirNs *ns, uint16_t i, const char *why)
{
    NhcStream *s = &ns->open[i];

    trace_nhc_stream_release(s->id, s->tag, why);
    nh_engine_stream_release(n->engine, s->tag);
    clear_bit(s->tag - 1, n->dir->tags);
    *s = ns->open[--ns->nso];
}

static void nhc_stream_close_all(NhcCtrl *n, NhcDirNs *ns, const char *why)
{
    while (ns->nso) {
        nhc_stream_close(n, ns, ns->nso - 1, why);
    }
}

/* The open stream written least recently: the one the controller releases (8.1.8.3). */
static uint16_t nhc_stream_lru(NhcDirNs *ns)
{
    uint16_t lru = 0;

    for (uint16_t i = 1; i < ns->nso; i++) {
        if (ns->open[i].last_write < ns->open[lru].last_write) {
            lru = i;
        }
    }
    return lru;
}

/* NVM Subsystem Streams Available: the resources no namespace has allocated. */
static uint16_t nhc_streams_nssa(NhcDirectives *d)
{
    uint16_t nssa = d->msl;

    for (int i = 0; i < NHC_NAMESPACES; i++) {
        nssa -= d->ns[i].nsa;
    }
    return nssa;
}

/* How many streams @ns may have open: its exclusive allocation, else NSSA. */
static uint16_t nhc_stream_room(NhcDirectives *d, NhcDirNs *ns)
{
    return ns->nsa ? ns->nsa : nhc_streams_nssa(d);
}

/*
 * The engine tag for a write to stream @id of @ns, opening the stream if it is not open.  A
 * stream beyond what the namespace may have open makes the controller release the least
 * recently written one (8.1.8.3: "an arbitrary stream identifier ... is released").
 */
static uint16_t nhc_stream_use(NhcCtrl *n, NhcDirNs *ns, uint16_t id)
{
    NhcDirectives *d = n->dir;
    NhcStream *s = NULL;

    for (uint16_t i = 0; i < ns->nso && !s; i++) {
        s = ns->open[i].id == id ? &ns->open[i] : NULL;
    }
    if (!s) {
        if (ns->nso >= nhc_stream_room(d, ns)) {
            nhc_stream_close(n, ns, nhc_stream_lru(ns), "implicit: resources exhausted");
        }
        s = &ns->open[ns->nso++];
        s->id = id;
        s->tag = id <= d->msl && !test_bit(id - 1, d->tags) ? id :
                 find_first_zero_bit(d->tags, d->msl) + 1;
        set_bit(s->tag - 1, d->tags);
        trace_nhc_stream_open(id, s->tag, ns->nso);
    }
    s->last_write = ++d->seq;
    return s->tag;
}

/* Streams off for @ns: every stream and the exclusive resources are released (8.1.8.3). */
static void nhc_streams_disable(NhcCtrl *n, NhcDirNs *ns, const char *why)
{
    nhc_stream_close_all(n, ns, why);
    ns->nsa = 0;
    ns->enabled = false;
}

/* Controller Level Reset: SDIRCLR is 0, the Streams state is not preserved. */
void nhc_dir_reset(NhcCtrl *n)
{
    for (int i = 0; i < NHC_NAMESPACES; i++) {
        nhc_streams_disable(n, &n->dir->ns[i], "controller reset");
    }
}

/*
 * The stream of a Write (DTYPE: CDW12 bits 23:20, DSPEC: CDW13 bits 31:16; 8.1.8.1): *tag is
 * the engine's stream, 0 for none.  With no I/O directive enabled on the namespace DTYPE and
 * DSPEC are ignored; with Streams enabled, another DTYPE is Invalid Field in Command and DSPEC 0
 * is an ordinary write.  Called once the write is otherwise valid: it may open a stream.
 */
uint16_t nhc_io_write_stream(NhcCtrl *n, NhcReq *req, uint16_t *tag)
{
    NhcDirNs *ns = &n->dir->ns[le32_to_cpu(req->cmd.nsid) - 1];    /* nhc_dispatch checked it */
    uint8_t dtype = (le32_to_cpu(req->cmd.cdw12) >> 20) & 0xf;
    uint16_t dspec = le32_to_cpu(req->cmd.cdw13) >> 16;

    *tag = 0;
    if (!ns->enabled || dtype == NHC_DIR_IDENTIFY) {
        return NVME_SUCCESS;
    }
    if (dtype != NHC_DIR_STREAMS) {
        return NHC_DIR_ERR(req, NVME_INVALID_FIELD, "write: DTYPE not supported or enabled");
    }
    if (dspec) {
        *tag = nhc_stream_use(n, ns, dspec);
    }
    return NVME_SUCCESS;
}

/* ------------------------------------------------------------------------------ commands */

/*
 * The namespace a directive names: *ns is NULL for FFFFFFFFh when @broadcast allows it (the NVM
 * subsystem), which is otherwise Invalid Field in Command; an NSID that names no namespace is
 * Invalid Namespace or Format (Figure 93).
 */
static uint16_t nhc_dir_ns(NhcCtrl *n, NhcReq *req, bool broadcast, NhcDirNs **ns)
{
    uint32_t nsid = le32_to_cpu(req->cmd.nsid);

    *ns = NULL;
    if (nsid == NVME_NSID_BROADCAST) {
        return broadcast ? NVME_SUCCESS :
               NHC_DIR_ERR(req, NVME_INVALID_FIELD, "NSID FFFFFFFFh not allowed here");
    }
    if (nsid == 0 || nsid > NHC_NAMESPACES) {
        return NHC_DIR_ERR(req, NVME_INVALID_NSID, "no such namespace");
    }
    *ns = &n->dir->ns[nsid - 1];
    return NVME_SUCCESS;
}

/* The Streams directive is supported and enabled on @ns (on any namespace for NULL). */
static bool nhc_streams_enabled(NhcDirectives *d, NhcDirNs *ns)
{
    for (int i = 0; !ns && i < NHC_NAMESPACES; i++) {
        if (d->ns[i].enabled) {
            return true;
        }
    }
    return ns && ns->enabled;
}

/* Hand @size bytes of @data to the host as NUMD dwords: cut short or padded with zeroes. */
static uint16_t nhc_dir_to_host(NhcCtrl *n, NhcReq *req, const void *data, size_t size)
{
    uint64_t len = ((uint64_t)le32_to_cpu(req->cmd.cdw10) + 1) * 4;
    g_autofree uint8_t *buf = NULL;

    if (len > (4096u << NHC_MDTS)) {
        return NHC_DIR_ERR(req, NVME_INVALID_FIELD, "NUMD beyond MDTS");
    }
    buf = g_malloc0(len);
    memcpy(buf, data, MIN(len, size));
    return nhc_dma_to_host(n, buf, len, &req->cmd);
}

/* Identify directive, Return Parameters (8.1.8.2.1.1, Figure 601). */
static uint16_t nhc_dir_identify_params(NhcCtrl *n, NhcReq *req)
{
    uint8_t id[NHC_DIR_IDENTIFY_SIZE] = { 0 };
    NhcDirNs *ns;
    uint16_t status = nhc_dir_ns(n, req, false, &ns);

    if (status) {
        return status;
    }
    /* supported, enabled; persistent across Controller Level Resets (byte 64): neither */
    id[0] = 1 << NHC_DIR_IDENTIFY | (n->dir->msl ? 1 << NHC_DIR_STREAMS : 0) |
            (n->fdp ? 1 << NHC_DIR_PLACEMENT : 0);
    id[32] = 1 << NHC_DIR_IDENTIFY | (ns->enabled ? 1 << NHC_DIR_STREAMS : 0) |
             (n->fdp ? 1 << NHC_DIR_PLACEMENT : 0);
    return nhc_dir_to_host(n, req, id, sizeof(id));
}

/* Streams directive, Return Parameters (8.1.8.3.1.1, Figure 608); for FFFFFFFFh the NVM
 * subsystem's values, SWS and SGS (one namespace), and NSA/NSO 0. */
static uint16_t nhc_streams_params(NhcCtrl *n, NhcReq *req, NhcDirNs *ns)
{
    NhcDirectives *d = n->dir;
    uint16_t nsso = 0;
    uint8_t p[NHC_STREAMS_PARAMS_SIZE] = { 0 };
    /* SWS: one program operation, but no more than 4 KiB (Linux takes SWS x LBA size as the
     * physical block size); SGS: a stripe, in SWS units. */
    uint64_t sws_bytes = MIN(nh_engine_program_bytes(n->engine), 4096);
    uint32_t sws = MAX(sws_bytes >> n->lba_shift, 1);
    uint64_t sgs = nh_engine_stripe_bytes(n->engine) / ((uint64_t)sws << n->lba_shift);

    stw_le_p(p, d->msl);
    stw_le_p(p + 2, nhc_streams_nssa(d));
    for (int i = 0; i < NHC_NAMESPACES; i++) {
        nsso += d->ns[i].nsa ? 0 : d->ns[i].nso;    /* open on NVM subsystem resources */
    }
    stw_le_p(p + 4, nsso);
    /* NSSC 0: one host, no Host Identifier required */
    stl_le_p(p + 16, sws);
    stw_le_p(p + 20, MIN(MAX(sgs, 1), UINT16_MAX));
    if (ns) {
        stw_le_p(p + 22, ns->nsa);
        stw_le_p(p + 24, ns->nso);
    }
    return nhc_dir_to_host(n, req, p, sizeof(p));
}

static int nhc_stream_id_cmp(const void *a, const void *b)
{
    return *(const uint16_t *)a - *(const uint16_t *)b;
}

/* Streams directive, Get Status (8.1.8.3.1.2, Figure 609): the open identifiers, ascending;
 * for FFFFFFFFh those using NVM subsystem resources (namespaces with no allocation). */
static uint16_t nhc_streams_status(NhcCtrl *n, NhcReq *req, NhcDirNs *ns)
{
    g_autofree uint16_t *st = g_new0(uint16_t, 1 + n->dir->msl);
    uint16_t osc = 0;

    for (int i = 0; i < NHC_NAMESPACES; i++) {
        NhcDirNs *s = &n->dir->ns[i];
        if (s == ns || (!ns && !s->nsa)) {
            for (uint16_t j = 0; j < s->nso; j++) {
                st[1 + osc++] = s->open[j].id;
            }
        }
    }
    qsort(st + 1, osc, sizeof(*st), nhc_stream_id_cmp);
    for (uint16_t i = 0; i <= osc; i++) {
        st[i] = cpu_to_le16(i ? st[i] : osc);
    }
    return nhc_dir_to_host(n, req, st, (1 + osc) * sizeof(*st));
}

/* Streams directive, Allocate Resources (8.1.8.3.1.3): NSR in CDW12, NSA in CQE dword 0.  No
 * more than NSSA is granted; streams open beyond the grant are released, least recent first. */
static uint16_t nhc_streams_allocate(NhcCtrl *n, NhcReq *req, NhcDirNs *ns)
{
    uint16_t nsr = le32_to_cpu(req->cmd.cdw12) & 0xffff;

    if (!ns) {
        return NHC_DIR_ERR(req, NVME_INVALID_FIELD, "allocate: NSID FFFFFFFFh");
    }
    if (ns->nsa) {
        return NHC_DIR_ERR(req, NVME_INVALID_FIELD, "allocate: resources already allocated");
    }
    ns->nsa = MIN(nsr, nhc_stream_room(n->dir, ns));
    while (ns->nsa && ns->nso > ns->nsa) {
        nhc_stream_close(n, ns, nhc_stream_lru(ns), "allocation smaller than open streams");
    }
    trace_nhc_streams_allocate(nsr, ns->nsa);
    req->cqe.result = cpu_to_le32(ns->nsa);
    return NVME_SUCCESS;
}

/* DTYPE and (in *doper) DOPER of a Directive Send or Receive (CDW11), traced. */
static uint8_t nhc_dir_decode(NhcReq *req, uint8_t *doper)
{
    uint32_t dw11 = le32_to_cpu(req->cmd.cdw11);

    *doper = dw11 & 0xff;
    trace_nhc_admin_directive(req->cmd.opcode, le32_to_cpu(req->cmd.nsid), (dw11 >> 8) & 0xff,
                              *doper, le32_to_cpu(req->cmd.cdw12));
    return (dw11 >> 8) & 0xff;
}

uint16_t nhc_admin_directive_receive(NhcCtrl *n, NhcReq *req)
{
    uint8_t doper, dtype = nhc_dir_decode(req, &doper);
    NhcDirNs *ns;
    uint16_t status;

    if (dtype == NHC_DIR_IDENTIFY) {
        return doper == NHC_DOPER_RETURN_PARAMS ? nhc_dir_identify_params(n, req) :
               NHC_DIR_ERR(req, NVME_INVALID_FIELD, "receive: operation not defined");
    }
    if (dtype != NHC_DIR_STREAMS || !n->dir->msl) {
        return NHC_DIR_ERR(req, NVME_INVALID_FIELD, "receive: directive type not supported");
    }
    if (doper < NHC_DOPER_RETURN_PARAMS || doper > NHC_DOPER_ALLOCATE) {
        return NHC_DIR_ERR(req, NVME_INVALID_FIELD, "receive: operation not defined");
    }
    status = nhc_dir_ns(n, req, true, &ns);
    if (status) {
        return status;
    }
    if (!nhc_streams_enabled(n->dir, ns)) {
        return NHC_DIR_ERR(req, NVME_INVALID_FIELD, "receive: Streams not enabled");
    }
    switch (doper) {
    case NHC_DOPER_RETURN_PARAMS:   return nhc_streams_params(n, req, ns);
    case NHC_DOPER_GET_STATUS:      return nhc_streams_status(n, req, ns);
    default:                        return nhc_streams_allocate(n, req, ns);
    }
}

/* Identify directive, Enable Directive (8.1.8.2.2.1): CDW12 DTYPE (bits 15:8) and ENDIR (bit
 * 0), for one namespace or, with FFFFFFFFh, for all of them. */
static uint16_t nhc_dir_enable(NhcCtrl *n, NhcReq *req)
{
    uint32_t dw12 = le32_to_cpu(req->cmd.cdw12);
    bool endir = dw12 & 1;
    NhcDirNs *ns;
    uint16_t status;

    if (((dw12 >> 8) & 0xff) != NHC_DIR_STREAMS || !n->dir->msl) {
        return NHC_DIR_ERR(req, NVME_INVALID_FIELD, "enable: directive type not supported");
    }
    status = nhc_dir_ns(n, req, true, &ns);
    if (status) {
        return status;
    }
    for (int i = 0; i < NHC_NAMESPACES; i++) {
        NhcDirNs *s = &n->dir->ns[i];
        if (ns && s != ns) {
            continue;
        }
        trace_nhc_streams_enable(i + 1, endir);
        if (!endir) {
            nhc_streams_disable(n, s, "Streams disabled");
        }
        s->enabled = endir;
    }
    return NVME_SUCCESS;
}

/* Streams, Release Identifier (8.1.8.3.2.1): an identifier that is not open is not an error. */
static uint16_t nhc_streams_release_id(NhcCtrl *n, NhcReq *req, NhcDirNs *ns)
{
    uint16_t id = le32_to_cpu(req->cmd.cdw11) >> 16;

    for (uint16_t i = 0; i < ns->nso; i++) {
        if (ns->open[i].id == id) {
            nhc_stream_close(n, ns, i, "Release Identifier");
            break;
        }
    }
    return NVME_SUCCESS;
}

/* Streams, Release Resources (8.1.8.3.2.2): with no allocation, no action. */
static uint16_t nhc_streams_release_resources(NhcCtrl *n, NhcDirNs *ns)
{
    if (ns->nsa) {
        nhc_stream_close_all(n, ns, "Release Resources");
        ns->nsa = 0;
    }
    return NVME_SUCCESS;
}

uint16_t nhc_admin_directive_send(NhcCtrl *n, NhcReq *req)
{
    uint8_t doper, dtype = nhc_dir_decode(req, &doper);
    NhcDirNs *ns;
    uint16_t status;

    if (dtype == NHC_DIR_IDENTIFY) {
        return doper == NHC_DOPER_ENABLE ? nhc_dir_enable(n, req) :
               NHC_DIR_ERR(req, NVME_INVALID_FIELD, "send: operation not defined");
    }
    if (dtype != NHC_DIR_STREAMS || !n->dir->msl) {
        return NHC_DIR_ERR(req, NVME_INVALID_FIELD, "send: directive type not supported");
    }
    if (doper != NHC_DOPER_RELEASE_ID && doper != NHC_DOPER_RELEASE_RES) {
        return NHC_DIR_ERR(req, NVME_INVALID_FIELD, "send: operation not defined");
    }
    status = nhc_dir_ns(n, req, false, &ns);
    if (status) {
        return status;
    }
    if (!ns->enabled) {
        return NHC_DIR_ERR(req, NVME_INVALID_FIELD, "send: Streams not enabled");
    }
    return doper == NHC_DOPER_RELEASE_ID ? nhc_streams_release_id(n, req, ns) :
           nhc_streams_release_resources(n, ns);
}
