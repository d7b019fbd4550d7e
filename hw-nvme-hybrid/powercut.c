/*
 * powercut.c - losing power: the `power-cut` QOM property (now), and crash points
 * (`power-cut-at=K`: at the device's K-th event).
 *
 * A power cut is one instant for the whole machine.  What a volatile write buffer held is lost
 * (nhc_undo_power_loss), the capacitors save the BAR1 window (nhc_ba_power_loss), and the
 * process ends at once, as with SIGKILL: no exit notifier runs, so the engine state stays marked
 * unclean and the next start counts an unsafe shutdown.
 *
 * Crash points.  Random cuts miss windows microseconds wide.  Under -icount (or qtest, where
 * this process's client is the only clock) a run is deterministic, so the device's events can
 * be numbered from 1 and a cut placed exactly at event K: the power fails there, before the
 * step the event names happens.  The events are the steps whose order durability depends on:
 * a command fetched, modeled by the engine, its backend I/O issued and done, the device's DMA
 * into the window, old bytes kept for the undo, a completion posted, a Flush begun and ended.
 * `x-events` reads how many there have been, so that scripts/crashpoints can count a workload's
 * events once and then cut at each of them.
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "system/cpus.h"
#include "system/qtest.h"
#include <json-glib/json-glib.h>

#include "nvme-hybrid.h"
#include "trace.h"

static const char *const nhc_event_names[NHC_EV__MAX] = {
    [NHC_EV_FETCH]          = "fetch",
    [NHC_EV_MODEL]          = "model",
    [NHC_EV_BACKEND_ISSUE]  = "backend-issue",
    [NHC_EV_BACKEND_DONE]   = "backend-done",
    [NHC_EV_WINDOW_DMA]     = "window-dma",
    [NHC_EV_UNDO_KEPT]      = "undo-kept",
    [NHC_EV_CQE_POSTED]     = "cqe-posted",
    [NHC_EV_FLUSH_BEGIN]    = "flush-begin",
    [NHC_EV_FLUSH_END]      = "flush-end",
};

/* The power fails now: from a QMP command, or from inside the device at a crash point. */
static void G_NORETURN nhc_power_fail(NhcCtrl *n, const char *why)
{
    trace_nhc_power_cut(why);
    /* Nothing is fetched any more: pausing the vCPUs lets them ring doorbells, and the
     * restore of lost data below runs the block layer's event loop, where the fetch would run. */
    n->power_cut = true;
    /* The vCPUs stop first: a store into the window (guest RAM to TCG, taken without the BQL)
     * while the dump computes its checksum would leave a file that does not match it, and the
     * next start would discard the whole window.  The device's own DMA into the window cannot
     * race the dump: it goes through a buffer copied in under the BQL (bar-pm.c, io-cmd.c).
     * Where no vCPU can run meanwhile there is nothing to stop, and stopping would hang: it
     * disables the virtual clock, which waits for that clock's timers to finish, and a crash
     * point may be inside one (a completion at its modeled time).  Under qtest the vCPUs never
     * run; under -icount they all run in one thread, which also runs the virtual timers, so a
     * crash point in that thread has them all stopped already. */
    if (!qtest_enabled() && !(icount_enabled() && qemu_in_vcpu_thread())) {
        pause_all_vcpus();
    }
    nhc_undo_power_loss(n);
    nhc_ba_power_loss(n);
    error_report("nvme-hybrid: power cut (%s)%s; QEMU stops", why,
                 nhc_ba_present(n) ? ", BA window saved" : "");
    _exit(0);
}

void nhc_event(NhcCtrl *n, NhcEvent ev)
{
    if (n->power_cut) {
        return;     /* the cut's own restore issues I/O: it is not the workload's */
    }
    n->events_seen++;
    n->event_counts[ev]++;
    trace_nhc_event(n->events_seen, nhc_event_names[ev]);
    if (n->events_seen == n->power_cut_at) {
        g_autofree char *why = g_strdup_printf("power-cut-at=%" PRIu64 ", event %s",
                                               n->events_seen, nhc_event_names[ev]);
        nhc_power_fail(n, why);
    }
}

/* power-cut-at numbers events of a deterministic run: refused where the run is not one. */
bool nhc_powercut_realize(NhcCtrl *n, Error **errp)
{
    if (n->power_cut_at && !icount_enabled() && !qtest_enabled()) {
        error_setg(errp, "power-cut-at: needs -icount (or qtest), where a run is deterministic "
                   "and event %" PRIu64 " is the same point in every run", n->power_cut_at);
        return false;
    }
    return true;
}

static void nhc_set_power_cut(Object *obj, bool value, Error **errp)
{
    NhcCtrl *n = NVME_HYBRID(obj);

    if (!DEVICE(obj)->realized) {
        error_setg(errp, "power-cut: the device is not realized");
        return;
    }
    if (value) {
        nhc_power_fail(n, "power-cut");
    }
}

/* Arms a crash point N events from now.  power-cut-at counts from the device's start, which
 * a guest's boot makes long and not exactly repeatable (its other disks complete in host time);
 * a campaign that cuts inside a guest's workload arms the cut once the workload runs
 * (scripts/dblog-powercut --at-events). */
static void nhc_set_x_power_cut_in(Object *obj, Visitor *v, const char *name, void *opaque,
                                   Error **errp)
{
    NhcCtrl *n = NVME_HYBRID(obj);
    uint64_t in;

    if (!visit_type_uint64(v, name, &in, errp)) {
        return;
    }
    if (!DEVICE(obj)->realized) {
        error_setg(errp, "x-power-cut-in: the device is not realized (power-cut-at arms a "
                   "cut from the start)");
        return;
    }
    if (!icount_enabled() && !qtest_enabled()) {
        error_setg(errp, "x-power-cut-in: needs -icount (or qtest), where the device's events "
                   "are points of the guest's run");
        return;
    }
    if (in == 0 || in > UINT64_MAX - n->events_seen) {
        error_setg(errp, "x-power-cut-in: %" PRIu64 " events: give 1 or more, and not so many "
                   "that the count wraps", in);
        return;
    }
    n->power_cut_at = n->events_seen + in;
}

/* {"total": events so far, "fetch": ..., ...}: what a workload did, for scripts/crashpoints. */
static void nhc_get_x_events(Object *obj, Visitor *v, const char *name, void *opaque,
                             Error **errp)
{
    NhcCtrl *n = NVME_HYBRID(obj);
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonNode) root = NULL;
    g_autofree char *json = NULL;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "total");
    json_builder_add_int_value(b, n->events_seen);
    for (int i = 0; i < NHC_EV__MAX; i++) {
        json_builder_set_member_name(b, nhc_event_names[i]);
        json_builder_add_int_value(b, n->event_counts[i]);
    }
    json_builder_end_object(b);
    root = json_builder_get_root(b);
    json = json_to_string(root, FALSE);
    visit_type_str(v, name, &json, errp);
}

void nhc_powercut_class_init(ObjectClass *oc)
{
    object_class_property_add_bool(oc, "power-cut", NULL, nhc_set_power_cut);
    object_class_property_set_description(oc, "power-cut",
        "write true: power fails now (the capacitors save the BAR1 window, volatile state "
        "is lost, QEMU stops at once); see docs/bar-pm.md");
    object_class_property_set_description(oc, "power-cut-at",
        "debug: power fails at the device's K-th event (fetch, model, backend I/O issued and "
        "done, DMA into the window, undo kept, completion posted, flush begun and ended), "
        "counted from 1; 0: never; needs -icount or qtest (docs/powercut.md)");
    object_class_property_add(oc, "x-power-cut-in", "uint64", NULL, nhc_set_x_power_cut_in,
                              NULL, NULL);
    object_class_property_set_description(oc, "x-power-cut-in",
        "test only: write N: power fails at the N-th device event from now (as power-cut-at); "
        "needs -icount or qtest");
    object_class_property_add(oc, "x-events", "str", nhc_get_x_events, NULL, NULL, NULL);
    object_class_property_set_description(oc, "x-events",
        "test only: the device's events so far, as JSON (total and per kind)");
}
