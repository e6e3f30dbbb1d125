/* SPDX-License-Identifier: MIT */
/*
 * The software HCA: verbs objects as the transport engine sees them.
 *
 * Locking (seed 004: verbs are reentrant, post/poll/notify never sleep):
 *  - ctx->progress_lock serializes the engine: whoever holds it (the engine
 *    thread or an application thread inside post/poll) consumes the inbox
 *    and runs requester, responder and completer for every QP of the context.
 *    Destroying a QP, CQ or MR takes it, so the engine never sees a freed
 *    object (unpublish under the lock, then free).
 *  - qp->sq_lock / qp->rq_lock protect the producer index of the SQ / RQ
 *    against concurrent posters; cq->lock protects the CQ ring.
 *  - Nothing here is shared with another process except the inbox rings and
 *    the fabric map (common/sib_shm.h), which are lock-free.
 */
#ifndef SIB_HCA_H
#define SIB_HCA_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/sib_shm.h"
#include "hca/mr_check.h"
#include "link/link.h"
#include "iba/iba.h"

#define SIB_MAX_SGE          16
#define SIB_MAX_INLINE       512        /* bytes of inline data per send WQE */
#define SIB_MAX_QP_WR        16384
#define SIB_MAX_CQE          (1 << 20)
#define SIB_MAX_RD_ATOMIC    16
#define SIB_MAX_MSG_SZ       0x40000000u /* 1 GiB: keeps a READ's PSNs inside the
                                            2^23 window at MTU 256 (mlx5 reports the same) */
#define SIB_MAX_UNACKED_PSNS 1024       /* requester window, PSNs */
#define SIB_ACKREQ_EVERY     32         /* AckReq at least every N packets */
#define SIB_POLL_SPIN        256        /* empty polls between sched_yield()s */
#define SIB_MR_DIR           256
#define SIB_MR_PAGE          4096       /* MRs per directory page: 1M MRs */

struct sib_context;

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
};

/* Memory region: lkey == rkey == index << 8 | key byte (STYLE 6.8). */
struct sib_mr {
	struct ibv_mr ibv;
	uint32_t handle;               /* softibd object handle */
	struct sib_mr_range range;     /* PD handle, iova, length, access */
};

struct sib_pd {
	struct ibv_pd ibv;
	_Atomic int usecnt;            /* MRs and QPs on it: dealloc gives EBUSY */
};

struct sib_comp_channel {
	struct ibv_comp_channel ibv;
	int wfd;                       /* write end of the event pipe */
	uint32_t handle;
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
	uint32_t reg_id, reg_gen;      /* names the CQ in event records (verbs/cq.c) */
	uint32_t events_reported;      /* completion events delivered (under the registry lock) */
	uint32_t async_reported;       /* CQ_ERR async events delivered */
	uint32_t empty_polls;          /* poll_cq calls in a row that found nothing */
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

/* Send work queue element. */
struct sib_swqe {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t imm_be;               /* ImmDt as on the wire */
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t length;               /* total message bytes */
	uint32_t num_sge;
	uint32_t first_psn;            /* PSN of the first packet (modulo 2^24) */
	uint32_t npsn;                 /* PSNs the message uses */
	enum sib_swqe_state state;
	enum ibv_wc_status status;
	bool signaled;
	bool started;                  /* the requester has assigned first_psn */
	struct ibv_sge sge[SIB_MAX_SGE];
	uint8_t *inline_data;          /* points into the SQ's inline area, or NULL */
};

/* Receive work queue element. */
struct sib_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;               /* sum of SGE lengths */
	struct ibv_sge sge[SIB_MAX_SGE];
};

/* Where a packet for the connected peer goes (cached, revalidated per send). */
struct sib_dest {
	uint16_t dlid;
	uint32_t dqpn;
	uint64_t owner;                /* qp_owner word seen when resolved */
	struct sib_ring *ring;         /* peer inbox, NULL when unresolved */
};

struct sib_qp {
	struct ibv_qp_ex ibv;          /* ibv_qp first */
	struct sib_context *ctx;
	uint32_t obj_handle;
	struct sib_qp *next_in_ctx;    /* context's QP list (under progress_lock) */

	/* attributes (authoritative state is `state`; mirrored to ibv.qp_base.state) */
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
	uint32_t sq_next;              /* next WQE the requester starts */

	/* receive queue */
	pthread_spinlock_t rq_lock;
	struct sib_rwqe *rq;
	uint32_t rq_size;
	_Atomic uint32_t rq_head;      /* posted */
	uint32_t rq_tail;              /* consumed */

	/* requester (IBA 9.7.4) */
	uint32_t req_psn;              /* next PSN to send */
	uint32_t req_offset;           /* bytes of sq[sq_next] already sent */
	uint32_t req_pkts_since_ack;
	uint32_t reads_outstanding;
	uint32_t read_rcvd;            /* response packets placed for the READ at sq_tail */
	struct sib_dest dest;

	/* completer (IBA 9.7.5.x): timers in CLOCK_MONOTONIC ns */
	uint32_t comp_psn;             /* oldest unacknowledged PSN */
	uint8_t retry_left, rnr_left;
	uint64_t retry_deadline;       /* 0 = no timer */
	uint64_t rnr_deadline;         /* 0 = not waiting for an RNR timer */

	/* responder (IBA 9.7.5) */
	uint32_t resp_epsn;            /* expected PSN */
	uint32_t resp_msn;
	bool resp_in_send;             /* inside a multi-packet SEND */
	bool resp_in_write;            /* inside a multi-packet RDMA WRITE */
	bool resp_have_rwqe;           /* current SEND has taken an RWQE */
	uint32_t resp_offset;          /* bytes placed of the current message */
	uint64_t resp_va;              /* RDMA WRITE: next VA */
	uint32_t resp_remaining;       /* RDMA WRITE: bytes left per RETH */
	struct sib_mr *resp_mr;
	bool resp_nak_seq_sent;        /* PSN sequence NAK sent, not recovered */
	enum ibv_wc_status resp_err_status; /* for the RWQE in use when the QP failed */
	/* pending ACK/NAK to send (coalesced) */
	bool ack_pending;
	uint32_t ack_psn;
	uint8_t ack_syndrome;
	/* pending RDMA READ responses (responder resources) */
	struct sib_read_res {
		uint64_t va;
		uint32_t len, sent;    /* bytes */
		uint32_t psn;          /* PSN of the next response packet */
		uint32_t first_psn;
		uint32_t msn;
		struct sib_mr *mr;
	} *rd_res;
	uint32_t rd_res_head, rd_res_tail; /* ring of max_dest_rd_atomic (+1) */
	uint32_t rd_res_size;

	uint64_t peer_gone_deadline;   /* connected peer QP vanished: ERR at this time */
	bool local_err;                /* sq[local_err_idx] failed a local check */
	uint32_t local_err_idx;
	uint32_t acked_psn;            /* highest PSN an ACK covered (completer) */
	_Atomic uint32_t events_reported; /* async events about this QP delivered */
	/* ibv_wr_* batch in progress (under sq_lock) */
	uint32_t wr_head;
	int wr_err;
	bool wr_open;
	bool sqd_event_pending;
};

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
	_Atomic int armed;             /* a kick arrived while progress ran */
	_Atomic uint64_t poll_count;   /* bumped by poll_cq: the app drives progress */
	_Atomic int app_blocked;       /* threads of the app waiting in get_cq_event */
	_Atomic uint64_t notify_count; /* bumped by req_notify_cq: the app may block next */
	_Atomic int engine_napping;    /* the engine naps without asking for wakeups */
	_Atomic uint64_t engine_sleep_until; /* ns; 0 = awake or napping (engine_main) */
	_Atomic uint32_t nqps;         /* QPs in qp_list */
	_Atomic int stop;
	pthread_t engine;
	bool engine_started;

	pthread_mutex_t obj_lock;      /* QP table and MR table changes */
	struct sib_qp **qp_tbl[256];   /* by QPN: [qpn >> 8][qpn & 255] */
	struct sib_qp *qp_list;        /* under progress_lock */
	struct sib_mr **mr_dir[SIB_MR_DIR];
	uint32_t mr_next;              /* next MR index to try */
	uint8_t mr_keygen;

	int async_wfd;                 /* write end of the async event pipe */
	_Atomic uint64_t next_deadline; /* earliest timer, 0 = none (read by the engine thread) */
	bool tx_blocked;               /* this pass found a peer inbox full */
	bool vcrc;                     /* compute/check VCRC on the shm link */

	int32_t pid;                   /* getpid() at open: producers tag slots with it */
	uint32_t empty_passes;         /* engine passes, for the link's housekeeping */
	uint64_t link_next;            /* when the link wants its housekeeping (ns), 0 = idle */

	/* counters (dropped and counted, never crash) */
	uint64_t rx_bad_packets, rx_misrouted, tx_no_dest, tx_ring_full, rx_skipped_slots;
	uint64_t ack_timeouts, rnr_naks, seq_naks;  /* requester retries, by cause */
};

static inline struct sib_context *to_sctx(struct ibv_context *c)
{
	return (struct sib_context *)((char *)c - __builtin_offsetof(struct sib_context, vctx.context));
}
static inline struct sib_qp *to_sqp(struct ibv_qp *q) { return (struct sib_qp *)q; }
static inline struct sib_cq *to_scq(struct ibv_cq *c) { return (struct sib_cq *)c; }
static inline struct sib_mr *to_smr(struct ibv_mr *m) { return (struct sib_mr *)m; }

uint64_t sib_now_ns(void);

/* engine.c */
int sib_engine_start(struct sib_context *ctx);
void sib_engine_stop(struct sib_context *ctx);
/* Run the engine if nobody else does; never sleeps. */
void sib_progress(struct sib_context *ctx);
/* Wake the engine thread (e.g. the app is about to block). */
void sib_engine_kick(struct sib_context *ctx);
struct sib_qp *sib_qp_lookup(struct sib_context *ctx, uint32_t qpn);
struct sib_mr *sib_mr_lookup(struct sib_context *ctx, uint32_t key);
/* Map a peer inbox (slow path: asks softibd). NULL if it is gone. */
struct sib_ring *sib_peer_ring(uint32_t inbox, uint32_t gen);
extern struct sib_fabric_shm *sib_fabric;

/* cq.c */
/* Add a completion; raise the channel event if armed.  Engine context. */
void sib_cq_push(struct sib_cq *cq, const struct ibv_wc *wc, bool solicited);

/* qp transport (req.c, resp.c, comp.c) */
void sib_req_run(struct sib_qp *qp);
void sib_resp_packet(struct sib_qp *qp, const struct iba_pkt *pkt);
void sib_resp_run(struct sib_qp *qp);
void sib_comp_packet(struct sib_qp *qp, const struct iba_pkt *pkt);
void sib_comp_timers(struct sib_qp *qp, uint64_t now);
/* Move to ERR (IBA 10.3.1) and flush both queues.  Completion errors carry
 * the cause; no async event is raised (as rxe and mlx5).  Engine context. */
void sib_qp_enter_error(struct sib_qp *qp);
void sib_qp_flush(struct sib_qp *qp);
/*
 * Event records.  They name objects by id and generation, never by
 * pointer: an object destroyed while its events wait in the pipe is
 * skipped when they are read (rdma-core discards them the same way).
 */
struct sib_comp_rec {
	uint32_t cq_id, cq_gen;
};
struct sib_async_rec {
	uint32_t type;                 /* enum ibv_event_type */
	uint32_t id;                   /* QPN, CQ registry id, or port number */
	uint32_t gen;                  /* QP object handle, CQ registry generation */
	uint32_t pad;
};

/* Post an async event to the context's async fd. */
void sib_async_event(struct sib_context *ctx, enum ibv_event_type type, uint32_t id, uint32_t gen);
/* An async event about a QP (counted for ibv_destroy_qp). */
void sib_qp_async_event(struct sib_qp *qp, enum ibv_event_type type);
/* Enter ERR once a WQE that failed locally reaches the head of the SQ. */
void sib_comp_local_error(struct sib_qp *qp);

#endif
