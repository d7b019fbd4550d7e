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

static uint16_t nhc_cmd_check_nsid(const NhcCmd *c, uint32_t nsid)
{
    if (!(c->flags & NHC_CMD_NSID) || nsid == NHC_NSID ||
        (nsid == NVME_NSID_BROADCAST && (c->flags & NHC_CMD_NSID_ALL))) {
        return NVME_SUCCESS;
    }
    return NHC_ERR(NVME_INVALID_NSID);
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
    const NhcCmd *c = &(req->sq->sqid ? nhc_io_cmds : nhc_admin_cmds)[req->cmd.opcode];
    uint16_t status;

    if (NVME_CMD_FLAGS_FUSE(req->cmd.flags) || NVME_CMD_FLAGS_PSDT(req->cmd.flags)) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    if (!nhc_cmd_present(n, c)) {
        return NHC_ERR(NVME_INVALID_OPCODE);
    }
    status = nhc_cmd_check_nsid(c, le32_to_cpu(req->cmd.nsid));
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
 * per I/O opcode, then 2 KiB reserved.  Linux reads it at probe (Identify Controller LPA bit 1)
 * and acts on a passthrough command's effects: CSE freezes every I/O queue around it, CCC
 * re-reads Identify, NIC and NCC rescan the namespaces.
 */
void nhc_effects_log(NhcCtrl *n, GByteArray *page)
{
    g_autofree NvmeEffectsLog *log = g_new0(NvmeEffectsLog, 1);

    for (int op = 0; op < 256; op++) {
        log->acs[op] = cpu_to_le32(nhc_cmd_effects(n, &nhc_admin_cmds[op]));
        log->iocs[op] = cpu_to_le32(nhc_cmd_effects(n, &nhc_io_cmds[op]));
    }
    g_byte_array_append(page, (uint8_t *)log, sizeof(*log));
}
