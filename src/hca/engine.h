/* SPDX-License-Identifier: MIT */
/*
 * The engine of a device context (engine.c): its state, apart from the
 * context's objects and key secrets, and what the rest of the HCA asks of
 * it.  A pass runs under ctx->progress_lock, taken by the engine thread or
 * by an application thread inside post/poll; the fields marked "pass" are
 * the pass's own (read and written under that lock), the atomics are how
 * the application and the engine thread tell each other what they do.
 */
#ifndef SIB_HCA_ENGINE_H
#define SIB_HCA_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct sib_context;
struct sib_mr;
struct sib_qp;

struct sib_engine {
	/* application <-> engine thread */
	_Atomic int armed;             /* a kick arrived while progress ran */
	_Atomic uint64_t poll_count;   /* bumped by poll_cq: the app drives progress */
	_Atomic int app_blocked;       /* threads of the app waiting in get_cq_event */
	_Atomic uint64_t notify_count; /* bumped by req_notify_cq: the app may block next */
	_Atomic int napping;           /* the engine naps without asking for wakeups */
	_Atomic uint64_t sleep_until;  /* ns; 0 = awake or napping (engine_main) */
	_Atomic uint32_t nqps;         /* QPs scheduled or about to be */
	_Atomic int stop;
	pthread_t thread;
	bool started;

	/* the schedule: qp_list is the pass's; created QPs wait on qp_new */
	struct sib_qp *qp_list;
	_Atomic(struct sib_qp *) qp_new;

	/* pass */
	_Atomic uint64_t next_deadline; /* earliest timer, 0 = none (read by the engine thread) */
	bool tx_blocked;               /* this pass found a peer inbox full */
	uint64_t clk_ns, clk_tsc;      /* sib_clock_ns: the last real reading */
	uint32_t empty_passes;         /* engine passes, for the link's housekeeping */
	uint64_t link_next;            /* when the link wants its housekeeping (ns), 0 = idle */

	/* the engine thread's own (engine_main): futex sleeps; spins after
	 * traffic that caught work, found none, or were refused or cut
	 * short because no CPU was spare */
	uint64_t sleeps, spin_caught, spin_quiet, spin_busy;
};

/* engine.c */
int sib_engine_start(struct sib_context *ctx);
void sib_engine_stop(struct sib_context *ctx);
/* Run the engine if nobody else does; never sleeps. */
void sib_progress(struct sib_context *ctx);
/* Wake the engine thread (e.g. the app is about to block). */
void sib_engine_kick(struct sib_context *ctx);
/*
 * Engine-context lookups: the live QP with this QPN, the live MR with this
 * exact key (index live, key byte matches), with a reference taken
 * (*handle names it for sib_objtab_put), or NULL.
 */
struct sib_qp *sib_qp_get(struct sib_context *ctx, uint32_t qpn, uint64_t *handle);
struct sib_mr *sib_mr_get(struct sib_context *ctx, uint32_t key, uint64_t *handle);
/* Add a published QP (the caller holds a reference for the schedule in
 * qp->sched_handle) to the engine's schedule; lock-free, any thread. */
void sib_engine_schedule(struct sib_context *ctx, struct sib_qp *qp);
/* Move QPs pushed by sib_engine_schedule onto the schedule (progress_lock
 * held: the schedule is the engine's). */
void sib_engine_take_new(struct sib_context *ctx);
/* Poke the engine: run a pass here if nobody does (destroy waits). */
void sib_engine_poke(void *ctx);
/* Drop the QP's peer inbox reference and forget its destination. */
void sib_qp_dest_release(struct sib_qp *qp);
/* Resolve a connected QP's destination now (modify_qp to RTR, a slow-path
 * verb: it may wait for softibd; the data path never does).  Takes the
 * progress lock; the caller must not hold it. */
void sib_qp_dest_resolve_now(struct sib_qp *qp);
/* Before a UD QP is destroyed: let the sends posted in RTS leave (a real
 * HCA has sent them by the time the application destroys the QP; here a
 * datagram may still wait for softibd's answer about a route or a member's
 * inbox: ud.c), for at most SIB_UD_DRAIN_NS.  A slow-path verb: it may
 * wait for softibd.  Takes the progress lock; the caller must not hold it. */
#define SIB_UD_DRAIN_NS 500000000ull
void sib_qp_ud_drain(struct sib_qp *qp);
/* Answer the link's questions now, progress_lock held: the engine thread
 * only (it may wait for softibd; the application's post and poll never
 * do).  XRC forwarding, whose packet is in hand. */
void sib_engine_answer_now(struct sib_context *ctx);

#endif
