/* SPDX-License-Identifier: MIT */
/*
 * The randomized, model-checked traffic test (issue 14): random streams of
 * work requests on QPs of every transport through the built libibverbs,
 * and a reference model that says what every receive buffer, target
 * region, READ and atomic result and completion must be.
 *
 * Shape (docs/testing.md, "The traffic test"):
 *   world.c  the fabric of the run: contexts, CQs, memory, receive queues
 *            and endpoints (one send queue each) of every transport, set up
 *            and connected through the verbs API, torn down at the end;
 *   gen.c    what an endpoint posts next: a WR drawn from the endpoint's own
 *            random stream, its model effect applied at post (the payload
 *            a receiver must see, the target region's new bytes, the READ
 *            data and atomic result the requester must get), and posting
 *            through ibv_post_send or the ibv_wr_* API;
 *   check.c  completions against the model: send completions in post order
 *            per send queue, receive completions per (source, receive
 *            queue) in order, every byte scattered, canaries around it,
 *            target regions whenever their writer is idle;
 *   echo.c   riostream's pattern, after the streams: one window per side
 *            both the peer's WRITE target and the local source, watched
 *            by a spinning thread (issue 16);
 *   traffic.c the driver: options, seeds, the loop that interleaves posting,
 *            receive refills, polling patterns and CQ events, and the
 *            report.
 *
 * The content of every endpoint's WR stream and of every receive queue's
 * buffer layouts depends only on the seed and the object's number, so a
 * failing seed replays the same WRs; the interleaving depends on timing.
 * Test code: single-threaded, aborts (exit 1) on the first mismatch with
 * the seed and what was expected.
 */
#ifndef SIB_TESTS_TRAFFIC_H
#define SIB_TESTS_TRAFFIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define TR_MAX_CTX     3               /* softib0, softib1, and softib0 again */
#define TR_MAX_CQ      4               /* per context */
#define TR_MAX_EP      64
#define TR_MAX_RQ      64
#define TR_MAX_SGE     16              /* per WR, send and receive: the device's max_sge */
#define TR_MAX_INLINE  256
#define TR_QKEY        0x1ee7c0deu
#define TR_UD_GRH      40              /* the GRH area of a UD receive buffer */
#define TR_CANARY      0xC3            /* receive slots are filled with it */
#define TR_SINK        0x5A            /* READ and atomic sinks are filled with it */
#define TR_REORDER     16              /* lossy queues: how far a datagram may be reordered */
#define TR_LOOSE       256             /* a slot's bytes past its own MR (loose tails) */

/* xoshiro256** (Blackman, Vigna): every stream of the run is one of these. */
struct tr_rng {
	uint64_t s[4];
};

void tr_rng_seed(struct tr_rng *r, uint64_t seed, uint64_t stream);
uint64_t tr_rng_next(struct tr_rng *r);
/* Uniform in [0, n); n > 0. */
uint32_t tr_rng_below(struct tr_rng *r, uint32_t n);
/* True with probability pct/100. */
bool tr_rng_pct(struct tr_rng *r, uint32_t pct);
void tr_rng_fill(struct tr_rng *r, void *buf, size_t len);

/* What the run does: from the command line (traffic.c). */
struct tr_opts {
	uint64_t seed;
	uint64_t ops;                  /* send WRs per endpoint */
	unsigned int transports;       /* TR_T_* bits */
	unsigned int seconds;          /* stop posting after this long (0: no limit) */
	bool faults;                   /* SOFTIB_FAULTS is set: loss allowed where IBA allows it */
	bool verbose;
	bool daemon;                   /* start a private softibd (not --no-daemon) */
};

#define TR_T_RC   (1u << 0)
#define TR_T_UC   (1u << 1)
#define TR_T_UD   (1u << 2)
#define TR_T_XRC  (1u << 3)
#define TR_T_SRQ  (1u << 4)            /* RC and UD endpoints that receive on SRQs */
#define TR_T_ALL  0x1fu

#define TR_EP_NONE      0
#define TR_EP_QUIESCE   1
#define TR_EP_ERRORING  2

struct tr_cq {
	struct ibv_cq *cq;
	struct ibv_cq_ex *cqx;         /* created with ibv_create_cq_ex, else NULL */
	struct ibv_comp_channel *ch;   /* NULL: no events on this CQ */
	int ctx;
	bool arm_pending;              /* ibv_req_notify_cq called, its event not read yet */
	int armed;                     /* 0, 1 next, 2 solicited only: set once drained after arming */
	bool must_event;               /* armed on an empty CQ and a CQE since: an event is owed */
	uint64_t must_event_since_ms;
	char must_event_why[96];       /* the completion that owes it */
	uint64_t events;
};

struct tr_ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct tr_cq cq[TR_MAX_CQ];
	int ncq;
	uint16_t lid;
	union ibv_gid gid0;
	uint8_t *mem;                  /* the context's memory: arenas, targets, slots */
	size_t mem_size, mem_used;
	struct ibv_mr *mr[2];          /* two MRs over the whole of mem: keys drawn at random */
	struct ibv_xrcd *xrcd;
};

/* One expected message at a receive queue (gen.c queues it at post). */
struct tr_msg {
	struct tr_msg *next;
	int src_ep;
	uint64_t seq;                  /* the WR's number in its endpoint's stream */
	enum ibv_wr_opcode op;
	uint32_t len;
	uint32_t imm_be;               /* ImmDt or the invalidated R_Key */
	bool solicited;
	bool inv;                      /* SEND_WITH_INV: imm_be is the invalidated R_Key */
	bool uc_write;                 /* RDMA WRITE WITH IMM: no bytes in the receive buffer */
	uint8_t *data;                 /* len bytes (SENDs only) */
};

struct tr_fifo {
	struct tr_msg *head, *tail;
	uint32_t n;
	/* lossy queues: messages delivered lately, which a duplicate may repeat */
	struct tr_msg *done[16];
	uint32_t ndone;
};

/* A posted receive WQE: its slot's scatter list. */
struct tr_rwqe {
	bool busy;
	int nsge;
	struct ibv_sge sge[TR_MAX_SGE];
	uint32_t cap;                  /* sum of the SGE lengths */
};

/* A receive queue: a QP's own or an SRQ (possibly an XRC SRQ). */
struct tr_rq {
	int id;
	int ctx;
	struct ibv_qp *qp;             /* the owning QP (NULL for an SRQ) */
	struct ibv_srq *srq;
	uint32_t srqn;                 /* XRC SRQs: the number senders put in the XRCETH */
	struct tr_cq *cq;
	uint32_t depth, max_sge;
	uint32_t cap;                  /* each WQE holds at least this many bytes */
	uint32_t slot_size;
	uint8_t *slots;                /* depth * slot_size bytes of the context's memory */
	/* loose tails: each slot has an MR of its own that ends TR_LOOSE bytes
	 * before the slot does, and the last SGE of a WQE runs past it; only
	 * the bytes a message writes are checked (rxe, hardware; issue 14) */
	struct ibv_mr **slot_mr;
	/* late registration: some queues with slot MRs have their slots in
	 * pages of their own, outside the context's memory, registered for
	 * local write only; at a random moment of the run an MR with remote
	 * write goes over them, which moves them onto a memfd (direct
	 * placement, docs/transport.md) while receives land there */
	uint8_t *late_map;             /* that mapping, or NULL */
	size_t late_len;
	struct ibv_mr *late_mr;        /* the MR over it, once registered */
	struct tr_rwqe *rwqe;          /* by slot */
	uint32_t posted;               /* WQEs posted and not completed */
	uint32_t reserved;             /* of those, promised to messages already posted */
	uint64_t starve_until_ms;      /* RNR on purpose: post nothing until then */
	bool lossy;                    /* messages may be lost (UC/UD under faults) */
	struct tr_rng rng;             /* layouts of the WQEs */
	struct tr_fifo from[TR_MAX_EP];
	uint64_t received, lost, dups;
};

/* A memory window over an RC endpoint's target region, in the peer's PD,
 * bound and invalidated by the peer's QP (IBA 10.6.7): type 2 windows go
 * FREE -> BINDING (BIND_MW posted) -> BOUND (its completion seen: the
 * endpoint may name its R_Key) -> INVALIDATING (a SEND_WITH_INV from the
 * endpoint, or a LOCAL_INV from the peer once DRAINING ended: no WR of the
 * endpoint names it any more) -> FREE; type 1 windows are bound with
 * ibv_bind_mw and unbound by a zero-length bind. */
enum tr_mw_state { TR_MW_FREE, TR_MW_BINDING, TR_MW_BOUND, TR_MW_DRAINING, TR_MW_INVALIDATING };

struct tr_mw {
	struct ibv_mw *mw;
	enum tr_mw_state state;
	uint32_t rkey;                 /* the binding's key (pending or current) */
	uint32_t users;                /* WRs of the endpoint outstanding that name it */
	uint64_t binds, remote_invs, local_invs, uses;
};

#define TR_WRID_EXTRA (1ull << 63)     /* wr_id of a WR outside the stream (windows) */
#define TR_WRID_RECV  (1ull << 62)     /* wr_id of a receive WR: | rq << 32 | slot */

/* One posted send WR as the model sees it. */
struct tr_wr {
	uint64_t seq;                  /* its wr_id: the stream's number, or TR_WRID_EXTRA | n
					  for a WR outside the stream (windows, episodes) */
	enum ibv_wc_status status;     /* the completion it must get (error episodes) */
	bool uses_mw;                  /* rkey is its endpoint's window */
	int mw_of;                     /* BIND_MW, LOCAL_INV: the endpoint whose window; -1 */
	bool mw_unbind;                /* a type 1 window's zero-length bind */
	enum ibv_wr_opcode op;
	bool signaled, inline_, fence, solicited, wr_api;
	uint32_t len;
	int nsge;
	struct ibv_sge sge[TR_MAX_SGE];
	uint64_t roff;                 /* offset in the target region */
	uint32_t rkey;
	uint32_t imm_be;
	uint64_t compare_add, swap;
	int dst_rq;                    /* receive queue it consumes a WQE of, -1 none */
	int dst_ep;                    /* UD: the destination endpoint */
	uint8_t *expect;               /* READ: the bytes; atomics: the 8-byte original */
	size_t arena_end;              /* the local arena's head after this WR */
};

enum tr_kind { TR_RC, TR_UC, TR_UD, TR_XRC };

/* An endpoint: one QP that sends (RC, UC, UD or XRC_SEND). */
struct tr_ep {
	int id;
	enum tr_kind kind;
	int ctx;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qx;
	struct ibv_qp *tgt;            /* XRC: the XRC_RECV QP it connects to */
	struct tr_cq *scq;
	int rq;                        /* where its own QP receives (-1: XRC_SEND) */
	int peer;                      /* RC/UC: the connected endpoint */
	int peer_ctx;
	uint32_t mtu;                  /* path MTU, bytes */
	uint32_t max_len;              /* longest message it sends */
	uint32_t sq_depth;
	uint32_t max_sge;              /* the QP's max_send_sge */
	bool sig_all;
	bool rnr;                      /* may send with no receive posted (RC: RNR NAK) */
	bool global;                   /* the path has a GRH */
	uint8_t max_rd, max_dest_rd;   /* max_rd_atomic, max_dest_rd_atomic */
	/* error episodes (traffic.c): the pair quiesces, a WR with a bad R_Key
	 * takes both QPs to ERR, flushes are checked, RESET (which takes the
	 * QPs' completions out of the CQs), and the pair is connected again */
	int episode;                   /* TR_EP_* on the endpoint that started it */
	bool quiesce;                  /* this endpoint and its peer post nothing new */
	bool in_err;                   /* error and flush completions are expected */
	bool bad_seen;                 /* the bad WR's completion came */
	uint64_t episodes, flushed;
	bool no_wr_api;
	/* UD */
	struct ibv_ah *ah[TR_MAX_EP];  /* by destination endpoint */
	bool ah_global[TR_MAX_EP];
	/* XRC: the SRQs of the target context it may name */
	int xrc_rq[TR_MAX_RQ];
	int nxrc_rq;
	/* the local arena: sources of SENDs and WRITEs, sinks of READs and atomics */
	uint8_t *arena;
	size_t arena_size, arena_head, arena_tail;
	/* the target region in the peer's memory: only this endpoint writes it */
	uint8_t *tgt_mem;
	uint8_t *tgt_model;
	size_t tgt_size;
	uint32_t tgt_rkey[2];
	bool tgt_unknown;              /* a lost UC WRITE may have left part of it */
	/* the window over the target region (RC only) */
	bool has_mw;
	struct tr_mw mw;
	struct tr_rng krng;            /* which key a WR names: depends on timing */
	/* the stream */
	struct tr_rng rng;
	uint64_t stream_posted;        /* WRs of the stream posted (the rest: windows) */
	uint64_t next_seq;             /* WRs generated */
	struct tr_wr next;             /* generated, not yet posted */
	bool have_next;
	uint32_t batch_left;           /* WRs still to go in the current post list */
	bool batch_wr_api;
	struct tr_wr *sq;              /* posted WRs (the stream's and windows'), by posting count % sq_depth */
	/* remote ranges of the stream's last 64 WRs, by seq % 64 (fences) */
	struct { bool read; uint64_t roff; uint32_t len; } hist[64];
	uint64_t posted, retired;
	uint32_t unsignaled_run;       /* unsignaled WRs posted since the last signaled */
	uint64_t checked_tgt_at;       /* `retired` when the target was last checked */
	uint64_t stats_op[16];
};

struct tr_world {
	struct tr_opts o;
	struct tr_ctx ctx[TR_MAX_CTX];
	int nctx;
	struct tr_ep ep[TR_MAX_EP];
	int nep;
	struct tr_rq rq[TR_MAX_RQ];
	int nrq;
	uint64_t completions, bytes_checked, messages, events, rnr_episodes;
	uint64_t extra_wrs, episodes, late_regs;
	uint64_t last_progress_ms;
};

/* world.c */
void tr_world_open(struct tr_world *w);
void tr_world_close(struct tr_world *w);
/* An RC pair from RESET to RTS again, with fresh PSNs. */
void tr_pair_reconnect(struct tr_world *w, struct tr_ep *a, struct tr_ep *b, struct tr_rng *r);
/* The endpoint whose QP (or XRC_RECV QP) has number qpn, or NULL. */
struct tr_ep *tr_ep_by_qpn(struct tr_world *w, uint32_t qpn);
struct tr_ep *tr_ep_by_tgt_qpn(struct tr_world *w, uint32_t qpn);
/* The L_Key of one of the context's MRs (drawn from r). */
uint32_t tr_lkey(struct tr_world *w, int ctx, struct tr_rng *r);
/* Late registration: the MR with remote write over q's own slot pages
 * (nothing if q has none or has it already). */
void tr_rq_late_reg(struct tr_world *w, struct tr_rq *q);

/* gen.c */
/* Post the endpoint's next WRs if it can now: true if it posted. */
bool tr_ep_post(struct tr_world *w, struct tr_ep *ep);
/* Post receive WQEs to rq while it has free slots and is not starving. */
bool tr_rq_refill(struct tr_world *w, struct tr_rq *rq, uint32_t max);
bool tr_ep_done_posting(const struct tr_world *w, const struct tr_ep *ep);
/* A step of ep's window's life (bind, invalidate), if it can go now. */
bool tr_mw_step(struct tr_world *w, struct tr_ep *ep, struct tr_rng *r);
/* Post one WR outside the stream on p (signaled): false if it cannot go now. */
bool tr_post_extra(struct tr_world *w, struct tr_ep *p, struct tr_wr *wr, struct tr_rng *r);
/* Error episodes: start one on ep's pair, or take the current one a step on. */
bool tr_episode_start(struct tr_world *w, struct tr_ep *ep);
void tr_episode_step(struct tr_world *w, struct tr_ep *ep, struct tr_rng *r);

/* check.c */
/* Poll cq once (a random pattern) and check what came: completions seen. */
int tr_cq_poll(struct tr_world *w, struct tr_cq *cq, struct tr_rng *r);
/* Describe a WR, or every outstanding WR of an endpoint, on stderr. */
void tr_print_wr(const struct tr_ep *e, const struct tr_wr *wr);
void tr_print_sq(const struct tr_ep *e);
/* The WR at the endpoint's send queue tail completed: its window effects. */
void tr_mw_retired(struct tr_world *w, struct tr_ep *ep, struct tr_wr *wr);
/* The WR at the endpoint's send queue tail completed: check its results,
 * free its place. */
void tr_retire(struct tr_world *w, struct tr_ep *e);
/* Receive slot `slot` of q is free again: canary refilled, not posted. */
void tr_slot_release(struct tr_rq *q, uint32_t slot);
/* An error completion expected by an error episode: true if it was one. */
bool tr_episode_wc(struct tr_world *w, const struct ibv_wc *wc);
/* Check the endpoint's target region against the model (writer idle). */
void tr_ep_check_target(struct tr_world *w, struct tr_ep *ep);

/* echo.c: riostream's pattern (a window both WRITE target and source, its
 * last byte watched by a spinning thread), ECHO_TRIALS RC pairs of its own
 * on the world's first two contexts; fails the run on a stall or a byte
 * seen before its marker. */
void tr_echo_run(struct tr_world *w);

/* traffic.c: print what failed, the seed and how to replay, and exit 1. */
_Noreturn void tr_fail(const struct tr_world *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint64_t tr_now_ms(void);

#endif
