/* SPDX-License-Identifier: MIT */
/*
 * Local memory access of the software HCA: SGE validation against MRs
 * (the key check order of STYLE 6.8: (1) index live, (2) key byte,
 * (3) PD, (4) access, (6) range) and gather/scatter at a byte offset.
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

void sib_sge_copy_out(const struct ibv_sge *sge, uint32_t num_sge, uint32_t off, void *dst, uint32_t len)
{
	uint8_t *d = dst;

	for (uint32_t i = 0; i < num_sge && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t n = sge[i].length - off < len ? sge[i].length - off : len;

		memcpy(d, (const uint8_t *)(uintptr_t)sge[i].addr + off, n);
		d += n;
		len -= n;
		off = 0;
	}
}

void sib_sge_copy_in(const struct ibv_sge *sge, uint32_t num_sge, uint32_t off, const void *src, uint32_t len)
{
	const uint8_t *s = src;

	for (uint32_t i = 0; i < num_sge && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t n = sge[i].length - off < len ? sge[i].length - off : len;

		memcpy((uint8_t *)(uintptr_t)sge[i].addr + off, s, n);
		s += n;
		len -= n;
		off = 0;
	}
}
