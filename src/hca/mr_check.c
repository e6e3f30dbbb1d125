// SPDX-License-Identifier: MIT
/*
 * MR access-flag validation and the PD / access / range key checks
 * (IBA 1.4 vol 1, 10.6; chapter 9 R_Key validation). Pure functions over
 * plain values: no I/O, no locks. Which check fails decides the NAK or WC
 * status, so the order of the checks is part of the contract (mr_check.h).
 */
#include <errno.h>

#include "hca/mr_check.h"

/* Rule: kernel ib_check_mr_access(), include/rdma/ib_verbs.h. */
int sib_mr_access_check(unsigned int access)
{
	const unsigned int remote_wr = IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_ATOMIC;

	if ((access & remote_wr) && !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (access & ~(unsigned int)SIB_MR_ACCESS_SUPPORTED)
		return EINVAL;
	return 0;
}

/*
 * Order: STYLE 6.8, after rxe lookup_mem(). Range rule: rxe mr_check_range(),
 * without its unchecked iova + length sums.
 */
enum sib_key_result sib_mr_check(const struct sib_mr_range *mr, uint32_t pd,
				 uint64_t va, uint64_t len, unsigned int need)
{
	if (mr->pd != pd)
		return SIB_KEY_PD;
	if ((mr->access & need) != need)
		return SIB_KEY_ACCESS;
	if (len == 0)
		return SIB_KEY_OK;
	/* len <= length first, so length - len cannot wrap */
	if (len > mr->length || va < mr->iova ||
	    va - mr->iova > mr->length - len)
		return SIB_KEY_RANGE;
	return SIB_KEY_OK;
}
