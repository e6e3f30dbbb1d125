/* SPDX-License-Identifier: MIT */
/*
 * Memory windows (IBA 10.6.7) over the loopback fabric of hca_loop.h:
 * alloc/dealloc and the key space, type 1 bound by the Bind verb, type 2
 * by IBV_WR_BIND_MW, access through a window (range, access rights, an
 * unbound or stale key, a deallocated window), LOCAL_INV and remote
 * invalidation by SEND_WITH_INV (IBV_WC_WITH_INV, invalidated_rkey), and
 * the errors: bind on an MR without MW_BIND (IBV_WC_MW_BIND_ERR), the
 * wrong window type for the operation (EINVAL), an invalidate of a key
 * that names no window.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hca/hca.h"
#include "hca/mw.h"
#include "hca/provider.h"
#include "hca_loop.h"
#include "iba/iba.h"

#define WIN_OFF 65536              /* the window inside B's buf */
#define WIN_LEN 4096

static struct ibv_mr *bmr;         /* B's buf, with MW_BIND */
static struct ibv_mw *mw;

static void up_mw_on(const struct opts *o, enum ibv_mw_type type, unsigned int mr_access)
{
	up(o);
	bmr = sib_hca_ops.reg_mr(sides[B].pd, sides[B].buf, BUF, (uintptr_t)sides[B].buf, mr_access);
	assert_non_null(bmr);
	mw = sib_hca_ops.alloc_mw(sides[B].pd, type);
	assert_non_null(mw);
}

static void up_mw(enum ibv_mw_type type, unsigned int mr_access)
{
	up_mw_on(&def_opts, type, mr_access);
}

static int down_mw(void **state)
{
	if (mw)
		assert_int_equal(sib_hca_ops.dealloc_mw(mw), 0);
	if (bmr)
		assert_int_equal(sib_hca_ops.dereg_mr(bmr), 0);
	mw = NULL;
	bmr = NULL;
	return down(state);
}

#define MR_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		IBV_ACCESS_MW_BIND)
#define W_RW   (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static uint32_t up_wr_mw(const uint64_t ops[NDEV], struct ibv_mw_bind_info *bi);

static uint64_t win(uint64_t off)
{
	return (uintptr_t)sides[B].buf + WIN_OFF + off;
}

/* The type 1 Bind verb on B's QP (signaled, wr_id 77). */
static int bind1(uint64_t addr, uint64_t len, unsigned int access)
{
	struct ibv_mw_bind b = { .wr_id = 77, .send_flags = IBV_SEND_SIGNALED };

	b.bind_info.mr = bmr;
	b.bind_info.addr = addr;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = access;
	return sib_hca_ops.bind_mw(sides[B].qp, mw, &b);
}

/* IBV_WR_BIND_MW on B's QP (signaled, wr_id 78). */
static int bind2(uint32_t rkey, uint64_t addr, uint64_t len, unsigned int access)
{
	struct ibv_send_wr wr = { 0 }, *bad = NULL;

	wr.wr_id = 78;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = bmr;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	return sib_hca_ops.post_send(sides[B].qp, &wr, &bad);
}

static void expect_wc_op(unsigned int s, uint64_t wr_id, enum ibv_wc_status st, enum ibv_wc_opcode op)
{
	struct ibv_wc wc = poll_wc(s);

	if (wc.wr_id != wr_id || wc.status != st)
		fail_msg("side %u: wr_id %llu status %d, want %llu status %d", s,
			 (unsigned long long)wc.wr_id, wc.status, (unsigned long long)wr_id, st);
	if (st == IBV_WC_SUCCESS)
		assert_int_equal(wc.opcode, op);
}

/* ibv_wr_bind_mw on B's QP (signaled, wr_id 1): the window, under key,
 * binds as bi says, and the bind completes. */
static void wr_bind_ok(uint32_t key, const struct ibv_mw_bind_info *bi)
{
	struct ibv_qp_ex *xb = (struct ibv_qp_ex *)sides[B].qp;

	ibv_wr_start(xb);
	xb->wr_id = 1;
	xb->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(xb, mw, key, bi);
	assert_int_equal(ibv_wr_complete(xb), 0);
	expect_wc_op(B, 1, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
}

/* A posts a WRITE of 64 bytes to raddr through rkey; expect st. */
static void write_through(uint64_t raddr, uint32_t rkey, enum ibv_wc_status st)
{
	fill(sides[A].buf, 64, 5);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 64, raddr, rkey, 1);
	expect_wc(A, 1, st);
}

static void local_inv(unsigned int s, uint32_t key, uint64_t wr_id)
{
	struct ibv_send_wr wr = { 0 }, *bad = NULL;

	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = key;
	/* No gather list: whatever sg_list and num_sge hold is ignored. */
	wr.num_sge = (int)(wr_id % 3) * 50 - 1;
	assert_int_equal(sib_hca_ops.post_send(sides[s].qp, &wr, &bad), 0);
}

/* ============ Objects and keys ============ */

static void test_mw_alloc_keys_caps(void **state)
{
	struct ibv_device_attr_ex da;
	struct ibv_mw *m2;

	(void)state;
	up_mw(IBV_MW_TYPE_1, MR_ALL);
	m2 = sib_hca_ops.alloc_mw(sides[B].pd, IBV_MW_TYPE_2);
	assert_non_null(m2);
	assert_int_equal(mw->type, IBV_MW_TYPE_1);
	assert_int_equal(m2->type, IBV_MW_TYPE_2);
	assert_ptr_equal(mw->pd, sides[B].pd);
	/* Window keys never collide with MR keys, nor with each other. */
	assert_true(sib_key_is_mw(mw->rkey) && sib_key_is_mw(m2->rkey));
	assert_false(sib_key_is_mw(bmr->rkey) || sib_key_is_mw(sides[B].mr->rkey));
	assert_int_not_equal(mw->rkey >> 8, m2->rkey >> 8);
	errno = 0;
	assert_null(sib_hca_ops.alloc_mw(sides[B].pd, (enum ibv_mw_type)3));
	assert_int_equal(errno, EINVAL);
	/* A PD with windows is in use. */
	assert_int_equal(sib_hca_ops.dealloc_pd(sides[B].pd), EBUSY);
	assert_int_equal(sib_hca_ops.dealloc_mw(m2), 0);
	/* The device says what exists. */
	assert_int_equal(sib_hca_ops.query_device_ex(sides[B].ctx, NULL, &da, sizeof(da)), 0);
	assert_true(da.orig_attr.max_mw > 0);
	assert_true(da.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	assert_true(da.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	assert_int_equal(da.orig_attr.atomic_cap, IBV_ATOMIC_HCA);
}

/* ============ Type 1: the Bind verb ============ */

static void test_mw_type1_bind_and_access(void **state)
{
	uint32_t before;

	(void)state;
	up_mw(IBV_MW_TYPE_1, MR_ALL);
	before = mw->rkey;
	assert_int_equal(bind1(win(0), WIN_LEN, W_RW), 0);
	assert_int_equal(mw->rkey, ibv_inc_rkey(before)); /* rdma-core: the verb sets it */
	expect_wc_op(B, 77, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	/* A WRITE and a READ through the window land in the MR's memory. */
	write_through(win(100), mw->rkey, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + WIN_OFF + 100, sides[A].buf, 64);
	post_send(A, IBV_WR_RDMA_READ, 4096, WIN_LEN, win(0), mw->rkey, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf + 4096, sides[B].buf + WIN_OFF, WIN_LEN);
	/* Rebinding (type 1) moves the key: the old one no longer works. */
	before = mw->rkey;
	assert_int_equal(bind1(win(0), 128, W_RW), 0);
	expect_wc_op(B, 77, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	write_through(win(0), mw->rkey, IBV_WC_SUCCESS);
	write_through(win(0), before, IBV_WC_REM_ACCESS_ERR);
}

/* Outside the window's range (inside the MR): a remote access error. */
static void test_mw_range(void **state)
{
	(void)state;
	up_mw(IBV_MW_TYPE_1, MR_ALL);
	assert_int_equal(bind1(win(0), WIN_LEN, W_RW), 0);
	expect_wc_op(B, 77, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	write_through(win(WIN_LEN - 32), mw->rkey, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(qp_state(B), IBV_QPS_ERR);
}

/* Access the window does not grant (the MR would): a remote access error. */
static void test_mw_access(void **state)
{
	(void)state;
	up_mw(IBV_MW_TYPE_1, MR_ALL);
	assert_int_equal(bind1(win(0), WIN_LEN, IBV_ACCESS_REMOTE_READ), 0);
	expect_wc_op(B, 77, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	post_send(A, IBV_WR_RDMA_READ, 0, 64, win(0), mw->rkey, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	write_through(win(0), mw->rkey, IBV_WC_REM_ACCESS_ERR);
}

/* A window that was never bound answers to no key. */
static void test_mw_unbound(void **state)
{
	(void)state;
	up_mw(IBV_MW_TYPE_1, MR_ALL);
	write_through(win(0), mw->rkey, IBV_WC_REM_ACCESS_ERR);
}

/* Binding needs IBV_ACCESS_MW_BIND on the MR: the bind completes with
 * IBV_WC_MW_BIND_ERR and the QP goes to ERR (a local error, as rxe). */
static void test_mw_bind_needs_mw_bind_access(void **state)
{
	(void)state;
	up_mw(IBV_MW_TYPE_1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(bind1(win(0), WIN_LEN, W_RW), 0);
	expect_wc(B, 77, IBV_WC_MW_BIND_ERR);
	assert_int_equal(qp_state(B), IBV_QPS_ERR);
}

/* Remote write through a window needs LOCAL_WRITE on the MR (IBA 10.6.7). */
static void test_mw_bind_write_needs_local_write(void **state)
{
	(void)state;
	up_mw(IBV_MW_TYPE_1, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	assert_int_equal(bind1(win(0), WIN_LEN, W_RW), 0);
	expect_wc(B, 77, IBV_WC_MW_BIND_ERR);
}

/* A window beyond its MR cannot be bound. */
static void test_mw_bind_outside_mr(void **state)
{
	(void)state;
	up_mw(IBV_MW_TYPE_1, MR_ALL);
	assert_int_equal(bind1((uintptr_t)sides[B].buf + BUF - 100, 200, W_RW), 0);
	expect_wc(B, 77, IBV_WC_MW_BIND_ERR);
}

/* Deallocating a bound window is allowed; its key is dead at once. */
static void test_mw_dealloc_bound(void **state)
{
	uint32_t key;

	(void)state;
	up_mw(IBV_MW_TYPE_1, MR_ALL);
	assert_int_equal(bind1(win(0), WIN_LEN, W_RW), 0);
	expect_wc_op(B, 77, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	key = mw->rkey;
	assert_int_equal(sib_hca_ops.dealloc_mw(mw), 0);
	mw = NULL;
	write_through(win(0), key, IBV_WC_REM_ACCESS_ERR);
}

/* Each type has its own way to bind: EINVAL otherwise. */
static void test_mw_wrong_type_for_op(void **state)
{
	struct ibv_mw_bind b = { .wr_id = 1 };
	struct ibv_mw *m2;

	(void)state;
	up_mw(IBV_MW_TYPE_1, MR_ALL);
	assert_int_equal(bind2(ibv_inc_rkey(mw->rkey), win(0), WIN_LEN, W_RW), EINVAL);
	m2 = sib_hca_ops.alloc_mw(sides[B].pd, IBV_MW_TYPE_2);
	assert_non_null(m2);
	b.bind_info.mr = bmr;
	b.bind_info.addr = win(0);
	b.bind_info.length = WIN_LEN;
	assert_int_equal(sib_hca_ops.bind_mw(sides[B].qp, m2, &b), EINVAL);
	assert_int_equal(sib_hca_ops.dealloc_mw(m2), 0);
	/* A type 2 key must keep the window's index. */
	assert_int_equal(sib_hca_ops.dealloc_mw(mw), 0);
	mw = sib_hca_ops.alloc_mw(sides[B].pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	assert_int_equal(bind2(mw->rkey + 0x100, win(0), WIN_LEN, W_RW), EINVAL);
	/* Access a window cannot grant (LOCAL_WRITE it may be asked for:
	 * test_mw_bind_local_write). */
	assert_int_equal(bind2(ibv_inc_rkey(mw->rkey), win(0), WIN_LEN, IBV_ACCESS_ZERO_BASED | W_RW),
			 EINVAL);
	expect_no_wc(B);
}

/* IBV_ACCESS_LOCAL_WRITE (and MW_BIND) among a bind's access flags is
 * accepted and grants nothing remote (rxe's RXE_ACCESS_SUPPORTED_MW, mlx5; pyverbs' tests bind
 * with it), through all three binds: ibv_bind_mw (type 1), IBV_WR_BIND_MW
 * and ibv_wr_bind_mw (type 2). */
static void test_mw_bind_local_write(void **state)
{
	const uint64_t ops[NDEV] = { 0, IBV_QP_EX_WITH_BIND_MW };
	struct ibv_mw_bind_info bi = { 0 };
	uint32_t key;

	(void)state;
	up_mw(IBV_MW_TYPE_1, MR_ALL);
	assert_int_equal(bind1(win(0), WIN_LEN, IBV_ACCESS_LOCAL_WRITE | W_RW), 0);
	expect_wc_op(B, 77, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	write_through(win(0), mw->rkey, IBV_WC_SUCCESS);
	/* MW_BIND (the MR's own flags passed on) is accepted and dropped too. */
	assert_int_equal(bind1(win(0), WIN_LEN, IBV_ACCESS_MW_BIND | IBV_ACCESS_LOCAL_WRITE | W_RW), 0);
	expect_wc_op(B, 77, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	write_through(win(0), mw->rkey, IBV_WC_SUCCESS);
	/* LOCAL_WRITE alone: a window that grants nothing. */
	assert_int_equal(bind1(win(0), WIN_LEN, IBV_ACCESS_LOCAL_WRITE), 0);
	expect_wc_op(B, 77, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	write_through(win(0), mw->rkey, IBV_WC_REM_ACCESS_ERR);
	down_mw(NULL);

	up_mw(IBV_MW_TYPE_2, MR_ALL);
	key = ibv_inc_rkey(mw->rkey);
	assert_int_equal(bind2(key, win(0), WIN_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), 0);
	expect_wc_op(B, 78, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	write_through(win(0), key, IBV_WC_SUCCESS);
	down_mw(NULL);

	key = up_wr_mw(ops, &bi);
	bi.mw_access_flags = IBV_ACCESS_LOCAL_WRITE | W_RW;
	wr_bind_ok(key, &bi);
	write_through(win(0), key, IBV_WC_SUCCESS);
}

/* ============ Type 2: BIND_MW, LOCAL_INV, SEND_WITH_INV ============ */

/* up_mw with a type 2 window bound over [win(0), +WIN_LEN) read/write
 * through IBV_WR_BIND_MW; its key. */
static uint32_t up_bound2(void)
{
	uint32_t key;

	up_mw(IBV_MW_TYPE_2, MR_ALL);
	key = ibv_inc_rkey(mw->rkey);
	assert_int_equal(bind2(key, win(0), WIN_LEN, W_RW), 0);
	expect_wc_op(B, 78, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	return key;
}

static void test_mw_type2_bind_invalidate(void **state)
{
	uint32_t key;

	(void)state;
	key = up_bound2();
	assert_int_equal(mw->rkey, key);
	write_through(win(8), key, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + WIN_OFF + 8, sides[A].buf, 64);
	/* A bound type 2 window cannot be bound again before it is invalidated. */
	assert_int_equal(bind2(ibv_inc_rkey(key), win(0), WIN_LEN, W_RW), 0);
	expect_wc(B, 78, IBV_WC_MW_BIND_ERR);
	assert_int_equal(qp_state(B), IBV_QPS_ERR);
}

static void test_mw_type2_local_inv(void **state)
{
	uint32_t key;

	(void)state;
	key = up_bound2();
	local_inv(B, key, 79);
	expect_wc_op(B, 79, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	write_through(win(0), key, IBV_WC_REM_ACCESS_ERR);
}

static enum verdict hold_later_writes(const struct seen *s)
{
	uint8_t op = s->opc & 0x1f;

	return s->dst == B && (op == IBA_OPC_RDMA_WRITE_MIDDLE || op == IBA_OPC_RDMA_WRITE_LAST) ? HOLD
												  : PASS;
}

/* A WRITE under way through a window when the window is invalidated: the
 * rest of it is refused (REM_ACCESS_ERR), nothing more lands. */
static void test_mw_invalidate_stops_write_under_way(void **state)
{
	uint32_t key;

	(void)state;
	key = up_bound2();
	memset(sides[B].buf + WIN_OFF, 0, WIN_LEN);
	fill(sides[A].buf, 3000, 7);
	filter = hold_later_writes;
	post_send(A, IBV_WR_RDMA_WRITE, 0, 3000, win(0), key, 1);
	settle(50);
	assert_int_equal(nkept, 2); /* MIDDLE and LAST wait; FIRST landed */
	assert_memory_equal(sides[B].buf + WIN_OFF, sides[A].buf, 1024);
	local_inv(B, key, 79);
	expect_wc_op(B, 79, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	filter = NULL;
	replay(0);
	replay(1);
	expect_wc(A, 1, IBV_WC_REM_ACCESS_ERR);
	for (unsigned int i = 1024; i < 3000; i++)
		assert_int_equal(sides[B].buf[WIN_OFF + i], 0);
}

/* The QP a type 2 window is bound to goes (sib_destroy_qp calls this
 * after unpublishing it): the window is invalid, whoever gets its QPN. */
static void test_mw_type2_qp_gone(void **state)
{
	uint32_t key;

	(void)state;
	key = up_bound2();
	write_through(win(0), key, IBV_WC_SUCCESS);
	sib_mw_qp_gone(to_sqp(sides[B].qp));
	write_through(win(0), key, IBV_WC_REM_ACCESS_ERR);
}

/* Bind again after the invalidation, with the next key. */
static void test_mw_type2_rebind_after_inv(void **state)
{
	uint32_t key;

	(void)state;
	up_mw(IBV_MW_TYPE_2, MR_ALL);
	key = ibv_inc_rkey(mw->rkey);
	assert_int_equal(bind2(key, win(0), WIN_LEN, W_RW), 0);
	local_inv(B, key, 79);
	assert_int_equal(bind2(ibv_inc_rkey(key), win(0), 64, IBV_ACCESS_REMOTE_WRITE), 0);
	expect_wc_op(B, 78, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	expect_wc_op(B, 79, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	expect_wc_op(B, 78, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	write_through(win(0), ibv_inc_rkey(key), IBV_WC_SUCCESS);
}

/* SEND_WITH_INV: the receive completes with IBV_WC_WITH_INV and the key;
 * the window is invalid from then on. */
static void test_mw_send_with_inv(void **state)
{
	struct ibv_send_wr wr = { 0 }, *bad = NULL;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t key;
	unsigned int i;

	(void)state;
	key = up_bound2();
	post_recv(B, 0, 2048, 5);
	sge.addr = (uintptr_t)sides[A].buf;
	sge.length = 1500; /* two packets at MTU 1024: the IETH rides on the last */
	sge.lkey = sides[A].mr->lkey;
	wr.wr_id = 6;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = key;
	assert_int_equal(sib_hca_ops.post_send(sides[A].qp, &wr, &bad), 0);
	expect_wc(A, 6, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 1500);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, key);
	i = nth(0, B, IBA_OPC_SEND_FIRST, 0);
	expect_pkt(nth(i, B, -1, 1), IBA_OPC_SEND_LAST_WITH_INVALIDATE, plog[i].psn + 1, 476, true);
	write_through(win(0), key, IBV_WC_REM_ACCESS_ERR);
}

/* SEND_WITH_INV of a key that names no window (here an MR): the receive
 * WQE fails, the sender sees a remote invalid request. */
static void test_mw_send_with_inv_bad_key(void **state)
{
	struct ibv_send_wr wr = { 0 }, *bad = NULL;

	(void)state;
	up_mw(IBV_MW_TYPE_2, MR_ALL);
	post_recv(B, 0, 2048, 5);
	wr.wr_id = 6;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = bmr->rkey;
	assert_int_equal(sib_hca_ops.post_send(sides[A].qp, &wr, &bad), 0);
	expect_wc(A, 6, IBV_WC_REM_INV_REQ_ERR);
	expect_wc(B, 5, IBV_WC_REM_INV_REQ_ERR);
}

/* LOCAL_INV of a key that is no bound type 2 window: LOC_QP_OP_ERR. */
static void test_mw_local_inv_bad_key(void **state)
{
	(void)state;
	up_mw(IBV_MW_TYPE_1, MR_ALL);
	local_inv(B, mw->rkey, 79); /* type 1 windows are not invalidated */
	expect_wc(B, 79, IBV_WC_LOC_QP_OP_ERR);
	assert_int_equal(qp_state(B), IBV_QPS_ERR);
}

/* Type 2B: only the QP that bound the window reaches it (IBA 10.6.7.2). */
static void test_mw_type2_qp_bound(void **state)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_qp *x[NDEV], *main_qp[NDEV];
	uint32_t key;

	(void)state;
	up_mw(IBV_MW_TYPE_2, MR_ALL);
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	for (unsigned int i = 0; i < NDEV; i++) {
		qa.send_cq = qa.recv_cq = sides[i].cq;
		x[i] = sib_hca_ops.create_qp(sides[i].pd, &qa);
		assert_non_null(x[i]);
		main_qp[i] = sides[i].qp;
	}
	connect_pair(A, x[A], x[B], &def_opts, 5000, 7000, W_RW);
	connect_pair(B, x[B], x[A], &def_opts, 7000, 5000, W_RW);
	/* The second pair binds it (B's second QP) and reaches it. */
	sides[A].qp = x[A];
	sides[B].qp = x[B];
	key = ibv_inc_rkey(mw->rkey);
	assert_int_equal(bind2(key, win(0), WIN_LEN, W_RW), 0);
	expect_wc_op(B, 78, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	write_through(win(0), key, IBV_WC_SUCCESS);
	/* The first pair, same PD, same key: not its window. */
	sides[A].qp = main_qp[A];
	sides[B].qp = main_qp[B];
	write_through(win(0), key, IBV_WC_REM_ACCESS_ERR);
	for (unsigned int i = 0; i < NDEV; i++)
		assert_int_equal(sib_hca_ops.destroy_qp(x[i]), 0);
}

/* up_mw (type 2) with ibv_wr_* QPs (ops); *bi the bind of the window
 * read/write; the key to bind it with. */
static uint32_t up_wr_mw(const uint64_t ops[NDEV], struct ibv_mw_bind_info *bi)
{
	up_mw(IBV_MW_TYPE_2, MR_ALL);
	swap_wr_qps(ops, &def_opts);
	bi->mr = bmr;
	bi->addr = win(0);
	bi->length = WIN_LEN;
	bi->mw_access_flags = W_RW;
	return ibv_inc_rkey(mw->rkey);
}

/* The ibv_wr_* forms: wr_bind_mw and wr_local_inv on B, wr_send_inv on A. */
static void test_mw_wr_api(void **state)
{
	const uint64_t ops[NDEV] = { IBV_QP_EX_WITH_SEND_WITH_INV,
				     IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV };
	struct ibv_mw_bind_info bi = { 0 };
	struct ibv_qp_ex *xa;
	struct ibv_wc wc;
	uint32_t key;

	(void)state;
	key = up_wr_mw(ops, &bi);
	xa = (struct ibv_qp_ex *)sides[A].qp;
	wr_bind_ok(key, &bi);
	write_through(win(0), key, IBV_WC_SUCCESS);
	/* Remote invalidation, then a bind again, then a local one. */
	post_recv(B, 0, 64, 2);
	ibv_wr_start(xa);
	xa->wr_id = 3;
	xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(xa, key);
	ibv_wr_set_sge(xa, sides[A].mr->lkey, (uintptr_t)sides[A].buf, 8);
	assert_int_equal(ibv_wr_complete(xa), 0);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, key);
	write_through(win(0), key, IBV_WC_REM_ACCESS_ERR);
}

/* One batch: bind, invalidate locally, bind again with the next key. */
static void test_mw_wr_api_local_inv(void **state)
{
	const uint64_t ops[NDEV] = { 0, IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV };
	struct ibv_mw_bind_info bi = { 0 };
	struct ibv_qp_ex *xb;
	uint32_t key;

	(void)state;
	key = up_wr_mw(ops, &bi);
	xb = (struct ibv_qp_ex *)sides[B].qp;
	ibv_wr_start(xb);
	xb->wr_flags = IBV_SEND_SIGNALED;
	xb->wr_id = 1;
	ibv_wr_bind_mw(xb, mw, key, &bi);
	xb->wr_id = 2;
	ibv_wr_local_inv(xb, key);
	xb->wr_id = 3;
	ibv_wr_bind_mw(xb, mw, ibv_inc_rkey(key), &bi);
	assert_int_equal(ibv_wr_complete(xb), 0);
	expect_wc_op(B, 1, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	expect_wc_op(B, 2, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	expect_wc_op(B, 3, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	write_through(win(0), ibv_inc_rkey(key), IBV_WC_SUCCESS);
	write_through(win(0), key, IBV_WC_REM_ACCESS_ERR);
}

/* UC QPs bind and invalidate windows too (UC completes sends when they
 * leave; the local WQEs complete once, in order). */
static void test_mw_on_uc(void **state)
{
	struct opts o = def_opts;
	uint32_t key;

	(void)state;
	o.qpt = IBV_QPT_UC;
	up_mw_on(&o, IBV_MW_TYPE_2, MR_ALL);
	key = ibv_inc_rkey(mw->rkey);
	assert_int_equal(bind2(key, win(0), WIN_LEN, W_RW), 0);
	local_inv(B, key, 79);
	expect_wc_op(B, 78, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	expect_wc_op(B, 79, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	assert_int_equal(bind2(ibv_inc_rkey(key), win(0), WIN_LEN, W_RW), 0);
	expect_wc_op(B, 78, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	fill(sides[A].buf, 64, 9);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 64, win(16), ibv_inc_rkey(key), 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	settle(5);
	assert_memory_equal(sides[B].buf + WIN_OFF + 16, sides[A].buf, 64);
	expect_no_wc(B);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_mw_alloc_keys_caps, down_mw),
		cmocka_unit_test_teardown(test_mw_type1_bind_and_access, down_mw),
		cmocka_unit_test_teardown(test_mw_range, down_mw),
		cmocka_unit_test_teardown(test_mw_access, down_mw),
		cmocka_unit_test_teardown(test_mw_unbound, down_mw),
		cmocka_unit_test_teardown(test_mw_bind_needs_mw_bind_access, down_mw),
		cmocka_unit_test_teardown(test_mw_bind_write_needs_local_write, down_mw),
		cmocka_unit_test_teardown(test_mw_bind_outside_mr, down_mw),
		cmocka_unit_test_teardown(test_mw_dealloc_bound, down_mw),
		cmocka_unit_test_teardown(test_mw_wrong_type_for_op, down_mw),
		cmocka_unit_test_teardown(test_mw_bind_local_write, down_mw),
		cmocka_unit_test_teardown(test_mw_type2_bind_invalidate, down_mw),
		cmocka_unit_test_teardown(test_mw_type2_local_inv, down_mw),
		cmocka_unit_test_teardown(test_mw_invalidate_stops_write_under_way, down_mw),
		cmocka_unit_test_teardown(test_mw_type2_qp_gone, down_mw),
		cmocka_unit_test_teardown(test_mw_type2_rebind_after_inv, down_mw),
		cmocka_unit_test_teardown(test_mw_send_with_inv, down_mw),
		cmocka_unit_test_teardown(test_mw_send_with_inv_bad_key, down_mw),
		cmocka_unit_test_teardown(test_mw_local_inv_bad_key, down_mw),
		cmocka_unit_test_teardown(test_mw_type2_qp_bound, down_mw),
		cmocka_unit_test_teardown(test_mw_wr_api, down_mw),
		cmocka_unit_test_teardown(test_mw_wr_api_local_inv, down_mw),
		cmocka_unit_test_teardown(test_mw_on_uc, down_mw),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
