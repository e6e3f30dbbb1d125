/* SPDX-License-Identifier: MIT */
/*
 * The engine of a device context: consumes its pair rings, dispatches packets to
 * the responder or completer of the destination QP, runs every QP's
 * requester and timers, and puts packets on the wire: every packet leaves
 * through sib_link_send and arrives through sib_link_recv (src/link).
 *
 * Progress is driven by whoever gets ctx->progress_lock: the application
 * inside post/poll (inline, no wakeup needed while it polls), or the
 * engine thread, which sleeps on the inbox futex when the application is
 * not polling (DESIGN principle 3).  A kick that finds the lock taken sets
 * `armed`, and the holder runs once more, so no wakeup is lost (STYLE 6.9).
 *
 * The QP schedule (ctx->eng.qp_list) is the engine's own: only a pass (under
 * progress_lock) walks or changes it.  create_qp pushes a new QP onto
 * ctx->eng.qp_new (lock-free) with a table reference for the schedule; a pass
 * takes it in.  Lifetime comes from that reference, not from the lock:
 * destroy_qp unpublishes the QP and waits; the next pass sees the
 * generation moved (sib_objtab_live), drops what the QP holds (MR
 * references, its peer inbox), takes it off the schedule and puts the
 * reference, after which the QP is the destroyer's to free.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hca/srq.h"
#include "hca/transport.h"
#include "hca/ud.h"

#define SIB_RX_BATCH      64            /* packets per inbox pass */
#define SIB_NAP_MIN_NS    50000         /* engine naps while the app polls and */
#define SIB_NAP_MAX_NS    10000000      /* keeps up: 50 us doubling to 10 ms */
#define SIB_POLLING_LOOK_NS 1000        /* how long to look for the app polling */
#define SIB_IDLE_LOOK_NS  100000000     /* engine looks at connected QPs every 100 ms */
#define SIB_TX_RETRY_NS   50000         /* retry a send blocked on a full inbox */
#define SIB_SPIN_MAX_NS   50000         /* engine spins after traffic: at most 50 us, */
#define SIB_SPIN_MIN_NS   2000          /* halving to 2 us while spins find nothing */
#define SIB_SPIN_YIELD_NS 5000          /* sched_yield this often while spinning */
#define SIB_SPIN_BUSY_NS  20000         /* a yield that took longer: the CPU was wanted */
#define SIB_SPARE_LOOK_NS 1000000       /* read the runnable count at most every 1 ms */

uint64_t sib_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- transmit ---- */

void sib_qp_dest_release(struct sib_qp *qp)
{
	sib_mcast_rings_release(qp); /* UD multicast members (mcast.c) */
	sib_xfwd_release(qp);        /* XRC forwarding's target inbox (xrc_fwd.c) */
	sib_link_peer_release(&qp->ctx->link, &qp->dest);
}

/* Answer the link's queued misses: the round trips to softibd and the
 * mmap run without the progress lock (src/link/dest.h). */
static void link_asks(struct sib_context *ctx)
{
	struct sib_link_asks a;

	pthread_mutex_lock(&ctx->progress_lock);
	sib_link_asks_take(&ctx->link, &a);
	pthread_mutex_unlock(&ctx->progress_lock);
	if (!a.n)
		return;
	sib_link_asks_answer(&ctx->link, &a);
	pthread_mutex_lock(&ctx->progress_lock);
	sib_link_asks_apply(&ctx->link, &a);
	pthread_mutex_unlock(&ctx->progress_lock);
}

void sib_engine_answer_now(struct sib_context *ctx)
{
	struct sib_link_asks a;

	sib_link_asks_take(&ctx->link, &a);
	sib_link_asks_answer(&ctx->link, &a);
	sib_link_asks_apply(&ctx->link, &a);
}

void sib_qp_ud_drain(struct sib_qp *qp)
{
	struct sib_context *ctx = qp->ctx;
	uint64_t end = sib_now_ns() + SIB_UD_DRAIN_NS;

	if (!qp->ud)
		return;
	for (;;) {
		bool busy;

		pthread_mutex_lock(&ctx->progress_lock);
		busy = qp->state == IBV_QPS_RTS &&
		       qp->req.wqe != atomic_load_explicit(&qp->sq_head, memory_order_acquire);
		pthread_mutex_unlock(&ctx->progress_lock);
		if (!busy || sib_now_ns() >= end)
			return;
		link_asks(ctx); /* the routes and member inboxes it waits for */
		sib_progress(ctx);
		sched_yield();
	}
}

void sib_qp_dest_resolve_now(struct sib_qp *qp)
{
	struct sib_context *ctx = qp->ctx;
	uint8_t pn = qp->port_num ? qp->port_num : 1;

	/* The route, then the peer's inbox: two rounds at most, and one
	 * more should the tables change in between. */
	for (int round = 0; round < 3; round++) {
		enum sib_link_verdict v;

		pthread_mutex_lock(&ctx->progress_lock);
		v = sib_link_resolve(&ctx->link, &qp->dest, pn, qp->ah.dlid, qp->dest_qpn);
		pthread_mutex_unlock(&ctx->progress_lock);
		if (v != SIB_LINK_PENDING)
			break;
		link_asks(ctx);
	}
	/* And the rings peers opened to us meanwhile: the first reply need
	 * not wait for the engine thread to take them. */
	struct sib_link_fetch *f = malloc(sizeof(*f));

	if (!f)
		return;
	sib_link_accept(&ctx->link, f);
	if (f->naccepted) {
		pthread_mutex_lock(&ctx->progress_lock);
		sib_link_rx_apply(&ctx->link, f, false);
		pthread_mutex_unlock(&ctx->progress_lock);
	}
	free(f);
}

/* qp's connected destination, resolved without reserving anything: direct
 * placement (req.c) copies before it takes a slot.  NULL when our port is
 * down or the peer is unreachable or not resolved yet (sib_tx_begin
 * counts those). */
struct sib_link_dest *sib_tx_dest(struct sib_qp *qp)
{
	uint8_t pn = qp->port_num ? qp->port_num : 1;

	if (!sib_port_passes(qp->ctx->dev->index, qp->ctx->dev->gen, pn))
		return NULL;
	if (sib_link_resolve(&qp->ctx->link, &qp->dest, pn, qp->ah.dlid, qp->dest_qpn) != SIB_LINK_OK)
		return NULL;
	return qp->dest.dest;
}

/* A packet of ours the port or the forwarding tables do not let out: lost
 * on the wire, counted as the port's PortXmitDiscards (IBA 16.1.3.5). */
static void tx_discard(struct sib_qp *qp, uint8_t port)
{
	sib_link_count_port(&qp->ctx->link, port, SIB_LP_XMIT_DISCARDS, 1);
}

/*
 * Start a packet to qp's peer.  Returns false if the peer's inbox is full
 * (nothing reserved: retry later).  Otherwise tx->slot is the slot to build
 * the packet in, with the LRH/GRH/BTH fields common to every packet of this
 * QP in tx->h; or NULL if the peer is unreachable, so that the packet is
 * lost on the wire (the caller carries on as if it had been sent).
 */
bool sib_tx_begin(struct sib_qp *qp, struct sib_tx *tx)
{
	return sib_tx_begin_to(qp, tx, &qp->ah, qp->dest_qpn);
}

bool sib_tx_begin_to(struct sib_qp *qp, struct sib_tx *tx, const struct ibv_ah_attr *ah, uint32_t dqpn)
{
	return sib_tx_begin_ring(qp, tx, NULL, ah, dqpn);
}

bool sib_tx_begin_ring(struct sib_qp *qp, struct sib_tx *tx, struct sib_link_dest *to,
		       const struct ibv_ah_attr *ah, uint32_t dqpn)
{
	uint8_t pn = qp->port_num ? qp->port_num : 1;
	const struct sib_shm_device *sd = &sib_fabric->devs[qp->ctx->dev->index];
	const struct sib_shm_port *port = &sd->ports[pn - 1];
	struct iba_pkt *h = &tx->h;
	enum sib_link_verdict v = SIB_LINK_OK;
	int rc;

	tx->slot = NULL;
	tx->sflags = 0;
	tx->pending = false;
	if (!sib_port_passes(qp->ctx->dev->index, qp->ctx->dev->gen, pn)) {
		qp->ctx->port_down_drops++; /* link down: lost on the wire */
		tx_discard(qp, pn);
		return true;
	}
	if (!to) {
		v = sib_link_resolve(&qp->ctx->link, &qp->dest, pn, ah->dlid, dqpn);
		to = qp->dest.dest;
	}
	if (v == SIB_LINK_PENDING) {
		/* Asked of softibd by the engine thread, never here: the
		 * WQE waits as for a full wire (no deadline: the answer
		 * makes the engine run). */
		tx->pending = true;
		return false;
	}
	if (v != SIB_LINK_OK) {
		if (v == SIB_LINK_NO_ROUTE) {
			qp->ctx->route_drops++;
			sib_link_count(&qp->ctx->link, SIB_LC_NO_ROUTE, 1);
			tx_discard(qp, pn);
		} else {
			qp->ctx->tx_no_dest++;
		}
		return true;
	}
	rc = sib_link_reserve(&qp->ctx->link, &to->tx, pn, &tx->lt);
	if (rc) {
		qp->ctx->tx_ring_full++;
		/* -EAGAIN: the peer's inbox is full, poll it again soon.
		 * -ENOBUFS: the fault wrapper's queue is full; sib_link_flush
		 * says when it has room (run_once). */
		if (rc == -EAGAIN)
			qp->ctx->eng.tx_blocked = true;
		return false;
	}
	tx->slot = tx->lt.data;
	memset(h, 0, sizeof(*h));
	h->lrh.sl = ah->sl;
	h->lrh.dlid = ah->dlid;
	h->lrh.slid = port->lid | ah->src_path_bits;
	if (ah->is_global) {
		h->lrh.lnh = IBA_LNH_GLOBAL;
		h->grh.ipver = IBA_GRH_IPVER;
		h->grh.tclass = ah->grh.traffic_class;
		h->grh.flow_label = ah->grh.flow_label;
		h->grh.nxthdr = IBA_GRH_NXTHDR_IBA;
		h->grh.hoplmt = ah->grh.hop_limit;
		uint64_t pfx = htobe64(port->gid_prefix), guid = htobe64(port->port_guid);
		memcpy(h->grh.sgid, &pfx, 8);
		memcpy(h->grh.sgid + 8, &guid, 8);
		memcpy(h->grh.dgid, ah->grh.dgid.raw, 16);
	} else {
		h->lrh.lnh = IBA_LNH_LOCAL;
	}
	h->bth.pkey = port->pkey[qp->pkey_index < SIB_PKEY_TBL_LEN ? qp->pkey_index : 0];
	h->bth.dqpn = dqpn;
	return true;
}

uint8_t *sib_tx_headers(struct sib_tx *tx)
{
	tx->hdr_len = iba_build_headers(tx->slot, &tx->h);
	return tx->slot + tx->hdr_len;
}

void sib_tx_end(struct sib_qp *qp, struct sib_tx *tx, size_t paylen)
{
	struct sib_context *ctx = qp->ctx;
	uint8_t *p = tx->slot;
	/* The shm link is memory: the ICRC is computed only when asked for
	 * (SOFTIB_ICRC=1, or under a computed VCRC, which covers it); the
	 * link computes it where a packet leaves memory (capture, faults).
	 * The VCRC bytes are present but zero unless SOFTIB_VCRC=1
	 * (docs/link.md "CRCs on a memory link"). */
	bool icrc = ctx->icrc || ctx->vcrc;
	size_t len = iba_finish(p, tx->hdr_len, paylen,
				(ctx->vcrc ? IBA_HAS_VCRC : 0) | (icrc ? 0 : IBA_NO_ICRC));

	if (!ctx->vcrc) {
		p[len] = p[len + 1] = 0;
		len += IBA_VCRC_BYTES;
	}
	/* The one exit of every packet (src/link). */
	if (sib_link_send(&ctx->link, &tx->lt, (uint32_t)len,
			  (ctx->vcrc ? SIB_SLOT_F_VCRC : 0) | (icrc ? SIB_SLOT_F_ICRC : 0) | tx->sflags))
		ctx->tx_no_dest++; /* the peer took us for dead: lost on the wire */
}

/* ---- receive ---- */

/* One packet from the link (len and sflags were read once from the shared
 * slot by sib_link_recv) to the receive demux (recv.c); drops are counted
 * there by cause, in the link's counters and in the inbox's drop counter. */
static void rx_packet(struct sib_context *ctx, const uint8_t *data, uint32_t len, uint32_t sflags)
{
	enum sib_rx_drop why;

	if (len > SIB_SLOT_DATA_BYTES)
		len = 0; /* an impossible length: dropped as malformed */
	why = sib_recv(ctx, data, len, ((sflags & SIB_SLOT_F_VCRC) ? SIB_RX_VCRC : 0) |
		       ((sflags & SIB_SLOT_F_ICRC) ? SIB_RX_ICRC : 0) |
		       /* XRC forwarding: the flag and the domain bits (xrc_fwd.c) */
		       ((sflags & SIB_SLOT_F_XRC_FWD) ? sflags & ~(uint32_t)SIB_SLOT_F_VCRC : 0) |
		       (sflags & SIB_SLOT_F_PLACED), /* direct placement (direct.c) */
		       sib_link_rx_from(&ctx->link));
	if (why == SIB_RX_DELIVERED || why == SIB_RX_DROP_LINK_DOWN)
		return; /* a downed link loses packets; they are not bad ones */
	/* Damaged on the way (IBA 9.8.x: ICRC failures are silently dropped). */
	sib_link_count(&ctx->link, why == SIB_RX_DROP_CRC ? SIB_LC_RX_ICRC : SIB_LC_RX_BAD, 1);
	if (why == SIB_RX_DROP_FOREIGN)
		sib_link_count(&ctx->link, SIB_LC_RX_FOREIGN, 1);
	atomic_fetch_add_explicit(&ctx->inbox.hdr->dropped, 1, memory_order_relaxed);
}

/*
 * Dead peer detection (softib, not IBA): the QP this RC QP is connected to
 * no longer exists (its process died or destroyed it, and softibd freed the
 * QPN).  A real requester only notices on its next send, by running out of
 * retries; a QP that only waits for receives would wait forever.  softib
 * gives the peer the time those retries would take, timeout * (retry_cnt +
 * 1), then moves the QP to ERR: outstanding sends fail with RETRY_EXC_ERR,
 * receives are flushed.  docs/transport.md.
 */
static bool peer_gone(const struct sib_qp *qp)
{
	return sib_link_peer_gone(&qp->dest, qp->dest_qpn);
}

static void peer_gone_timer(struct sib_qp *qp, uint64_t now)
{
	uint64_t wait = sib_ack_timeout_ns(qp->timeout) * (qp->retry_cnt + 1u);

	if (!qp->timeout)
		return; /* infinite ACK timeout: wait forever, as asked */
	if (!qp->peer_gone_deadline) {
		qp->peer_gone_deadline = now + wait;
		return;
	}
	if (now < qp->peer_gone_deadline)
		return;
	qp->peer_gone_deadline = 0;
	if (!sib_sq_drained(qp))
		qp->sq[qp->sq_tail & (qp->sq_size - 1)].status = IBV_WC_RETRY_EXC_ERR;
	sib_qp_enter_error(qp);
}

/*
 * The link's housekeeping (src/link): a stalled inbox slot (its producer
 * killed or stopped between claim and publish) is skipped by age, garbage
 * is dropped, capture buffers are flushed.  Not per packet: it touches the
 * producers' cache line.
 */
static void link_tick(struct sib_context *ctx, uint64_t *now)
{
	if (!*now)
		*now = sib_clock_ns(ctx);
	ctx->eng.link_next = sib_link_tick(&ctx->link, *now);
	sib_link_report(&ctx->link, SIB_LC_TR_ACK_TIMEOUTS, ctx->ack_timeouts);
	sib_link_report(&ctx->link, SIB_LC_TR_SEQ_NAKS, ctx->seq_naks);
	sib_link_report(&ctx->link, SIB_LC_TR_RNR_NAKS, ctx->rnr_naks);
	sib_link_report(&ctx->link, SIB_LC_TR_STARVED, ctx->ack_timeouts_starved);
}

void sib_engine_schedule(struct sib_context *ctx, struct sib_qp *qp)
{
	struct sib_qp *head = atomic_load_explicit(&ctx->eng.qp_new, memory_order_relaxed);

	atomic_fetch_add(&ctx->eng.nqps, 1);
	do
		qp->next_in_ctx = head;
	while (!atomic_compare_exchange_weak_explicit(&ctx->eng.qp_new, &head, qp, memory_order_release,
						      memory_order_relaxed));
}

void sib_engine_take_new(struct sib_context *ctx)
{
	struct sib_qp *n;

	if (!atomic_load_explicit(&ctx->eng.qp_new, memory_order_relaxed))
		return;
	n = atomic_exchange_explicit(&ctx->eng.qp_new, NULL, memory_order_acquire);
	while (n) {
		struct sib_qp *next = n->next_in_ctx;

		n->next_in_ctx = ctx->eng.qp_list;
		ctx->eng.qp_list = n;
		n = next;
	}
}

/* Off the schedule: the QP was unpublished (destroy_qp waits for the
 * schedule's reference).  Drop what it holds, then the reference; the
 * destroyer may free it at once. */
static void unschedule(struct sib_context *ctx, struct sib_qp *qp)
{
	sib_qp_transport_release(qp, false);
	sib_qp_dest_release(qp);
	atomic_fetch_sub(&ctx->eng.nqps, 1);
	sib_objtab_put(&ctx->qps, qp->sched_handle);
}

void sib_engine_poke(void *ctx)
{
	sib_progress(ctx);
}

/* What softibd pushed (capture rings, faults), on the engine thread only:
 * the round trip and mmap happen without the progress lock (src/link). */
static void link_service(struct sib_context *ctx)
{
	struct sib_link_fetch f;

	sib_link_fetch(&ctx->link, &f); /* clears `service` first */
	link_asks(ctx);
	pthread_mutex_lock(&ctx->progress_lock);
	sib_link_apply(&ctx->link, &f);
	pthread_mutex_unlock(&ctx->progress_lock);
}

/* One pass over everything.  Returns true if it did any work. */
static bool run_once(struct sib_context *ctx)
{
	uint64_t now = 0, next = 0;
	bool did = false;

	const uint8_t *pkt;
	uint32_t len, sflags;

	/* The one entry of every packet (src/link). */
	for (int n = 0; n < SIB_RX_BATCH && (pkt = sib_link_recv(&ctx->link, &len, &sflags)); n++) {
		rx_packet(ctx, pkt, len, sflags);
		sib_link_recv_done(&ctx->link);
		did = true;
	}
	/* Housekeeping: every 1024 passes (what softibd pushed is seen even
	 * under steady traffic), by the engine thread on every idle pass, and
	 * once the time it asked for has come. */
	if ((++ctx->eng.empty_passes & 1023) == 0 ||
	    (!did && (pthread_equal(pthread_self(), ctx->eng.thread) ||
		      (ctx->eng.link_next && (now = sib_clock_ns(ctx)) >= ctx->eng.link_next))))
		link_tick(ctx, &now);
	ctx->eng.tx_blocked = false;
	sib_engine_take_new(ctx);
	for (struct sib_qp **pp = &ctx->eng.qp_list, *qp; (qp = *pp);) {
		bool live;

		if (__builtin_expect(!sib_objtab_live(&ctx->qps, qp->sched_handle), 0)) {
			*pp = qp->next_in_ctx;
			unschedule(ctx, qp); /* qp may be freed from here */
			continue;
		}
		live = qp->state >= IBV_QPS_RTR && qp->state != IBV_QPS_ERR;
		if (live && qp->dest.owner && peer_gone(qp)) {
			if (!now)
				now = sib_clock_ns(ctx);
			peer_gone_timer(qp, now);
		}
		sib_qp_transport_run(qp, &now, &next);
		if (live && qp->state != IBV_QPS_ERR && qp->peer_gone_deadline &&
		    (!next || qp->peer_gone_deadline < next))
			next = qp->peer_gone_deadline;
		pp = &qp->next_in_ctx;
	}
	if (ctx->eng.link_next && (!next || ctx->eng.link_next < next))
		next = ctx->eng.link_next;
	/* Packets a wrapper holds (faults: delay, reorder, a full peer), after
	 * this pass queued more: when they are due is a timer too, and so is
	 * the room a sender refused by the wrapper waits for (the next due
	 * time, or now if there is room already): no polling while the
	 * wrapper only holds packets that are not due. */
	if (__builtin_expect(ctx->link.slow, 0)) {
		uint64_t t;

		if (!now)
			now = sib_clock_ns(ctx);
		t = sib_link_flush(&ctx->link, now);
		if (t && (!next || t < next))
			next = t;
	}
	if (ctx->eng.tx_blocked) {
		/* A peer's inbox was full: releasing slots wakes nobody, so
		 * come back soon (IBA link-level flow control, polled).  Not
		 * for a wrapper's full queue (-ENOBUFS, above). */
		if (!now)
			now = sib_clock_ns(ctx);
		if (!next || now + SIB_TX_RETRY_NS < next)
			next = now + SIB_TX_RETRY_NS;
	}
	atomic_store_explicit(&ctx->eng.next_deadline, next, memory_order_relaxed);
	/* A timer set by the application's pass while the engine thread
	 * sleeps past it: wake the engine, or nobody acts on the timer if the
	 * application now blocks (in epoll, say). */
	/* Likewise a question the link queued for the engine thread (a peer
	 * not resolved yet, link/dest.h): one FUTEX_WAKE if it sleeps, never
	 * a round trip to softibd here. */
	if ((next || sib_link_wants_service(&ctx->link)) && !pthread_equal(pthread_self(), ctx->eng.thread)) {
		uint64_t until = atomic_load_explicit(&ctx->eng.sleep_until, memory_order_seq_cst);
		bool fresh = sib_link_asks_fresh(&ctx->link);

		if ((until && ((next && next < until) || sib_link_wants_service(&ctx->link))) ||
		    (fresh && atomic_load_explicit(&ctx->eng.napping, memory_order_seq_cst)))
			sib_engine_kick(ctx);
	}
	return did;
}

void sib_progress(struct sib_context *ctx)
{
	/* Say "run once more" before trying the lock, and re-check after
	 * releasing it (with a full fence), so that either we run or the
	 * holder sees the request: no kick is lost (STYLE 6.9). */
	atomic_store_explicit(&ctx->eng.armed, 1, memory_order_seq_cst);
	while (pthread_mutex_trylock(&ctx->progress_lock) == 0) {
		int rounds = 0;

		do {
			atomic_store_explicit(&ctx->eng.armed, 0, memory_order_seq_cst);
		} while ((run_once(ctx) || atomic_load_explicit(&ctx->eng.armed, memory_order_seq_cst)) &&
			 ++rounds < 64);
		pthread_mutex_unlock(&ctx->progress_lock);
		atomic_thread_fence(memory_order_seq_cst);
		if (!atomic_load_explicit(&ctx->eng.armed, memory_order_seq_cst))
			return;
	}
}

/*
 * Is the application polling right now?  Its poll counter moves from p0
 * (read by the caller) within a short spin (it runs on another CPU), or
 * after we yield once (it shares ours).  One yield only: on a loaded
 * machine each may cost a time slice.
 */
static bool app_polling(struct sib_context *ctx, uint64_t p0)
{
	uint64_t until = sib_now_ns() + SIB_POLLING_LOOK_NS;

	do {
		if (atomic_load_explicit(&ctx->eng.poll_count, memory_order_relaxed) != p0)
			return true;
	} while (sib_now_ns() < until);
	sched_yield();
	return atomic_load_explicit(&ctx->eng.poll_count, memory_order_relaxed) != p0;
}

/*
 * Is a CPU spare: do fewer other threads want to run than there are CPUs
 * online?  The fourth field of /proc/loadavg is the number of runnable
 * threads system-wide (the reader included) at the time of the read.  When
 * it cannot be read: yes, and the yields of the spin find out.  About 3 us
 * (open, read, close: no descriptor is kept for the application to close
 * under us); engine_spin calls it at most every SIB_SPARE_LOOK_NS.
 */
static bool cpu_spare(void)
{
	static _Atomic long ncpu;
	long n = atomic_load_explicit(&ncpu, memory_order_relaxed);
	char buf[128], *p = buf, *end;
	ssize_t len;
	long running;
	int fd, field;

	if (n <= 0) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		if (n <= 0)
			n = 1;
		atomic_store_explicit(&ncpu, n, memory_order_relaxed);
	}
	fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return true;
	buf[len] = '\0';
	for (field = 0; field < 3 && p; field++) { /* "0.10 0.20 0.30 2/345 6789" */
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return true;
	running = strtol(p, &end, 10);
	if (end == p || *end != '/' || running < 1)
		return true;
	return running - 1 < n;
}

/* The engine thread's spin after traffic (engine_main's own state). */
struct engine_spin {
	int64_t budget;                /* ns the next spin may last (adaptive) */
	uint64_t quiet_since;          /* when a spin that found nothing began, 0 = none */
	uint64_t spare_at;             /* when cpu_spare was last asked (ns) */
	bool spare;                    /* its answer */
};

enum spin_end { SPIN_SLEEP, SPIN_WORK, SPIN_POLLS };

/*
 * The engine thread has just received packets and the application does
 * not poll its CQs: keep watching the inbox, kicks and the timers for up
 * to sp->budget ns before announcing sleep, so that a peer's next packet
 * finds the engine awake and costs no futex wake on either side (a
 * sleeping wait costs ~50 us a round trip on this VM, a spinning one
 * 0.1 us: ../shared/research/limits.md).  DESIGN principle 3 bounds it:
 *  - only while a CPU is spare (cpu_spare): in ib_write_lat both programs
 *    spin on memory and own both cores, so the engines do not spin;
 *  - it yields every SIB_SPIN_YIELD_NS, and a yield that comes back late
 *    (another thread wanted this CPU) ends it at once;
 *  - the budget halves (to SIB_SPIN_MIN_NS) after a spin that found
 *    nothing, and is SIB_SPIN_MAX_NS again once traffic comes back within
 *    that bound of the last quiet spin's start, so idle costs at most one
 *    spin after the last packet.
 * `seq` is the wake sequence snapshot and `polls` the poll counter taken
 * before the pass.  Returns SPIN_WORK (a packet, a kick, a timer due),
 * SPIN_POLLS (the application polls now: let it drive progress) or
 * SPIN_SLEEP.  Never takes the progress lock.
 */
static enum spin_end engine_spin(struct sib_context *ctx, uint32_t seq, uint64_t polls,
				 struct engine_spin *sp)
{
	uint64_t start = sib_now_ns(), now, yield_at, until;

	if (sp->quiet_since && start - sp->quiet_since < SIB_SPIN_MAX_NS)
		sp->budget = SIB_SPIN_MAX_NS; /* a longer spin would have caught it */
	sp->quiet_since = 0;
	if (!sp->spare_at || start - sp->spare_at >= SIB_SPARE_LOOK_NS) {
		sp->spare = cpu_spare();
		sp->spare_at = sib_now_ns();
	}
	if (!sp->spare) {
		ctx->eng.spin_busy++;
		return SPIN_SLEEP;
	}
	until = start + (uint64_t)sp->budget;
	yield_at = start + SIB_SPIN_YIELD_NS;
	for (unsigned int i = 1;; i++) {
		uint64_t deadline;

		if (atomic_load_explicit(&ctx->eng.poll_count, memory_order_relaxed) != polls)
			return SPIN_POLLS;
		if (sib_link_rx_ready(&ctx->link) || sib_ring_wake_seq(&ctx->inbox) != seq ||
		    sib_link_wants_service(&ctx->link)) {
			ctx->eng.spin_caught++;
			return SPIN_WORK;
		}
		sib_cpu_relax();
		if (i % 8)
			continue; /* the clock only every 8 looks (~0.3 us) */
		now = sib_now_ns();
		deadline = atomic_load_explicit(&ctx->eng.next_deadline, memory_order_relaxed);
		if (deadline && now >= deadline)
			return SPIN_WORK;
		if (now >= until) {
			sp->quiet_since = start;
			ctx->eng.spin_quiet++;
			sp->budget = sp->budget / 2 > SIB_SPIN_MIN_NS ? sp->budget / 2 : SIB_SPIN_MIN_NS;
			return SPIN_SLEEP;
		}
		if (now >= yield_at) {
			sched_yield();
			yield_at = sib_now_ns();
			if (yield_at - now > SIB_SPIN_BUSY_NS) {
				sp->spare = false; /* until the next look */
				ctx->eng.spin_busy++;
				sp->spare_at = yield_at;
				return SPIN_SLEEP;
			}
			yield_at += SIB_SPIN_YIELD_NS;
		}
	}
}

static void *engine_main(void *arg)
{
	struct sib_context *ctx = arg;
	uint64_t seen_notify = atomic_load(&ctx->eng.notify_count);
	int64_t nap_ns = SIB_NAP_MIN_NS;
	struct engine_spin spin = { .budget = SIB_SPIN_MAX_NS };
	bool watched = false;

	for (;;) {
		/* Taken before every check below: a wake after it is not lost. */
		uint32_t seq = sib_ring_wake_seq(&ctx->inbox);
		uint64_t notifies = atomic_load_explicit(&ctx->eng.notify_count, memory_order_seq_cst);
		uint64_t polls = atomic_load_explicit(&ctx->eng.poll_count, memory_order_relaxed);
		bool may_block = notifies != seen_notify || atomic_load(&ctx->eng.app_blocked) > 0;

		if (atomic_load(&ctx->eng.stop))
			break;
		if (sib_link_wants_service(&ctx->link))
			link_service(ctx);
		seen_notify = notifies;
		/* After a spin that watched the poll counter stand still up to
		 * now, there is no need to look again. */
		if (!may_block && !watched && app_polling(ctx, polls)) {
			/* The application polls, so it drives progress (and its
			 * timers) itself.  Stay off the progress lock (a
			 * preempted engine holding it would stall the poller)
			 * and out of the producers' way (no wakeups asked for),
			 * for longer and longer. */
			atomic_store_explicit(&ctx->eng.napping, 1, memory_order_seq_cst);
			/* An arm after the check above: do not nap. */
			if (atomic_load_explicit(&ctx->eng.notify_count, memory_order_seq_cst) == notifies)
				sib_ring_nap(&ctx->inbox, seq, nap_ns);
			atomic_store_explicit(&ctx->eng.napping, 0, memory_order_relaxed);
			nap_ns = nap_ns * 2 < SIB_NAP_MAX_NS ? nap_ns * 2 : SIB_NAP_MAX_NS;
			continue;
		}
		watched = false;
		/* Nobody polls, or the application may block, or it polls
		 * something else (its own memory, as ib_write_lat does). */
		nap_ns = SIB_NAP_MIN_NS;
		uint64_t rx_count = sib_link_rx_count(&ctx->link);

		sib_progress(ctx);
		if (sib_link_wants_service(&ctx->link))
			continue;
		/* Packets came in: more may follow soon (engine_spin). */
		if (sib_link_rx_count(&ctx->link) != rx_count) {
			enum spin_end e = engine_spin(ctx, seq, polls, &spin);

			if (e != SPIN_SLEEP) {
				watched = e == SPIN_WORK;
				continue;
			}
		}

		uint64_t deadline = atomic_load_explicit(&ctx->eng.next_deadline, memory_order_relaxed);
		uint64_t now = sib_now_ns();
		int64_t timeout = -1;

		if (deadline) {
			if (deadline <= now)
				continue;
			timeout = (int64_t)(deadline - now);
		}
		/* Connected QPs need a look now and then even when nothing
		 * happens: nobody tells us that a peer died (dead peer
		 * detection, docs/transport.md). */
		if (atomic_load_explicit(&ctx->eng.nqps, memory_order_relaxed) &&
		    (timeout < 0 || timeout > SIB_IDLE_LOOK_NS))
			timeout = SIB_IDLE_LOOK_NS;
		/* Timers that the application's own passes set from now on
		 * and that fall before this wake up the engine (run_once). */
		atomic_store_explicit(&ctx->eng.sleep_until,
				      timeout < 0 ? UINT64_MAX : now + (uint64_t)timeout,
				      memory_order_seq_cst);
		ctx->eng.sleeps++;
		/* A question the link queued before that store: answer it
		 * (the asker saw no sleeper to wake). */
		if (!atomic_load_explicit(&ctx->link.service, memory_order_seq_cst))
			sib_link_wait(&ctx->link, seq, timeout);
		atomic_store_explicit(&ctx->eng.sleep_until, 0, memory_order_relaxed);
	}
	return NULL;
}

int sib_engine_start(struct sib_context *ctx)
{
	int rc = sib_link_open(&ctx->link, ctx->inbox_base, ctx->pid, ctx->inbox_idx,
			       &sib_fabric->devs[ctx->dev->index], sib_fabric->link[ctx->dev->index]);

	if (!rc)
		rc = sib_link_dests_open(&ctx->link, &sib_host->link, ctx->dev->index, ctx->dev_handle);
	if (rc) {
		sib_link_close(&ctx->link);
		return rc;
	}
	rc = pthread_create(&ctx->eng.thread, NULL, engine_main, ctx);
	if (rc) {
		sib_link_close(&ctx->link);
		return rc;
	}
	ctx->eng.started = true;
	return 0;
}

void sib_engine_kick(struct sib_context *ctx)
{
	sib_ring_wake(&ctx->inbox);
}

void sib_engine_stop(struct sib_context *ctx)
{
	if (!ctx->eng.started)
		return;
	atomic_store(&ctx->eng.stop, 1);
	sib_ring_wake(&ctx->inbox);
	pthread_join(ctx->eng.thread, NULL);
	ctx->eng.started = false;
	pthread_mutex_lock(&ctx->progress_lock);
	{
		uint64_t now = 0;

		link_tick(ctx, &now); /* the last counters, for status */
	}
	sib_link_close(&ctx->link);
	pthread_mutex_unlock(&ctx->progress_lock);
}
