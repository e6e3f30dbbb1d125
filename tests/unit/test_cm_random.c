/* SPDX-License-Identifier: MIT */
/*
 * Randomized test of the IB CM (src/subnet/cm.c) against a model: several
 * hundred connections between the four CAs of the default fabric (some to
 * a service nobody listens to), each passive side accepting, rejecting,
 * refusing from its handler or answering late, each active side taking or
 * rejecting the REP, disconnects from either side, ids destroyed at
 * random, single MADs lost and ports going dark for a while.  Checked:
 * every connection ends in exactly one of established-then-disconnected,
 * rejected, timed out (as its active side saw it, unless destroyed first),
 * events only for live ids and never inside a call of the test, no id
 * left at the end.  And a fuzz run: 20,000 random CM MADs (often naming
 * live comm IDs and the listener's ServiceID) between random CAs.  The
 * seeds are printed; replay with `test_cm_random --seed N` or CM_SEED=N;
 * CM_RUNS=N runs N seeds of the model check (default 4).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "cm_fixture.h"

/* ---- randomized: connections against a model -------------------------------------- */

static uint64_t seed_arg;	/* --seed N or CM_SEED; 0: from the clock */
static uint64_t rng;

static uint32_t rnd(void)
{
	rng ^= rng << 13; /* xorshift64 */
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static unsigned int rnd_n(unsigned int n)
{
	return rnd() % n;
}

#define R_CONNS 250
#define R_MAXEV 24
#define R_SID(b) (0x0000000001060000ull | (1000u + (b)))
#define R_SID_NONE (0x0000000001060000ull | 999u)

struct rconn {
	unsigned int a_ca, p_ca;
	uint32_t qpn;
	bool no_listener;
	struct sib_cm_id *act, *pas;	/* live ids (NULL: none or destroyed) */
	bool act_dead, pas_dead;	/* destroyed by the test (or its handler) */
	uint8_t pas_policy;		/* 0 REP, 1 REJ, 2 the handler returns 1, 3 later */
	uint8_t act_policy;		/* 0 RTU, 1 REJ the REP */
	bool ignore_dreq;		/* no DREP until the end */
	uint8_t aev[R_MAXEV], pev[R_MAXEV];
	uint16_t arej;			/* the reason of the active side's REJ_RECEIVED */
	unsigned int na, np, npas;
};

static struct rconn rc[R_CONNS];
static unsigned int nrc;

static struct rconn *conn_of(const struct sib_cm_id *id, bool *active)
{
	for (unsigned int i = 0; i < nrc; i++) {
		if (rc[i].act == id) {
			*active = true;
			return &rc[i];
		}
		if (rc[i].pas == id) {
			*active = false;
			return &rc[i];
		}
	}
	return NULL;
}

static int rhandler(struct sib_cm_id *id, const struct sib_cm_event *ev, void *ctx)
{
	struct sib_cm_rep_param rp = { .qpn = 1 };
	struct rconn *c = NULL;
	bool active = false;

	(void)ctx;
	assert_false(in_call);
	if (ev->type == SIB_CM_REQ_RECEIVED) {
		for (unsigned int i = 0; i < nrc && !c; i++)
			if (rc[i].qpn == ev->u.req.qpn)
				c = &rc[i];
		assert_non_null(c);
		assert_false(c->no_listener);
		if (c->pas) /* an earlier one that rejected: its REJ was lost */
			sib_cm_id_destroy(c->pas);
		c->pas = id;
		c->np = 0;
		c->npas++;
	} else {
		c = conn_of(id, &active); /* events only for live ids */
		assert_non_null(c);
	}
	if (active) {
		assert_true(c->na < R_MAXEV);
		c->aev[c->na++] = (uint8_t)ev->type;
	} else {
		assert_true(c->np < R_MAXEV);
		c->pev[c->np++] = (uint8_t)ev->type;
	}
	switch (ev->type) {
	case SIB_CM_REQ_RECEIVED:
		if (c->pas_policy == 2) {
			c->pas = NULL;
			c->pas_dead = true;
			return 1;
		}
		if (c->pas_policy == 1)
			assert_int_equal(sib_cm_send_rej(id, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0), 0);
		else if (c->pas_policy == 0)
			assert_int_equal(sib_cm_send_rep(id, &rp), 0);
		break;
	case SIB_CM_REP_RECEIVED:
		if (c->act_policy == 1)
			assert_int_equal(sib_cm_send_rej(id, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0), 0);
		else
			assert_int_equal(sib_cm_send_rtu(id, NULL, 0), 0);
		break;
	case SIB_CM_DREQ_RECEIVED:
		if (!c->ignore_dreq)
			assert_int_equal(sib_cm_send_drep(id, NULL, 0), 0);
		break;
	case SIB_CM_REJ_RECEIVED:
		if (active)
			c->arej = ev->u.rej.reason;
		break;
	default:
		break;
	}
	return 0;
}

static void r_start(struct fx *f)
{
	struct rconn *c = &rc[nrc];
	struct sib_cm_req_param rq;

	memset(c, 0, sizeof(*c));
	c->a_ca = rnd_n(4);
	c->p_ca = rnd_n(4);
	c->qpn = 0x1000 + nrc;
	c->no_listener = rnd_n(10) == 0;
	c->pas_policy = rnd_n(10) < 6 ? 0 : (uint8_t)(1 + rnd_n(3));
	c->act_policy = rnd_n(10) == 0;
	c->ignore_dreq = rnd_n(10) == 0;
	rq = req_param(f, c->a_ca, c->p_ca);
	rq.service_id = c->no_listener ? R_SID_NONE : R_SID(c->p_ca);
	rq.qpn = c->qpn;
	rq.max_cm_retries = (uint8_t)(2 + rnd_n(3));
	rq.remote_cm_response_timeout = (uint8_t)(8 + rnd_n(5));
	rq.primary.packet_life_time = (uint8_t)rnd_n(3);
	c->act = sib_cm_id_new(f->sn, f->ca[c->a_ca], 1, rhandler, NULL);
	assert_non_null(c->act);
	nrc++;
	assert_int_equal(CALL(sib_cm_send_req(c->act, &rq)), 0);
}

/* A random live id of a random connection (NULL: none picked). */
static struct sib_cm_id **r_pick(bool *active)
{
	struct rconn *c;

	if (!nrc)
		return NULL;
	c = &rc[rnd_n(nrc)];
	*active = rnd_n(2);
	if (*active ? !c->act : !c->pas)
		*active = !*active;
	return *active ? (c->act ? &c->act : NULL) : (c->pas ? &c->pas : NULL);
}

static void r_destroy(struct sib_cm_id **pp, bool active)
{
	bool a;
	struct rconn *c = conn_of(*pp, &a);

	CALLV(sib_cm_id_destroy(*pp));
	*pp = NULL;
	if (active)
		c->act_dead = true;
	else
		c->pas_dead = true;
}

static unsigned int count_in(const uint8_t *ev, unsigned int n, unsigned int from, int t)
{
	unsigned int k = 0;

	for (unsigned int i = from; i < n; i++)
		k += ev[i] == t;
	return k;
}

/* Each connection ends in exactly one of: established then disconnected,
 * rejected, timed out (as the active side saw it, unless destroyed before). */
static unsigned int r_outcome[4];	/* established, rejected, timed out, destroyed first */

static void r_check(const struct rconn *c)
{
	unsigned int i = 0, est, rej, tmo, disc, tw;

	while (i < c->na && c->aev[i] == SIB_CM_MRA_RECEIVED)
		i++;
	if (i == c->na) {
		assert_true(c->act_dead);	/* destroyed before any answer */
		r_outcome[3]++;
		return;
	}
	est = c->aev[i] == SIB_CM_REP_RECEIVED && c->act_policy == 0;
	rej = c->aev[i] == SIB_CM_REJ_RECEIVED ||
	      (c->aev[i] == SIB_CM_REP_RECEIVED && c->act_policy == 1);
	tmo = c->aev[i] == SIB_CM_REQ_ERROR;
	assert_int_equal(est + rej + tmo, 1);
	r_outcome[est ? 0 : rej ? 1 : 2]++;
	if (c->aev[i] == SIB_CM_REJ_RECEIVED)
		assert_int_equal(c->arej, c->no_listener ? CM_REJ_INVALID_SERVICE_ID
							 : CM_REJ_CONSUMER_DEFINED);
	if (c->no_listener)
		assert_false(est);
	i++;
	disc = count_in(c->aev, c->na, i, SIB_CM_DREQ_RECEIVED) +
	       count_in(c->aev, c->na, i, SIB_CM_DREP_RECEIVED) +
	       count_in(c->aev, c->na, i, SIB_CM_DREQ_ERROR);
	tw = count_in(c->aev, c->na, i, SIB_CM_TIMEWAIT_EXIT);
	if (!est) {
		assert_int_equal(c->na, i);	/* nothing after a rejection or timeout */
		return;
	}
	assert_int_equal(disc + tw, c->na - i);
	if (!c->act_dead) {
		assert_int_equal(disc, 1);
		assert_int_equal(tw, 1);
		assert_int_equal(c->aev[c->na - 1], SIB_CM_TIMEWAIT_EXIT);
	} else {
		assert_true(disc <= 1 && tw <= disc);
	}
	/* the passive side: REQ_RECEIVED, then established (or the RTU lost
	 * every time: REP_ERROR), then its end */
	if (c->pas && c->np) {
		assert_int_equal(c->pev[0], SIB_CM_REQ_RECEIVED);
		if (c->np > 1)
			assert_true(c->pev[1] == SIB_CM_RTU_RECEIVED || c->pev[1] == SIB_CM_REP_ERROR ||
				    c->pev[1] == SIB_CM_REJ_RECEIVED);
	}
}

static void r_run(struct fx *f, uint64_t seed)
{
	unsigned int steps = 0;
	struct sib_cm_id *l[4];
	bool active;

	rng = seed ? seed : 1;
	nrc = 0;
	for (unsigned int b = 0; b < 4; b++) {
		l[b] = sib_cm_id_new(f->sn, f->ca[b], 1, rhandler, NULL);
		assert_int_equal(CALL(sib_cm_listen(l[b], R_SID(b), ~0ull)), 0);
	}
	while (nrc < R_CONNS && steps++ < 200000) {
		unsigned int x = rnd_n(100);
		struct sib_cm_id **pp;

		if (x < 25) {
			r_start(f);
		} else if (x < 37) {	/* disconnect from a random side */
			if ((pp = r_pick(&active)) &&
			    !strcmp(sib_cm_state_str(sib_cm_id_state(*pp)), "ESTABLISHED"))
				assert_int_equal(CALL(sib_cm_send_dreq(*pp, NULL, 0)), 0);
		} else if (x < 41) {
			if ((pp = r_pick(&active)))
				r_destroy(pp, active);
		} else if (x < 49) {
			drop_attr = 0;	/* lose the next CM MAD, whatever it is */
			drop_next = 1;
		} else if (x < 51) {	/* a port goes dark for a while, or comes back */
			cut_lid = cut_lid ? 0 : f->lid[rnd_n(4)];
		} else if (x < 60) {	/* a slow passive side answers at last */
			if ((pp = r_pick(&active)) && !active) {
				const char *st = sib_cm_state_str(sib_cm_id_state(*pp));
				struct sib_cm_rep_param rp = { .qpn = 1 };

				if (!strcmp(st, "REQ_RCVD") || !strcmp(st, "MRA_REQ_SENT"))
					assert_int_equal(CALL(sib_cm_send_rep(*pp, &rp)), 0);
			}
		} else {
			uint64_t next = sib_cm_tick(f->sn, f->now);

			f->now = next && rnd_n(2) ? next : f->now + 1000 * rnd_n(5000);
		}
		pump(f);
	}
	/* the end: nothing lost any more, every established side disconnects */
	drop_next = 0;
	cut_lid = 0;
	run_out(f, 100000);
	for (int round = 0; round < 2; round++) {
		for (unsigned int i = 0; i < nrc; i++) {
			struct sib_cm_id *ids[2] = { rc[i].act, rc[i].pas };

			rc[i].ignore_dreq = false;
			for (int k = 0; k < 2; k++) {
				const char *st = ids[k] ? sib_cm_state_str(sib_cm_id_state(ids[k])) : "";

				if (!strcmp(st, "ESTABLISHED"))
					assert_int_equal(CALL(sib_cm_send_dreq(ids[k], NULL, 0)), 0);
				else if (!strcmp(st, "DREQ_RCVD"))
					assert_int_equal(CALL(sib_cm_send_drep(ids[k], NULL, 0)), 0);
			}
		}
		run_out(f, 100000);
	}
	memset(r_outcome, 0, sizeof(r_outcome));
	for (unsigned int i = 0; i < nrc; i++)
		r_check(&rc[i]);
	printf("test_cm_random:   %u connections: %u established then disconnected, %u rejected, %u timed"
	       " out, %u destroyed first; %u MADs lost, %llu resent, %llu dropped\n", nrc,
	       r_outcome[0], r_outcome[1], r_outcome[2], r_outcome[3], dropped_seen,
	       (unsigned long long)sib_cm_counters(f->sn)->resent,
	       (unsigned long long)sib_cm_counters(f->sn)->dropped);
	for (unsigned int i = 0; i < nrc; i++) {
		if (rc[i].act)
			r_destroy(&rc[i].act, true);
		if (rc[i].pas)
			r_destroy(&rc[i].pas, false);
	}
	for (unsigned int b = 0; b < 4; b++)
		CALLV(sib_cm_id_destroy(l[b]));
	run_out(f, 100000);
	assert_int_equal(sib_cm_counters(f->sn)->ids, 0);	/* no leaked id */
}

static void test_randomized(void **state)
{
	struct fx *f = *state;
	const char *e = getenv("CM_RUNS");
	unsigned int runs = e ? (unsigned int)strtoul(e, NULL, 0) : 4;
	uint64_t seed = seed_arg;

	if (!seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
	}
	for (unsigned int r = 0; r < runs; r++) {
		printf("test_cm_random: seed %" PRIu64 " (replay: test_cm_random --seed %" PRIu64
		       " or CM_SEED=%" PRIu64 " CM_RUNS=1)\n", seed + r, seed + r, seed + r);
		fflush(stdout);
		r_run(f, seed + r);
	}
}


/* ---- fuzz: random CM MADs at the agent ----------------------------------------- */

#define FZ_IDS 20000
static struct sib_cm_id *fz_ids[FZ_IDS];
static unsigned int nfz;

static void fz_collect(struct evrec *r)
{
	for (unsigned int i = 0; i < nfz; i++)
		if (fz_ids[i] == r->id)
			return;
	assert_true(nfz < FZ_IDS);
	fz_ids[nfz++] = r->id;
}

/* Random CM MADs (mostly well-formed headers, random bodies, comm IDs and
 * ServiceIDs that often name live ids and listeners) from random CAs to
 * random CAs: nothing breaks (ASan, UBSan), every id can still be
 * destroyed, none is left. */
static void test_fuzz(void **state)
{
	struct fx *f = *state;
	uint64_t seed = seed_arg ? seed_arg : (uint64_t)time(NULL);
	const struct sib_cm_counters *c = sib_cm_counters(f->sn);
	uint64_t sid = req_param(f, 0, 1).service_id;
	struct sib_cm_id *l = listen_on(f, 1, sid), *a, *p;
	uint8_t m[CM_MAD_SIZE];

	printf("test_cm_random: fuzz seed %" PRIu64 "\n", seed);
	rng = seed ? seed : 1;
	nfz = 0;
	on_event = fz_collect;
	connect_pair(f, &a, &p);
	fz_collect(&(struct evrec){ .id = a });
	fz_collect(&(struct evrec){ .id = p });
	for (unsigned int it = 0; it < 20000; it++) {
		unsigned int from = rnd_n(4), to = rnd_n(4);
		struct sib_cm_id *known = nfz ? fz_ids[rnd_n(nfz)] : a;
		mai_mad_t mm;

		for (unsigned int i = 0; i < CM_MAD_SIZE; i++)
			m[i] = (uint8_t)rnd();
		cm_put_hdr(m, (uint16_t)(rnd_n(20) ? 0x10 + rnd_n(11) : rnd()), rnd());
		if (!rnd_n(20))
			m[2] = (uint8_t)rnd_n(4);	/* class version */
		if (!rnd_n(20))
			m[3] = (uint8_t)rnd();		/* method */
		if (rnd_n(2))	/* RemoteCommID (SIDR_REP: RequestID) of a live id */
			cm_set(m, m[17] == CM_ATTR_SIDR_REP ? CM_SIDR_REP_REQUEST_ID
							    : CM_REP_REMOTE_COMM_ID,
			       sib_cm_id_local_comm_id(known));
		if (rnd_n(2) && (m[17] == CM_ATTR_REQ || m[17] == CM_ATTR_SIDR_REQ))
			cm_set(m, m[17] == CM_ATTR_REQ ? CM_REQ_SERVICE_ID : CM_SIDR_REQ_SERVICE_ID,
			       sid);
		if (m[17] == CM_ATTR_REQ && rnd_n(2))
			cm_set(m, CM_REQ_PRIMARY_LOCAL_LID, f->lid[from]);
		memset(&mm, 0, sizeof(mm));
		assert_int_equal(mai_fromwire(m, CM_MAD_SIZE, &mm), CM_MAD_SIZE);
		mm.qp = 1;
		mm.port = 1;
		mm.remote_qpn = 1;
		mm.remote_qkey = CM_GSI_QKEY;
		mm.lrh.dlid = f->lid[to];
		mm.lrh.slid = f->lid[from];
		CALLV(sib_mad_send(f->sn, f->ca[from], 1, &mm));
		nevs = 0;
		pump(f);
		nevs = 0;
		if (!rnd_n(50)) {
			uint64_t next = sib_cm_tick(f->sn, f->now);

			f->now = next ? next : f->now + 1000000;
			pump(f);
			nevs = 0;
		}
	}
	printf("test_cm_random:   fuzz: %u ids made, %llu dropped, %llu sent\n", nfz,
	       (unsigned long long)c->dropped,
	       (unsigned long long)(c->sent[CM_ATTR_REJ - CM_ATTR_FIRST] +
				    c->sent[CM_ATTR_MRA - CM_ATTR_FIRST] +
				    c->sent[CM_ATTR_SIDR_REP - CM_ATTR_FIRST]));
	on_event = NULL;
	for (unsigned int i = 0; i < nfz; i++)
		CALLV(sib_cm_id_destroy(fz_ids[i]));
	CALLV(sib_cm_id_destroy(l));
	nevs = 0;
	run_out(f, 100000);
	assert_int_equal(c->ids, 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_randomized, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fuzz, setup, teardown),
	};
	const char *e = getenv("CM_SEED");

	if (e)
		seed_arg = strtoull(e, NULL, 0);
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--seed"))
			seed_arg = strtoull(argv[i + 1], NULL, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
