/* SPDX-License-Identifier: MIT */
/*
 * Transport error classes (IBA 9.9): the one table that says, for each
 * class of fault, which NAK the responder sends, what its receive WQE and
 * the requester's send WQE complete with, and whether the responder's QP
 * goes to ERR.  resp.c and comp.c both read it.  Pure data: no state.
 */
#include "hca/transport.h"

/*
 * Error class -> {NAK, WC status at the responder, WC status at the
 * requester, responder QP's next state} (IBA 9.9.3 responder classes;
 * statuses as rxe and ibv_poll_cq(3); iba-transport.md 3).  Class B
 * errors leave the QP as it is; the rest move it to ERR.
 */
static const struct sib_err_info err_table[SIB_EC_COUNT] = {
	[SIB_EC_PSN_SEQ] = { "PSN sequence error", 'B', IBA_AETH_NAK | IBA_NAK_PSN_SEQ,
			     IBV_WC_SUCCESS, IBV_WC_RETRY_EXC_ERR, IBV_QPS_UNKNOWN },
	[SIB_EC_RNR] = { "receiver not ready", 'B', IBA_AETH_RNR_NAK,
			 IBV_WC_SUCCESS, IBV_WC_RNR_RETRY_EXC_ERR, IBV_QPS_UNKNOWN },
	[SIB_EC_INV_REQ] = { "invalid request", 'C', IBA_AETH_NAK | IBA_NAK_INV_REQ,
			     IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR, IBV_QPS_ERR },
	[SIB_EC_LOC_LEN] = { "receive WQE too short", 'C', IBA_AETH_NAK | IBA_NAK_INV_REQ,
			     IBV_WC_LOC_LEN_ERR, IBV_WC_REM_INV_REQ_ERR, IBV_QPS_ERR },
	[SIB_EC_REM_ACCESS] = { "remote access error", 'C', IBA_AETH_NAK | IBA_NAK_REM_ACCESS,
				IBV_WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR, IBV_QPS_ERR },
	[SIB_EC_LOC_PROT] = { "receive WQE protection error", 'A', IBA_AETH_NAK | IBA_NAK_REM_OP,
			      IBV_WC_LOC_PROT_ERR, IBV_WC_REM_OP_ERR, IBV_QPS_ERR },
	[SIB_EC_REM_OP] = { "remote operational error", 'A', IBA_AETH_NAK | IBA_NAK_REM_OP,
			    IBV_WC_LOC_QP_OP_ERR, IBV_WC_REM_OP_ERR, IBV_QPS_ERR },
	[SIB_EC_INV_RD_REQ] = { "invalid RD request", 'C', IBA_AETH_NAK | IBA_NAK_INV_RD_REQ,
				IBV_WC_REM_INV_RD_REQ_ERR, IBV_WC_REM_INV_RD_REQ_ERR, IBV_QPS_ERR },
};

const struct sib_err_info *sib_err_info(enum sib_err_class ec)
{
	return &err_table[(unsigned int)ec < SIB_EC_COUNT ? ec : SIB_EC_REM_OP];
}

enum sib_err_class sib_err_from_nak(uint8_t code)
{
	/* The first row with this NAK code; rows that share a code differ
	 * only at the responder (the tests in test_hca_tables check it). */
	for (unsigned int i = 0; i < SIB_EC_COUNT; i++)
		if ((err_table[i].syndrome & IBA_AETH_TYPE_MASK) == IBA_AETH_NAK &&
		    (err_table[i].syndrome & IBA_AETH_VALUE_MASK) == (code & IBA_AETH_VALUE_MASK))
			return (enum sib_err_class)i;
	return SIB_EC_REM_OP;
}

