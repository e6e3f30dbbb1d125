/* SPDX-License-Identifier: MIT */
/*
 * The rdma_cm of the subnet (docs/rdmacm.md): ids with port spaces and IP
 * addresses, address and route resolution, connections over the IB CM
 * agent (cm.h), as linux's drivers/infiniband/core/cma.c behaves
 * (research/rdmacm.md §2-§4 are the facts; no code carried over).  Its host
 * (softibd's daemon/ucma.c) plays the kernel's ucma: it turns SIB_CTL_CM
 * commands (common/sib_ctl_cm.h) into these calls and the events below
 * into SIB_CTL_CM_EVENT messages on the owner's channels.
 *
 * - An id has an owner (an opaque host token: softibd's connection) and a
 *   user cookie (`uid`, echoed in its events); the host keeps its own
 *   handle in `host` (sib_cma_id_set_host).
 * - Events are queued and given to the host's `event` entry from
 *   sib_cma_dispatch() only, never from inside the call that caused them
 *   (STYLE: callbacks never run in the call chain that caused them); the
 *   host calls sib_cma_dispatch after every command it ran and every MAD it
 *   routed, and sib_cma_tick with the time (route query timeouts; the CM's
 *   timers run in sib_cm_tick, which sib_cma_tick calls).
 * - Addresses (issue 16 item 4, research §4 option 1, a table): CA port
 *   p of the verbs device with index d has 127.1.d.p and the IPv6 address
 *   equal to its GID 0 (fe80::GUID), plus what sib_cma_addr_add added
 *   (softibd's --ip, `softib ipoib DEV PORT add`; sib_cma_addr_del
 *   deletes those).  127.0.0.1, any 127/8 address no port owns, ::1 and the wildcard are "loopback": they resolve to the first ACTIVE
 *   CA port (GID index 0, P_Key index 0, DGID = SGID), as the kernel's
 *   cma_bind_loopback.  Real ARP over IPoIB comes later.
 *
 * Single-threaded, like the whole subnet library.
 */
#ifndef SIB_SUBNET_CMA_H
#define SIB_SUBNET_CMA_H

#include <stdbool.h>
#include <stdint.h>

#include "common/sib_ctl_cm.h"

struct sib_subnet;
struct sib_fab_node;
struct sib_cma;
struct sib_cma_id;

/* Port spaces (rdma_cma.h enum rdma_port_space). */
#define SIB_CMA_PS_IPOIB 0x0002u
#define SIB_CMA_PS_TCP   0x0106u
#define SIB_CMA_PS_UDP   0x0111u
#define SIB_CMA_PS_IB    0x013Fu
#define SIB_CMA_UDP_QKEY 0x01234567u       /* RDMA_UDP_QKEY */
#define SIB_CMA_IPOIB_QKEY 0x00000B1Bu     /* the IPoIB broadcast group's Q_Key (OpenSM's
                                            * default; the kernel reads the group's) */

/* Event types (rdma_cma.h enum rdma_cm_event_type, as numbers). */
enum sib_cma_event_type {
	SIB_CMA_EV_ADDR_RESOLVED = 0,
	SIB_CMA_EV_ADDR_ERROR,
	SIB_CMA_EV_ROUTE_RESOLVED,
	SIB_CMA_EV_ROUTE_ERROR,
	SIB_CMA_EV_CONNECT_REQUEST,
	SIB_CMA_EV_CONNECT_RESPONSE,
	SIB_CMA_EV_CONNECT_ERROR,
	SIB_CMA_EV_UNREACHABLE,
	SIB_CMA_EV_REJECTED,
	SIB_CMA_EV_ESTABLISHED,
	SIB_CMA_EV_DISCONNECTED,
	SIB_CMA_EV_DEVICE_REMOVAL,
	SIB_CMA_EV_MULTICAST_JOIN,
	SIB_CMA_EV_MULTICAST_ERROR,
	SIB_CMA_EV_ADDR_CHANGE,
	SIB_CMA_EV_TIMEWAIT_EXIT,
};

/* Bounds (docs/rdmacm.md "Limits"). */
#define SIB_CMA_EPHEMERAL_LO 32768u       /* ip_local_port_range's default */
#define SIB_CMA_EPHEMERAL_HI 60999u
#define SIB_CMA_ADDRS_MAX    256u         /* addresses added by sib_cma_addr_add */
#define SIB_CMA_ROUTE_TIMEOUT_MAX 60000u  /* ms: a longer RESOLVE_ROUTE timeout is clamped */
/* CM timers of a REQ/SIDR_REQ (research §3 "Timers": the kernel's
 * CMA_CM_RESPONSE_TIMEOUT 20, CMA_MAX_CM_RETRIES 15); the CM caps the
 * time (cm.c). */
#define SIB_CMA_CM_RESPONSE_TIMEOUT 20
#define SIB_CMA_MAX_CM_RETRIES      15

/*
 * The host's entries, called with host_ctx.
 * - event: an event of id (ev->uid, listen_uid, event, status and the rest
 *   filled; ev->id and ev->listen_id are the host's handles to fill).  For
 *   CONNECT_REQUEST id is a new id of the listener's owner: return nonzero
 *   to refuse it (a budget): the cma rejects the connection and destroys
 *   the id.  Other events: the return is ignored.  The host must not call
 *   the cma from here.
 * - device: the CA node of verbs device dev_index and its generation
 *   (*gen), or NULL (no such present device).
 * - now_ns: the host's clock (CLOCK_MONOTONIC ns), for deadlines.
 */
struct sib_cma_host {
	int (*event)(void *host_ctx, struct sib_cma_id *id, struct sib_ctl_cm_event *ev);
	struct sib_fab_node *(*device)(void *host_ctx, uint32_t dev_index, uint32_t *gen);
	uint64_t (*now_ns)(void *host_ctx);
};

/* Counters for `softib status` ("cma" line). */
struct sib_cma_counters {
	uint64_t ids;                 /* live ids */
	uint64_t created, destroyed;
	uint64_t events;              /* events given to the host */
	uint64_t route_queries, route_answers, route_timeouts;
	uint64_t connects, accepts, rejects_sent, rejected, established;
	uint64_t disconnects, unreachable;
	uint64_t req_dropped;         /* REQs no listener's address took, bad CMA headers */
	uint64_t mc_joins, mc_joined, mc_errors, mc_timeouts; /* SubnAdmSet(MCMemberRecord) */
	uint64_t mc_leaves, mc_bad_answers; /* SubnAdmDelete; malformed answers dropped */
};

/* The rdma_cm of sn (one per subnet; sn must have the MAD router running
 * to resolve routes).  h is kept by reference.  NULL: no memory. */
struct sib_cma *sib_cma_new(struct sib_subnet *sn, const struct sib_cma_host *h, void *host_ctx);
/* Destroy every id (as their owners going) and free the context. */
void sib_cma_delete(struct sib_cma *cma);
/* Seed the random numbers (ephemeral ports, PSNs); tests replay with it. */
void sib_cma_seed(struct sib_cma *cma, uint64_t seed);
const struct sib_cma_counters *sib_cma_counters(const struct sib_cma *cma);
/* Live ids in LISTEN now (`softib status` rdma_cm listening=; tests wait
 * on it for a server to be ready). */
unsigned int sib_cma_listening(const struct sib_cma *cma);

/* Deliver queued events (the CM's first: sib_cm_dispatch). */
void sib_cma_dispatch(struct sib_cma *cma);
/* Timers due at now_ns (CLOCK_MONOTONIC): route query timeouts, the CM's
 * (sib_cm_tick), then dispatch.  Returns the next deadline, 0 = none. */
uint64_t sib_cma_tick(struct sib_cma *cma, uint64_t now_ns);

/* ---- addresses (research/rdmacm.md §4) ---- */

/* Add address addr (struct sockaddr_in/in6 bytes, len) with prefix to CA
 * port (dev_index, port): 0, -EINVAL (family, prefix 0 or too long, port;
 * not a unicast address a port may get: 127/8 and 0/8, multicast,
 * 255.255.255.255, IPv6 loopback, link-local (the ports' GIDs),
 * IPv4-mapped or -compatible), -EEXIST, -ENOSPC (SIB_CMA_ADDRS_MAX). */
int sib_cma_addr_add(struct sib_cma *cma, uint32_t dev_index, uint8_t port, const void *addr,
		     uint32_t len, uint8_t prefix);
/* Delete address addr (sockaddr bytes) with prefix (SIB_CMA_PREFIX_ANY:
 * any, as `ip addr del` without a length) from CA port (dev_index, port),
 * as `ip addr del` (linux devinet.c inet_rtm_deladdr): 0, -EINVAL (family,
 * prefix, port), -EPERM (a default address: 127.1.d.p or the GID's; they
 * live as long as the port), -EADDRNOTAVAIL (the port has no such address
 * with that prefix).  Ids bound to it keep it: their connections and
 * listeners stay, as sockets on an address removed from a Linux netdev;
 * new binds to it fail with -EADDRNOTAVAIL (docs/rdmacm.md "Addresses"). */
#define SIB_CMA_PREFIX_ANY 0xffu
int sib_cma_addr_del(struct sib_cma *cma, uint32_t dev_index, uint8_t port, const void *addr,
		     uint32_t len, uint8_t prefix);
/* Drop every address added to device dev_index (it is unregistered: a
 * netdev's addresses go with it). */
void sib_cma_addr_flush(struct sib_cma *cma, uint32_t dev_index);
/* One address of a CA port (sib_cma_addr_get). */
struct sib_cma_addr_info {
	uint16_t family;              /* AF_INET 2 or AF_INET6 10 */
	uint8_t prefix;               /* prefix length */
	bool is_default;              /* 127.1.d.p or the GID's: not deletable */
	uint8_t addr[16];             /* IPv4 in addr[0..3], network order */
};
/* The index-th address of CA port (dev_index, port) of a present device:
 * 0 is 127.1.d.p/8, 1 the GID 0's IPv6 address/64, then the added ones in
 * the order they were added.  0, -EINVAL (no such device or port),
 * -ENOENT (past the last). */
int sib_cma_addr_get(struct sib_cma *cma, uint32_t dev_index, uint8_t port, uint32_t index,
		     struct sib_cma_addr_info *out);
/* Addresses added, every port together (`softib status`). */
uint32_t sib_cma_addr_count(const struct sib_cma *cma);
/* The default IPv4 address of (dev_index, port): 127.1.d.p in host order. */
uint32_t sib_cma_default_ip4(uint32_t dev_index, uint8_t port);

/* ---- ids ---- */

/* A new id of owner with cookie uid in port space ps (SIB_CMA_PS_*) for
 * a QP of type qp_type (enum ibv_qp_type).  -EINVAL (ps, qp_type),
 * -ENOMEM; *out set on 0. */
int sib_cma_create_id(struct sib_cma *cma, uint64_t owner, uint64_t uid, uint32_t ps,
		      uint32_t qp_type, struct sib_cma_id **out);
/* Destroy id: what its CM state needs goes on the wire (REJ in a
 * handshake, DREQ when connected), its queued events are dropped.
 * Returns the events it had reported (given to the host). */
uint32_t sib_cma_destroy_id(struct sib_cma_id *id);
/* CA n leaves (its device unregistered; call before the node is freed):
 * its ids lose their device and their connection (what the CM state
 * needs goes out) and get DEVICE_REMOVAL, as the kernel's cma_remove_one;
 * CM listeners made on n move to another CA. */
void sib_cma_node_gone(struct sib_cma *cma, const struct sib_fab_node *n);
/* Destroy every id of owner (its connection closed). */
void sib_cma_destroy_owner(struct sib_cma *cma, uint64_t owner);

void sib_cma_id_set_host(struct sib_cma_id *id, void *host);
void *sib_cma_id_host(const struct sib_cma_id *id);
uint64_t sib_cma_id_owner(const struct sib_cma_id *id);
void sib_cma_id_set_owner(struct sib_cma_id *id, uint64_t owner);
void sib_cma_id_set_uid(struct sib_cma_id *id, uint64_t uid);
uint64_t sib_cma_id_uid(const struct sib_cma_id *id);
uint32_t sib_cma_id_events(const struct sib_cma_id *id);
uint32_t sib_cma_id_ps(const struct sib_cma_id *id);
uint32_t sib_cma_id_qp_type(const struct sib_cma_id *id); /* enum ibv_qp_type, CREATE_ID's */
/* The device the id is attached to (SIB_CM_NO_DEVICE: none yet). */
uint32_t sib_cma_id_dev(const struct sib_cma_id *id);
/* A passive id's listener until it is accepted or rejected, else NULL. */
struct sib_cma_id *sib_cma_id_listener(const struct sib_cma_id *id);

/* ---- the commands (sib_ctl_cm.h; each returns 0 or -errno as the
 * kernel's ucma would) ---- */

/* BIND: rdma_bind_addr.  -EINVAL (state, address), -EAFNOSUPPORT,
 * -EADDRNOTAVAIL (an IP no port owns and not loopback; a wildcard beside
 * a bound address), -EADDRINUSE, -ENOSPC (no ephemeral port). */
int sib_cma_bind(struct sib_cma_id *id, const void *addr, uint32_t len);
/* RESOLVE_ADDR: src (len 0: none) bound first if given and not bound,
 * then ADDR_RESOLVED (or ADDR_ERROR) later. */
int sib_cma_resolve_addr(struct sib_cma_id *id, const void *src, uint32_t slen, const void *dst,
			 uint32_t dlen, uint32_t timeout_ms);
/* RESOLVE_ROUTE: an SA PathRecord query from the id's port to its SM;
 * ROUTE_RESOLVED or ROUTE_ERROR (-ETIMEDOUT after timeout_ms) later. */
int sib_cma_resolve_route(struct sib_cma_id *id, uint32_t timeout_ms);
/* QUERY: addresses, device, port, P_Key, GIDs, paths into out. */
void sib_cma_query(const struct sib_cma_id *id, struct sib_ctl_cm *out);
int sib_cma_listen(struct sib_cma_id *id, uint32_t backlog);
/* CONNECT: REQ (SIDR_REQ for UD) with the CMA header before pdata. */
int sib_cma_connect(struct sib_cma_id *id, const struct sib_cm_conn *conn, const uint8_t *pdata,
		    uint32_t len);
/* ACCEPT: passive REP (SIDR_REP for UD); active after CONNECT_RESPONSE: RTU. */
int sib_cma_accept(struct sib_cma_id *id, const struct sib_cm_conn *conn, const uint8_t *pdata,
		   uint32_t len);
/* REJECT: REJ with reason (0 or 28: consumer; 35: ECE) and pdata (a UD
 * id: SIDR_REP status 2). */
int sib_cma_reject(struct sib_cma_id *id, uint32_t reason, const uint8_t *pdata, uint32_t len);
int sib_cma_disconnect(struct sib_cma_id *id);
/* INIT_QP_ATTR: rdma_init_qp_attr's values for qp_state (1 INIT, 2 RTR,
 * 3 RTS). */
int sib_cma_init_qp_attr(const struct sib_cma_id *id, uint32_t qp_state,
			 struct sib_cm_qp_attr *out);
int sib_cma_notify(struct sib_cma_id *id, uint32_t event);
int sib_cma_set_option(struct sib_cma_id *id, uint32_t level, uint32_t optname,
		       const void *optval, uint32_t optlen);

/*
 * JOIN_MCAST: rdma_join_multicast(_ex) (linux cma.c rdma_join_multicast,
 * cma_join_ib_multicast; research/rdmacm.md §2 "Multicast").  A SubnAdmSet
 * (MCMemberRecord, IBA 15.2.5.17) from the id's port to its SM with the
 * MGID of addr (cma_set_mgid: AF_IB and SA-assigned IPv6 MGIDs as given,
 * other IPv4/IPv6 groups through ip_ib_mc_map/ipv6_ib_mc_map with the
 * port's P_Key, byte 3 0x01 in the UDP port space; the wildcard asks the
 * SA for a new MGID), the port's GID, its P_Key, JoinState (join_flags
 * RDMA_MC_JOIN_FLAG_FULLMEMBER 0 -> 1, SENDONLY_FULLMEMBER 1 -> 8), Q_Key
 * (RDMA_UDP_QKEY; the IPoIB broadcast group's for the IPOIB space), SL,
 * FlowLabel and TClass 0.  Later MULTICAST_JOIN (ah: DLID = MLID, GRH to
 * the MGID; ud_qp_num 0xFFFFFF, ud_qkey the group's) or MULTICAST_ERROR
 * (-EINVAL: the SA refused; -ETIMEDOUT: no answer in
 * SIB_CMA_MC_TIMEOUT_MS), with listen_uid = cookie.  Destroying the id
 * leaves every group.  The id must be bound
 * to a device (ADDR_BOUND or ADDR_RESOLVED) and UD.  -EINVAL (state, QP
 * type, address, flags), -EADDRINUSE (that address joined already),
 * -ENOBUFS (SIB_CMA_MC_MAX groups), -ENOMEM.
 */
#define SIB_CMA_MC_MAX        64u     /* groups per id */
#define SIB_CMA_MC_TIMEOUT_MS 3000u   /* linux multicast.c's join query timeout */
int sib_cma_join_mcast(struct sib_cma_id *id, uint64_t cookie, const void *addr, uint32_t len,
		       uint32_t join_flags);
/* LEAVE_MCAST: rdma_leave_multicast: a SubnAdmDelete of the membership
 * (not waited for), the group's queued events dropped; *cookie (if not
 * NULL) gets the group's cookie (JOIN_MCAST's uid, the events' listen_uid)
 * for the host to drop the events it still holds (the kernel's
 * ucma_cleanup_mc_events).  -EADDRNOTAVAIL (not joined). */
int sib_cma_leave_mcast(struct sib_cma_id *id, const void *addr, uint32_t len, uint64_t *cookie);

/* The MAD router: an SA answer for the cma's channel (SIB_MAD_CHAN_CMA)
 * arrived at (n, port).  Only stored; handled in dispatch. */
struct mai_mad;
void sib_cma_sa_receive(struct sib_subnet *sn, const struct sib_fab_node *n, uint8_t port,
			const struct mai_mad *m);

#endif
