/* SPDX-License-Identifier: MIT */
/*
 * Inside the IB CM agent (cm.c, cm_rx.c): its bounds, states and table
 * inputs, the layout of an id and of the agent's context, and the helpers
 * both halves use.  Private to src/subnet/cm*.c and the tests.
 */
#ifndef SIB_SUBNET_CM_INT_H
#define SIB_SUBNET_CM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "iba/cm.h"
#include "softib/mai.h"
#include "subnet/cm.h"

/* Bounds (documented in cm.h's counters and docs/subnet.md). */
#define CM_MAX_IDS	65536u	/* live ids (comm IDs in use, TimeWait included) */
#define CM_MAX_EVENTS	65536u	/* queued events */
#define CM_MAX_OUT	65536u	/* queued MADs */
#define CM_MAX_LISTEN	4096u	/* listeners */
/*
 * Every timer is capped at 1 s: a response timeout (IBA 12.4: the sender
 * picks it, 4.096 us * 2^t, up to 2^31 units: hours), the MRA's service
 * time and TimeWait.  The peer is a CM of this same subnet that answers
 * at once, so a shorter wait loses nothing the IBA promises, and a test
 * of retries never takes more than max_cm_retries seconds.
 */
#define CM_TIMER_CAP_NS	1000000000ull
#define CM_COMM_MUL	0x9E3779B1u	/* odd: comm ID = (gen:slot * MUL) ^ secret */

enum cm_state {
	CM_IDLE, CM_LISTEN, CM_REQ_SENT, CM_REQ_RCVD, CM_MRA_REQ_SENT, CM_MRA_REQ_RCVD,
	CM_REP_SENT, CM_REP_RCVD, CM_MRA_REP_SENT, CM_MRA_REP_RCVD, CM_ESTABLISHED,
	CM_DREQ_SENT, CM_DREQ_RCVD, CM_TIMEWAIT, CM_SIDR_REQ_SENT, CM_SIDR_REQ_RCVD,
	CM_STATE_MAX,
	CM_STAY = CM_STATE_MAX,	/* table: keep the state */
};

/* What the table is indexed by besides the state. */
enum cm_input {
	IN_TX_REQ, IN_TX_REP, IN_TX_RTU, IN_TX_REJ, IN_TX_MRA, IN_TX_DREQ, IN_TX_DREP,
	IN_TX_SIDR_REQ, IN_TX_SIDR_REP, IN_LISTEN, IN_ESTABLISH,
	IN_RX_REQ, IN_RX_MRA, IN_RX_REJ, IN_RX_REP, IN_RX_RTU, IN_RX_DREQ, IN_RX_DREP,
	IN_RX_SIDR_REP, IN_TIMEOUT,
	IN_MAX,
};

/* One end of one connection, or a listener (cm.h). */
struct sib_cm_id {
	struct sib_subnet *sn;
	struct sib_fab_node *node;	/* NULL once the CA is gone */
	uint8_t port;
	uint8_t state;			/* enum cm_state */
	bool zombie;			/* destroyed: no events, freed after TimeWait */
	bool passive;			/* made by a REQ (or SIDR_REQ) */
	bool timer_pending;		/* armed since the last tick: starts at the next */
	uint8_t retries_left;
	uint8_t max_retries;
	uint8_t plt;			/* packet life time exponent of the path */
	uint8_t rsp_timeout;		/* the peer's CM response timeout exponent */
	sib_cm_handler handler;
	void *ctx;
	uint32_t slot;
	uint32_t local_id, remote_id;	/* comm IDs; SIDR: RequestID */
	uint64_t remote_ca_guid;
	uint32_t local_qpn, remote_qpn;
	uint16_t dlid;			/* the peer's LID */
	uint64_t service_id, mask;	/* LISTEN; SIDR_REQ_RCVD: its ServiceID */
	uint64_t timeout_ns;		/* one try's response timeout */
	uint64_t pending_ns;		/* the armed timer's length */
	uint64_t deadline;		/* 0: none */
	unsigned int nevents;		/* events queued for it */
	uint8_t msg[CM_MAD_SIZE];	/* the last message sent (retries, duplicates) */
	struct sib_cm_id *prev, *next;	/* the live list */
};

/* One queued event and the bytes it points to. */
struct cm_ev {
	struct cm_ev *next;
	struct sib_cm_event ev;
	uint8_t pdata[CM_MAD_SIZE];
	uint8_t ari[72];
};

/* One queued MAD. */
struct cm_out {
	struct cm_out *next;
	struct sib_fab_node *node;
	uint8_t port;
	mai_mad_t m;
};

/* The agent's context: one per subnet (sn->cm). */
struct sib_cm {
	struct sib_cm_id **slots;	/* CM_MAX_IDS */
	uint16_t *gen;			/* per slot: bumped at each allocation */
	uint32_t hint, secret, mul_inv;
	struct sib_cm_id *live;
	unsigned int nlisten;
	unsigned int ntimed;		/* ids with a timer pending or running */
	struct cm_ev *evh, *evt;
	size_t nev;
	struct cm_out *outh, *outt;
	size_t nout;
	uint64_t tid;
	bool in_dispatch;
	struct sib_cm_counters ctr;
	sib_cm_tx_drop_fn tx_drop;	/* test hook */
	void *tx_drop_ctx;
};

/* What an action is given: a send's parameters or the MAD received. */
struct cm_arg {
	const void *param;
	const uint8_t *mad;		/* received */
	const uint8_t *pdata;
	uint8_t len;
	uint16_t reason;
	const uint8_t *ari;
	uint8_t ari_len;
	uint8_t service_timeout;
};

/* ---- cm.c ---- */

/* The agent's context of sn, made on first use (NULL: no memory). */
struct sib_cm *cm_ctx(struct sib_subnet *sn);
/* A new id on (n, port) with a fresh comm ID (NULL: the bound, or memory). */
struct sib_cm_id *cm_id_alloc(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port);
/* The live id whose local comm ID is cid (NULL: none). */
struct sib_cm_id *cm_id_by_comm(const struct sib_cm *cm, uint32_t cid);
/* Queue a copy of the CM MAD `mad` to leave (n, port) for dlid (counted). */
void cm_queue_mad(struct sib_cm *cm, struct sib_fab_node *n, uint8_t port, uint16_t dlid,
		  const uint8_t *mad);
/* The TID of the next CM MAD (channel SIB_MAD_CHAN_CM). */
uint64_t cm_next_tid(struct sib_cm *cm);
/* Queue an event for id (NULL: a destroyed id, or no memory: counted). */
struct cm_ev *cm_ev_new(struct sib_cm_id *id, enum sib_cm_event_type type);
/* The private data of the message in mad onto e. */
void cm_ev_pdata(struct cm_ev *e, const uint8_t *mad, uint16_t attr);
/* SIDR_REP fields (RequestID, status, ServiceID, QPN, Q_Key, data). */
void cm_put_sidr_rep(uint8_t *m, uint32_t rid, uint64_t sid, const struct sib_cm_sidr_rep_param *p);
/* Run table input `in` on id.  0 or -errno (not allowed: -EINVAL). */
int cm_step(struct sib_cm_id *id, enum cm_input in, const struct cm_arg *a);

#endif
