/* SPDX-License-Identifier: MIT */
/*
 * Inside the rdma_cm (cma.c: context, addresses, ids, binding, address and
 * route resolution; cma_conn.c: connections over the IB CM and
 * rdma_init_qp_attr).  Private to those two files.
 */
#ifndef SIB_SUBNET_CMA_INT_H
#define SIB_SUBNET_CMA_INT_H

#include "subnet/cm.h"
#include "subnet/cma.h"
#include "subnet/subnet_int.h"
#include "iba/sa.h"

#define CMA_AF_INET  2
#define CMA_AF_INET6 10
#define CMA_AF_IB    27
#define CMA_HDR_LEN  36   /* struct cma_hdr (research §3 "CMA header") */

/* An address as the cma compares it (sockaddr_in/in6/ib decoded). */
struct cma_addr {
	uint16_t family;              /* 0: none */
	uint16_t port;                /* host order */
	uint8_t ip[16];               /* IPv4 in ip[0..3]; IPv6 or AF_IB GID */
	uint16_t pkey;                /* AF_IB */
	uint64_t sid;                 /* AF_IB ServiceID */
	uint64_t sid_mask;            /* AF_IB sib_sid_mask as given */
};

/* An id's state (linux enum rdma_cm_state, with the CM's part split). */
enum cma_state {
	CMA_IDLE,
	CMA_ADDR_BOUND,
	CMA_ADDR_QUERY,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_QUERY,
	CMA_ROUTE_RESOLVED,
	CMA_CONNECT,                  /* active: REQ or SIDR_REQ sent */
	CMA_CONN_RESPONSE,            /* active: REP came, CONNECT_RESPONSE given */
	CMA_REQ_RCVD,                 /* passive: CONNECT_REQUEST given */
	CMA_ACCEPTED,                 /* passive: REP sent, waiting for the RTU */
	CMA_ESTABLISHED,
	CMA_DISCONNECT,               /* DREQ sent or received */
	CMA_LISTEN,
	CMA_DONE,                     /* rejected, unreachable, disconnected: nothing more */
};

/* A port number of a port space and the ids bound to it. */
struct cma_bucket {
	struct cma_bucket *next;
	struct sib_cma *cma;
	uint32_t ps;
	uint16_t port;
	uint64_t sid;                 /* an AF_IB ServiceID outside (ps << 16) | port (cma_raw_sid), else 0 */
	struct sib_cma_id *owners;    /* through sib_cma_id.bnext */
	struct sib_cm_id *cm;         /* the CM listener of its ServiceID, while one listens */
	const struct sib_fab_node *cm_node; /* the CA it was made on */
};

/* A multicast group an id joined or is joining (cma_mcast.c; the
 * kernel's struct cma_multicast). */
struct cma_mc {
	struct cma_mc *next;
	uint64_t cookie;              /* JOIN_MCAST's uid: echoed as the events' listen_uid */
	uint8_t addr[SIB_CM_ADDR_LEN];/* the address as given (LEAVE names it so) */
	uint16_t addr_len;
	uint8_t mgid[16];             /* asked (zero: the SA assigns one), then the group's */
	uint8_t join_state;           /* MCMemberRecord.JoinState: 1 full, 8 send-only full */
	bool pending, answered, joined;
	uint16_t status;              /* the SA's MAD status */
	uint64_t tid, deadline;
	struct sa_mcmember_record rec;/* the SA's answer */
};

/* A queued event. */
struct cma_ev {
	struct cma_ev *next;
	struct sib_cma_id *id;
	struct sib_ctl_cm_event ev;
};

struct cma_ip {                       /* an address added (sib_cma_addr_add) */
	uint32_t dev_index;
	uint8_t port, prefix;
	uint16_t family;
	uint8_t ip[16];
};

struct sib_cma {
	struct sib_subnet *sn;
	const struct sib_cma_host *host;
	void *host_ctx;
	uint64_t rnd;
	struct sib_cma_id *ids;       /* every live id */
	struct cma_bucket *buckets;
	struct cma_ev *ev_head, *ev_tail;
	struct cma_ip ips[SIB_CMA_ADDRS_MAX];
	uint32_t nips;
	uint64_t now_ns;              /* the last tick's time */
	uint32_t tid_next;
	bool dispatching;
	struct sib_cma_counters ctr;
};

struct sib_cma_id {
	struct sib_cma *cma;
	struct sib_cma_id *prev, *next;
	struct sib_cma_id *bnext;
	struct cma_bucket *bucket;
	uint64_t owner, uid;
	void *host;
	uint32_t ps, qp_type;
	enum cma_state state;
	struct cma_addr src, dst;
	/* the device it is attached to */
	bool dev_set;
	uint32_t dev_index, dev_gen;
	struct sib_fab_node *node;
	uint8_t port;
	uint16_t pkey;
	uint8_t sgid[16], dgid[16];
	struct sib_cm_path path[SIB_CM_PATHS_MAX];
	uint8_t num_paths;
	/* options */
	bool tos_set, reuseaddr, afonly, ack_timeout_set;
	uint8_t tos, ack_timeout;
	/* listening */
	uint32_t backlog, pending;
	struct sib_cma_id *listener;  /* passive ids until accepted or rejected */
	/* the connection */
	struct sib_cm_id *cm;
	bool passive;
	bool dreq_rcvd;                /* DISCONNECT: the peer's DREQ came (DREP to send) */
	uint32_t local_qpn, remote_qpn, local_psn, remote_psn, qkey;
	uint8_t resp_res, init_depth, retry_cnt, rnr_retry, plt, target_ack_delay;
	/* the route query in flight */
	bool rq_pending, rq_answered;
	uint64_t rq_tid, rq_deadline;
	uint16_t rq_status;
	struct sib_cm_path rq_path;
	uint32_t events;              /* events given to the host */
	/* multicast groups (cma_mcast.c) */
	struct cma_mc *mcs;
	uint32_t nmcs;
};

/* cma.c */
uint32_t cma_random(struct sib_cma *cma);
/* Queue an event of id (its fields filled by the caller through the
 * returned pointer; NULL without memory, counted). */
struct sib_ctl_cm_event *cma_post(struct sib_cma_id *id, enum sib_cma_event_type type,
				  int32_t status);
/* The verbs device of node n (its index, gen), false if none. */
bool cma_node_dev(struct sib_cma *cma, const struct sib_fab_node *n, uint32_t *dev,
		  uint32_t *gen);
/* The GID 0 of CA port p of n. */
void cma_port_gid(const struct sib_fab_node *n, uint8_t p, uint8_t gid[16]);
/* Attach id to (dev, node, port): P_Key index 0, SGID. */
void cma_attach(struct sib_cma_id *id, uint32_t dev, uint32_t gen, struct sib_fab_node *n,
		uint8_t port);
struct sib_cma_id *cma_id_alloc(struct sib_cma *cma, uint64_t owner, uint64_t uid, uint32_t ps,
				uint32_t qp_type);
void cma_bucket_join(struct cma_bucket *b, struct sib_cma_id *id);
int cma_listen_check(const struct sib_cma_id *id);
bool cma_addr_any(const struct cma_addr *a);
bool cma_addr_loopback(const struct cma_addr *a);
/* Is address a owned by a CA port?  (dev, port) then. */
bool cma_addr_owner(struct sib_cma *cma, const struct cma_addr *a, uint32_t *dev, uint8_t *port);
/* Encode a into out (sockaddr bytes); its length. */
uint16_t cma_addr_encode(const struct cma_addr *a, uint8_t *out);

int cma_addr_decode(const void *sa, uint32_t len, struct cma_addr *a);
/* An SA MAD of the id's port to its SM (QP1 to QP1, the GSI Q_Key) with a
 * new TID of the cma's MAD channel, data = the record's 200 bytes. */
int cma_sa_mad(struct sib_cma_id *id, uint8_t method, uint16_t attr_id, uint64_t comp_mask,
	       const uint8_t *data, mai_mad_t *m);

/* cma_mcast.c */
bool cma_addr_mcast(const struct cma_addr *a);
/* The MGID of group a for id (cma_set_mgid). */
void cma_mc_mgid(const struct sib_cma_id *id, const struct cma_addr *a, uint8_t mgid[16]);
/* Every group of id goes (a SubnAdmDelete each when send). */
void cma_mc_destroy(struct sib_cma_id *id, bool send);
/* Answers stored by cma_mc_sa_receive -> events. */
void cma_mc_dispatch(struct sib_cma *cma);
/* Joins timed out by now -> MULTICAST_ERROR; the next deadline (0: none). */
uint64_t cma_mc_tick(struct sib_cma *cma, uint64_t now_ns);
/* An SA answer of a join in flight: stored, true; else false. */
bool cma_mc_sa_receive(struct sib_cma *cma, const struct sib_fab_node *n, uint8_t port,
		       const struct mai_mad *m, const uint8_t *wire);

/* cma_conn.c */
bool cma_is_ud(const struct sib_cma_id *id);
/* The id's CM side ends (destroy): REJ/DREQ as the state needs. */
void cma_conn_destroy(struct sib_cma_id *id);
/* The bucket's CM listener (ServiceID (ps << 16) + port): 0 or -errno. */
int cma_conn_listen(struct cma_bucket *b);

#endif
