// SPDX-License-Identifier: MIT
/*
 * Public default-version verbs that are outside softib's first slice, plus a
 * few that are trivial to provide for real.
 *
 * Unsupported verbs fail exactly as rdma-core's libibverbs does when the
 * provider lacks the operation (its "dummy ops"), using the per-family
 * return convention of the man pages:
 *   - pointer verbs (create/import/reg): NULL with errno = EOPNOTSUPP;
 *   - int verbs documented as "0 or the errno value" (destroy/modify/query,
 *     ECE): return EOPNOTSUPP, and set errno to it too;
 *   - ibv_resolve_eth_l2_from_gid: negative errno (-ENOSYS), as rdma-core
 *     built without neighbour resolution;
 *   - unimport (void): nothing to release, softib never imports objects.
 *
 * Real ones:
 *   - fork: softib memory is never pinned for DMA, so fork() is always safe:
 *     ibv_fork_init() = 0, ibv_is_fork_initialized() = IBV_FORK_UNNEEDED,
 *     ibv_dofork_range()/ibv_dontfork_range() = 0;
 *   - ibv_query_qp_data_in_order() = 0 ("no in-order guarantee", always a
 *     correct answer);
 *   - ibv_copy_{qp_attr,ah_attr,path_rec}_*_kern(): field-by-field
 *     conversions between the kernel uverbs/SA structs and the verbs/SA
 *     structs (librdmacm uses them).
 *
 * Several of these names also have a hidden @IBVERBS_1.0 twin (SRQ, AH,
 * mcast) in compat.c; the plain definitions here are their @@IBVERBS_1.1
 * defaults (see export.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "verbs/export.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

/* Declared in rdma-core's private driver.h / marshall.h (not installed). */
int ibv_dofork_range(void *base, size_t size);
int ibv_dontfork_range(void *base, size_t size);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, const struct ib_uverbs_qp_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, const struct ib_uverbs_ah_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, const struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, const struct ibv_sa_path_rec *src);

static void *fail_null(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* "0 or the errno value" verbs: errno is set as well, because some callers
 * test errno instead (librdmacm checks errno == EOPNOTSUPP after a failed
 * ibv_set_ece() and rejects the connection on ECONNREFUSED). */
static int fail_int(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* ---- import / unimport (IBVERBS_1.10, 1.13) ----------------------- */

SIB_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	return fail_null();
}

SIB_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	return fail_null();
}

SIB_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	return fail_null();
}

SIB_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	return fail_null();
}

SIB_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
}

SIB_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
}

SIB_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}

/* ---- memory registration extras ------------------------------------ */

SIB_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					    uint64_t iova, int fd, int access)
{
	return fail_null();
}

/* ---- ECE (IBVERBS_1.10) -------------------------------------------- */

/* librdmacm calls both when it sets up a connected QP; it ignores a failure
 * with errno == EOPNOTSUPP. */
SIB_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return fail_int();
}

SIB_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return fail_int();
}

/* ---- AH --------------------------------------------------------------- */

/* Only the RoCE path of a provider's create_ah calls this. */
SIB_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					   uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	return -ENOSYS;
}

/* ---- QP data ordering (IBVERBS_1.14) --------------------------------- */

SIB_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
					  uint32_t flags)
{
	return 0;	/* no in-order guarantee is claimed */
}

/* ---- fork support ----------------------------------------------------- */

SIB_EXPORT int ibv_fork_init(void)
{
	return 0;
}

SIB_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

SIB_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}

SIB_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

/* ---- kernel ABI <-> verbs conversions -------------------------------- */

SIB_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
					   const struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid.raw));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;

	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

/* Every field the kernel struct carries; dst->rate_limit has no kernel
 * counterpart and is left as it is. */
SIB_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
					   const struct ib_uverbs_qp_attr *src)
{
	dst->qp_state = src->qp_state;
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;

	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;

	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);

	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

/* LIDs, flow label and P_Key stay in network byte order on both sides. */
SIB_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
					    const struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid.raw));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid.raw));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

SIB_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
					  const struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->reversible = src->reversible;
	dst->mtu = src->mtu;
	dst->pkey = src->pkey;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->numb_path = src->numb_path;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}
