/* SPDX-License-Identifier: MIT */
/*
 * Memory region rules as pure predicates: which access flag sets ibv_reg_mr
 * accepts, and the PD / access / range part of an L_Key or R_Key check
 * (IBA 1.4 vol 1, 10.6 memory regions and access rights; the responder's
 * R_Key validation of chapter 9). No I/O, no locks, no MR table: key lookup
 * is the caller's.
 */
#ifndef SIB_HCA_MR_CHECK_H
#define SIB_HCA_MR_CHECK_H

#include <stdint.h>
#include <infiniband/verbs.h>

/* Access bits ibv_reg_mr accepts (kernel IB_ACCESS_SUPPORTED, rdma-core 44). */
#define SIB_MR_ACCESS_SUPPORTED						\
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |		\
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |		\
	 IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |			\
	 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB |			\
	 IBV_ACCESS_OPTIONAL_RANGE)

/*
 * Validate ibv_reg_mr access flags: 0, or EINVAL (positive errno).
 * Rule: kernel ib_check_mr_access() (include/rdma/ib_verbs.h), the check
 * ib_uverbs_reg_mr applies before the driver sees the flags:
 *  - REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE -> EINVAL
 *    (MW_BIND and REMOTE_READ need no LOCAL_WRITE);
 *  - any bit outside SIB_MR_ACCESS_SUPPORTED -> EINVAL. Bits in
 *    IBV_ACCESS_OPTIONAL_RANGE (e.g. RELAXED_ORDERING) are accepted and may be
 *    ignored: they are hints by definition.
 * Device capability checks are not made here: the kernel answers EOPNOTSUPP
 * for ON_DEMAND on a device without ODP, which the caller must decide.
 */
int sib_mr_access_check(unsigned int access);

/* What a key check needs to know about a registered MR. */
struct sib_mr_range {
	uint32_t pd;		/* PD handle the MR belongs to */
	uint64_t iova;		/* first byte the key covers */
	uint64_t length;	/* bytes covered: [iova, iova + length) */
	unsigned int access;	/* IBV_ACCESS_* granted at registration */
};

enum sib_key_result {
	SIB_KEY_OK = 0,
	SIB_KEY_PD,		/* (3) MR belongs to another PD */
	SIB_KEY_ACCESS,		/* (4) a needed access bit was not granted */
	SIB_KEY_RANGE,		/* (6) [va, va + len) not inside the MR */
};

/*
 * Checks (3), (4) and (6) of the key check order (STYLE 6.8, after rxe
 * lookup_mem / check_rkey), in that order, first failure wins:
 *  (3) @pd equals mr->pd;
 *  (4) every bit of @need is in mr->access;
 *  (6) [va, va + len) lies inside [iova, iova + length). Overflow-safe: len is
 *      compared with length first and va + len is never computed. len 0 is
 *      always in range: a zero-length access touches no memory (rxe_resp
 *      check_rkey; iba-transport.md section 4).
 * Checks (1) index live, (2) key byte and (5) MR valid belong to the lookup.
 */
enum sib_key_result sib_mr_check(const struct sib_mr_range *mr, uint32_t pd,
				 uint64_t va, uint64_t len, unsigned int need);

#endif /* SIB_HCA_MR_CHECK_H */
