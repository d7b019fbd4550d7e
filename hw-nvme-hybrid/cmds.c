/*
 * cmds.c - the command table's dispatch, and the Commands Supported and Effects log page.
 *
 * Every command goes through the same steps, in the manner of Linux's nvmet (parse, then
 * req->execute): the checks all commands share (no fused operations, PRPs only), its table
 * entry (Invalid Command Opcode where there is none, or the device lacks what it needs), the
 * namespace, the command's own checks, its data length against MDTS, the mapping of its data
 * pointer, and its handler.  The log page (Log Identifier 05h) is read off the same tables, so
 * it says exactly what the dispatch does.
 */
#include "qemu/osdep.h"

#include "nvme-hybrid.h"
#include "trace.h"

/* Does the device run this command (it has a handler, and what it needs exists)? */
static bool nhc_cmd_present(NhcCtrl *n, const NhcCmd *c)
{
    return c->execute && (!(c->flags & NHC_CMD_WINDOW) || nhc_ba_present(n));
}

static uint16_t nhc_cmd_check_nsid(const NhcCmd *c, uint32_t nsid, uint32_t ns)
{
    if (!(c->flags & NHC_CMD_NSID) || nsid == ns ||
        (nsid == NVME_NSID_BROADCAST && (c->flags & NHC_CMD_NSID_ALL))) {
        return NVME_SUCCESS;
    }
    return NHC_ERR(NVME_INVALID_NSID);
}

/*
 * The table a command is looked up in: the admin set, or the I/O command set of the namespace
 * it names (*ns receives that namespace): the zoned one's own (zns.c) for NSID 2, else NVM.
 */
static const NhcCmd *nhc_cmd_table(NhcCtrl *n, NhcReq *req, uint32_t *ns)
{
    *ns = NHC_NSID;
    if (!req->sq->sqid) {
        return nhc_admin_cmds;
    }
    if (le32_to_cpu(req->cmd.nsid) == NHC_ZNS_NSID && nhc_zns_active(n)) {
        *ns = NHC_ZNS_NSID;
        return nhc_zns_cmds;
    }
    return nhc_io_cmds;
}

/* The command's data length against MDTS, then its data pointer mapped into req->qsg. */
static uint16_t nhc_cmd_map(NhcCtrl *n, NhcReq *req, const NhcCmd *c)
{
    uint64_t len;

    if (!c->data_len) {
        return NVME_SUCCESS;
    }
    len = c->data_len(n, req);
    if (len > NHC_MAX_XFER) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    if (!(c->flags & (NHC_CMD_DATA_IN | NHC_CMD_DATA_OUT))) {
        return NVME_SUCCESS;
    }
    return nhc_map_prp(n, &req->qsg, le64_to_cpu(req->cmd.dptr.prp1),
                       le64_to_cpu(req->cmd.dptr.prp2), len, c->flags & NHC_CMD_DATA_OUT);
}

uint16_t nhc_dispatch(NhcCtrl *n, NhcReq *req)
{
    uint32_t ns;
    const NhcCmd *c = &nhc_cmd_table(n, req, &ns)[req->cmd.opcode];
    uint16_t status;

    if (NVME_CMD_FLAGS_FUSE(req->cmd.flags) || NVME_CMD_FLAGS_PSDT(req->cmd.flags)) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    if (!nhc_cmd_present(n, c)) {
        return NHC_ERR(NVME_INVALID_OPCODE);
    }
    status = nhc_cmd_check_nsid(c, le32_to_cpu(req->cmd.nsid), ns);
    if (!status && c->check) {
        status = c->check(n, req);
    }
    if (!status) {
        status = nhc_cmd_map(n, req, c);
    }
    return status ? status : c->execute(n, req);
}

/* ------------------------------------------------------------------------------ log page */

static uint32_t nhc_cmd_effects(NhcCtrl *n, const NhcCmd *c)
{
    return nhc_cmd_present(n, c) ? NVME_CMD_EFF_CSUPP | c->effects : 0;
}

/*
 * Commands Supported and Effects (NVMe Base 1.4 5.14.1.5): a dword per admin opcode, then one
 * per I/O opcode of the command set @csi names (NVM, or Zoned Namespace), then 2 KiB
 * reserved.  Linux reads it at probe (Identify Controller LPA bit 1), per command set for a
 * namespace that is not NVM (a zoned namespace without Zone Append is read-only to it), and
 * acts on a passthrough command's effects: CSE freezes every I/O queue around it, CCC re-reads
 * Identify, NIC and NCC rescan the namespaces.
 */
void nhc_effects_log(NhcCtrl *n, GByteArray *page, uint8_t csi)
{
    g_autofree NvmeEffectsLog *log = g_new0(NvmeEffectsLog, 1);
    const NhcCmd *io = csi == NVME_CSI_ZONED ? nhc_zns_cmds : nhc_io_cmds;

    for (int op = 0; op < 256; op++) {
        log->acs[op] = cpu_to_le32(nhc_cmd_effects(n, &nhc_admin_cmds[op]));
        log->iocs[op] = cpu_to_le32(nhc_cmd_effects(n, &io[op]));
    }
    g_byte_array_append(page, (uint8_t *)log, sizeof(*log));
}
