/* SPDX-License-Identifier: MIT */
/*
 * Local memory access of the software HCA: SGE validation against MRs
 * (the key check order of STYLE 6.8: (1) index live, (2) key byte,
 * (3) PD, (4) access, (6) range) and gather/scatter at a byte offset.
 * Gather and scatter hold a table reference on each SGE's MR while they
 * copy, so dereg_mr/rereg_mr (which wait for references) never return
 * while a packet still reads or writes the old memory.  Engine context.
 */
#include <string.h>

#include "hca/transport.h"

enum ibv_wc_status sib_sge_check(struct sib_context *ctx, uint32_t pd, const struct ibv_sge *sge,
				 uint32_t num_sge, unsigned int need)
{
	for (uint32_t i = 0; i < num_sge; i++) {
		const struct sib_mr *mr;
		struct sib_mr_range local;
		uint64_t h;
		bool ok;

		if (!sge[i].length)
			continue;
		mr = sib_objtab_get_index(&ctx->mrs, sge[i].lkey >> 8, &h);
		if (!mr)
			return IBV_WC_LOC_PROT_ERR;             /* (1) */
		/* Local SGEs address the MR by virtual address, not iova. */
		local = mr->range;
		local.iova = (uintptr_t)mr->ibv.addr;
		ok = mr->ibv.lkey == sge[i].lkey &&             /* (2) */
		     sib_mr_check(&local, pd, sge[i].addr, sge[i].length, need) == SIB_KEY_OK;
		sib_objtab_put(&ctx->mrs, h);
		if (!ok)
			return IBV_WC_LOC_PROT_ERR;             /* (3), (4), (6) */
	}
	return IBV_WC_SUCCESS;
}

/* Copy len bytes between the SGE list at byte offset off and buf, each
 * piece under a reference on its MR, re-checked (key, PD, access, range)
 * under that reference.  to_sge: scatter (needs LOCAL_WRITE).  buf NULL:
 * check the pieces only, copy nothing. */
static enum ibv_wc_status sge_copy(struct sib_context *ctx, uint32_t pd, const struct ibv_sge *sge,
				   uint32_t num_sge, uint32_t off, uint8_t *buf, uint32_t len, bool to_sge)
{
	unsigned int need = to_sge ? IBV_ACCESS_LOCAL_WRITE : 0;

	for (uint32_t i = 0; i < num_sge && len; i++) {
		const struct sib_mr *mr;
		struct sib_mr_range local;
		uint64_t h, addr;
		uint32_t n;
		bool ok;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off < len ? sge[i].length - off : len;
		addr = sge[i].addr + off;
		mr = sib_objtab_get_index(&ctx->mrs, sge[i].lkey >> 8, &h);
		if (!mr)
			return IBV_WC_LOC_PROT_ERR;
		local = mr->range;
		local.iova = (uintptr_t)mr->ibv.addr;
		ok = mr->ibv.lkey == sge[i].lkey && sib_mr_check(&local, pd, addr, n, need) == SIB_KEY_OK;
		/* The application's memory (to_sge), or a peer's (direct
		 * placement, direct_place.c): each byte once (sib_place). */
		if (ok && buf && to_sge)
			sib_place((uint8_t *)(uintptr_t)addr, buf, n);
		else if (ok && buf)
			sib_place(buf, (const uint8_t *)(uintptr_t)addr, n);
		sib_objtab_put(&ctx->mrs, h);
		if (!ok)
			return IBV_WC_LOC_PROT_ERR;
		if (buf)
			buf += n;
		len -= n;
		off = 0;
	}
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status sib_sge_copy_out(struct sib_context *ctx, uint32_t pd, const struct ibv_sge *sge,
				    uint32_t num_sge, uint32_t off, void *dst, uint32_t len)
{
	return sge_copy(ctx, pd, sge, num_sge, off, dst, len, false);
}

enum ibv_wc_status sib_sge_copy_in(struct sib_context *ctx, uint32_t pd, const struct ibv_sge *sge,
				   uint32_t num_sge, uint32_t off, const void *src, uint32_t len)
{
	return sge_copy(ctx, pd, sge, num_sge, off, (uint8_t *)(uintptr_t)src, len, true);
}

enum ibv_wc_status sib_sge_check_range(struct sib_context *ctx, uint32_t pd, const struct ibv_sge *sge,
				       uint32_t num_sge, uint32_t off, uint32_t len, unsigned int need)
{
	return sge_copy(ctx, pd, sge, num_sge, off, NULL, len, need & IBV_ACCESS_LOCAL_WRITE);
}
