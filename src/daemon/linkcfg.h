/* SPDX-License-Identifier: MIT */
/*
 * softibd's side of the link layer (docs/link.md): capture sessions and
 * per-port faults pushed to clients through the fabric map's link area,
 * and the link lines of the status report.  Single-threaded, like all of
 * softibd.
 */
#ifndef SIB_DAEMON_LINKCFG_H
#define SIB_DAEMON_LINKCFG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "softib/mai.h"

struct sibd;
struct sibd_client;
struct sib_ctl_msg;

/*
 * SIB_CTL_LINK_CAPTURE: create a capture ring (a sealed memfd in the inbox
 * format) and arm it on the ports the message names; *pass_fd gets it.
 * -EINVAL: no such device or port; -EBUSY: a port is already captured, or
 * too many sessions.  The session ends with the connection.
 */
int sibd_link_capture(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd);
/* SIB_CTL_GET_CAPTURE: the armed ring named by m->u.link.cap, or -ESTALE. */
int sibd_link_get_capture(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd);
/* SIB_CTL_LINK_FAULTS: set ("off": clear) the faults of the named ports.
 * -EINVAL: no such device or port, or a malformed spec. */
int sibd_link_faults(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd);
/* devs[dev] was removed: disarm its ports and clear their faults (the
 * fault seqlock moves on, so running links drop what was pushed), so that
 * a device added later in the slot inherits nothing. */
void sibd_link_device_gone(struct sibd *d, uint32_t dev);
/* MAD m crosses port `port` of device dev (out: leaving it): if a
 * capture session armed that port, the packet (subnet/mad_router.h
 * sib_mad_wire, CRCs computed) goes into its ring beside the contexts'
 * data packets; a full ring loses it (counted), nothing waits. */
void sibd_link_mad_trace(struct sibd *d, uint32_t dev, uint8_t port, const mai_mad_t *m, bool out);
/* A connection is going away: end its capture sessions. */
void sibd_link_client_gone(struct sibd *d, const struct sibd_client *c);

/* Inbox `inbox` is about to be freed: keep its data counters for the PMA
 * (sibd_data_counters), so that they do not go back when a program exits. */
void sibd_link_inbox_gone(struct sibd *d, uint32_t inbox);

/* "link_port" lines (armed captures, faults) and one "link" line per open
 * inbox: its owner's link counters, read from a read-only mapping of the
 * inbox's header page.  Those values come from shared memory any producer
 * can write: printed, never acted on. */
void sibd_link_status(struct sibd *d, FILE *f);

#endif
