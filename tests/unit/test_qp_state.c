// SPDX-License-Identifier: MIT
/*
 * Unit tests for src/hca/qp_state.c: every (cur, next, type) cell of the QP
 * transition table, checked against an expected table transcribed
 * independently from shared/research/iba-transport.md section 5 (STYLE 6.3).
 * No I/O besides cmocka's report.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "hca/qp_state.h"

#define ST	IBV_QP_STATE
#define NBITS	32	/* every bit of the int mask; 0..25 are IBV_QP_* */

static unsigned long checks;

#define OK(c, n, t, m)							\
	do {								\
		checks++;						\
		assert_true(sib_qp_modify_is_ok(c, n, t, m));		\
	} while (0)
#define BAD(c, n, t, m)							\
	do {								\
		checks++;						\
		assert_false(sib_qp_modify_is_ok(c, n, t, m));		\
	} while (0)

static const enum ibv_qp_type types[] = {
	IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET,
	IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV, SIB_QPT_SMI, SIB_QPT_GSI,
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

/* Cells valid for every type, with no attribute but STATE unless listed below. */
static const struct { enum ibv_qp_state cur, next; } valid_cells[] = {
	{ IBV_QPS_RESET, IBV_QPS_RESET }, { IBV_QPS_RESET, IBV_QPS_INIT },
	{ IBV_QPS_INIT, IBV_QPS_RESET }, { IBV_QPS_INIT, IBV_QPS_ERR },
	{ IBV_QPS_INIT, IBV_QPS_INIT }, { IBV_QPS_INIT, IBV_QPS_RTR },
	{ IBV_QPS_RTR, IBV_QPS_RESET }, { IBV_QPS_RTR, IBV_QPS_ERR },
	{ IBV_QPS_RTR, IBV_QPS_RTS },
	{ IBV_QPS_RTS, IBV_QPS_RESET }, { IBV_QPS_RTS, IBV_QPS_ERR },
	{ IBV_QPS_RTS, IBV_QPS_RTS }, { IBV_QPS_RTS, IBV_QPS_SQD },
	{ IBV_QPS_SQD, IBV_QPS_RESET }, { IBV_QPS_SQD, IBV_QPS_ERR },
	{ IBV_QPS_SQD, IBV_QPS_RTS }, { IBV_QPS_SQD, IBV_QPS_SQD },
	{ IBV_QPS_SQE, IBV_QPS_RESET }, { IBV_QPS_SQE, IBV_QPS_ERR },
	{ IBV_QPS_SQE, IBV_QPS_RTS },
	{ IBV_QPS_ERR, IBV_QPS_RESET }, { IBV_QPS_ERR, IBV_QPS_ERR },
};

/* Non-empty (req, opt) per type, row by row from iba-transport.md section 5. */
#define RC	IBV_QPT_RC
#define UC	IBV_QPT_UC
#define UD	IBV_QPT_UD
#define RAW	IBV_QPT_RAW_PACKET
#define XI	IBV_QPT_XRC_SEND
#define XT	IBV_QPT_XRC_RECV
#define SP	SIB_QPT_SPECIAL
#define PKI	IBV_QP_PKEY_INDEX
#define PORT	IBV_QP_PORT
#define QKEY	IBV_QP_QKEY
#define ACC	IBV_QP_ACCESS_FLAGS
#define AV	IBV_QP_AV
#define MTU	IBV_QP_PATH_MTU
#define DQPN	IBV_QP_DEST_QPN
#define RQPSN	IBV_QP_RQ_PSN
#define SQPSN	IBV_QP_SQ_PSN
#define TO	IBV_QP_TIMEOUT
#define RETRY	IBV_QP_RETRY_CNT
#define RNR	IBV_QP_RNR_RETRY
#define MRA	IBV_QP_MAX_QP_RD_ATOMIC
#define MDRA	IBV_QP_MAX_DEST_RD_ATOMIC
#define MINRNR	IBV_QP_MIN_RNR_TIMER
#define ALT	IBV_QP_ALT_PATH
#define MIG	IBV_QP_PATH_MIG_STATE
#define CUR	IBV_QP_CUR_STATE
#define SQDN	IBV_QP_EN_SQD_ASYNC_NOTIFY
#define RATE	IBV_QP_RATE_LIMIT

static const struct row {
	enum ibv_qp_state cur, next;
	enum ibv_qp_type type;
	unsigned int req, opt;
} rows[] = {
	/* RESET -> INIT req */
	{ IBV_QPS_RESET, IBV_QPS_INIT, UD, PKI | PORT | QKEY, 0 },
	{ IBV_QPS_RESET, IBV_QPS_INIT, UC, PKI | PORT | ACC, 0 },
	{ IBV_QPS_RESET, IBV_QPS_INIT, RC, PKI | PORT | ACC, 0 },
	{ IBV_QPS_RESET, IBV_QPS_INIT, XI, PKI | PORT | ACC, 0 },
	{ IBV_QPS_RESET, IBV_QPS_INIT, XT, PKI | PORT | ACC, 0 },
	{ IBV_QPS_RESET, IBV_QPS_INIT, SP, PKI | QKEY, 0 },
	{ IBV_QPS_RESET, IBV_QPS_INIT, RAW, PORT, 0 },
	/* INIT -> INIT opt */
	{ IBV_QPS_INIT, IBV_QPS_INIT, UD, 0, PKI | PORT | QKEY },
	{ IBV_QPS_INIT, IBV_QPS_INIT, UC, 0, PKI | PORT | ACC },
	{ IBV_QPS_INIT, IBV_QPS_INIT, RC, 0, PKI | PORT | ACC },
	{ IBV_QPS_INIT, IBV_QPS_INIT, XI, 0, PKI | PORT | ACC },
	{ IBV_QPS_INIT, IBV_QPS_INIT, XT, 0, PKI | PORT | ACC },
	{ IBV_QPS_INIT, IBV_QPS_INIT, SP, 0, PKI | QKEY },
	/* INIT -> RTR */
	{ IBV_QPS_INIT, IBV_QPS_RTR, UD, 0, PKI | QKEY },
	{ IBV_QPS_INIT, IBV_QPS_RTR, UC, AV | MTU | DQPN | RQPSN, ALT | ACC | PKI },
	{ IBV_QPS_INIT, IBV_QPS_RTR, RC, AV | MTU | DQPN | RQPSN | MDRA | MINRNR,
	  ALT | ACC | PKI },
	{ IBV_QPS_INIT, IBV_QPS_RTR, XI, AV | MTU | DQPN | RQPSN, ALT | ACC | PKI },
	{ IBV_QPS_INIT, IBV_QPS_RTR, XT, AV | MTU | DQPN | RQPSN | MDRA | MINRNR,
	  ALT | ACC | PKI },
	{ IBV_QPS_INIT, IBV_QPS_RTR, SP, 0, PKI | QKEY },
	/* RTR -> RTS */
	{ IBV_QPS_RTR, IBV_QPS_RTS, UD, SQPSN, CUR | QKEY },
	{ IBV_QPS_RTR, IBV_QPS_RTS, UC, SQPSN, CUR | ALT | ACC | MIG },
	{ IBV_QPS_RTR, IBV_QPS_RTS, RC, TO | RETRY | RNR | SQPSN | MRA,
	  CUR | ALT | ACC | MINRNR | MIG },
	{ IBV_QPS_RTR, IBV_QPS_RTS, XI, TO | RETRY | RNR | SQPSN | MRA,
	  CUR | ALT | ACC | MIG },
	{ IBV_QPS_RTR, IBV_QPS_RTS, XT, TO | SQPSN, CUR | ALT | ACC | MINRNR | MIG },
	{ IBV_QPS_RTR, IBV_QPS_RTS, SP, SQPSN, CUR | QKEY },
	{ IBV_QPS_RTR, IBV_QPS_RTS, RAW, 0, RATE },
	/* RTS -> RTS opt */
	{ IBV_QPS_RTS, IBV_QPS_RTS, UD, 0, CUR | QKEY },
	{ IBV_QPS_RTS, IBV_QPS_RTS, UC, 0, CUR | ACC | ALT | MIG },
	{ IBV_QPS_RTS, IBV_QPS_RTS, RC, 0, CUR | ACC | ALT | MIG | MINRNR },
	{ IBV_QPS_RTS, IBV_QPS_RTS, XI, 0, CUR | ACC | ALT | MIG },
	{ IBV_QPS_RTS, IBV_QPS_RTS, XT, 0, CUR | ACC | ALT | MIG | MINRNR },
	{ IBV_QPS_RTS, IBV_QPS_RTS, SP, 0, CUR | QKEY },
	{ IBV_QPS_RTS, IBV_QPS_RTS, RAW, 0, RATE },
	/* RTS -> SQD opt */
	{ IBV_QPS_RTS, IBV_QPS_SQD, UD, 0, SQDN },
	{ IBV_QPS_RTS, IBV_QPS_SQD, UC, 0, SQDN },
	{ IBV_QPS_RTS, IBV_QPS_SQD, RC, 0, SQDN },
	{ IBV_QPS_RTS, IBV_QPS_SQD, XI, 0, SQDN },
	{ IBV_QPS_RTS, IBV_QPS_SQD, XT, 0, SQDN },
	{ IBV_QPS_RTS, IBV_QPS_SQD, SP, 0, SQDN },
	/* SQD -> RTS opt */
	{ IBV_QPS_SQD, IBV_QPS_RTS, UD, 0, CUR | QKEY },
	{ IBV_QPS_SQD, IBV_QPS_RTS, UC, 0, CUR | ALT | ACC | MIG },
	{ IBV_QPS_SQD, IBV_QPS_RTS, RC, 0, CUR | ALT | ACC | MINRNR | MIG },
	{ IBV_QPS_SQD, IBV_QPS_RTS, XI, 0, CUR | ALT | ACC | MIG },
	{ IBV_QPS_SQD, IBV_QPS_RTS, XT, 0, CUR | ALT | ACC | MINRNR | MIG },
	{ IBV_QPS_SQD, IBV_QPS_RTS, SP, 0, CUR | QKEY },
	/* SQD -> SQD opt */
	{ IBV_QPS_SQD, IBV_QPS_SQD, UD, 0, PKI | QKEY },
	{ IBV_QPS_SQD, IBV_QPS_SQD, UC, 0, AV | ALT | ACC | PKI | MIG },
	{ IBV_QPS_SQD, IBV_QPS_SQD, RC, 0, PORT | AV | TO | RETRY | RNR | MRA | MDRA |
	  ALT | ACC | PKI | MINRNR | MIG },
	{ IBV_QPS_SQD, IBV_QPS_SQD, XI, 0, PORT | AV | TO | RETRY | RNR | MRA |
	  ALT | ACC | PKI | MIG },
	{ IBV_QPS_SQD, IBV_QPS_SQD, XT, 0, PORT | AV | TO | MDRA | ALT | ACC | PKI |
	  MINRNR | MIG },
	{ IBV_QPS_SQD, IBV_QPS_SQD, SP, 0, PKI | QKEY },
	/* SQE -> RTS opt (UD, UC and the special QPs only ever reach SQE) */
	{ IBV_QPS_SQE, IBV_QPS_RTS, UD, 0, CUR | QKEY },
	{ IBV_QPS_SQE, IBV_QPS_RTS, UC, 0, CUR | ACC },
	{ IBV_QPS_SQE, IBV_QPS_RTS, SP, 0, CUR | QKEY },
};

static bool expected(enum ibv_qp_state cur, enum ibv_qp_state next,
		     enum ibv_qp_type type, unsigned int *req, unsigned int *opt)
{
	bool valid = false;
	size_t i;

	if (type == SIB_QPT_SMI)
		type = SIB_QPT_GSI;
	*req = *opt = 0;
	for (i = 0; i < sizeof(valid_cells) / sizeof(valid_cells[0]); i++)
		if (valid_cells[i].cur == cur && valid_cells[i].next == next)
			valid = true;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (rows[i].cur == cur && rows[i].next == next &&
		    rows[i].type == type) {
			*req = rows[i].req;
			*opt = rows[i].opt;
		}
	}
	return valid;
}

static void check_cell(enum ibv_qp_state cur, enum ibv_qp_state next,
		       enum ibv_qp_type t)
{
	unsigned int req, opt, b;

	if (!expected(cur, next, t, &req, &opt)) {
		BAD(cur, next, t, ST);
		for (b = 1; b; b <<= 1)
			BAD(cur, next, t, (int)(ST | b));
		BAD(cur, next, t, (int)~0u);
		return;
	}
	/* req alone passes */
	OK(cur, next, t, (int)(ST | req));
	if (cur == next)
		OK(cur, next, t, (int)req);	/* no STATE bit: cur -> cur */
	/* req minus any one bit fails */
	for (b = 1; b; b <<= 1)
		if (req & b)
			BAD(cur, next, t, (int)((ST | req) & ~b));
	/* req plus each opt bit passes, and all of them together */
	for (b = 1; b; b <<= 1)
		if (opt & b)
			OK(cur, next, t, (int)(ST | req | b));
	OK(cur, next, t, (int)(ST | req | opt));
	/* req plus any other bit fails, IBV_QP_STATE aside */
	for (b = 2; b; b <<= 1)
		if (!((req | opt) & b))
			BAD(cur, next, t, (int)(ST | req | opt | b));
}

static void test_every_cell(void **state)
{
	enum ibv_qp_state cur, next;
	size_t t;

	(void)state;
	checks = 0;
	for (t = 0; t < NTYPES; t++)
		for (cur = IBV_QPS_RESET; cur <= IBV_QPS_ERR; cur++)
			for (next = IBV_QPS_RESET; next <= IBV_QPS_ERR; next++)
				check_cell(cur, next, types[t]);
	print_message("%lu checks over %zu types x 7 x 7 cells\n", checks,
		      NTYPES);
}

/* Spot checks read straight off iba-transport.md section 5. */
static void test_spot_rows(void **state)
{
	const int rc_rtr = AV | MTU | DQPN | RQPSN | MDRA | MINRNR;

	(void)state;
	OK(IBV_QPS_INIT, IBV_QPS_RTR, RC, ST | rc_rtr);
	BAD(IBV_QPS_INIT, IBV_QPS_RTR, RC, ST | (rc_rtr & ~MINRNR));
	BAD(IBV_QPS_INIT, IBV_QPS_RTR, UC, ST | rc_rtr);	/* MDRA, MINRNR not for UC */
	OK(IBV_QPS_INIT, IBV_QPS_RTR, UD, ST);
	OK(IBV_QPS_RESET, IBV_QPS_INIT, RC, ST | PKI | PORT | ACC);
	BAD(IBV_QPS_RESET, IBV_QPS_INIT, RC, ST | PKI | PORT | QKEY);
	OK(IBV_QPS_RESET, IBV_QPS_INIT, UD, ST | PKI | PORT | QKEY);
	OK(IBV_QPS_RESET, IBV_QPS_INIT, SIB_QPT_SMI, ST | PKI | QKEY);
	BAD(IBV_QPS_RESET, IBV_QPS_INIT, SIB_QPT_GSI, ST | PKI | PORT | QKEY);
	OK(IBV_QPS_RESET, IBV_QPS_INIT, RAW, ST | PORT);
	BAD(IBV_QPS_RESET, IBV_QPS_INIT, RAW, ST | PORT | PKI);
	OK(IBV_QPS_RTR, IBV_QPS_RTS, RC, ST | TO | RETRY | RNR | SQPSN | MRA);
	OK(IBV_QPS_RTR, IBV_QPS_RTS, XT, ST | TO | SQPSN);
	OK(IBV_QPS_RTR, IBV_QPS_RTS, UD, ST | SQPSN | CUR | QKEY);
	OK(IBV_QPS_RTR, IBV_QPS_RTS, RAW, ST | RATE);
	BAD(IBV_QPS_RTR, IBV_QPS_RTS, RC,
	    ST | TO | RETRY | RNR | SQPSN | MRA | RATE);
	OK(IBV_QPS_RTS, IBV_QPS_RTS, RAW, RATE);
	OK(IBV_QPS_SQE, IBV_QPS_RTS, UD, ST | CUR);
	OK(IBV_QPS_RTS, IBV_QPS_SQD, RC, ST | SQDN);

	/* invalid pairs named in the notes under the table */
	BAD(IBV_QPS_RESET, IBV_QPS_ERR, RC, ST);
	BAD(IBV_QPS_INIT, IBV_QPS_RTS, RC, ST);
	BAD(IBV_QPS_RTR, IBV_QPS_RTR, RC, ST);
	BAD(IBV_QPS_RESET, IBV_QPS_RTR, UD, ST);
	BAD(IBV_QPS_ERR, IBV_QPS_RTS, UD, ST | SQPSN);
	OK(IBV_QPS_ERR, IBV_QPS_RESET, RC, ST);
	OK(IBV_QPS_ERR, IBV_QPS_ERR, RC, ST);
	OK(IBV_QPS_SQE, IBV_QPS_ERR, UD, ST);
}

static void test_cur_state_rule(void **state)
{
	(void)state;
	/* CUR_STATE only when the current state is RTR, RTS, SQD or SQE */
	BAD(IBV_QPS_INIT, IBV_QPS_INIT, RC, ST | CUR);
	BAD(IBV_QPS_RESET, IBV_QPS_INIT, RC, ST | PKI | PORT | ACC | CUR);
	BAD(IBV_QPS_INIT, IBV_QPS_RTR, UD, ST | CUR);
	OK(IBV_QPS_RTS, IBV_QPS_RTS, RC, CUR);
	OK(IBV_QPS_SQD, IBV_QPS_RTS, UC, ST | CUR);
	/* allowed by the state, still not in the cell's optional set */
	BAD(IBV_QPS_RTS, IBV_QPS_ERR, RC, ST | CUR);
	BAD(IBV_QPS_SQD, IBV_QPS_SQD, RC, ST | CUR);
}

static void test_no_state_bit(void **state)
{
	(void)state;
	/* without IBV_QP_STATE, next is ignored: the check is cur -> cur */
	OK(IBV_QPS_RTS, IBV_QPS_RESET, RC, MINRNR);
	OK(IBV_QPS_RTS, IBV_QPS_ERR, RC, 0);
	BAD(IBV_QPS_RTS, IBV_QPS_RTS, RC, SQPSN);
	OK(IBV_QPS_INIT, IBV_QPS_RTR, RC, ACC);
	BAD(IBV_QPS_INIT, IBV_QPS_RTR, RC, AV | MTU | DQPN | RQPSN | MDRA | MINRNR);
	BAD(IBV_QPS_RTR, IBV_QPS_RTS, RC, 0);	/* RTR -> RTR is invalid */
	OK(IBV_QPS_RESET, IBV_QPS_INIT, RC, 0);	/* RESET -> RESET */
	OK(IBV_QPS_ERR, IBV_QPS_RESET, UD, 0);	/* ERR -> ERR */
	BAD(IBV_QPS_ERR, IBV_QPS_RESET, UD, QKEY);
}

static void test_out_of_range(void **state)
{
	static const enum ibv_qp_type bad_types[] = {
		(enum ibv_qp_type)5, (enum ibv_qp_type)6, (enum ibv_qp_type)7,
		(enum ibv_qp_type)11, IBV_QPT_DRIVER, (enum ibv_qp_type)-1,
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++) {
		BAD(IBV_QPS_RESET, IBV_QPS_RESET, bad_types[i], ST);
		BAD(IBV_QPS_INIT, IBV_QPS_ERR, bad_types[i], ST);
		BAD(IBV_QPS_RTS, IBV_QPS_RTS, bad_types[i], 0);
	}
	BAD(IBV_QPS_UNKNOWN, IBV_QPS_RESET, RC, ST);
	BAD(IBV_QPS_RTS, IBV_QPS_UNKNOWN, RC, ST);
	BAD(IBV_QPS_UNKNOWN, IBV_QPS_UNKNOWN, RC, 0);
	BAD((enum ibv_qp_state)-1, IBV_QPS_RESET, RC, ST);
	BAD(IBV_QPS_RTS, (enum ibv_qp_state)100, RC, ST);
	/* bits above IBV_QP_RATE_LIMIT, including the sign bit */
	BAD(IBV_QPS_RTS, IBV_QPS_RTS, RC, 1 << 26);
	BAD(IBV_QPS_RTS, IBV_QPS_RTS, RC, (int)0x80000000u);
	BAD(IBV_QPS_RTS, IBV_QPS_RTS, RC, -1);
}

static void test_state_str(void **state)
{
	(void)state;
	assert_string_equal(sib_qp_state_str(IBV_QPS_RESET), "RESET");
	assert_string_equal(sib_qp_state_str(IBV_QPS_INIT), "INIT");
	assert_string_equal(sib_qp_state_str(IBV_QPS_RTR), "RTR");
	assert_string_equal(sib_qp_state_str(IBV_QPS_RTS), "RTS");
	assert_string_equal(sib_qp_state_str(IBV_QPS_SQD), "SQD");
	assert_string_equal(sib_qp_state_str(IBV_QPS_SQE), "SQE");
	assert_string_equal(sib_qp_state_str(IBV_QPS_ERR), "ERR");
	assert_string_equal(sib_qp_state_str(IBV_QPS_UNKNOWN), "unknown");
	assert_string_equal(sib_qp_state_str((enum ibv_qp_state)-1), "unknown");
	assert_string_equal(sib_qp_state_str((enum ibv_qp_state)1000), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_cell),
		cmocka_unit_test(test_spot_rows),
		cmocka_unit_test(test_cur_state_rule),
		cmocka_unit_test(test_no_state_bit),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_state_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
