/* SPDX-License-Identifier: MIT */
/* cm_fixture.h: the fixture of the IB CM tests. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cm_fixture.h"
#include "fake_subnet_host.h"

/* ---- the host: nothing but the router ------------------------------------ */

/* ---- events as the handlers saw them --------------------------------------- */


struct evrec evs[MAX_EV];
unsigned int nevs;
bool in_call;		/* the test is inside a sib_cm_* call */
int ret_on = -1;		/* the handler returns 1 for this event type */
void (*on_event)(struct evrec *r);	/* the randomized test's model */
struct sib_cm_id *destroy_in_handler;	/* destroyed by the next USER_ESTABLISHED's handler */
struct sib_subnet *remove_sn;		/* ... and this CA removed */
struct sib_fab_node *remove_ca;


int handler(struct sib_cm_id *id, const struct sib_cm_event *ev, void *ctx)
{
	struct evrec *r;

	assert_false(in_call);
	assert_ptr_equal(id, ev->id);
	assert_true(nevs < MAX_EV);
	r = &evs[nevs++];
	memset(r, 0, sizeof(*r));
	r->type = ev->type;
	r->id = id;
	r->listen_id = ev->listen_id;
	r->ctx = ctx;
	r->ev = *ev;
	r->pdata_len = ev->pdata_len;
	if (ev->pdata_len)
		memcpy(r->pdata, ev->pdata, ev->pdata_len);
	if (ev->type == SIB_CM_REJ_RECEIVED)
		memcpy(r->ari, ev->u.rej.ari, 72);
	if (on_event)
		on_event(r);
	if (ev->type == SIB_CM_USER_ESTABLISHED && destroy_in_handler) {
		sib_cm_id_destroy(destroy_in_handler);
		destroy_in_handler = NULL;
	}
	if (ev->type == SIB_CM_USER_ESTABLISHED && remove_ca) {
		sib_subnet_ca_remove(remove_sn, remove_ca);
		remove_ca = NULL;
	}
	return (int)ev->type == ret_on;
}

/* The n-th event of type t from `from` on (NULL: none). */
struct evrec *ev_find(enum sib_cm_event_type t, unsigned int from)
{
	for (unsigned int i = from; i < nevs; i++)
		if (evs[i].type == t)
			return &evs[i];
	return NULL;
}

unsigned int ev_count(enum sib_cm_event_type t, struct sib_cm_id *id)
{
	unsigned int c = 0;

	for (unsigned int i = 0; i < nevs; i++)
		c += evs[i].type == t && (!id || evs[i].id == id);
	return c;
}

/* ---- fixture ------------------------------------------------------------------ */


unsigned int drop_next;	/* MADs of attribute drop_attr to lose */
uint16_t drop_attr;
unsigned int dropped_seen;

uint16_t cut_lid;	/* every MAD to or from this LID is lost */

bool tx_drop(void *ctx, const uint8_t *mad, uint16_t slid, uint16_t dlid)
{
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);

	(void)ctx;
	if (cut_lid && (slid == cut_lid || dlid == cut_lid)) {
		dropped_seen++;
		return true;
	}
	if (drop_next && (attr == drop_attr || drop_attr == 0)) {
		drop_next--;
		dropped_seen++;
		return true;
	}
	return false;
}

int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct sib_fab_node *n;
	unsigned int k = 0;
	char err[128];

	assert_non_null(f);
	f->sn = sib_subnet_new(&fake_subnet_host, NULL);
	assert_non_null(f->sn);
	assert_int_equal(sib_subnet_load(f->sn, NULL, err, sizeof(err)), 0);
	assert_int_equal(sib_mad_init(f->sn), 0);
	for (unsigned int i = 0; (n = sib_subnet_node(f->sn, i)) && k < 4; i++)
		if (n->type == SIB_NODE_CA) {
			f->ca[k] = n;
			f->lid[k] = sib_mad_port_lid(n, 1);
			assert_int_not_equal(f->lid[k], 0);
			k++;
		}
	assert_int_equal(k, 4);
	f->now = 1000;
	nevs = 0;
	ret_on = -1;
	destroy_in_handler = NULL;
	remove_ca = NULL;
	on_event = NULL;
	drop_next = 0;
	drop_attr = 0;
	dropped_seen = 0;
	cut_lid = 0;
	sib_cm_set_tx_drop(f->sn, tx_drop, NULL);
	*state = f;
	return 0;
}

int teardown(void **state)
{
	struct fx *f = *state;

	sib_mad_fini(f->sn);
	sib_subnet_unload(f->sn);
	sib_subnet_delete(f->sn);
	free(f);
	return 0;
}

/* What the host does after a command or a routed MAD: dispatch, then tick. */
uint64_t pump(struct fx *f)
{
	sib_cm_dispatch(f->sn);
	return sib_cm_tick(f->sn, f->now);
}

uint64_t advance(struct fx *f, uint64_t ns)
{
	f->now += ns;
	return sib_cm_tick(f->sn, f->now);
}

/* Run the timers until none is left (at most `max` ticks). */
void run_out(struct fx *f, unsigned int max)
{
	uint64_t next = pump(f);

	for (unsigned int i = 0; next && i < max; i++) {
		f->now = next;
		next = sib_cm_tick(f->sn, f->now);
	}
}

const uint8_t req_pdata[56] = "the active side's private data, 56 bytes of it .......";

/* A REQ from CA a to CA b as the rdma_cm makes one. */
struct sib_cm_req_param req_param(const struct fx *f, unsigned int a, unsigned int b)
{
	struct sib_cm_req_param p = {
		.service_id = 0x0000000001060000ull | 7174,
		.qpn = 0x123456, .qp_type = 2, .responder_resources = 4, .initiator_depth = 3,
		.retry_count = 7, .rnr_retry_count = 6, .flow_control = 1, .srq = 0,
		.path_mtu = 3, .local_cm_response_timeout = 20, .remote_cm_response_timeout = 20,
		.max_cm_retries = 15, .pkey = 0xFFFF, .starting_psn = 0xABCDEF,
		.pdata_len = sizeof(req_pdata), .pdata = req_pdata,
	};

	p.primary.slid = f->lid[a];
	p.primary.dlid = f->lid[b];
	p.primary.sgid[0] = 0xfe, p.primary.sgid[1] = 0x80, p.primary.sgid[15] = (uint8_t)a;
	p.primary.dgid[0] = 0xfe, p.primary.dgid[1] = 0x80, p.primary.dgid[15] = (uint8_t)b;
	p.primary.flow_label = 0xABCDE;
	p.primary.traffic_class = 0x22;
	p.primary.hop_limit = 0x40;
	p.primary.sl = 5;
	p.primary.rate = 7;
	p.primary.packet_life_time = 1;
	return p;
}

const uint8_t rep_pdata[196] = "the passive side's answer";

struct sib_cm_rep_param rep_param(void)
{
	struct sib_cm_rep_param p = {
		.qpn = 0x654321, .starting_psn = 0x0FEDCB, .responder_resources = 3,
		.initiator_depth = 4, .target_ack_delay = 9, .failover_accepted = 0,
		.flow_control = 1, .rnr_retry_count = 5, .srq = 1,
		.pdata_len = sizeof(rep_pdata), .pdata = rep_pdata,
	};

	return p;
}

/* A listener on CA b and a connected pair: *act on CA a, *pas on CA b. */
struct sib_cm_id *listen_on(struct fx *f, unsigned int b, uint64_t sid)
{
	struct sib_cm_id *l = sib_cm_id_new(f->sn, f->ca[b], 1, handler, (void *)"listener");

	assert_non_null(l);
	assert_int_equal(CALL(sib_cm_listen(l, sid, ~0ull)), 0);
	return l;
}

void connect_pair(struct fx *f, struct sib_cm_id **act, struct sib_cm_id **pas)
{
	struct sib_cm_req_param rq = req_param(f, 0, 1);
	struct sib_cm_rep_param rp = rep_param();
	unsigned int base = nevs;
	struct evrec *r;

	*act = sib_cm_id_new(f->sn, f->ca[0], 1, handler, (void *)"active");
	assert_non_null(*act);
	assert_int_equal(CALL(sib_cm_send_req(*act, &rq)), 0);
	pump(f);
	r = ev_find(SIB_CM_REQ_RECEIVED, base);
	assert_non_null(r);
	*pas = r->id;
	assert_int_equal(CALL(sib_cm_send_rep(*pas, &rp)), 0);
	pump(f);
	assert_non_null(ev_find(SIB_CM_REP_RECEIVED, base));
	assert_int_equal(CALL(sib_cm_send_rtu(*act, NULL, 0)), 0);
	pump(f);
	assert_non_null(ev_find(SIB_CM_RTU_RECEIVED, base));
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(*act)), "ESTABLISHED");
	assert_string_equal(sib_cm_state_str(sib_cm_id_state(*pas)), "ESTABLISHED");
	assert_true(pump(f) == 0);	/* established: no timer left on either side */
}

