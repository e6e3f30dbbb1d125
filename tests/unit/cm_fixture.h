/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the IB CM tests (test_cm.c, test_cm_random.c): the
 * default fabric loaded into a subnet context with a stub host, the CM's
 * events as the handler saw them, MADs lost through the CM's test hook,
 * the test's own clock, and REQ/REP parameters as the rdma_cm makes them.
 */
#ifndef SIB_TEST_CM_FIXTURE_H
#define SIB_TEST_CM_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "iba/cm.h"
#include "subnet/cm.h"
#include "subnet/mad_router.h"
#include "subnet/subnet_api.h"

/* One event as a handler saw it. */
struct evrec {
	enum sib_cm_event_type type;
	struct sib_cm_id *id, *listen_id;
	void *ctx;
	struct sib_cm_event ev;		/* pointers cleared: see the copies */
	uint8_t pdata[CM_MAD_SIZE];
	uint8_t pdata_len;
	uint8_t ari[72];
};

#define MAX_EV 4096
extern struct evrec evs[MAX_EV];
extern unsigned int nevs;
extern bool in_call;		/* the test is inside a sib_cm_* call */
extern int ret_on;		/* the handler returns 1 for this event type */
extern void (*on_event)(struct evrec *r);
extern struct sib_cm_id *destroy_in_handler;	/* destroyed by the next USER_ESTABLISHED's handler */
extern struct sib_subnet *remove_sn;		/* ... and this CA removed */
extern struct sib_fab_node *remove_ca;

/* Run a call into the CM with the flag up: no handler may run inside. */
#define CALL(x) ({ in_call = true; __typeof__(x) r_ = (x); in_call = false; r_; })
#define CALLV(x) do { in_call = true; x; in_call = false; } while (0)

/* Records every event, asserts it is not inside a call of the test. */
int handler(struct sib_cm_id *id, const struct sib_cm_event *ev, void *ctx);
/* The first event of type t from index `from` on (NULL: none); how many of
 * type t id got (NULL: anyone). */
struct evrec *ev_find(enum sib_cm_event_type t, unsigned int from);
unsigned int ev_count(enum sib_cm_event_type t, struct sib_cm_id *id);

/* The subnet, its four CAs (port 1 each) and their LIDs, the clock. */
struct fx {
	struct sib_subnet *sn;
	struct sib_fab_node *ca[4];
	uint16_t lid[4];
	uint64_t now;
};

/* MADs lost: the next drop_next of attribute drop_attr (0: any); every MAD
 * from or to cut_lid; dropped_seen counts them. */
extern unsigned int drop_next;
extern uint16_t drop_attr;
extern unsigned int dropped_seen;
extern uint16_t cut_lid;
bool tx_drop(void *ctx, const uint8_t *mad, uint16_t slid, uint16_t dlid);

int setup(void **state);
int teardown(void **state);
/* What the host does after a command or a routed MAD: dispatch, then tick
 * (returns the next deadline). */
uint64_t pump(struct fx *f);
uint64_t advance(struct fx *f, uint64_t ns);
/* Run the timers until none is left (at most max ticks). */
void run_out(struct fx *f, unsigned int max);

extern const uint8_t req_pdata[56];
extern const uint8_t rep_pdata[196];
/* A REQ from CA a to CA b as the rdma_cm makes one; a REP. */
struct sib_cm_req_param req_param(const struct fx *f, unsigned int a, unsigned int b);
struct sib_cm_rep_param rep_param(void);
/* A listener on CA b; a pair connected from CA 0 (*act) to CA 1 (*pas),
 * whose listener the caller made. */
struct sib_cm_id *listen_on(struct fx *f, unsigned int b, uint64_t sid);
void connect_pair(struct fx *f, struct sib_cm_id **act, struct sib_cm_id **pas);

#endif
