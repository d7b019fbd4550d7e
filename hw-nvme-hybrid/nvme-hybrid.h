/*
 * nvme-hybrid.h - the QEMU side of nvme-hybrid: an NVMe controller whose timing and flash
 * statistics come from the engine (ftl/engine.h).
 *
 * One file per concern:
 *   ctrl.c       PCI function, controller enable/reset/shutdown, error log, properties
 *   regs.c       BAR0: registers, doorbells, MSI-X
 *   queues.c     submission and completion queues, fetch, completion, interrupts, deletion
 *   cmds.c       the command table's dispatch, the Commands Supported and Effects log
 *   admin-cmd.c  admin commands (nhc_admin_*) and their table, log pages
 *   features.c   Get/Set Features
 *   io-cmd.c     NVM I/O commands (nhc_io_*) and their table, the block backend
 *   dma.c        PRP lists and data transfer to and from guest memory
 *   state.c      persistence of engine and SMART state across runs, crash recovery
 *   undo.c       what a power cut falls back to: the old bytes of buffered writes
 *   powercut.c   power cuts, now or at a numbered device event
 *   bar-pm.c     the BAR1 persistent-memory window: PMR registers, BA_* vendor admin
 *                commands, power loss (the logic is in bar-pm/ba-manager.c)
 *   ba-persist.c what a persist through the window costs on PCIe, in virtual time
 *   directives.c Directive Send/Receive, the Identify and Streams directives, write streams
 *   fdp.c        Flexible Data Placement: its logs and features, I/O Management, write
 *                placement identifiers (on the engine's placement tags)
 *   zns.c        the Zoned Namespace Command Set on NSID 2 (on the engine's zoned region)
 *
 * Every command handler returns an NVMe status (NVME_* from block/nvme.h, with NVME_DNR where
 * retrying cannot help) or NHC_ASYNC when the request completes later through
 * nhc_req_complete().
 */
#ifndef HW_NVME_HYBRID_H
#define HW_NVME_HYBRID_H

#include "hw/pci/pci_device.h"
#include "hw/block/block.h"
#include "system/dma.h"
#include "block/nvme.h"
#include "qemu/timer.h"
#include "system/cpu-timers.h"
#include "qemu/log.h"
#include "qemu/notify.h"
#include "qom/object.h"

#include "engine.h"
#include "nh-vendor.h"

#define TYPE_NVME_HYBRID "nvme-hybrid"
OBJECT_DECLARE_SIMPLE_TYPE(NhcCtrl, NVME_HYBRID)

#define NHC_MODEL           "nvme-hybrid"
#define NHC_FIRMWARE        "0.1"
#define NHC_NSID            1
#define NHC_ZNS_NSID        2       /* the zoned namespace, with zones > 0 (zns.c) */
#define NHC_MPSMIN_BYTES    4096    /* CAP.MPSMIN: the unit of ZASL */
#define NHC_MDTS            7       /* max transfer 2^7 * 4 KiB = 512 KiB */
#define NHC_MAX_XFER        (4096u << NHC_MDTS)
#define NHC_MAX_QENTRIES    1024    /* CAP.MQES + 1 */
#define NHC_AERL            3       /* 4 outstanding Asynchronous Event Requests */
#define NHC_ERROR_LOG_SIZE  64      /* entries kept in the Error Information log */
#define NHC_VENDOR_LOG      NH_STATS_LOG_ID /* engine statistics, see docs/vendor-log.md */
#define NHC_ASYNC           0xffff  /* handler status: completion comes later */
#define NHC_TEMPERATURE_K   308     /* no thermal model: a constant 35 C */
#define NHC_ARBITRATION_DEFAULT 7   /* Arbitration Burst 7: no limit until the host sets one */
#define NHC_WCTEMP_K        0x157   /* Warning Composite Temperature Threshold: 70 C */
#define NHC_CCTEMP_K        0x175   /* Critical Composite Temperature Threshold: 100 C */
#define NHC_ENDGID          1       /* the one endurance group (reported with fdp=on) */

/* A status the host should not retry: the same command fails the same way. */
#define NHC_STATUS(sc)      ((sc) | NVME_DNR)
/* The same, where a check fails: the trace event nhc_err_status names the function and line. */
#define NHC_ERR(sc)         nhc_err_status(NHC_STATUS(sc), __func__, __LINE__)

/* Vendor specific admin opcodes of the BAR1 window (docs/bar-pm.md); the low two bits give
 * the data direction: 00 none, 10 controller to host. */
#define NHC_ADM_BA_PIN              NH_BA_OP_PIN        /* layouts in nh-vendor.h */
#define NHC_ADM_BA_GET_ENTRY_INFO   NH_BA_OP_GET_ENTRY_INFO
#define NHC_ADM_BA_SYNC             NH_BA_OP_SYNC
#define NHC_ADM_BA_READ_DMA         NH_BA_OP_READ_DMA
#define NHC_ADM_BA_FLUSH            NH_BA_OP_FLUSH

/* Properties of the BAR1 window, in nhc_props. */
#define NHC_BA_PROPERTIES                                                   \
    DEFINE_PROP_SIZE("ba-size", NhcCtrl, bar1.size, 8 * MiB),               \
    DEFINE_PROP_UINT32("ba-entries", NhcCtrl, bar1.entries, 8),             \
    DEFINE_PROP_STRING("ba-file", NhcCtrl, bar1.file),                      \
    DEFINE_PROP_UINT32("ba-cap-uf", NhcCtrl, bar1.cap_uf, 810),             \
    DEFINE_PROP_UINT32("ba-cap-volt", NhcCtrl, bar1.cap_volt, 35),          \
    DEFINE_PROP_UINT32("ba-rtt-ns", NhcCtrl, bar1.rtt_ns, 1000),            \
    DEFINE_PROP_UINT32("ba-write-mbps", NhcCtrl, bar1.write_mbps, 3200)

typedef struct NhcCtrl NhcCtrl;
typedef struct NhcDirectives NhcDirectives;
typedef struct NhcFdp NhcFdp;
typedef struct NhcZns NhcZns;
typedef struct NhcSQ NhcSQ;
typedef struct NhcCQ NhcCQ;
typedef struct NhcReq NhcReq;

/*
 * The command table: per opcode, what the dispatch (cmds.c) does before the handler runs and
 * what the command does to the host's view of the device.  admin-cmd.c and io-cmd.c each hold
 * one, indexed by opcode; an entry without a handler is an opcode the device does not know.
 * The Commands Supported and Effects log page (05h) is read off the same tables.
 */
typedef struct NhcCmd {
    uint16_t  (*execute)(NhcCtrl *n, NhcReq *req);
    /* Its fields and ranges, before any data moves (NULL: none beyond the dispatch's own). */
    uint16_t  (*check)(NhcCtrl *n, NhcReq *req);
    /* Bytes it moves through its data pointer, held to MDTS once @check has passed (NULL: no
     * data, or a fixed size below MDTS that the handler moves itself). */
    uint64_t  (*data_len)(NhcCtrl *n, NhcReq *req);
    uint32_t    effects;    /* NVME_CMD_EFF_* besides CSUPP, as the log page reports them */
    uint32_t    flags;      /* NHC_CMD_* */
} NhcCmd;

#define NHC_CMD_NSID        (1u << 0)   /* NSID must name the namespace (Invalid Namespace) */
#define NHC_CMD_NSID_ALL    (1u << 1)   /* ... or be FFFFFFFFh */
#define NHC_CMD_WINDOW      (1u << 2)   /* exists only with a BAR1 window (Invalid Opcode) */
#define NHC_CMD_DATA_IN     (1u << 3)   /* the dispatch maps @data_len bytes host -> device */
#define NHC_CMD_DATA_OUT    (1u << 4)   /* the dispatch maps @data_len bytes device -> host */

/*
 * The write path's hooks (io-cmd.c).  Features take part in block writes through these, not by
 * name: each attaches its own at realize, and a hook nothing attached is skipped.
 */
typedef struct NhcWriteHooks {
    /* May a block write (Write, Write Zeroes, Deallocate) touch [slba, slba + nlb)?  Asked
     * before anything happens; a status refuses it (the BAR1 window's pins, bar-pm.c). */
    uint16_t (*admit)(NhcCtrl *n, uint64_t slba, uint64_t nlb);
    /* The engine tag a Write is placed with (the Streams directive, directives.c, or FDP's
     * placement handles, fdp.c); a status refuses the Write. */
    uint16_t (*place)(NhcCtrl *n, NhcReq *req, uint16_t *tag);
    /* A Write the volatile buffer may hold (not FUA) of [req->lba_lo, req->lba_hi) is about
     * to be modeled (the power-cut undo, undo.c)... */
    void     (*buffered)(NhcCtrl *n, NhcReq *req);
    /* ... and has been: true when the hook has started the Write's backend I/O itself. */
    bool     (*issue)(NhcCtrl *n, NhcReq *req);
    /* [slba, slba + nlb) is durable or zeroes now: FUA, Write Zeroes, Deallocate, BA_SYNC. */
    void     (*durable)(NhcCtrl *n, uint64_t slba, uint64_t nlb);
    /* The volatile buffer was drained: every write so far is durable. */
    void     (*flushed)(NhcCtrl *n);
    /* A request has ended, completed or aborted (queues.c): a write that a BA_PIN waits for
     * (req->lba_hi set), or a BA command the window orders others behind (bar-pm.c). */
    void     (*ended)(NhcCtrl *n, NhcReq *req);
} NhcWriteHooks;

typedef struct NhcUndo NhcUndo;

struct NhcReq {
    NhcSQ          *sq;
    NvmeCmd         cmd;
    NvmeCqe         cqe;
    uint16_t        status;
    /* outstanding parts: block I/O operations plus the modeled-completion timer */
    int             pending;
    bool            is_io;
    QEMUTimer      *timer;
    QEMUSGList      qsg;
    uint8_t        *bounce;         /* Compare and Dataset Management buffers */
    size_t          bounce_len;
    QEMUIOVector    iov;            /* over bounce (Compare) or the BAR1 window (BA_*) */
    BlockAIOCB     *aiocb;
    /* LBAs [lba_lo, lba_hi) this request writes (lba_hi 0: none); BA_PIN waits for them */
    uint64_t        lba_lo, lba_hi;
    uint64_t        undo_epoch;     /* a write keeping the old bytes: the undo's epoch then */
    uint8_t         undo;           /* what the undo keeps of this write (undo.c) */
    /* Its SQ is being deleted: nothing continues it, its completion is not posted. */
    bool            aborted;
    bool            outstanding;    /* on its SQ's out_list */
    bool            ba_waiting;     /* a BA_* command waiting its turn (see bar-pm.c) */
    uint32_t        ba_blockers;    /* a waiting BA_PIN: writes to its LBAs still in flight */
    uint64_t        seq;            /* fetch order, over all queues */
    QTAILQ_ENTRY(NhcReq) entry;
};

struct NhcSQ {
    NhcCtrl        *n;
    uint16_t        sqid;
    uint16_t        cqid;
    uint32_t        head, tail, size;
    uint64_t        dma_addr;
    uint64_t        db_addr, ei_addr;   /* shadow doorbell and EventIdx (0: not in use) */
    NhcReq         *reqs;
    QTAILQ_HEAD(, NhcReq) free_list;
    QTAILQ_HEAD(, NhcReq) out_list;
    QTAILQ_ENTRY(NhcSQ) entry;      /* on its CQ's sq_list, or on the controller's dying_sqs */
    /* Deleted, freed once the last outstanding request has ended (see nhc_delete_sq). */
    bool            dying;
    int             hold;           /* > 0 while the deletion walks out_list */
    NhcReq         *waiter;         /* the Delete I/O SQ command completed by the free */
};

struct NhcCQ {
    NhcCtrl        *n;
    uint16_t        cqid;
    uint16_t        vector;
    bool            irq_enabled;
    bool            phase;
    uint32_t        head, tail, size;
    uint64_t        dma_addr;
    QTAILQ_HEAD(, NhcSQ) sq_list;
    QTAILQ_HEAD(, NhcReq) done_list;    /* completed, waiting for room in the CQ */
    QEMUBH         *bh;                 /* posts done_list (see nhc_req_complete) */
    uint64_t        db_addr, ei_addr;   /* shadow doorbell and EventIdx (0: not in use) */
    /* interrupt coalescing (feature 08h) */
    uint32_t        coalesced;
    QEMUTimer      *coalesce_timer;
};

/* Counters that persist across runs (SMART / Health); stored with the engine state. */
typedef struct NhcSmart {
    uint64_t data_units_read;       /* in 512-byte units; reported in thousands, rounded up */
    uint64_t data_units_written;
    uint64_t host_read_cmds;
    uint64_t host_write_cmds;
    uint64_t busy_ns;               /* time with at least one I/O command outstanding */
    uint64_t power_cycles;
    uint64_t power_on_ns;
    uint64_t unsafe_shutdowns;
    uint64_t error_count;
} NhcSmart;

/* The device's events, numbered for crash points (powercut.c). */
typedef enum NhcEvent {
    NHC_EV_FETCH,           /* a command read from its SQ */
    NHC_EV_MODEL,           /* the engine modeled it */
    NHC_EV_BACKEND_ISSUE,   /* its block I/O is about to be issued */
    NHC_EV_BACKEND_DONE,    /* its block I/O has finished */
    NHC_EV_WINDOW_DMA,      /* the device is about to copy data into the BAR1 window */
    NHC_EV_UNDO_KEPT,       /* the old bytes of a write's LBAs are about to be kept */
    NHC_EV_CQE_POSTED,      /* a completion is about to be written to its CQ */
    NHC_EV_FLUSH_BEGIN,     /* a Flush starts draining */
    NHC_EV_FLUSH_END,       /* a Flush's backend flush has finished */
    NHC_EV__MAX
} NhcEvent;

typedef struct NhcFeatures {
    uint32_t arbitration;
    uint32_t num_queues;            /* as granted: NCQA << 16 | NSQA */
    uint32_t int_coalescing;
    uint32_t async_config;
    uint64_t timestamp_ms;          /* host value at the last Set Features ... */
    int64_t  timestamp_base_ns;     /* ... and the virtual clock then */
    bool     timestamp_set;
    uint32_t power_mgmt;            /* 02h: workload hint << 5 | power state */
    uint16_t temp_over, temp_under; /* 04h: composite temperature thresholds, kelvin */
    uint32_t error_recovery;        /* 05h: TLER (DULBE is not supported) */
    uint32_t write_atomicity;       /* 0Ah: DN */
    unsigned long *vector_no_coalescing;   /* 09h: CD per interrupt vector */
} NhcFeatures;

/*
 * The BAR1 persistent-memory window: owned by bar-pm.c (ba-persist.c keeps what a persist
 * costs in it); the rest of the device asks bar-pm.c's functions, never its fields.
 */
typedef struct NhcBar1 {
    uint64_t        size;           /* properties; size 0 = no window */
    uint32_t        entries;
    char           *file;
    uint32_t        cap_uf, cap_volt;
    struct NhBa    *ba;             /* NULL when there is no window */
    uint64_t        dump_ns;        /* modeled time to save the window on power loss */
    MemoryRegion    bar;
    MemoryRegion    ram;            /* the window; enabled by PMRCTL.EN */
    uint32_t        pmrctl;
    Notifier        exit_notifier;
    GPtrArray      *ops;            /* BA_PIN/SYNC/FLUSH in progress, waiting or transferring */
    bool            kicking;
    /* what a persist costs (ba-persist.c) */
    uint32_t        rtt_ns, write_mbps; /* properties; both 0: persists are free */
    uint8_t        *shadow;         /* the window as last counted; NULL when persists are free */
    int64_t         link_free_ns;   /* the modeled posted writes have crossed the link */
    int64_t         ready_ns;       /* PMRSTS.PPND reads 1 until then */
} NhcBar1;

struct NhcCtrl {
    PCIDevice       parent_obj;
    MemoryRegion    bar0;
    MemoryRegion    iomem;
    BlockConf       blkconf;

    /* properties */
    char           *serial;
    uint32_t        lba_size;
    uint32_t        max_ioqpairs;
    char           *state_file;
    NhConfig        cfg;
    /* A volatile write cache exists when the block backend caches writes (write-cache=on or
     * the backend's default) or the engine has a volatile write buffer; fixed at realize,
     * enabled or not by Set Features 06h (disabled: every write is FUA). */
    bool            vwc_present;
    bool            backend_wc;     /* the backend cached writes at realize */
    bool            wce;            /* Set Features 06h: write cache enabled */
    /* Test only (x-flush-no-drain): Flush completes without draining the engine's volatile
     * write buffer, a deliberately broken durability rule for scripts/powercut-campaign. */
    bool            x_flush_no_drain;
    /* Test only (x-exact-time): take the -icount path without -icount (commands fetched in the
     * doorbell write, backend I/O done synchronously, completions posted inline), so that
     * qtests and the fuzzer reach it; see nhc_exact_time. */
    bool            x_exact_time;

    /* controller registers */
    uint64_t        cap;
    uint32_t        vs, intms, cc, csts, aqa;
    uint64_t        asq, acq;
    uint32_t        reg_size;       /* registers + doorbells, bytes */

    NhEngine       *engine;
    uint64_t        ns_bytes;       /* NSID 1's bytes: the drive's first, the engine's
                                     * conventional space */
    uint64_t        nsze;           /* NSID 1's size in LBAs */
    uint8_t         lba_shift;
    uint32_t        page_size;      /* host memory page size from CC.MPS */

    NhcSQ         **sq;             /* indexed by queue id, 0 = admin */
    NhcCQ         **cq;
    QTAILQ_HEAD(, NhcSQ) dying_sqs; /* deleted, waiting for their requests to end */
    bool            resetting;      /* CC.EN 1 -> 0 waits for dying_sqs; RDY stays 1 */
    /* > 0 inside a fetch, a completion or a reset: nothing is fetched there (queues.c) */
    uint32_t        fetch_hold;
    uint64_t        fetch_seq;      /* commands fetched so far (NhcReq.seq) */
    bool            fetch_wanted;   /* a fetch was asked for while held */
    bool            power_cut;      /* the power is going: fetch nothing more (powercut.c) */
    uint64_t        power_cut_at;   /* property: cut at this event (0: never) */
    uint64_t        events_seen;    /* crash-point events so far (nhc_event) */
    uint64_t        event_counts[NHC_EV__MAX];
    uint32_t        num_queues;     /* max_ioqpairs + 1 */
    uint32_t        num_vectors;

    NhcFeatures     features;
    NhcDirectives  *dir;            /* directives and streams state (directives.c) */
    bool            fdp_on;         /* property fdp: Flexible Data Placement enabled */
    NhcFdp         *fdp;            /* its state (fdp.c); NULL with fdp=off */
    NhcZns         *zns;            /* the zoned namespace (zns.c); NULL with zones=0 */
    uint8_t         zasl;           /* property: Zone Append Size Limit, 2^zasl 4 KiB pages */
    QEMUBH         *fetch_bh;       /* round-robin command fetch (see ctrl.c) */
    uint64_t        dbbuf_dbs, dbbuf_eis;   /* Doorbell Buffer Config (0: not configured) */

    /* asynchronous events */
    NhcReq         *aer_reqs[NHC_AERL + 1];
    uint8_t         outstanding_aers;
    GQueue          events;         /* NvmeAerResult packed into a pointer-sized int */
    uint8_t         aer_mask;       /* event types masked until their log page is read */

    NvmeErrorLog    error_log[NHC_ERROR_LOG_SIZE];
    GByteArray     *vendor_log;     /* snapshot served to reads at offsets > 0 */

    NhcSmart        smart;
    uint32_t        io_outstanding;
    int64_t         busy_since_ns;
    int64_t         powered_on_ns;  /* realtime clock at start, for power-on hours */

    /* persistence (state.c) */
    char           *state_path;     /* resolved; NULL when persistence is off */
    bool            state_clean;    /* the file on disk matches the model */
    bool            state_changed;  /* commands since the last checkpoint */
    QEMUTimer      *checkpoint_timer;
    Notifier        exit_notifier;
    NhcWriteHooks   write_hooks;    /* what features do in the write path (io-cmd.c) */
    NhcUndo        *undo;           /* what a power cut falls back to (undo.c) */

    NhcBar1         bar1;           /* the BAR1 persistent-memory window (bar-pm.c) */
};

/*
 * Timers and block-layer completions enter the device from outside any MMIO access or guarded
 * bottom half.  Marking the device as in I/O for their duration makes the memory core refuse a
 * DMA or MSI write that the guest aimed at the device's own registers, instead of re-entering
 * the device (a controller reset from inside a completion).
 */
static inline bool nhc_guard_enter(NhcCtrl *n)
{
    MemReentrancyGuard *g = &DEVICE(n)->mem_reentrancy_guard;
    bool was = g->engaged_in_io;

    g->engaged_in_io = true;
    return was;
}

static inline void nhc_guard_exit(NhcCtrl *n, bool was)
{
    DEVICE(n)->mem_reentrancy_guard.engaged_in_io = was;
}

/*
 * Under -icount the guest must see the modeled time exactly: commands are fetched in the
 * doorbell write, backend I/O is synchronous and completions are posted at once, all on the
 * vCPU's clock.  x-exact-time takes the same path under qtest.
 */
static inline bool nhc_exact_time(NhcCtrl *n)
{
    return icount_enabled() || n->x_exact_time;
}

/* A guest error: a trace event and, with -d guest_errors, a log line. */
#define NHC_GUEST_ERR(trace_call, fmt, ...) do {                                    \
        trace_call;                                                                 \
        qemu_log_mask(LOG_GUEST_ERROR, "nvme-hybrid: " fmt "\n", ## __VA_ARGS__);   \
    } while (0)

/* ctrl.c */
uint16_t nhc_err_status(uint16_t status, const char *func, int line);
void nhc_record_error(NhcCtrl *n, NhcReq *req);
void nhc_error_log_push(NhcCtrl *n, uint16_t sqid, uint16_t cid, uint16_t status,
                        uint32_t nsid, uint64_t lba);
void nhc_ctrl_enable(NhcCtrl *n);
void nhc_ctrl_reset(NhcCtrl *n);
void nhc_ctrl_reset_done(NhcCtrl *n);
void nhc_ctrl_shutdown(NhcCtrl *n);

/* powercut.c */
void nhc_event(NhcCtrl *n, NhcEvent ev);
bool nhc_powercut_realize(NhcCtrl *n, Error **errp);
void nhc_powercut_class_init(ObjectClass *oc);

/* regs.c */
void nhc_init_regs(NhcCtrl *n);
bool nhc_init_bar0(NhcCtrl *n, Error **errp);

/* queues.c */
void nhc_req_complete(NhcReq *req);
void nhc_req_io_done(NhcReq *req);
void nhc_intx_update(NhcCtrl *n);
void nhc_post_cqes(NhcCQ *cq);
void nhc_fetch_bh(void *opaque);
void nhc_fetch_kick(NhcCtrl *n);
void nhc_fetch_hold(NhcCtrl *n);
void nhc_fetch_release(NhcCtrl *n);
uint16_t nhc_create_sq(NhcCtrl *n, uint16_t sqid, uint16_t cqid, uint64_t dma_addr,
                       uint32_t size);
uint16_t nhc_create_cq(NhcCtrl *n, uint16_t cqid, uint64_t dma_addr, uint32_t size,
                       uint16_t vector, bool irq_enabled);
void nhc_delete_sq(NhcCtrl *n, uint16_t sqid, NhcReq *waiter);
void nhc_delete_cq(NhcCtrl *n, uint16_t cqid);
void nhc_dbbuf_attach(NhcCtrl *n, uint16_t qid);

/* cmds.c */
uint16_t nhc_dispatch(NhcCtrl *n, NhcReq *req);
void nhc_effects_log(NhcCtrl *n, GByteArray *page, uint8_t csi);

/* admin-cmd.c */
extern const NhcCmd nhc_admin_cmds[256];
void nhc_aer_post(NhcCtrl *n);
void nhc_raise_event(NhcCtrl *n, uint8_t type, uint8_t info, uint8_t log_page);

/* features.c */
uint16_t nhc_admin_get_features(NhcCtrl *n, NhcReq *req);
uint16_t nhc_admin_set_features(NhcCtrl *n, NhcReq *req);
bool nhc_temperature_warning(NhcCtrl *n);

/* dma.c */
bool nhc_dma_is_ram(NhcCtrl *n, uint64_t addr, uint64_t len, bool to_host);
uint16_t nhc_map_prp(NhcCtrl *n, QEMUSGList *qsg, uint64_t prp1, uint64_t prp2, uint32_t len,
                     bool to_host);
uint16_t nhc_dma_to_host(NhcCtrl *n, const void *buf, uint32_t len, NvmeCmd *cmd);
uint16_t nhc_dma_from_host(NhcCtrl *n, void *buf, uint32_t len, NvmeCmd *cmd);

/* io-cmd.c */
extern const NhcCmd nhc_io_cmds[256];
void nhc_backend_rw(NhcCtrl *n, NhcReq *req, int64_t off, QEMUIOVector *iov, bool write,
                    BdrvRequestFlags flags, BlockCompletionFunc *cb);
void nhc_backend_flush(NhcCtrl *n, NhcReq *req);
void nhc_req_backend_done(NhcReq *req, int ret);
void nhc_req_backend_cb(void *opaque, int ret);
void nhc_io_write_backend(NhcCtrl *n, NhcReq *req, uint64_t off, uint64_t len, bool fua);
void nhc_io_read_backend(NhcCtrl *n, NhcReq *req, uint64_t off, uint64_t len);
void nhc_io_arm(NhcCtrl *n, NhcReq *req, int64_t now, uint64_t done, int parts);
uint16_t nhc_io_flush(NhcCtrl *n, NhcReq *req);

static inline uint16_t nhc_write_admit(NhcCtrl *n, uint64_t slba, uint64_t nlb)
{
    return n->write_hooks.admit ? n->write_hooks.admit(n, slba, nlb) : NVME_SUCCESS;
}

static inline void nhc_write_durable(NhcCtrl *n, uint64_t slba, uint64_t nlb)
{
    if (n->write_hooks.durable) {
        n->write_hooks.durable(n, slba, nlb);
    }
}

static inline void nhc_write_flushed(NhcCtrl *n)
{
    if (n->write_hooks.flushed) {
        n->write_hooks.flushed(n);
    }
}

/* bar-pm.c */
bool nhc_ba_realize(NhcCtrl *n, Error **errp);
bool nhc_ba_present(NhcCtrl *n);
void nhc_ba_report_restore(NhcCtrl *n);
void nhc_ba_exit(NhcCtrl *n);
void nhc_ba_power_loss(NhcCtrl *n);
void nhc_ba_init_regs(NhcCtrl *n);
uint32_t nhc_ba_read_reg(NhcCtrl *n, hwaddr off);
void nhc_ba_write_pmrctl(NhcCtrl *n, uint32_t val);
bool nhc_ba_dma_hits_window(NhcCtrl *n, QEMUSGList *qsg);
uint16_t nhc_admin_ba_pin(NhcCtrl *n, NhcReq *req);
uint16_t nhc_admin_ba_get_entry_info(NhcCtrl *n, NhcReq *req);
uint64_t nhc_ba_entry_info_len(NhcCtrl *n, NhcReq *req);
uint16_t nhc_admin_ba_sync(NhcCtrl *n, NhcReq *req);
uint16_t nhc_ba_read_dma_check(NhcCtrl *n, NhcReq *req);
uint64_t nhc_ba_read_dma_len(NhcCtrl *n, NhcReq *req);
uint16_t nhc_admin_ba_read_dma(NhcCtrl *n, NhcReq *req);

/* ba-persist.c */
bool nhc_ba_persist_check(NhcCtrl *n, Error **errp);
void nhc_ba_persist_init(NhcCtrl *n);
void nhc_ba_persist_exit(NhcCtrl *n);
void nhc_ba_persist_device_wrote(NhcCtrl *n, uint64_t off, uint64_t len);
uint32_t nhc_ba_persist_swtp(NhcCtrl *n);
uint32_t nhc_ba_persist_pending(NhcCtrl *n);

/* directives.c */
void nhc_dir_realize(NhcCtrl *n);
void nhc_dir_free(NhcDirectives *d);
void nhc_dir_reset(NhcCtrl *n);
uint16_t nhc_admin_directive_send(NhcCtrl *n, NhcReq *req);
uint16_t nhc_admin_directive_receive(NhcCtrl *n, NhcReq *req);
uint16_t nhc_io_write_stream(NhcCtrl *n, NhcReq *req, uint16_t *tag);    /* place hook */

/* fdp.c */
bool nhc_fdp_realize(NhcCtrl *n, Error **errp);
void nhc_fdp_free(NhcFdp *f);
void nhc_fdp_reset(NhcCtrl *n);
uint16_t nhc_fdp_log(NhcCtrl *n, NhcReq *req, uint8_t lid, GByteArray *page);
uint16_t nhc_fdp_get_feature(NhcCtrl *n, NhcReq *req, uint8_t fid, bool dflt,
                             uint32_t *result);
uint16_t nhc_fdp_set_feature(NhcCtrl *n, NhcReq *req, uint8_t fid);
uint16_t nhc_io_mgmt_recv(NhcCtrl *n, NhcReq *req);
uint16_t nhc_io_mgmt_send(NhcCtrl *n, NhcReq *req);
uint16_t nhc_io_write_placement(NhcCtrl *n, NhcReq *req, uint16_t *tag); /* place hook */

/* zns.c */
extern const NhcCmd nhc_zns_cmds[256];
bool nhc_zns_realize(NhcCtrl *n, Error **errp);
bool nhc_zns_check_engine(NhcCtrl *n, Error **errp);
void nhc_zns_free(NhcCtrl *n);
bool nhc_zns_active(NhcCtrl *n);
uint64_t nhc_zns_nsze(NhcCtrl *n);
uint64_t nhc_zns_bytes(NhcCtrl *n);
bool nhc_zns_lost(NhcCtrl *n, uint64_t off, uint64_t len);
void nhc_zns_rebuild(NhcCtrl *n);
uint16_t nhc_zns_identify_ns(NhcCtrl *n, NhcReq *req);
uint16_t nhc_zns_identify_ctrl(NhcCtrl *n, NhcReq *req);

/* state.c */
typedef void (*NhcExtentFn)(NhcCtrl *n, uint64_t off, uint64_t len, void *opaque);
void nhc_drive_extents(NhcCtrl *n, uint64_t off, uint64_t len, NhcExtentFn fn, void *opaque);
char *nhc_file_property(NhcCtrl *n, const char *prop, const char *suffix);
void nhc_state_open(NhcCtrl *n, Error **errp);
void nhc_state_save(NhcCtrl *n);
void nhc_state_touch(NhcCtrl *n);
void nhc_state_close(NhcCtrl *n);

/* undo.c */
void nhc_undo_attach(NhcCtrl *n);
void nhc_undo_free(NhcCtrl *n);
void nhc_undo_power_loss(NhcCtrl *n);

#endif
