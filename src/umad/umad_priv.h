/* SPDX-License-Identifier: MIT */
/*
 * softib's libibumad.so.3 (docs/umad.md): what its files share.  The
 * library is built with hidden visibility; UMAD_EXPORT marks the 39
 * functions libibumad.map puts into the IBUMAD_1.0/1.1/1.2 nodes.  The ABI
 * is the system's <infiniband/umad.h> (rdma-core v44); no rdma-core code
 * or library is used.  Locking: umad_port.c's port table has one mutex;
 * everything else is stateless or per call.
 */
#ifndef SIB_UMAD_PRIV_H
#define SIB_UMAD_PRIV_H

#include <infiniband/umad.h>
#include <infiniband/umad_types.h>    /* UMAD_QKEY */
#include <stdio.h>

#include "common/sib_ctl.h"

#define UMAD_EXPORT __attribute__((visibility("default")))

/* umad_local.c: the level set by umad_debug(); messages go to stderr
 * prefixed as libibumad's ("ibwarn: [pid] func: "). */
extern int sib_umad_debug_level;
void sib_umad_warn(const char *func, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define UMAD_WARN(...) sib_umad_warn(__func__, __VA_ARGS__)
#define UMAD_DEBUG(...) do { if (sib_umad_debug_level) sib_umad_warn(__func__, __VA_ARGS__); } while (0)

/* umad_ca.c: one MGMT_QUERY round trip with softibd (q->what and the
 * inputs set by the caller; abi_version is filled in).  0 or -errno:
 * the daemon's answer (-ENODEV: no such CA or port), or the transport's. */
int sib_umad_query(struct sib_ctl_mgmt_query *q);

/* umad_ca.c: libibumad's CA/port resolution.  ca_name NULL: the first CA
 * with an ACTIVE port, else one with a LinkUp port, else one with a port
 * not Disabled; *port (may be NULL) 0: that CA's best port the same way.
 * The chosen name goes to out.  0, or -ENODEV. */
int sib_umad_resolve(const char *ca_name, int *port, char out[UMAD_CA_NAME_LEN]);

#endif
