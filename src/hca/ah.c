/* SPDX-License-Identifier: MIT */
/*
 * Address handles (IBA 11.2.2 Create/Destroy Address Handle; rdma-core
 * ibv_create_ah(3)): the address vector a UD send goes to, kept exactly as
 * given.  They live in this process only: like mlx5's IB AHs they need no
 * kernel (here: softibd) object, and a UD send copies the vector into its
 * WQE, so the data path never looks an AH up.  Checks only what rdma-core's
 * stack refuses (a port the device lacks, a GID index with no GID).  No
 * lock: the per-context count is atomic.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/fabric_view.h"
#include "hca/hca.h"

/*
 * ibv_create_ah: EINVAL for a port the device lacks or, with is_global,
 * an SGID index that names no GID (only index 0 of the port's table holds
 * one; the kernel's rdma_get_gid_attr fails the rest), or an SL above 15;
 * ENOMEM past max_ah.
 */
struct ibv_ah *sib_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct sib_context *ctx = to_sctx(pd->context);
	const struct sib_shm_device *sd = &sib_fabric->devs[ctx->dev->index];
	struct sib_ah *ah;

	if (attr->port_num < 1 || attr->port_num > sib_fabric_num_ports(sd) || attr->sl > 15 ||
	    (attr->is_global && attr->grh.sgid_index != 0)) {
		errno = EINVAL;
		return NULL;
	}
	if (atomic_fetch_add(&ctx->nah, 1) >= SIB_MAX_AH) {
		atomic_fetch_sub(&ctx->nah, 1);
		errno = ENOMEM;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		atomic_fetch_sub(&ctx->nah, 1);
		errno = ENOMEM;
		return NULL;
	}
	ah->ibv.context = pd->context;
	ah->ibv.pd = pd;
	ah->attr = *attr;
	return &ah->ibv;
}

int sib_destroy_ah(struct ibv_ah *ibah)
{
	struct sib_context *ctx = to_sctx(ibah->context);

	atomic_fetch_sub(&ctx->nah, 1);
	free(ibah);
	return 0;
}
