/* SPDX-License-Identifier: MIT */
/*
 * The software HCA: verbs objects as the transport engine sees them.
 * Private to src/hca (the layer above sees provider.h only).
 *
 * Locking (seed 004: verbs are reentrant, post/poll/notify never sleep):
 *  - ctx->progress_lock serializes the engine: whoever holds it (the engine
 *    thread or an application thread inside post/poll) consumes the inbox
 *    and runs requester, responder and completer for every QP of the context.
 *    It serializes transport state; it keeps nothing alive.
 *  - Object lifetime is the object tables' only (common/objtab.h): QPs by
 *    QPN and MRs by key index per context, CQs process-wide.  Every user
 *    holds a reference: the receive path per packet, the responder on an
 *    MR it keeps between packets (and checks sib_objtab_live before each
 *    use), the engine's schedule on each scheduled QP.  Destroy
 *    unpublishes, waits for the references (poking the engine, which drops
 *    what it holds on seeing the generation move), then frees.
 *  - Peer inbox mappings are the link's, counted (link/dest.h): a QP's
 *    dest cache holds one, dropped when the destination changes, its
 *    generation is gone, or the QP leaves the schedule.
 *  - qp->sq_lock / qp->rq_lock protect the producer index of the SQ / RQ
 *    against concurrent posters; cq->lock protects the CQ ring.
 *  - Nothing here is shared with another process except the inbox rings and
 *    the fabric map (common/sib_shm.h), which are lock-free.
 *
 * What only some files need has its own header, in the manner of rxe's
 * rxe_loc.h: engine.h (the engine's state, struct sib_engine inside the
 * context, and its calls), transport.h (the stages), ud.h (UD and
 * multicast: qp->ud), srq.h (SRQs and XRC: qp->xrc, the receive WQE
 * source), and one per object (mw.h, atomic.h, direct.h, ...).
 */
#ifndef SIB_HCA_H
#define SIB_HCA_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/objtab.h"
#include "common/sib_shm.h"
#include "hca/engine.h"
#include "hca/events.h"
#include "hca/mr_check.h"
#include "hca/provider.h"
#include "link/dest.h"
#include "link/link.h"
#define SIB_TRANSPORT_STATE_ONLY
#include "hca/transport.h"             /* struct sib_req, sib_comp, sib_resp */
#undef SIB_TRANSPORT_STATE_ONLY
#include "iba/iba.h"

#define SIB_MAX_SGE          16
#define SIB_MAX_INLINE       512        /* bytes of inline data per send WQE */
#define SIB_MAX_QP_WR        16384
#define SIB_MAX_CQE          (1 << 20)
#define SIB_MAX_RD_ATOMIC    16
#define SIB_MAX_MSG_SZ       0x40000000u /* 1 GiB: keeps a READ's PSNs inside the
                                            2^23 window at MTU 256 (mlx5 reports the same) */
#define SIB_MAX_UNACKED_PSNS 1024       /* requester window, PSNs */
/* ACK timeouts in a row that do not spend a retry (retry_cnt) while the
 * peer's context has not taken anything from our ring to it: its engine
 * starved of CPU is not a lossy wire (comp.c timeout; softib, not IBA). */
#define SIB_STARVED_TIMEOUTS 16
#define SIB_MAX_UNACKED_PSNS_PLACED (1 << 20)   /* ... while placing directly (direct.c):
						  one packet per message, not per PSN */
#define SIB_ACKREQ_EVERY     32         /* AckReq at least every N PSNs (req.c) */
#define SIB_ACKREQ_DELAY_NS  10000      /* an unacknowledged tail asks for its ACK (req.c) */
#define SIB_POLL_SPIN        256        /* empty polls between sched_yield()s */
#define SIB_MR_DIR           256
#define SIB_MR_PAGE          4096       /* MRs per directory page: 1M MRs */
#define SIB_MAX_SRQ          (1 << 16)  /* SRQ numbers 1..SIB_MAX_SRQ-1 per context (srq.c) */
#define SIB_MAX_SRQ_WR       SIB_MAX_QP_WR
#define SIB_CQ_TAB_MAX       (1u << 20) /* CQs per process (cq_ops.c: its table) */

/*
 * Limits: how many objects of a kind one context can create, which
 * ibv_query_device reports as max_* (provider.c) and tests create up to
 * (test_verbs_limits).  Each is the smaller of the HCA's own table and
 * softibd's handle budget, SIB_CTL_MAX_HANDLES per connection (that is,
 * per process), less the context's device handle and what that kind needs
 * first: a PD for MRs and SRQs, a PD and a CQ for QPs.  AHs and MWs live
 * in the process alone.  Objects of several kinds, or several contexts of
 * one process, share the budget, so they meet ENOMEM earlier, as objects
 * share a real HCA's memory (docs/transport.md "Limits").
 */
#define SIB_LIM_MIN(a, b)    ((a) < (b) ? (a) : (b))
#define SIB_CTX_HANDLES      (SIB_CTL_MAX_HANDLES - 1u)
#define SIB_LIM_PD           SIB_CTX_HANDLES
#define SIB_LIM_CQ           SIB_LIM_MIN(SIB_CQ_TAB_MAX, SIB_CTX_HANDLES)
#define SIB_LIM_MR           SIB_LIM_MIN(SIB_MR_DIR * SIB_MR_PAGE - 1u, SIB_CTX_HANDLES - 1u)
#define SIB_LIM_SRQ          SIB_LIM_MIN(SIB_MAX_SRQ - 1u, SIB_CTX_HANDLES - 1u)
#define SIB_LIM_QP           SIB_LIM_MIN(SIB_MAX_QPN - 2u, SIB_CTX_HANDLES - 2u)
#define SIB_QKEY_CONTROLLED  0x80000000u /* IBA 10.2.5: a controlled Q_Key (privileged
                                            on a QP; in a WR: send the QP's own) */

struct sib_context;
struct sib_dx;
struct sib_xfwd_msg;
struct sib_dx_region;

/*
 * A verbs device.  rdma-core allocates devices as struct verbs_device
 * (712 bytes) whose `ops` pointer at +664 libmlx5 and libefa read to decide
 * "is this mine?"; it must be NULL here (research/abi.md 2.5).
 */
struct sib_device {
	struct ibv_device ibv;
	void *verbs_ops;               /* +664: always NULL */
	uint8_t verbs_private[40];     /* the rest of verbs_device */
	uint32_t index;                /* in sib_fabric->devs[] */
	uint32_t gen;                  /* sib_fabric->devs[index].gen when listed */
};

/* Memory region: lkey == rkey == index << 8 | key byte (STYLE 6.8). */
struct sib_mr {
	struct ibv_mr ibv;
	uint32_t handle;               /* softibd object handle */
	uint64_t tab_handle;           /* in ctx->mrs */
	struct sib_mr_range range;     /* PD handle, iova, length, access */
	struct sib_dx_region *dx_region; /* its pages on a memfd (direct.c), or NULL */
	unsigned int dx_fork_gen;      /* direct.c: the region is this process's */
};

struct sib_pd {
	struct ibv_pd ibv;
	_Atomic int usecnt;            /* MRs and QPs on it: dealloc gives EBUSY */
};

/* Completion queue: a ring of ibv_wc under cq->lock. */
struct sib_cq {
	struct ibv_cq_ex ibv;          /* starts with the struct ibv_cq layout */
	uint32_t obj_handle;
	pthread_spinlock_t lock;
	struct ibv_wc *wc;
	uint32_t size;                 /* entries in wc[] (power of 2) */
	uint32_t head, tail;           /* consumer / producer */
	_Atomic int armed;             /* 0, SIB_CQ_ARM_NEXT or SIB_CQ_ARM_SOLICITED */
	bool overflow;
	_Atomic int usecnt;            /* QPs on it: destroy gives EBUSY */
	uint32_t reg_id, reg_gen;      /* names the CQ in event records: sib_cq_tab handle */
	_Atomic uint32_t events_reported; /* completion events delivered */
	_Atomic uint32_t async_reported;  /* CQ_ERR async events delivered */
	uint32_t empty_polls;          /* poll_cq calls in a row that found nothing */
	_Atomic uint32_t in_handler;   /* sib_cq_push running: seed 004 says never twice */
	_Atomic uint64_t handler_overlaps; /* pushes that found another one running */
	/* ibv_cq_ex polling state */
	struct ibv_wc cur;
	uint64_t wc_flags;
};

#define SIB_CQ_ARM_NEXT      1
#define SIB_CQ_ARM_SOLICITED 2

enum sib_swqe_state {
	SIB_SWQE_POSTED = 0,           /* not all packets sent yet */
	SIB_SWQE_SENT,                 /* every packet on the wire, waiting for ACK/response */
	SIB_SWQE_DONE,                 /* completed (success or error) */
};

/*
 * Send work queue element.  Every field up to sge[] is written at post for
 * every WR, in both post APIs (swqe_fill and wrx_new in qp.c zero them and
 * then set what the WR gives); sge[] is last so that the zeroing skips it,
 * and only its first num_sge entries are ever read.  Which field means
 * what is tied to the opcode or a flag set at the same post:
 *   post (all):        wr_id, opcode, send_flags, signaled, length, num_sge,
 *                      inline_data (NULL unless IBV_SEND_INLINE or
 *                      ibv_wr_set_inline_data*; then num_sge is 0)
 *   SEND/WRITE_IMM:    imm_be          RDMA and atomics: remote_addr, rkey
 *   atomics:           compare_add, swap
 *   LOCAL_INV, SEND_WITH_INV: inv_rkey
 *   BIND_MW:           mw_handle, bind_* (mw.c)
 *   UD:                ud_av, ud_qpn, ud_qkey        XRC_SEND: xrc_srqn
 *   engine only:       first_psn, npsn, state, status, started, placed
 *                      (zero at post; the requester and completer own them)
 */
struct sib_swqe {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t imm_be;               /* ImmDt as on the wire */
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t length;               /* total message bytes */
	uint32_t num_sge;              /* entries of sge[] in use; 0 when inline */
	uint32_t first_psn;            /* PSN of the first packet (modulo 2^24) */
	uint32_t npsn;                 /* PSNs the message uses */
	enum sib_swqe_state state;
	enum ibv_wc_status status;
	bool signaled;
	bool started;                  /* the requester has assigned first_psn */
	bool placed;                   /* its data moved directly (direct.c): resent
					  as the placed packet, never copied again */
	/* UD (ud.c): the WR's address vector, copied at post (an AH may be
	 * destroyed once the WR is posted), destination QPN and Q_Key */
	struct ibv_ah_attr ud_av;
	uint32_t ud_qpn, ud_qkey;
	uint32_t xrc_srqn;             /* XRC_SEND: the XRCETH's SRQ number (srq.c) */
	uint8_t *inline_data;          /* points into the SQ's inline area, or NULL */
	/* atomics (atomic.c): the AtomicETH operands (IBA 9.3.3.3) */
	uint64_t compare_add;          /* CMP_AND_SWP: compare; FETCH_AND_ADD: add */
	uint64_t swap;                 /* CMP_AND_SWP: swap */
	/* memory windows (mw.c): BIND_MW, LOCAL_INV and SEND_WITH_INV */
	uint64_t mw_handle;            /* BIND_MW: the window (ctx->mws handle) */
	uint64_t bind_addr, bind_len;  /* BIND_MW: the window's range (len 0: unbind) */
	uint32_t bind_rkey;            /* BIND_MW: the key the window gets */
	uint32_t bind_mr_key;          /* BIND_MW: L_Key of the MR, 0 if none */
	unsigned int bind_access;      /* BIND_MW: IBV_ACCESS_REMOTE_* (LOCAL_WRITE dropped) */
	uint32_t inv_rkey;             /* LOCAL_INV, SEND_WITH_INV (IETH) */
	struct ibv_sge sge[SIB_MAX_SGE]; /* last: not zeroed at post (see above) */
};
_Static_assert(offsetof(struct sib_swqe, sge) + sizeof(((struct sib_swqe *)0)->sge) ==
	       sizeof(struct sib_swqe), "sge[] must be the last member of struct sib_swqe");

/* Receive work queue element: every field written at post, for every WR
 * (sib_rwqe_fill, srq.c); only the first num_sge entries of sge[] are
 * read (and copied, when an SRQ's WQE is taken: sib_srq_take). */
struct sib_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;               /* sum of SGE lengths */
	struct ibv_sge sge[SIB_MAX_SGE];
};

struct sib_qp {
	struct ibv_qp_ex ibv;          /* ibv_qp first */
	struct sib_context *ctx;
	uint32_t obj_handle;
	uint64_t tab_handle;           /* in ctx->qps */
	struct sib_qp *next_in_ctx;    /* the engine's schedule (engine.c), or ctx->eng.qp_new */
	uint64_t sched_handle;         /* the schedule's reference (tab_handle at publish) */
	bool unpublished;              /* a destroy got past unpublish: a retry only waits */

	/* attributes (authoritative state is `state`; ibv.qp_base.state is the
	 * application's, set by ibv_modify_qp and ibv_query_qp only, as rdma-core
	 * does: a transition of the HCA's own (to ERR or SQE) leaves it, and UCX
	 * relies on that) */
	enum ibv_qp_state state;
	enum ibv_mtu path_mtu;
	uint32_t mtu;                  /* bytes */
	uint32_t dest_qpn;
	struct ibv_ah_attr ah;
	struct ibv_ah_attr alt_ah;
	uint16_t pkey_index;
	uint8_t port_num;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint8_t sq_sig_all;
	uint8_t en_sqd_async_notify;
	unsigned int access;           /* qp_access_flags */
	uint32_t qkey;
	enum ibv_mig_state mig_state;
	struct ibv_qp_cap cap;

	/* send queue: posters own sq_head (under sq_lock); the engine the rest */
	pthread_spinlock_t sq_lock;
	struct sib_swqe *sq;
	uint8_t *sq_inline;            /* sq_size * SIB_MAX_INLINE bytes (or less) */
	uint32_t sq_size;              /* power of 2 */
	_Atomic uint32_t sq_head;      /* next free (posted count) */
	uint32_t sq_tail;              /* oldest not completed */

	/* receive queue */
	pthread_spinlock_t rq_lock;
	struct sib_rwqe *rq;
	uint32_t rq_size;
	_Atomic uint32_t rq_head;      /* posted */
	uint32_t rq_tail;              /* consumed */

	/* transport state, one part per stage (transport.h) */
	struct sib_req req;            /* requester, req.c */
	struct sib_comp comp;          /* completer, comp.c */
	struct sib_resp resp;          /* responder, resp.c */
	struct sib_link_peer dest;

	uint64_t peer_gone_deadline;   /* connected peer QP vanished: ERR at this time */
	_Atomic uint32_t events_reported; /* async events about this QP delivered */
	bool sqd_event_pending;

	/* The QP surface (ibv_query_qp): the rest of IBV_QP_ALT_PATH */
	uint16_t alt_pkey_index;
	uint8_t alt_port_num, alt_timeout;
	/* SRQ (srq.c): the receive WQE source.  srq: the SRQ the QP was
	 * created with (RC/UC/UD), counted in its usecnt.  A WQE taken from an
	 * SRQ is copied into xrc->wqe until its message completes; wqe_srq is
	 * where it came from (a reference wqe_srq_h while held). */
	struct sib_srq *srq;
	struct sib_srq *wqe_srq;
	uint64_t wqe_srq_h;

	/* Per-transport parts, allocated at create_qp for the QPs that need
	 * them and NULL otherwise (none is on the RC data path):
	 *  ud:  UD QPs (ud.h: head-of-queue and multicast state);
	 *  xrc: QPs that receive from an SRQ, created on one or XRC_RECV
	 *       (srq.h: the WQE taken, XRC_RECV's domain and forwarding);
	 *  wrb: QPs created with send_ops_flags (the ibv_wr_* batch, qp.c). */
	struct sib_qp_ud *ud;
	struct sib_qp_xrc *xrc;
	struct sib_wr_batch *wrb;
};

/* Address handle (ah.c, IBA 11.2.2): the attributes as given; lives in
 * this process only (no softibd object, as mlx5 makes IB AHs in user
 * space).  ibv_ah first. */
struct sib_ah {
	struct ibv_ah ibv;
	struct ibv_ah_attr attr;
};
#define SIB_MAX_AH           (1u << 20) /* AHs per context (max_ah) */

/* What a context is: verbs_context first (ops at negative offsets), then ours. */
struct sib_context {
	struct verbs_context vctx;
	struct sib_device *dev;
	uint32_t dev_handle;           /* softibd OPEN_DEVICE handle */
	uint32_t inbox_idx, inbox_gen;
	struct sib_ring inbox;         /* our inbox as producers see it (wakeups) */
	struct sib_link link;          /* every packet in and out (engine.c, src/link) */
	void *inbox_base;
	size_t inbox_size;

	pthread_mutex_t progress_lock;
	struct sib_engine eng;         /* the engine's state (engine.h) */

	struct sib_objtab qps;         /* by QPN */
	struct sib_objtab mrs;         /* by key index (key >> 8) */
	struct sib_dx *dx;             /* direct placement: export table, peer cache (direct.c) */
	struct sib_objtab srqs;        /* SRQ (srq.c): by SRQ number */
	_Atomic uint64_t key_ctr;      /* key-byte generator: counter and secret, */
	uint64_t key_secret;           /* both seeded by getrandom (keys.c) */

	int async_wfd;                 /* write end of the async event pipe */
	bool vcrc;                     /* compute/check VCRC on the shm link */
	bool icrc;                     /* compute the ICRC on every packet (SOFTIB_ICRC=1) */

	int32_t pid;                   /* getpid() at open: producers tag slots with it */

	/* counters (dropped and counted, never crash) */
	uint64_t rx_drop[SIB_RX_DROP_COUNT]; /* receive demux drops by cause (recv.c) */
	uint64_t tx_no_dest, tx_ring_full, rx_skipped_slots;
	uint64_t ack_timeouts, rnr_naks, seq_naks;  /* requester retries, by cause */
	uint64_t ack_timeouts_starved;  /* ACK timeouts forgiven: the peer took nothing (comp.c) */
	uint64_t port_down_drops;      /* packets lost on a downed port (either side) */
	uint64_t route_drops;          /* packets the forwarding tables drop (link/dest.c) */
	uint64_t uc_dropped_msgs;      /* UC: messages dropped by the responder (uc.c) */
	uint64_t ud_hoq_drops;         /* UD: datagrams dropped at a full inbox (ud.c) */
	struct sib_ctx_events ev;      /* pushed events (events.c) */
	/* memory windows (mw.c): by key index, keys SIB_MW_KEY_BIT | index << 8 | byte */
	struct sib_objtab mws;

	/* UD and multicast (ah.c, ud.c) */
	_Atomic uint32_t nah;          /* live AHs (max_ah) */
	struct sib_mcast_local *mcast; /* this context's attachments (ud.c), under mcast_lock */
	pthread_mutex_t mcast_lock;
	/* XRC forwarding (xrc_fwd.c): messages placed for other contexts' TGT
	 * QPs, SIB_XFWD_MSGS of them (srq.h); made with the context's first
	 * XRC SRQ, NULL before */
	_Atomic(struct sib_xfwd_msg *) xfwd;
};

/*
 * A shared receive queue (srq.c; IBA vol 1 ch. 10, ibv_create_srq(3)).  Posted
 * by any thread under `lock` (this process only); consumed by the engine
 * of the owning context (progress_lock), which copies a WQE out of the
 * ring into the QP that takes it.  Its number (ibv_get_srq_num, the
 * XRCETH's XRCSRQ) is its index in ctx->srqs.
 */
struct sib_srq {
	struct ibv_srq ibv;
	struct sib_context *ctx;
	uint32_t obj_handle;           /* softibd object (resource tracking) */
	uint64_t tab_handle;           /* in ctx->srqs */
	enum ibv_srq_type type;
	struct sib_xrcd *xrcd;         /* XRC SRQs: their domain */
	struct ibv_cq *cq;             /* XRC SRQs: where their receives complete */
	pthread_spinlock_t lock;       /* producers */
	struct sib_rwqe *rq;
	uint32_t size;                 /* ring entries, power of 2, > max_wr */
	uint32_t max_wr, max_sge;      /* as reported by query_srq */
	_Atomic uint32_t head;         /* posted (under lock) */
	_Atomic uint32_t tail;         /* taken (engine) */
	_Atomic uint32_t limit;        /* armed low watermark; 0 = not armed */
	_Atomic int usecnt;            /* QPs on it: destroy gives EBUSY */
	_Atomic uint32_t events_reported; /* SRQ_LIMIT_REACHED delivered */
};

/*
 * An XRC domain (srq.c; IBA 14.x XRC annex, ibv_open_xrcd(3)).  softibd
 * numbers it (one number per device and file, shared by every process
 * that opens the same file); this is one opener's handle on it.
 */
struct sib_xrcd {
	struct ibv_xrcd ibv;
	uint32_t obj_handle;           /* softibd's handle of this opening */
	uint32_t num;                  /* the domain's number on the device */
	_Atomic int usecnt;            /* SRQs and QPs in it: close gives EBUSY */
};

static inline struct sib_context *to_sctx(struct ibv_context *c)
{
	return (struct sib_context *)((char *)c - __builtin_offsetof(struct sib_context, vctx.context));
}
static inline struct sib_qp *to_sqp(struct ibv_qp *q) { return (struct sib_qp *)q; }
static inline struct sib_cq *to_scq(struct ibv_cq *c) { return (struct sib_cq *)c; }
static inline struct sib_mr *to_smr(struct ibv_mr *m) { return (struct sib_mr *)m; }

uint64_t sib_now_ns(void);

/*
 * The engine's clock for transport timers (ACK, RNR, UD head-of-queue),
 * under ctx->progress_lock: CLOCK_MONOTONIC ns, read for real (a vDSO
 * call, ~25 ns in a VM) only when the TSC says at least
 * SIB_CLOCK_GATE_TICKS went by since the last reading; otherwise that
 * reading, at most SIB_CLOCK_SLACK_NS old (TSC >= 0.5 GHz; a TSC that
 * went backwards, as on another CPU, reads for real).  A deadline armed
 * from it adds SIB_CLOCK_SLACK_NS (sib_deadline_ns), so a timer never
 * expires early (an early ACK timeout would retransmit needlessly); it
 * may see its expiry that much late.  So timer uses on the packet path cost an
 * rdtsc, not a clock_gettime, each (profile of ib_send_bw -s 8: five
 * clock reads per message before).
 */
#define SIB_CLOCK_GATE_TICKS 2048u
#define SIB_CLOCK_SLACK_NS   4096u
static inline uint64_t sib_clock_ns(struct sib_context *ctx)
{
#if defined(__x86_64__) || defined(__i386__)
	uint64_t t = __builtin_ia32_rdtsc();

	if (t - ctx->eng.clk_tsc < SIB_CLOCK_GATE_TICKS && ctx->eng.clk_ns)
		return ctx->eng.clk_ns;
	ctx->eng.clk_tsc = t;
#endif
	return ctx->eng.clk_ns = sib_now_ns();
}

/* A deadline `dt` ns from now on the engine's clock, never early. */
static inline uint64_t sib_deadline_ns(struct sib_context *ctx, uint64_t dt)
{
	return sib_clock_ns(ctx) + dt + SIB_CLOCK_SLACK_NS;
}

/* The process's host hooks (provider.c). */
extern const struct sib_hca_host *sib_host;
/* CQs by (reg_id, reg_gen): completion records name them (cq_ops.c). */
extern struct sib_objtab sib_cq_tab;
int sib_cq_tab_init(void);

/* cq.c */
/* Add a completion; raise the channel event if armed.  Engine context. */
void sib_cq_push(struct sib_cq *cq, const struct ibv_wc *wc, bool solicited);
/*
 * Remove every completion of QP number qpn from cq, keeping the others in
 * their order; returns how many went.  Under cq->lock, so against a
 * concurrent poll; the caller makes sure no completion of qpn is being
 * pushed (progress_lock held, or the QP unpublished and let go by the
 * engine).  As mlx5 does on modify to RESET and on destroy (mlx5_cq_clean,
 * rdma-core v44 providers/mlx5/verbs.c and cq.c): a QP re-armed from
 * RESET must not meet its old flush errors.  A CQ overrun stays overrun.
 */
unsigned int sib_cq_clean(struct sib_cq *cq, uint32_t qpn);

/* qp transport (recv.c, req.c, resp.c, comp.c) */
/*
 * The receive demux (recv.c, IBA 9.6 / 10.9.3 / C9 packet checks): decode
 * len bytes at buf, check headers, QP, state, keys and source path, and
 * hand the packet to its QP's responder or completer.  flags: SIB_RX_VCRC
 * if the buffer ends with a computed VCRC, SIB_RX_ICRC if it carries a
 * computed ICRC (only then is the ICRC checked: docs/link.md).  Returns
 * SIB_RX_DELIVERED, or the cause of the drop (also counted in
 * ctx->rx_drop[]).
 */
/* Does P_Key a admit packets with P_Key b?  IBA 10.9.3: the same low 15
 * bits, not the invalid P_Key, and at least one of them a full member.
 * The receive demux's check (recv.c) and direct placement's (direct.c). */
static inline bool sib_pkey_match(uint16_t a, uint16_t b)
{
	return (a & 0x7fff) && (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000);
}

#define SIB_RX_VCRC 0x1
#define SIB_RX_ICRC SIB_SLOT_F_ICRC
/* The slot said SIB_SLOT_F_XRC_FWD: a packet another context of this device
 * forwards (xrc_fwd.c), checked against softibd's qp_xrcd[] there. */
#define SIB_RX_XRC_FWD SIB_SLOT_F_XRC_FWD
/* The slot said SIB_SLOT_F_PLACED: a WRITE or READ whose data the requester
 * moved itself (direct.c); the packet has no payload (iba_pkt.placed). */
#define SIB_RX_PLACED SIB_SLOT_F_PLACED
#define SIB_RX_DELIVERED SIB_RX_DROP_COUNT
/* The receive demux (recv.c): one packet of len bytes, flags SIB_RX_*,
 * sent by context `from` (its inbox number, as the link's pair ring names
 * it: sib_link_rx_from; UINT32_MAX when no ring says). */
enum sib_rx_drop sib_recv(struct sib_context *ctx, const uint8_t *buf, uint32_t len,
			  unsigned int flags, uint32_t from);
/* Name of a drop cause ("slid", ...), "unknown" out of range. */
const char *sib_rx_drop_name(unsigned int why);
/* Drops of one cause so far on a context (any thread; a relaxed read). */
static inline uint64_t sib_rx_drop_count(const struct sib_context *ctx, enum sib_rx_drop why)
{
	if ((unsigned int)why >= SIB_RX_DROP_COUNT)
		return 0;
	return __atomic_load_n(&ctx->rx_drop[why], __ATOMIC_RELAXED);
}
/* A fresh key byte for an L_Key/R_Key (keys.c): unpredictable, seeded per
 * context from getrandom(2).  Lock-free, any thread. */
uint8_t sib_key_byte(struct sib_context *ctx);
/* Seed ctx's key generator; 0 or an errno from getrandom. */
int sib_key_seed(struct sib_context *ctx);
/* Transport half of struct sib_qp (transport.c): allocate / free the
 * responder resources (ENOMEM), reset to RESET state (IBA 10.3.1), apply
 * the transport attributes of a modify (retry budgets, PSNs), and drop the
 * MR references the responder holds (all of them, or only those whose MR
 * was deregistered or reregistered since).  Callers hold progress_lock
 * except for init/fini. */
int sib_qp_transport_init(struct sib_qp *qp);
void sib_qp_transport_fini(struct sib_qp *qp);
void sib_qp_transport_reset(struct sib_qp *qp);
void sib_qp_transport_modify(struct sib_qp *qp, const struct ibv_qp_attr *a, int mask);
void sib_qp_transport_release(struct sib_qp *qp, bool dead_only);
/* Per-QP transport work of one engine pass (transport.c): responder
 * output, timers, requester, local errors, SQ drained event.  *now is
 * filled lazily; *next gets the earliest deadline. */
void sib_qp_transport_run(struct sib_qp *qp, uint64_t *now, uint64_t *next);
/* The requester has nothing started and unfinished (SQD drained). */
static inline bool sib_sq_drained(const struct sib_qp *qp)
{
	return qp->sq_tail == qp->req.wqe && !qp->req.offset;
}
void sib_req_run(struct sib_qp *qp);
void sib_resp_packet(struct sib_qp *qp, const struct iba_pkt *pkt);
void sib_resp_run(struct sib_qp *qp);
void sib_comp_packet(struct sib_qp *qp, const struct iba_pkt *pkt);
void sib_comp_timers(struct sib_qp *qp, uint64_t now);
/* Move to ERR (IBA 10.3.1) and flush both queues.  Completion errors carry
 * the cause; no async event is raised (as rxe and mlx5).  Engine context. */
void sib_qp_enter_error(struct sib_qp *qp);
void sib_qp_flush(struct sib_qp *qp);

/* Multicast attach and detach, and a context's attachments freed at
 * close (mcast.c; ud.h has the engine's side). */
void sib_mcast_ctx_fini(struct sib_context *ctx);
int sib_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
int sib_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);

/* Provider entry points (the sib_hca_ops table in provider.c). */
struct ibv_ah *sib_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int sib_destroy_ah(struct ibv_ah *ah);
struct ibv_qp *sib_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *sib_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
int sib_destroy_qp(struct ibv_qp *qp);
int sib_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int sib_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init);
int sib_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int sib_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
/* post_send of the one BIND_MW WR of the type 1 Bind verb (mw.c): as
 * sib_post_send, but a type 1 window is accepted. */
int sib_qp_post_bind(struct ibv_qp *qp, struct ibv_send_wr *wr);
struct ibv_cq *sib_create_cq(struct ibv_context *context, int cqe,
			     struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *sib_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);
int sib_destroy_cq(struct ibv_cq *cq);
int sib_resize_cq(struct ibv_cq *cq, int cqe);
int sib_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int sib_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq *sib_cq_event(const struct sib_comp_rec *rec);
/* The CQ a CQ_ERR record names, counting the delivery; NULL if gone. */
struct sib_cq *sib_cq_async_deliver(uint32_t id, uint32_t gen);
/* Post an async event to the context's async fd. */
void sib_async_event(struct sib_context *ctx, enum ibv_event_type type, uint32_t id, uint32_t gen);
/* An async event about a QP (counted for ibv_destroy_qp). */
void sib_qp_async_event(struct sib_qp *qp, enum ibv_event_type type);
/* srq.c: SRQ and XRC domain ops (provider.c's table) and the engine's side. */
struct ibv_srq *sib_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
struct ibv_srq *sib_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr);
int sib_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask);
int sib_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int sib_destroy_srq(struct ibv_srq *srq);
int sib_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int sib_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_xrcd *sib_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *attr);
int sib_close_xrcd(struct ibv_xrcd *xrcd);
/* Enter ERR once a WQE that failed locally reaches the head of the SQ. */
void sib_comp_local_error(struct sib_qp *qp);

#endif
