/* SPDX-License-Identifier: MIT */
/*
 * QP state machine legality: which modify_qp transitions and attribute masks
 * are allowed, per QP type (IBA 1.4 vol 1, 10.3.1 and the chapter 11 Modify
 * QP verb; kernel ib_modify_qp_is_ok). Pure data and one predicate: no I/O,
 * no locks, no QP objects. Applying the attributes is the caller's job
 * (check, then apply).
 */
#ifndef SIB_HCA_QP_STATE_H
#define SIB_HCA_QP_STATE_H

#include <stdbool.h>
#include <infiniband/verbs.h>

/*
 * QP0 (SMI) and QP1 (GSI) have no ibv_qp_type of their own: libibverbs users
 * never create them. These are the kernel's IB_QPT_SMI/IB_QPT_GSI numbers,
 * unused by enum ibv_qp_type; both select the same "special QP" row.
 */
#define SIB_QPT_SMI	((enum ibv_qp_type)0)
#define SIB_QPT_GSI	((enum ibv_qp_type)1)
#define SIB_QPT_SPECIAL	SIB_QPT_GSI

/*
 * True iff moving a QP of @type from @cur to @next with @attr_mask (IBV_QP_*
 * bits) is legal, by the kernel's ib_modify_qp_is_ok() rule: the cell
 * [cur][next] must be valid, every required bit for @type must be in
 * @attr_mask, no bit outside required|optional|IBV_QP_STATE may be, and
 * IBV_QP_CUR_STATE is only accepted when @cur is RTR, RTS, SQD or SQE.
 *
 * Without IBV_QP_STATE in @attr_mask the state does not change: @next is
 * ignored and the transition checked is @cur -> @cur (e.g. RTS -> RTS).
 *
 * @type is RC, UC, UD, RAW_PACKET, XRC_SEND (XRC_INI), XRC_RECV (XRC_TGT) or
 * SIB_QPT_SMI/SIB_QPT_GSI; anything else, and any state above IBV_QPS_ERR,
 * gives false.
 */
bool sib_qp_modify_is_ok(enum ibv_qp_state cur, enum ibv_qp_state next,
			 enum ibv_qp_type type, int attr_mask);

/* "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"; "unknown" otherwise. */
const char *sib_qp_state_str(enum ibv_qp_state state);

#endif /* SIB_HCA_QP_STATE_H */
