/* SPDX-License-Identifier: MIT */
/*
 * A loopback fabric for the HCA's transport tests, with no verbs library
 * and no softibd: two device contexts on a fabric map and inbox rings in
 * this process's memory, driven through the provider API (provider.h)
 * only.  Each sender's packets go to a "wire" ring the test owns; pump()
 * decodes every packet into plog[], may drop, duplicate or keep it (the
 * `filter`), then publishes it into the receiver's inbox.  Only the test
 * thread pumps; the contexts' engine threads produce concurrently.  Every
 * wait is bounded (WAIT_MS).  Shared by test_hca_loopback and the
 * per-transport tests (test_hca_*.c).
 */
#ifndef SIB_TEST_HCA_LOOP_H
#define SIB_TEST_HCA_LOOP_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "link/link.h"

#define NDEV     2
#define BUF      (1u << 20)
#define LOG_MAX  16384
#define KEEP_MAX 8
#define WAIT_MS  10000             /* every wait is bounded */
#define A        0                 /* requester side in most tests */
#define B        1
#define C        2                 /* side_open_c: a second context on B's device */
#define NINBOX   3                 /* inboxes: A, B and C */
#define EXTRA_HANDLE 0x100u        /* C's device handle (the host maps it to B) */

/* One packet as the pump saw it (decoded; ICRC not checked). */
struct seen {
	unsigned int dst;              /* the context it went to */
	unsigned int src;              /* the context that sent it */
	uint8_t opc;                   /* BTH opcode */
	uint32_t psn;
	bool ackreq;
	uint8_t syn;                   /* AETH syndrome (responses) */
	uint32_t msn;
	uint32_t paylen;
	uint64_t va;                   /* RETH */
	uint32_t rkey, dmalen;
	uint8_t head;                  /* first payload byte */
	/* atomics: AtomicETH (va, rkey above), AtomicAckETH */
	uint64_t swap_add, compare, atomic_ack;
	uint32_t dqpn;                 /* BTH.DestQP */
	uint16_t dlid;
	bool grh;                      /* LNH says a GRH follows */
	uint32_t qkey, src_qp;         /* DETH (UD) */
	uint32_t sflags;               /* slot flags (SIB_SLOT_F_PLACED: direct placement) */
};

/* What the filter does with a packet. */
enum verdict {
	PASS, DROP, DUP,
	KEEP,                          /* pass it, and keep a copy for replay() */
	HOLD,                          /* keep a copy for replay() only */
};

/* One side of the connection (side_open). */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;             /* buf, local write + remote read/write */
	struct ibv_mr *mr_local;       /* buf2, local write only */
	struct ibv_mr *mr_ro;          /* buf2, remote read only */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf, *buf2;           /* BUF and 4096 bytes */
	uint16_t lid;
};

/* How up() connects the two QPs. */
struct opts {
	enum ibv_mtu mtu;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint32_t psn;                  /* A's send PSN (B's is psn + 1000) */
	const char *faults;            /* SOFTIB_FAULTS for both links, or NULL */
	enum ibv_qp_type qpt;          /* 0: IBV_QPT_RC; IBV_QPT_UC (connect_qp's masks follow) */
};

/* A long ACK timeout (1 s): tests that do not lose packets never time out. */
extern const struct opts def_opts;

extern struct seen plog[LOG_MAX];  /* every packet pumped since up() */
extern unsigned int nlog;
extern enum verdict (*filter)(const struct seen *s); /* NULL: pass all */
extern unsigned int nkept;         /* packets kept by KEEP verdicts */
extern unsigned int map_fail, map_calls; /* the host's inbox maps: fail the next n; count */
extern bool wire_hold[NINBOX];     /* pump() leaves these wires alone (they fill up) */
extern struct side sides[NINBOX]; /* C: only after side_open_c() */
extern struct ibv_device *devices[NDEV]; /* never freed (as the library's) */
extern void *inbox_mem[NINBOX];      /* SIB_INBOX_BYTES each */

/* The host's route hook (a fabric without switches, softibd's
 * SIB_CTL_ROUTE answers): calls so far, and a LID (unicast or multicast)
 * whose route it answers as dropped (0: none).  Bump
 * sib_fabric->route_gen after changing route_block. */
extern unsigned int route_calls;
extern uint16_t route_block;

uint64_t now_ms(void);

/* The host's direct placement broker (softibd's DX_PUT, DX_GET): a dup of
 * the memfd a context gave (kind; TAB, CNT: of inbox; MR: region id), -1
 * if none; put: give one as a context would (fd -1: forget it), 0 or
 * errno.  GETs answered and refused (EPERM) so far. */
int loop_dx_fd(uint32_t kind, uint32_t inbox, uint32_t id);
int loop_dx_put(uint32_t kind, uint32_t inbox, uint32_t id, int fd);
extern unsigned int dx_gets, dx_refused;
/* Does the broker answer GETs?  false (the default): direct placement
 * finds nothing and every test but test_hca_direct sees packets. */
extern bool loop_dx_serve;

/* cmocka group setup/teardown: the fabric map and the host hooks. */
void fabric_setup(void);
int group_setup(void **state);
int group_teardown(void **state);

/* Open device i's context, PD, the three MRs, a CQ and a QP of the type
 * the last up() asked for (RC by default). */
void side_open(unsigned int i);
/* Open C: a second context (inbox C) on B's device, with a PD, an MR on
 * its buf and a CQ of 4096 entries, no QP; down() closes it (XRC
 * forwarding tests). */
void side_open_c(void);
/* Publish len bytes into inbox d as if off a wire, with slot flags. */
void inject(unsigned int d, const uint8_t *data, uint32_t len, uint32_t flags);
/* The same, sent by context src (the pair ring src -> d). */
void inject_from(unsigned int src, unsigned int d, const uint8_t *data, uint32_t len, uint32_t flags);
/* RESET -> INIT -> RTR -> RTS, side i's QP to the other's (IBA 10.3.1). */
void connect_qp(unsigned int i, const struct opts *o);
/* The same for QP qp of side i to peer, a QP of the other side, with
 * these PSNs (qp's send PSN, its expected PSN) and access flags. */
void connect_pair(unsigned int i, struct ibv_qp *qp, struct ibv_qp *peer, const struct opts *o,
		  uint32_t sq_psn, uint32_t rq_psn, unsigned int access);
/* Fresh inboxes, wires, contexts and a connected QP pair (per test). */
void up(const struct opts *o);
/* After up(): replace both sides' QPs by QPs with the ibv_wr_* send API
 * (create_qp_ex, send_ops_flags ops[side]), connected as up() connects. */
void swap_wr_qps(const uint64_t ops[NDEV], const struct opts *o);
/* cmocka teardown: destroy what up() made. */
int down(void **state);

/* Move everything on both wires into the inboxes, through the filter. */
void pump(void);
/* Send kept packet i again, as a duplicate on the wire would arrive. */
void replay(unsigned int i);
/* Run device d's engine inline (an empty poll_cq). */
void drive(unsigned int d);
/* Poll side s for one completion, pumping and driving both sides. */
struct ibv_wc poll_wc(unsigned int s);
/* Pump and drive for ms, taking no completion. */
void settle(unsigned int ms);
void expect_no_wc(unsigned int s);
void expect_wc(unsigned int s, uint64_t wr_id, enum ibv_wc_status st);

/* XRC through the ops table: the domain of file fd (-1: a private one) on
 * side s's context, and an XRC SRQ of max_wr WQEs (one SGE) in it, with
 * side s's PD and CQ; *srqn (if not NULL) gets its number. */
struct ibv_xrcd *loop_xrcd_open(unsigned int s, int fd);
struct ibv_srq *loop_xsrq_new(unsigned int s, struct ibv_xrcd *xd, uint32_t max_wr, uint32_t *srqn);

/* Verbs through the ops table (signaled; ImmDt 0x1234). */
void post_send_sge(unsigned int s, enum ibv_wr_opcode op, uint64_t addr, uint32_t len,
		   uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t wr_id);
/* A WR from side s's buf + off. */
void post_send(unsigned int s, enum ibv_wr_opcode op, uint64_t off, uint32_t len,
	       uint64_t raddr, uint32_t rkey, uint64_t wr_id);
void post_recv(unsigned int s, uint64_t off, uint32_t len, uint64_t wr_id);
/* The same into another QP of side s (a UD QP, say). */
void post_recv_qp(struct ibv_qp *qp, unsigned int s, uint64_t off, uint32_t len, uint64_t wr_id);
enum ibv_qp_state qp_state(unsigned int s);
/* A UD QP on side s (its CQ and PD) with Q_Key qkey, taken to RTS. */
struct ibv_qp *ud_qp_create(unsigned int s, uint32_t qkey, uint32_t create_flags);
void fill(uint8_t *p, uint32_t len, uint8_t seed);

/* The log. */
bool is_req(uint8_t opc);
/* Packets from `from` on that went to dst with opcode opc (-1: requests). */
unsigned int count(unsigned int from, unsigned int dst, int opc, uint32_t psn, bool any_psn);
/* The index of the k-th (0-based) packet from `from` on to dst with opcode
 * opc (-1: any request); fails if there is none. */
unsigned int nth(unsigned int from, unsigned int dst, int opc, unsigned int k);
void expect_pkt(unsigned int i, uint8_t opc, uint32_t psn, uint32_t paylen, bool ackreq);
bool is_ack_of_type(const struct seen *e, uint8_t type);

#endif
