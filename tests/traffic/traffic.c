/* SPDX-License-Identifier: MIT */
/*
 * test_traffic: the randomized, model-checked traffic test (traffic.h,
 * docs/testing.md).  Starts a private softibd (unless --no-daemon), builds
 * the fabric of the transports asked for, and drives every endpoint's WR
 * stream to --ops WRs while interleaving receive refills (with RNR on
 * purpose), polls of random depth on random CQs through ibv_poll_cq and the
 * extended CQ API, and CQ arming with events owed checked.  Exit 0 when
 * every byte and completion matched the model, 1 with the seed and a
 * replay command on the first mismatch or stall.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "traffic.h"
#ifdef TR_DEBUG_INTERNALS
#include "hca/hca.h"
#include "hca/transport.h"
#endif
#include "../unit/daemon_fixture.h"

#define STALL_MS  20000                 /* no WR of a stream posted or retired and no message
					   received for this long: a hang */
#define EVENT_MS  5000                  /* an owed CQ event must come within this */

static const struct tr_world *cur;      /* for tr_fail's dump */
static char replay[256];
static bool own_daemon;

/* ---- xoshiro256** ---- */

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void tr_rng_seed(struct tr_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xd1342543de82ef95ull);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t tr_rng_next(struct tr_rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

uint32_t tr_rng_below(struct tr_rng *r, uint32_t n)
{
	return (uint32_t)(((tr_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

bool tr_rng_pct(struct tr_rng *r, uint32_t pct)
{
	return tr_rng_below(r, 100) < pct;
}

void tr_rng_fill(struct tr_rng *r, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len >= 8) {
		uint64_t v = tr_rng_next(r);

		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t v = tr_rng_next(r);

		memcpy(p, &v, len);
	}
}

uint64_t tr_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *kind_name(enum tr_kind k)
{
	return k == TR_RC ? "RC" : k == TR_UC ? "UC" : k == TR_UD ? "UD" : "XRC";
}

static void dump(const struct tr_world *w)
{
	for (int i = 0; i < w->nep; i++) {
		const struct tr_ep *e = &w->ep[i];

		struct ibv_qp_attr qa = { 0 };
		struct ibv_qp_init_attr qia;

		ibv_query_qp(e->qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &qia);
		fprintf(stderr, "  ep %2d %-3s ctx %d qpn 0x%06x: posted %llu retired %llu (sq %u, mtu %u, max_len %u, rnr %d), state %d sq_psn 0x%06x rq_psn 0x%06x\n",
			i, kind_name(e->kind), e->ctx, e->qp->qp_num, (unsigned long long)e->posted,
			(unsigned long long)e->retired, e->sq_depth, e->mtu, e->max_len, e->rnr, qa.qp_state,
			qa.sq_psn, qa.rq_psn);
#ifdef TR_DEBUG_INTERNALS
		{
			struct sib_qp *q = (struct sib_qp *)e->qp;
			fprintf(stderr, "    req.wqe %u sq_tail %u sq_head %u req.psn 0x%x offset %u reads_out %u comp.psn 0x%x acked 0x%x retry_dl %llu rnr_dl %llu read_rcvd %u ack_owed %d ackreq_dl %llu local_err %d\n",
				q->req.wqe, q->sq_tail, (unsigned)q->sq_head, q->req.psn, q->req.offset, q->req.reads_outstanding, q->comp.psn,
				q->comp.acked_psn, (unsigned long long)q->comp.retry_deadline, (unsigned long long)q->comp.rnr_deadline,
				q->comp.read_rcvd, q->req.ack_owed, (unsigned long long)q->req.ackreq_deadline, q->req.local_err);
			for (uint32_t i = q->sq_tail; i != (uint32_t)q->sq_head && i != q->sq_tail + 4; i++) {
				struct sib_swqe *x = &q->sq[i & (q->sq_size - 1)];
				fprintf(stderr, "    wqe %u op %d state %d started %d placed %d first_psn 0x%x npsn %u\n", i, x->opcode, x->state, x->started, x->placed, x->first_psn, x->npsn);
			}
		}
#endif
		for (uint64_t s = e->retired; s < e->posted && s < e->retired + 3; s++)
			tr_print_wr(e, &e->sq[s % e->sq_depth]);
	}
	for (int i = 0; i < w->nrq; i++) {
		const struct tr_rq *q = &w->rq[i];
		uint32_t pend = 0;

		for (int s = 0; s < TR_MAX_EP; s++)
			pend += q->from[s].n;
		fprintf(stderr, "  rq %2d %s ctx %d: WQEs posted %u, promised %u, messages outstanding %u, received %llu, lost %llu\n",
			i, q->srq ? "SRQ" : "RQ ", q->ctx, q->posted, q->reserved, pend,
			(unsigned long long)q->received, (unsigned long long)q->lost);
	}
}

void tr_fail(const struct tr_world *w, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "traffic: FAIL (seed %llu): ", w ? (unsigned long long)w->o.seed : 0ull);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (w && w->nep)
		dump(w);
	fprintf(stderr, "traffic: replay with: %s\n", replay);
	if (own_daemon)
		stop_daemon(NULL);
	exit(1);
}

/* ---- CQ events ---- */

/* Arm cq, then drain it: a CQE found after that owes an event. */
static void cq_arm(struct tr_world *w, struct tr_cq *cq, struct tr_rng *r)
{
	int mode = tr_rng_pct(r, 25) ? 2 : 1;

	if (!cq->ch || cq->arm_pending)
		return;
	if (ibv_req_notify_cq(cq->cq, mode == 2))
		tr_fail(w, "ibv_req_notify_cq: %s", strerror(errno));
	cq->arm_pending = true;
	while (tr_cq_poll(w, cq, r) > 0)
		;
	cq->armed = mode;
}

static void read_events(struct tr_world *w)
{
	for (int c = 0; c < w->nctx; c++) {
		struct ibv_cq *ibcq;
		void *cq_ctx;

		while (ibv_get_cq_event(w->ctx[c].ch, &ibcq, &cq_ctx) == 0) {
			struct tr_cq *q = NULL;

			for (int i = 0; i < w->ctx[c].ncq; i++)
				if (w->ctx[c].cq[i].cq == ibcq)
					q = &w->ctx[c].cq[i];
			if (!q)
				tr_fail(w, "a CQ event for a CQ that is not on this channel");
			if (!q->arm_pending)
				tr_fail(w, "a CQ event on a CQ that was not armed (context %d)", c);
			ibv_ack_cq_events(ibcq, 1);
			q->arm_pending = false;
			q->armed = 0;
			q->must_event = false;
			q->events++;
			w->events++;
		}
		if (errno != EAGAIN)
			tr_fail(w, "ibv_get_cq_event: %s", strerror(errno));
	}
}

static void check_owed_events(struct tr_world *w)
{
	uint64_t now = tr_now_ms();

	for (int c = 0; c < w->nctx; c++)
		for (int i = 0; i < w->ctx[c].ncq; i++) {
			struct tr_cq *q = &w->ctx[c].cq[i];

			if (q->must_event && now - q->must_event_since_ms > EVENT_MS) {
				read_events(w);
				if (q->must_event)
					tr_fail(w, "context %d CQ %d: armed (%s) and a completion came (%s), but no event in %d ms",
						c, i, q->armed == 2 ? "solicited" : "next", q->must_event_why, EVENT_MS);
			}
		}
}

/* ---- the driver ---- */

static bool all_done(struct tr_world *w)
{
	for (int i = 0; i < w->nep; i++)
		if (!tr_ep_done_posting(w, &w->ep[i]) || w->ep[i].posted != w->ep[i].retired)
			return false;
	for (int i = 0; i < w->nrq; i++)
		if (!w->rq[i].lossy)
			for (int s = 0; s < w->nep; s++)
				if (w->rq[i].from[s].n)
					return false;
	return true;
}

static struct tr_cq *any_cq(struct tr_world *w, struct tr_rng *r)
{
	struct tr_ctx *x = &w->ctx[tr_rng_below(r, (uint32_t)w->nctx)];

	return &x->cq[tr_rng_below(r, (uint32_t)x->ncq)];
}

static void poll_all(struct tr_world *w, struct tr_rng *r)
{
	for (int c = 0; c < w->nctx; c++)
		for (int i = 0; i < w->ctx[c].ncq; i++)
			while (tr_cq_poll(w, &w->ctx[c].cq[i], r) > 0)
				;
}

static void run(struct tr_world *w)
{
	struct tr_rng r;
	uint64_t iter = 0, now;

	tr_rng_seed(&r, w->o.seed, 2); /* the driver's choices: interleaving only */
	for (int c = 0; c < w->nctx; c++) {
		int fl = fcntl(w->ctx[c].ch->fd, F_GETFL);

		fcntl(w->ctx[c].ch->fd, F_SETFL, fl | O_NONBLOCK);
	}
	for (int i = 0; i < w->nrq; i++)
		tr_rq_refill(w, &w->rq[i], w->rq[i].depth);
	w->last_progress_ms = tr_now_ms();
	for (;; iter++) {
		uint32_t a = tr_rng_below(&r, 100);

		if (a < 45) {
			if (tr_ep_post(w, &w->ep[tr_rng_below(&r, (uint32_t)w->nep)]))
				w->last_progress_ms = tr_now_ms();
		} else if (a < 60) {
			struct tr_rq *q = &w->rq[tr_rng_below(&r, (uint32_t)w->nrq)];

			/* RNR on purpose: now and then a queue posts nothing for a while. */
			if (tr_rng_pct(&r, 2) && tr_now_ms() >= q->starve_until_ms) {
				q->starve_until_ms = tr_now_ms() + 1 + tr_rng_below(&r, 20);
				w->rnr_episodes++;
			}
			tr_rq_refill(w, q, 1 + tr_rng_below(&r, q->depth));
		} else if (a < 62) {
			struct tr_ep *e = &w->ep[tr_rng_below(&r, (uint32_t)w->nep)];

			/* windows live while their endpoint's stream runs */
			if (!tr_ep_done_posting(w, e) || e->mw.state != TR_MW_FREE)
				tr_mw_step(w, e, &r);
		} else if (a < 96) {
			tr_cq_poll(w, any_cq(w, &r), &r);
		} else if (a < 98) {
			cq_arm(w, any_cq(w, &r), &r);
		} else {
			read_events(w);
		}
		/* late registration over a queue's slots while messages to it
		 * are on their way (posted, not yet received) */
		if (!(iter % 32)) {
			struct tr_rq *q = &w->rq[tr_rng_below(&r, (uint32_t)w->nrq)];

			if (q->reserved >= 2 && tr_rng_pct(&r, 20))
				tr_rq_late_reg(w, q);
		}
		if (iter % 256)
			continue;
		check_owed_events(w);
		/* Error episodes: now and then one starts; the ones on go a step. */
		if (tr_rng_pct(&r, 3))
			tr_episode_start(w, &w->ep[tr_rng_below(&r, (uint32_t)w->nep)]);
		for (int i = 0; i < w->nep; i++)
			if (w->ep[i].episode)
				tr_episode_step(w, &w->ep[i], &r);
		if (tr_rng_pct(&r, 10))
			tr_ep_check_target(w, &w->ep[tr_rng_below(&r, (uint32_t)w->nep)]);

		if (all_done(w))
			break;
		now = tr_now_ms();
		if (now - w->last_progress_ms > STALL_MS)
			tr_fail(w, "no WR posted or completed and no message received for %d ms", STALL_MS);
	}
	/* Lossy queues: whatever has not come in a quiet half second is lost. */
	now = tr_now_ms();
	while (tr_now_ms() - w->last_progress_ms < 500 && tr_now_ms() - now < 5000) {
		for (int i = 0; i < w->nrq; i++)
			tr_rq_refill(w, &w->rq[i], w->rq[i].depth);
		poll_all(w, &r);
	}
	for (int i = 0; i < w->nrq; i++)
		for (int s = 0; s < w->nep; s++)
			w->rq[i].lost += w->rq[i].from[s].n;
	for (int i = 0; i < w->nep; i++) {
		tr_ep_check_target(w, &w->ep[i]);
		if (w->ep[i].kind != TR_UD && !w->ep[i].tgt_unknown && w->ep[i].checked_tgt_at != w->ep[i].retired)
			tr_fail(w, "endpoint %d: target region not checked at the end", i);
	}
	/* Nothing more may complete: every completion was accounted for. */
	now = tr_now_ms();
	while (tr_now_ms() - now < 50)
		poll_all(w, &r);
	read_events(w);
}

static unsigned int parse_transports(const char *s)
{
	unsigned int t = 0;
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		if (!strcmp(p, "rc")) t |= TR_T_RC;
		else if (!strcmp(p, "uc")) t |= TR_T_UC;
		else if (!strcmp(p, "ud")) t |= TR_T_UD;
		else if (!strcmp(p, "xrc")) t |= TR_T_XRC;
		else if (!strcmp(p, "srq")) t |= TR_T_SRQ;
		else if (!strcmp(p, "all")) t |= TR_T_ALL;
		else return 0;
	}
	return t;
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s [--seed N] [--ops N] [--transport LIST] [--no-daemon] [--verbose]\n"
		"Random streams of work requests on QPs of every transport, checked against a model:\n"
		"every receive buffer, target region, READ and atomic result, and every completion.\n"
		"  --seed N          the run's seed (default: from the clock; printed either way)\n"
		"  --ops N           send WRs per endpoint (default 2000)\n"
		"  --transport LIST  comma-separated: rc, uc, ud, xrc, srq, all (default all)\n"
		"  --no-daemon       use the softibd of SOFTIB_SOCKET instead of a private one\n"
		"  --verbose         print the endpoints and per-opcode counts\n"
		"With SOFTIB_FAULTS set, UC and UD may lose messages (counted, never wrong);\n"
		"RC and XRC must still deliver every byte once and in order.\n"
		"Exit 0: all matched; 1: a mismatch or a stall, with the seed and a replay command.\n",
		argv0);
}

/* The command line into w->o; the transports' names for the replay line
 * in *tlist.  0, or the exit code (2: bad usage, -1 after --help). */
static int parse_args(struct tr_world *w, int argc, char **argv, const char **tlist)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' }, { "ops", required_argument, NULL, 'n' },
		{ "transport", required_argument, NULL, 't' }, { "no-daemon", no_argument, NULL, 'D' },
		{ "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' }, { 0 },
	};
	bool have_seed = false;
	int c;

	w->o.ops = 2000;
	w->o.transports = TR_T_ALL;
	w->o.daemon = true;
	*tlist = "all";
	while ((c = getopt_long(argc, argv, "s:n:t:Dvh", lo, NULL)) != -1) {
		switch (c) {
		case 's': w->o.seed = strtoull(optarg, NULL, 0); have_seed = true; break;
		case 'n': w->o.ops = strtoull(optarg, NULL, 0); break;
		case 't':
			*tlist = optarg;
			w->o.transports = parse_transports(optarg);
			if (!w->o.transports) {
				usage(stderr, argv[0]);
				return 2;
			}
			break;
		case 'D': w->o.daemon = false; break;
		case 'v': w->o.verbose = true; break;
		case 'h': usage(stdout, argv[0]); return -1;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (!have_seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		w->o.seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid();
	}
	if (!w->o.ops)
		w->o.ops = 1;
	w->o.faults = getenv("SOFTIB_FAULTS") && *getenv("SOFTIB_FAULTS");
	return 0;
}

/* The summary line of a run that matched (and per-opcode counts with --verbose). */
static void report(const struct tr_world *w, uint64_t t0)
{
	static const char *const names[16] = {
		[IBV_WR_RDMA_WRITE] = "WRITE", [IBV_WR_RDMA_WRITE_WITH_IMM] = "WRITE_IMM",
		[IBV_WR_SEND] = "SEND", [IBV_WR_SEND_WITH_IMM] = "SEND_IMM", [IBV_WR_RDMA_READ] = "READ",
		[IBV_WR_ATOMIC_CMP_AND_SWP] = "CMP_SWP", [IBV_WR_ATOMIC_FETCH_AND_ADD] = "FETCH_ADD",
		[IBV_WR_LOCAL_INV] = "LOCAL_INV", [IBV_WR_BIND_MW] = "BIND_MW",
		[IBV_WR_SEND_WITH_INV] = "SEND_INV",
	};
	uint64_t total = 0, lost = 0, dups = 0, binds = 0, rinv = 0, linv = 0, uses = 0, flushed = 0;

	for (int i = 0; i < w->nep; i++) {
		total += w->ep[i].posted;
		binds += w->ep[i].mw.binds;
		rinv += w->ep[i].mw.remote_invs;
		linv += w->ep[i].mw.local_invs;
		uses += w->ep[i].mw.uses;
		flushed += w->ep[i].flushed;
	}
	for (int i = 0; i < w->nrq; i++) {
		lost += w->rq[i].lost;
		dups += w->rq[i].dups;
	}
	printf("traffic: OK: %d endpoints, %d receive queues, %llu WRs, %llu completions, %llu messages, "
	       "%llu bytes checked, %llu CQ events, %llu RNR episodes",
	       w->nep, w->nrq, (unsigned long long)total, (unsigned long long)w->completions,
	       (unsigned long long)w->messages, (unsigned long long)w->bytes_checked,
	       (unsigned long long)w->events, (unsigned long long)w->rnr_episodes);
	if (w->o.faults)
		printf(", %llu UC/UD messages lost, %llu UD duplicates", (unsigned long long)lost,
		       (unsigned long long)dups);
	printf(", windows: %llu binds, %llu WRs through them, %llu remote and %llu local invalidations",
	       (unsigned long long)binds, (unsigned long long)uses, (unsigned long long)rinv,
	       (unsigned long long)linv);
	printf(", %llu error episodes (%llu flushes polled before RESET)", (unsigned long long)w->episodes,
	       (unsigned long long)flushed);
	printf(", %llu late registrations", (unsigned long long)w->late_regs);
	printf(", %.2f s\n", (double)(tr_now_ms() - t0) / 1000.0);
	for (int op = 0; w->o.verbose && op < 16; op++) {
		uint64_t n = 0;

		for (int i = 0; i < w->nep; i++)
			n += w->ep[i].stats_op[op];
		if (n)
			printf("traffic:   %-10s %llu\n", names[op] ? names[op] : "?", (unsigned long long)n);
	}
}

int main(int argc, char **argv)
{
	static struct tr_world w;
	const char *tlist;
	uint64_t t0;
	int rc = parse_args(&w, argc, argv, &tlist);

	if (rc)
		return rc < 0 ? 0 : rc;
	snprintf(replay, sizeof(replay), "%s%s --seed %llu --ops %llu --transport %s",
		 w.o.faults ? "SOFTIB_FAULTS=... " : "", argv[0], (unsigned long long)w.o.seed,
		 (unsigned long long)w.o.ops, tlist);
	printf("traffic: seed %llu, %llu WRs per endpoint, transports %s%s\n", (unsigned long long)w.o.seed,
	       (unsigned long long)w.o.ops, tlist, w.o.faults ? ", under SOFTIB_FAULTS" : "");
	fflush(stdout);
	cur = &w;
	if (w.o.daemon) {
		if (start_daemon(NULL))
			tr_fail(NULL, "could not start softibd (%s)", SOFTIBD_PATH);
		own_daemon = true;
	}
	t0 = tr_now_ms();
	tr_world_open(&w);
	run(&w);
	if (w.o.transports & TR_T_RC)
		tr_echo_run(&w);
	report(&w, t0);
	tr_world_close(&w);
	if (own_daemon)
		stop_daemon(NULL);
	return 0;
}
