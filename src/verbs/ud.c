/* SPDX-License-Identifier: MIT */
/*
 * The UD verbs (rdma-core libibverbs verbs.c semantics; IBA 11.2.2, 11.3.1,
 * and 11.4.1.2 for the GRH of a received datagram): ibv_create_ah and
 * ibv_destroy_ah, ibv_attach_mcast and ibv_detach_mcast through the
 * provider's ops, and ibv_init_ah_from_wc / ibv_create_ah_from_wc, which
 * build the address vector that answers a received UD datagram.  Never
 * touches HCA fields or locks: only public verbs.h structs and the ops
 * table.  No state of its own.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "verbs/export.h"
#include "verbs/sib_verbs.h"

/* rdma-core ibv_create_ah: NULL and errno from the provider; the AH
 * records its context and PD. */
SIB_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct ibv_ah *ah = sib_get_ops(pd->context)->create_ah(pd, attr);

	if (ah) {
		ah->context = pd->context;
		ah->pd = pd;
	}
	return ah;
}

SIB_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	return sib_get_ops(ah->context)->destroy_ah(ah);
}

/* The index of `gid` in the port's GID table, or -1 (errno ENOENT). */
static int find_gid_index(struct ibv_context *context, uint8_t port_num, const union ibv_gid *gid)
{
	struct ibv_port_attr pa;
	union ibv_gid g;

	if (ibv_query_port(context, port_num, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		if (ibv_query_gid(context, port_num, i, &g))
			break;
		if (!memcmp(g.raw, gid->raw, sizeof(g.raw)))
			return i;
	}
	errno = ENOENT;
	return -1;
}

/*
 * ibv_init_ah_from_wc(3): the reply's address vector from a completion
 * and the GRH area of its buffer.  DLID is the sender's SLID, SL the
 * packet's, the source path bits the DLID path bits the packet came to,
 * port as given.  With IBV_WC_GRH the reply is global: DGID is the
 * datagram's SGID, the SGID index the one of the datagram's DGID in this
 * port's table (not found: -1 and errno, as rdma-core), flow label and
 * traffic class the datagram's, hop limit 0xFF.  0 or -1.
 */
SIB_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
				   struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (wc->wc_flags & IBV_WC_GRH) {
		uint32_t vtf = be32toh(grh->version_tclass_flow);
		int idx = find_gid_index(context, port_num, &grh->dgid);

		if (idx < 0)
			return -1;
		ah_attr->is_global = 1;
		ah_attr->grh.dgid = grh->sgid;
		ah_attr->grh.sgid_index = (uint8_t)idx;
		ah_attr->grh.flow_label = vtf & 0xfffff;
		ah_attr->grh.traffic_class = (uint8_t)(vtf >> 20);
		ah_attr->grh.hop_limit = 0xff;
	}
	return 0;
}

/* ibv_attach_mcast(3) / ibv_detach_mcast(3): 0 or the errno value
 * (EINVAL for a QP that is not UD, as ib_attach_mcast). */
SIB_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return sib_get_ops(qp->context)->attach_mcast(qp, gid, lid);
}

SIB_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return sib_get_ops(qp->context)->detach_mcast(qp, gid, lid);
}

/* ibv_create_ah_from_wc(3): NULL and errno if either step fails. */
SIB_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
						uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}
