/* SPDX-License-Identifier: MIT */
/*
 * The IB Communication Manager agent (IBA 1.4 vol 1, chapter 12) of every
 * CA port of the subnet: CM MADs (class 0x07, method Send, QP1, Q_Key
 * 0x80010000; src/iba/cm.h has the layouts) leave and arrive through the
 * MAD router like any GMP, so that a capture shows them and a CM on
 * another host could answer.  Its user is the rdma_cm (cma.c), as the
 * kernel's cma.c is ib_cm's.
 *
 * Model (the kernel's ib_cm API, as facts: research/rdmacm.md §3):
 * - A `struct sib_cm_id` is one end of one connection (or a listener),
 *   named on the wire by its local communication ID; the CM creates the
 *   passive end's id when a REQ (or SIDR_REQ) matches a listener.
 * - The user sends with sib_cm_send_*; each checks the id's state against
 *   the table in cm.c (state x message -> action, next state) and returns
 *   -EINVAL when the message is not allowed in that state.
 * - What arrives is given to the id's handler as a struct sib_cm_event,
 *   never from inside a sib_cm_* call the user made (STYLE 6.x, seed 004:
 *   callbacks never run in the call chain that caused them): the CM queues
 *   events and sib_cm_dispatch() delivers them; the host calls it after
 *   every command it ran and every MAD it routed, and sib_cm_tick() with
 *   the time for the timers (REQ/REP/DREQ retries, MRA, TimeWait).
 * - Retries follow IBA 12.4: a REQ, REP, DREQ or SIDR_REQ is sent again
 *   after its response timeout (4.096 us * 2^t), at most max_cm_retries
 *   times, then the id gets the *_ERROR event (the kernel's
 *   IB_CM_REQ_ERROR, ...).  A duplicate REQ (the same remote comm ID and
 *   CA GUID as a passive id's) is answered with MRA (or the REP again once
 *   sent); a REQ from a QPN and CA GUID an established passive id holds,
 *   with another comm ID (IBA 12.9.8.3.1 stale connection), gets REJ 10
 *   'stale connection' and the old connection gets DREQ.  A REQ for no
 *   listener gets REJ reason 8 (invalid service ID), a SIDR_REQ SIDR_REP
 *   status 1.
 * - Destroying an id sends what its state needs (REJ during a handshake,
 *   DREQ when established) and keeps the comm ID in TimeWait before it is
 *   reused.
 * - Timers (cm.c): the CM has no clock; a timer armed between two ticks
 *   starts at the next sib_cm_tick(now) (the host calls it after every
 *   dispatch, so that is at once).  Every timer (response timeout, the
 *   MRA's service time, TimeWait) is capped at 1 s: the peer is a CM of
 *   this subnet, and a test of retries takes at most max_cm_retries s.
 * - Bounds: 65536 ids (TimeWait included; a REQ past it gets REJ 3 'no
 *   resources'), 65536 queued events (a MAD arriving past it is dropped),
 *   65536 queued MADs, 4096 listeners (-ENOMEM).
 * - Who sends where: an id sends from its CA port's QP1 to QP1 at the
 *   peer's LID: the active side's REQ primary.dlid (SIDR: path.dlid), the
 *   passive side's the REQ's PrimaryLocalPortLID (SIDR: the LRH SLID).  A
 *   reply is taken only at that port, from that LID, naming the id's comm
 *   ID (and the peer's, once known).  No GRH: one subnet.
 *
 * Single-threaded, like the whole subnet library; every bound checked on
 * MADs from the fabric (a MAD is hostile input: a bad one is dropped and
 * counted, never trusted).
 */
#ifndef SIB_SUBNET_CM_H
#define SIB_SUBNET_CM_H

#include <stdbool.h>
#include <stdint.h>

struct sib_subnet;
struct sib_fab_node;
struct sib_cm_id;

/* Events (linux include/rdma/ib_cm.h enum ib_cm_event_type, as facts). */
enum sib_cm_event_type {
	SIB_CM_REQ_ERROR,        /* active: no REP after the REQ's retries */
	SIB_CM_REQ_RECEIVED,     /* passive: a REQ matched a listener: ev->id is new */
	SIB_CM_REP_ERROR,        /* passive: no RTU after the REP's retries */
	SIB_CM_REP_RECEIVED,     /* active: send RTU (sib_cm_send_rtu) or REJ */
	SIB_CM_RTU_RECEIVED,     /* passive: established */
	SIB_CM_USER_ESTABLISHED, /* passive: sib_cm_notify(COMM_EST) instead of the RTU */
	SIB_CM_DREQ_ERROR,       /* no DREP after the DREQ's retries */
	SIB_CM_DREQ_RECEIVED,    /* send DREP (sib_cm_send_drep) */
	SIB_CM_DREP_RECEIVED,
	SIB_CM_TIMEWAIT_EXIT,
	SIB_CM_MRA_RECEIVED,
	SIB_CM_REJ_RECEIVED,
	SIB_CM_SIDR_REQ_ERROR,   /* active UD: no SIDR_REP after the retries */
	SIB_CM_SIDR_REQ_RECEIVED,/* passive UD: ev->id is new */
	SIB_CM_SIDR_REP_RECEIVED,
	SIB_CM_EVENT_MAX,
};

/* One path as REQ carries it (IBA 12.6.5 primary path fields). */
struct sib_cm_av {
	uint16_t slid, dlid;
	uint8_t sgid[16], dgid[16];
	uint32_t flow_label;          /* 20 bits */
	uint8_t traffic_class, hop_limit;
	uint8_t sl;                   /* 4 bits */
	uint8_t rate;                 /* IBA rate code */
	uint8_t packet_life_time;     /* 5 bits; LocalAckTimeout = it + 1 */
	bool global;                  /* a GRH is needed (SubnetLocal 0) */
};

/* REQ (IBA 12.6.5).  Sizes in bytes; times are the 5-bit exponents of
 * 4.096 us * 2^t. */
struct sib_cm_req_param {
	uint64_t service_id;
	uint32_t qpn;                 /* 24 bits */
	uint8_t qp_type;              /* enum ibv_qp_type: RC, UC (XRC later) */
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count; /* 3 bits each */
	uint8_t flow_control, srq;
	uint8_t path_mtu;             /* enum ibv_mtu */
	uint8_t local_cm_response_timeout, remote_cm_response_timeout;
	uint8_t max_cm_retries;       /* 4 bits */
	uint16_t pkey;
	uint32_t starting_psn;        /* 24 bits */
	struct sib_cm_av primary;
	uint8_t pdata_len;            /* <= 92 */
	const uint8_t *pdata;
};

/* REP (IBA 12.6.8). */
struct sib_cm_rep_param {
	uint32_t qpn;
	uint32_t starting_psn;
	uint8_t responder_resources, initiator_depth;
	uint8_t target_ack_delay, failover_accepted, flow_control;
	uint8_t rnr_retry_count, srq;
	uint8_t pdata_len;            /* <= 196 */
	const uint8_t *pdata;
};

/* SIDR_REQ (12.6.11) and SIDR_REP (12.6.12). */
struct sib_cm_sidr_req_param {
	uint64_t service_id;
	uint16_t pkey;
	struct sib_cm_av path;        /* to reach the peer's QP1 */
	uint8_t timeout;              /* response timeout exponent */
	uint8_t max_cm_retries;
	uint8_t pdata_len;            /* <= 216 */
	const uint8_t *pdata;
};
struct sib_cm_sidr_rep_param {
	uint8_t status;               /* 0 valid, 1 service ID not supported, 2 rejected, ... */
	uint32_t qpn, qkey;
	uint8_t pdata_len;            /* <= 136 */
	const uint8_t *pdata;
};

/* What a handler gets.  Pointers are valid during the call only.
 * REQ_RECEIVED: u.req holds the REQ's fields as the active side sent them
 * (primary.slid/sgid are the active side's, primary.dlid/dgid this side's;
 * primary.packet_life_time is the REQ's LocalACKTimeout - 1), qp_type 2
 * (RC) or 3 (UC).  SIDR_REQ_RECEIVED: u.sidr_req.path.slid is the
 * requester's LID, path.dlid this port's.  REJ_RECEIVED: u.rej.ari points
 * to the 72 ARI bytes, ari_len their used length.  pdata/pdata_len: the
 * whole private data field of the message (REQ 92, REP 196, REJ 148, RTU
 * and DREP 224, DREQ 220, MRA 222, SIDR_REQ 216, SIDR_REP 136 bytes). */
struct sib_cm_event {
	enum sib_cm_event_type type;
	struct sib_cm_id *id;         /* REQ/SIDR_REQ_RECEIVED: the new passive id */
	struct sib_cm_id *listen_id;  /* REQ/SIDR_REQ_RECEIVED: the listener it matched */
	union {
		struct sib_cm_req_param req;   /* REQ_RECEIVED (remote values) */
		struct sib_cm_rep_param rep;   /* REP_RECEIVED */
		struct sib_cm_sidr_req_param sidr_req;
		struct sib_cm_sidr_rep_param sidr_rep;
		struct { uint16_t reason; uint8_t ari_len; const uint8_t *ari; } rej;
		struct { uint8_t service_timeout; } mra;
	} u;
	uint8_t port_num;             /* where it arrived (REQ/SIDR_REQ_RECEIVED) */
	const struct sib_fab_node *node;
	uint8_t pdata_len;            /* the message's whole private data field */
	const uint8_t *pdata;
};

/*
 * A handler: return 0, or nonzero to have the CM destroy ev->id after the
 * call (as if sib_cm_id_destroy were called: a new passive id the user
 * does not want gets REJ).
 */
typedef int (*sib_cm_handler)(struct sib_cm_id *id, const struct sib_cm_event *ev, void *ctx);

/* A new id on CA port `port` of n (its QP1 sends), handler and ctx its
 * user's.  NULL: no memory, or n is no CA / port out of range. */
struct sib_cm_id *sib_cm_id_new(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port,
				sib_cm_handler handler, void *ctx);

/* Destroy: sends what the state needs (REQ_SENT: REJ Timeout with the CA
 * GUID as ARI; the rest of the handshake: REJ consumer reject;
 * ESTABLISHED: DREQ; DREQ_RCVD: DREP; SIDR_REQ_RCVD: SIDR_REP status 2),
 * the comm ID waits out TimeWait where the state has one, and no event of
 * this id is delivered after it returns.  A listener's new ids whose
 * REQ_RECEIVED is still queued are destroyed with it (their REQ gets REJ).
 * Not from the id's own handler (return nonzero there instead); another
 * id's handler may. */
void sib_cm_id_destroy(struct sib_cm_id *id);

/* The user's context of an id (a passive id the CM makes starts with its
 * listener's handler and ctx). */
void sib_cm_id_set_handler(struct sib_cm_id *id, sib_cm_handler handler, void *ctx);
uint32_t sib_cm_id_local_comm_id(const struct sib_cm_id *id);

/* Listen for REQs and SIDR_REQs whose ServiceID & mask == service_id & mask,
 * on every CA port of the subnet (the rdma_cm filters by address).
 * -EBUSY: a listener with that ID exists. */
int sib_cm_listen(struct sib_cm_id *id, uint64_t service_id, uint64_t mask);

/* Messages (IBA 12.6).  0, -EINVAL (not allowed in the id's state, or a
 * parameter out of range), -ENOMEM. */
int sib_cm_send_req(struct sib_cm_id *id, const struct sib_cm_req_param *p);
int sib_cm_send_rep(struct sib_cm_id *id, const struct sib_cm_rep_param *p);
int sib_cm_send_rtu(struct sib_cm_id *id, const uint8_t *pdata, uint8_t len);
int sib_cm_send_rej(struct sib_cm_id *id, uint16_t reason, const uint8_t *ari, uint8_t ari_len,
		    const uint8_t *pdata, uint8_t len);
int sib_cm_send_mra(struct sib_cm_id *id, uint8_t service_timeout, const uint8_t *pdata, uint8_t len);
int sib_cm_send_dreq(struct sib_cm_id *id, const uint8_t *pdata, uint8_t len);
int sib_cm_send_drep(struct sib_cm_id *id, const uint8_t *pdata, uint8_t len);
int sib_cm_send_sidr_req(struct sib_cm_id *id, const struct sib_cm_sidr_req_param *p);
int sib_cm_send_sidr_rep(struct sib_cm_id *id, const struct sib_cm_sidr_rep_param *p);
/* The passive side learned the connection is up without an RTU (the QP
 * got a packet: IBV_EVENT_COMM_EST): USER_ESTABLISHED, then as if the RTU
 * came. */
int sib_cm_establish(struct sib_cm_id *id);

/* The host's clock: run the timers due at now_ns (CLOCK_MONOTONIC ns) and
 * deliver the queued events.  Returns the next deadline (0: none). */
uint64_t sib_cm_tick(struct sib_subnet *sn, uint64_t now_ns);
/* Deliver the queued events only. */
void sib_cm_dispatch(struct sib_subnet *sn);

/* Counters for `softib status` ("cm" line). */
struct sib_cm_counters {
	uint64_t sent[16], received[16]; /* by attribute ID - 0x10 (REQ .. APR) */
	uint64_t resent;              /* retries */
	uint64_t timeouts;            /* *_ERROR events */
	uint64_t dropped;             /* malformed, unknown comm ID, wrong state */
	uint64_t ids;                 /* live ids */
};
const struct sib_cm_counters *sib_cm_counters(const struct sib_subnet *sn);

/* For logs, status and tests: an id's state (enum in cm.c) and the names
 * of states, table inputs and events ("REQ_SENT", "send REQ", "REQ_ERROR";
 * "?" out of range). */
unsigned int sib_cm_id_state(const struct sib_cm_id *id);
const char *sib_cm_state_str(unsigned int state);
const char *sib_cm_input_str(unsigned int input);
const char *sib_cm_event_str(enum sib_cm_event_type type);

/* Test hook: every CM MAD about to leave (256 bytes, wire form, from LID
 * slid to dlid) is shown to drop(); true loses it (as the fabric would).
 * NULL: none. */
typedef bool (*sib_cm_tx_drop_fn)(void *ctx, const uint8_t *mad, uint16_t slid, uint16_t dlid);
void sib_cm_set_tx_drop(struct sib_subnet *sn, sib_cm_tx_drop_fn drop, void *ctx);

#endif
