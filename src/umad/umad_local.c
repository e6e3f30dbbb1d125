// SPDX-License-Identifier: MIT
/*
 * libibumad's purely local functions (rdma-core v44 umad.h, the layouts of
 * struct ib_user_mad and ib_mad_addr_t): buffer layout, address setters,
 * debug and dump.  The kernel ABI softib emulates is "new" (ABI 6: P_Key
 * index present), so umad_size() is 64 and the MAD starts at byte 64.
 * No I/O besides the dumps on stderr; no locks (the debug level is an int
 * set by the caller, as libibumad's).
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "umad/umad_priv.h"

_Static_assert(sizeof(struct ib_user_mad) == 64, "umad header is 64 bytes (new ABI)");
_Static_assert(sizeof(ib_mad_addr_t) == 44, "ib_mad_addr_t is 44 bytes");

int sib_umad_debug_level;

void sib_umad_warn(const char *func, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ibwarn: [%d] %s: ", (int)getpid(), func);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* No global state to set up: softibd is asked on every query.  0. */
UMAD_EXPORT int umad_init(void)
{
	return 0;
}

UMAD_EXPORT int umad_done(void)
{
	return 0;
}

/* Bytes of the umad header before the MAD: 64 (ABI with pkey_index). */
UMAD_EXPORT size_t umad_size(void)
{
	return sizeof(struct ib_user_mad);
}

/* The MAD of a umad buffer: its byte 64. */
UMAD_EXPORT void *umad_get_mad(void *umad)
{
	return ((struct ib_user_mad *)umad)->data;
}

/* The header's status: 0, or an errno (110 ETIMEDOUT: the request's
 * timeout and retries ran out). */
UMAD_EXPORT int umad_status(void *umad)
{
	return (int)((struct ib_user_mad *)umad)->status;
}

UMAD_EXPORT ib_mad_addr_t *umad_get_mad_addr(void *umad)
{
	return &((struct ib_user_mad *)umad)->addr;
}

/* The GRH fields of *a into the header, with flow_label as given. */
static void put_grh(struct ib_user_mad *m, const ib_mad_addr_t *a, __be32 flow_label)
{
	m->addr.grh_present = 1;
	memcpy(m->addr.gid, a->gid, sizeof(m->addr.gid));
	m->addr.flow_label = flow_label;
	m->addr.hop_limit = a->hop_limit;
	m->addr.traffic_class = a->traffic_class;
}

/* GRH fields from *mad_addr (GID in network order, flow label in host
 * order, converted), or no GRH if mad_addr is NULL.  Always 0. */
UMAD_EXPORT int umad_set_grh(void *umad, void *mad_addr)
{
	struct ib_user_mad *m = umad;
	const ib_mad_addr_t *a = mad_addr;

	if (a)
		put_grh(m, a, htonl(a->flow_label));
	else
		m->addr.grh_present = 0;
	return 0;
}

/* umad.h declares it; rdma-core v44 does not export it (nor do we): the
 * same with the flow label already in network order. */
int umad_set_grh_net(void *umad, void *mad_addr)
{
	struct ib_user_mad *m = umad;
	const ib_mad_addr_t *a = mad_addr;

	if (a)
		put_grh(m, a, a->flow_label);
	else
		m->addr.grh_present = 0;
	return 0;
}

/* Destination LID, QPN, SL and Q_Key in host order.  Always 0. */
UMAD_EXPORT int umad_set_addr(void *umad, int dlid, int dqp, int sl, int qkey)
{
	struct ib_user_mad *m = umad;

	m->addr.qpn = htonl((uint32_t)dqp);
	m->addr.lid = htons((uint16_t)dlid);
	m->addr.qkey = htonl((uint32_t)qkey);
	m->addr.sl = (uint8_t)sl;
	return 0;
}

/* The same with LID, QPN and Q_Key already in network order. */
UMAD_EXPORT int umad_set_addr_net(void *umad, __be16 dlid, __be32 dqp, int sl, __be32 qkey)
{
	struct ib_user_mad *m = umad;

	m->addr.qpn = dqp;
	m->addr.lid = dlid;
	m->addr.qkey = qkey;
	m->addr.sl = (uint8_t)sl;
	return 0;
}

UMAD_EXPORT int umad_set_pkey(void *umad, int pkey_index)
{
	((struct ib_user_mad *)umad)->addr.pkey_index = (uint16_t)pkey_index;
	return 0;
}

UMAD_EXPORT int umad_get_pkey(void *umad)
{
	return ((struct ib_user_mad *)umad)->addr.pkey_index;
}

/* Sets the debug level if level >= 0; returns the level in force. */
UMAD_EXPORT int umad_debug(int level)
{
	if (level >= 0)
		sib_umad_debug_level = level;
	return sib_umad_debug_level;
}

UMAD_EXPORT void umad_addr_dump(ib_mad_addr_t *addr)
{
	char gid[33];
	int i;

	for (i = 0; i < 16; i++)
		snprintf(gid + 2 * i, 3, "%02x", addr->gid[i]);
	sib_umad_warn(__func__, "qpn %u qkey 0x%x lid %u sl %u\n"
		      "grh_present %u gid_index %u hop_limit %u traffic_class %u "
		      "flow_label 0x%x pkey_index 0x%x\nGid 0x%s",
		      ntohl(addr->qpn), ntohl(addr->qkey), ntohs(addr->lid), addr->sl,
		      addr->grh_present, addr->gid_index, addr->hop_limit, addr->traffic_class,
		      ntohl(addr->flow_label), addr->pkey_index, gid);
}

UMAD_EXPORT void umad_dump(void *umad)
{
	struct ib_user_mad *m = umad;

	sib_umad_warn(__func__, "agent id %u status %x timeout %u", m->agent_id, m->status,
		      m->timeout_ms);
	umad_addr_dump(&m->addr);
}
