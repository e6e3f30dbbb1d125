// SPDX-License-Identifier: MIT
/*
 * QP state transition table and its legality check (IBA 1.4 vol 1, 10.3.1,
 * and the Modify QP verb of chapter 11). The values are the ones the kernel's
 * ib_modify_qp_is_ok() enforces, written out in
 * shared/research/iba-transport.md section 5. Pure: no I/O, no locks.
 */
#include "hca/qp_state.h"

/* Row index per QP type: ibv_qp_type values are sparse. */
enum qpt_idx {
	T_RC,
	T_UC,
	T_UD,
	T_RAW,		/* IBV_QPT_RAW_PACKET */
	T_XINI,		/* IBV_QPT_XRC_SEND */
	T_XTGT,		/* IBV_QPT_XRC_RECV */
	T_SPECIAL,	/* QP0 / QP1 */
	T_MAX
};

/* Short names for the IBV_QP_* bits, as in iba-transport.md section 5. */
#define CUR	IBV_QP_CUR_STATE
#define SQDN	IBV_QP_EN_SQD_ASYNC_NOTIFY
#define ACC	IBV_QP_ACCESS_FLAGS
#define PKI	IBV_QP_PKEY_INDEX
#define PORT	IBV_QP_PORT
#define QKEY	IBV_QP_QKEY
#define AV	IBV_QP_AV
#define MTU	IBV_QP_PATH_MTU
#define TO	IBV_QP_TIMEOUT
#define RETRY	IBV_QP_RETRY_CNT
#define RNR	IBV_QP_RNR_RETRY
#define RQPSN	IBV_QP_RQ_PSN
#define MRA	IBV_QP_MAX_QP_RD_ATOMIC
#define ALT	IBV_QP_ALT_PATH
#define MINRNR	IBV_QP_MIN_RNR_TIMER
#define SQPSN	IBV_QP_SQ_PSN
#define MDRA	IBV_QP_MAX_DEST_RD_ATOMIC
#define MIG	IBV_QP_PATH_MIG_STATE
#define DQPN	IBV_QP_DEST_QPN
#define RATE	IBV_QP_RATE_LIMIT

struct qp_trans {
	bool valid;
	unsigned int req[T_MAX];
	unsigned int opt[T_MAX];
};

/*
 * qp_trans[cur][next]. A cell not listed is an invalid transition (RESET->ERR,
 * INIT->RTS, RTR->RTR, ...). A valid cell with empty masks takes no attribute
 * but IBV_QP_STATE. As in the kernel, validity is per cell, not per type: an
 * RC QP never reaches SQE, so its SQE->RTS entry is simply never used.
 */
static const struct qp_trans qp_trans[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.req = {
				[T_RC] = PKI | PORT | ACC,
				[T_UC] = PKI | PORT | ACC,
				[T_UD] = PKI | PORT | QKEY,
				[T_RAW] = PORT,
				[T_XINI] = PKI | PORT | ACC,
				[T_XTGT] = PKI | PORT | ACC,
				[T_SPECIAL] = PKI | QKEY,
			},
		},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.opt = {
				[T_RC] = PKI | PORT | ACC,
				[T_UC] = PKI | PORT | ACC,
				[T_UD] = PKI | PORT | QKEY,
				[T_XINI] = PKI | PORT | ACC,
				[T_XTGT] = PKI | PORT | ACC,
				[T_SPECIAL] = PKI | QKEY,
			},
		},
		[IBV_QPS_RTR] = {
			.valid = true,
			.req = {
				[T_RC] = AV | MTU | DQPN | RQPSN | MDRA | MINRNR,
				[T_UC] = AV | MTU | DQPN | RQPSN,
				[T_XINI] = AV | MTU | DQPN | RQPSN,
				[T_XTGT] = AV | MTU | DQPN | RQPSN | MDRA | MINRNR,
			},
			.opt = {
				[T_RC] = ALT | ACC | PKI,
				[T_UC] = ALT | ACC | PKI,
				[T_UD] = PKI | QKEY,
				[T_XINI] = ALT | ACC | PKI,
				[T_XTGT] = ALT | ACC | PKI,
				[T_SPECIAL] = PKI | QKEY,
			},
		},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.req = {
				[T_RC] = TO | RETRY | RNR | SQPSN | MRA,
				[T_UC] = SQPSN,
				[T_UD] = SQPSN,
				[T_XINI] = TO | RETRY | RNR | SQPSN | MRA,
				[T_XTGT] = TO | SQPSN,
				[T_SPECIAL] = SQPSN,
			},
			.opt = {
				[T_RC] = CUR | ALT | ACC | MINRNR | MIG,
				[T_UC] = CUR | ALT | ACC | MIG,
				[T_UD] = CUR | QKEY,
				[T_RAW] = RATE,
				[T_XINI] = CUR | ALT | ACC | MIG,
				[T_XTGT] = CUR | ALT | ACC | MINRNR | MIG,
				[T_SPECIAL] = CUR | QKEY,
			},
		},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = CUR | ACC | ALT | MIG | MINRNR,
				[T_UC] = CUR | ACC | ALT | MIG,
				[T_UD] = CUR | QKEY,
				[T_RAW] = RATE,
				[T_XINI] = CUR | ACC | ALT | MIG,
				[T_XTGT] = CUR | ACC | ALT | MIG | MINRNR,
				[T_SPECIAL] = CUR | QKEY,
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = SQDN,
				[T_UC] = SQDN,
				[T_UD] = SQDN,
				[T_XINI] = SQDN,
				[T_XTGT] = SQDN,
				[T_SPECIAL] = SQDN,
			},
		},
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = CUR | ALT | ACC | MINRNR | MIG,
				[T_UC] = CUR | ALT | ACC | MIG,
				[T_UD] = CUR | QKEY,
				[T_XINI] = CUR | ALT | ACC | MIG,
				[T_XTGT] = CUR | ALT | ACC | MINRNR | MIG,
				[T_SPECIAL] = CUR | QKEY,
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = PORT | AV | TO | RETRY | RNR | MRA | MDRA |
					 ALT | ACC | PKI | MINRNR | MIG,
				[T_UC] = AV | ALT | ACC | PKI | MIG,
				[T_UD] = PKI | QKEY,
				[T_XINI] = PORT | AV | TO | RETRY | RNR | MRA |
					   ALT | ACC | PKI | MIG,
				[T_XTGT] = PORT | AV | TO | MDRA | ALT | ACC | PKI |
					   MINRNR | MIG,
				[T_SPECIAL] = PKI | QKEY,
			},
		},
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_UC] = CUR | ACC,
				[T_UD] = CUR | QKEY,
				[T_SPECIAL] = CUR | QKEY,
			},
		},
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};

static int qpt_index(enum ibv_qp_type type)
{
	switch ((unsigned int)type) {
	case IBV_QPT_RC:		return T_RC;
	case IBV_QPT_UC:		return T_UC;
	case IBV_QPT_UD:		return T_UD;
	case IBV_QPT_RAW_PACKET:	return T_RAW;
	case IBV_QPT_XRC_SEND:		return T_XINI;
	case IBV_QPT_XRC_RECV:		return T_XTGT;
	case (unsigned int)SIB_QPT_SMI:
	case (unsigned int)SIB_QPT_GSI:	return T_SPECIAL;
	default:			return -1;
	}
}

/* Rule: kernel ib_modify_qp_is_ok() (drivers/infiniband/core/verbs.c). */
bool sib_qp_modify_is_ok(enum ibv_qp_state cur, enum ibv_qp_state next,
			 enum ibv_qp_type type, int attr_mask)
{
	unsigned int mask = (unsigned int)attr_mask;
	const struct qp_trans *t;
	int ti = qpt_index(type);

	if (!(mask & IBV_QP_STATE))
		next = cur;
	if (ti < 0 || (unsigned int)cur > IBV_QPS_ERR ||
	    (unsigned int)next > IBV_QPS_ERR)
		return false;
	if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR &&
	    cur != IBV_QPS_RTS && cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
		return false;
	t = &qp_trans[cur][next];
	if (!t->valid || (mask & t->req[ti]) != t->req[ti])
		return false;
	return !(mask & ~(t->req[ti] | t->opt[ti] | IBV_QP_STATE));
}

const char *sib_qp_state_str(enum ibv_qp_state state)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET",
		[IBV_QPS_INIT] = "INIT",
		[IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS",
		[IBV_QPS_SQD] = "SQD",
		[IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	if ((unsigned int)state > IBV_QPS_ERR)
		return "unknown";
	return names[state];
}
