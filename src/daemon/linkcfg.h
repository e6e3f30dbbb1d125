/* SPDX-License-Identifier: MIT */
/*
 * softibd's view of the links (src/link): per-context link counters for the
 * status report (docs/link.md).  Single-threaded, like all of softibd.
 */
#ifndef SIB_DAEMON_LINKCFG_H
#define SIB_DAEMON_LINKCFG_H

#include <stdio.h>

struct sibd;

/* One "link ..." line per open inbox: its owner's link counters, read
 * from a read-only mapping of the inbox's header page.  The values come
 * from shared memory any producer can write: printed, never acted on. */
void sibd_link_status(struct sibd *d, FILE *f);

#endif
