/* SPDX-License-Identifier: MIT */
/*
 * The rdma_cm part of the control protocol: what librdmacm.so.1
 * (src/rdmacm/) asks softibd, and the events softibd pushes back.  It
 * plays the kernel's ucma (linux include/uapi/rdma/rdma_user_cm.h, the
 * ABI librdmacm writes to /dev/infiniband/rdma_cm): the same commands and
 * the same meaning, framed as sib_ctl messages.  softibd runs the
 * rdma_cm (ids, port spaces, address and route resolution:
 * src/subnet/cma.c) over the IB CM agent (src/subnet/cm.c), which speaks
 * real CM MADs (class 0x07) on QP1.  docs/rdmacm.md has the rules.
 *
 * - **Commands** travel on the process's control connection (op
 *   SIB_CTL_CM, body struct sib_ctl_cm, cmd = enum sib_cm_cmd), one round
 *   trip each; hdr.status is 0 or a positive errno as the kernel's ucma
 *   would return it.  Asynchronous results (ADDR_RESOLVED, ...) come later
 *   as events.
 * - **Event channels**: SIB_CTL_CM with cmd SIB_CM_CMD_CHANNEL_OPEN
 *   passes one end of a SOCK_SEQPACKET socketpair (SCM_RIGHTS) and a
 *   channel handle.  That fd is rdma_event_channel.fd: softibd writes one
 *   message per event on it (struct sib_ctl_msg, op SIB_CTL_CM_EVENT,
 *   body struct sib_ctl_cm_event) and nothing else, so poll() says
 *   readable exactly when an event waits and a non-blocking read of an
 *   empty channel gives EAGAIN.  The library never writes to it.  Events
 *   softibd could not write yet (a full socket) wait in softibd, bounded
 *   per channel; none is dropped.  The channel ends when its fd closes
 *   (its ids are destroyed) or with SIB_CM_CMD_CHANNEL_CLOSE.
 * - **Ids** are handles of this connection (CREATE_ID), bound to a
 *   channel; `uid` is the library's own cookie (its struct's address),
 *   echoed in every event of that id and never interpreted by softibd.
 *   A connection that closes destroys its ids and channels: a connected
 *   id's peer sees DISCONNECTED (a DREQ is sent), a handshake in flight
 *   is rejected, as the kernel does when a process dies.
 *
 * Addresses travel as struct sockaddr bytes (AF_INET, AF_INET6 or
 * AF_IB), at most SIB_CM_ADDR_LEN bytes.  Numbers are host order unless
 * the name says _be.  Changing anything here changes SIB_ABI_VERSION.
 */
#ifndef SIB_CTL_CM_H
#define SIB_CTL_CM_H

#include <stdint.h>

#define SIB_CM_ADDR_LEN      48u  /* sizeof(struct sockaddr_ib), the largest */
#define SIB_CM_PDATA_MAX     256u /* private data: REQ 92, REP 196, REJ 148,
                                   * SIDR_REP 136, RTU/DREQ/DREP 224 (IBA 12.6) */
#define SIB_CM_PATHS_MAX     2u   /* primary and alternate PathRecords */
#define SIB_CM_INVALID       0u   /* no id or channel handle */

/* enum sib_cm_cmd: the sub-commands of SIB_CTL_CM (RDMA_USER_CM_CMD_*). */
enum sib_cm_cmd {
	SIB_CM_CMD_CHANNEL_OPEN = 1, /* -> channel, fd: rdma_create_event_channel */
	SIB_CM_CMD_CHANNEL_CLOSE,    /* channel: rdma_destroy_event_channel */
	SIB_CM_CMD_CREATE_ID,        /* channel, uid, ps, qp_type -> id */
	SIB_CM_CMD_DESTROY_ID,       /* id -> events_reported */
	SIB_CM_CMD_BIND,             /* id, src_addr -> query fields (the bound address, port assigned) */
	SIB_CM_CMD_RESOLVE_ADDR,     /* id, src_addr (len 0: none), dst_addr, timeout_ms -> event */
	SIB_CM_CMD_RESOLVE_ROUTE,    /* id, timeout_ms -> event ROUTE_RESOLVED / ROUTE_ERROR */
	SIB_CM_CMD_QUERY,            /* id -> addresses, device, port, pkey, GIDs, paths */
	SIB_CM_CMD_CONNECT,          /* id, conn, private data (the user's: softibd adds the CMA header) */
	SIB_CM_CMD_LISTEN,           /* id, backlog */
	SIB_CM_CMD_ACCEPT,           /* id, uid, conn, private data: passive REP (or SIDR_REP);
	                              * on an active id after CONNECT_RESPONSE: RTU */
	SIB_CM_CMD_REJECT,           /* id, reason (0: consumer, 28), private data */
	SIB_CM_CMD_DISCONNECT,       /* id: DREQ, or DREP after a DREQ came */
	SIB_CM_CMD_INIT_QP_ATTR,     /* id, qp_state -> qp_attr, qp_attr_mask (rdma_init_qp_attr) */
	SIB_CM_CMD_NOTIFY,           /* id, event (IBV_EVENT_COMM_EST): rdma_notify */
	SIB_CM_CMD_SET_OPTION,       /* id, level, optname, optval (RDMA_OPTION_*) */
	SIB_CM_CMD_MIGRATE_ID,       /* id, channel -> events_reported (rdma_migrate_id) */
	SIB_CM_CMD_JOIN_MCAST,       /* id, uid (the group's cookie, as the kernel's
	                              * ucma_join_multicast), dst_addr (the group),
	                              * join_flags (enum rdma_cm_mc_join_flags)
	                              * -> event MULTICAST_JOIN / MULTICAST_ERROR */
	SIB_CM_CMD_LEAVE_MCAST,      /* id, dst_addr (as joined) -> events_reported (0) */
	SIB_CM_CMD_MAX,
};

/* conn: rdma_conn_param as the wire needs it (librdmacm fills it). */
struct sib_cm_conn {
	uint32_t qp_num;              /* 24 bits: the id's QP (0 for none) */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;          /* 3 bits */
	uint8_t rnr_retry_count;      /* 3 bits */
	uint8_t srq;
	uint8_t qp_type;              /* enum ibv_qp_type of the id's QP */
	uint8_t pad;
	uint32_t qkey;                /* UD: SIDR_REP's Q_Key (ACCEPT) */
	uint32_t pad2;
};

/* One PathRecord (IBA 15.2.5.16) in host order: what route resolution
 * found (QUERY) and what rdma_set_option(RDMA_OPTION_IB_PATH) sets. */
struct sib_cm_path {
	uint8_t dgid[16], sgid[16];
	uint16_t dlid, slid;
	uint16_t pkey;
	uint8_t sl;                   /* 4 bits */
	uint8_t mtu;                  /* enum ibv_mtu */
	uint8_t rate;                 /* IBA rate code (PathRecord.Rate) */
	uint8_t packet_life_time;     /* 5 bits: 4.096 us * 2^n */
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;          /* 20 bits */
	uint8_t reversible;
	uint8_t numb_path;
	uint16_t pad;
};

/* The AV of an event (UD ESTABLISHED, JOIN): ibv_ah_attr's fields. */
struct sib_cm_ah {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint16_t dlid;
	uint8_t sgid_index, hop_limit, traffic_class;
	uint8_t sl, src_path_bits, static_rate;
	uint8_t is_global, port_num;
	uint16_t pad;
};

/*
 * INIT_QP_ATTR's answer: the ibv_qp_attr fields rdma_init_qp_attr sets,
 * with mask = the IBV_QP_* bits set (linux drivers/infiniband/core/cm.c
 * cm_init_qp_*_attr, cma.c cma_ib_init_qp_attr; research/rdmacm.md §2).
 */
struct sib_cm_qp_attr {
	uint32_t mask;                /* IBV_QP_* */
	uint32_t qp_state;            /* enum ibv_qp_state */
	uint32_t qp_access_flags;
	uint32_t qkey;
	uint32_t rq_psn, sq_psn;      /* 24 bits */
	uint32_t dest_qp_num;
	uint16_t pkey_index;
	uint8_t port_num;
	uint8_t path_mtu;             /* enum ibv_mtu */
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint8_t min_rnr_timer, timeout, retry_cnt, rnr_retry;
	uint16_t pad;
	struct sib_cm_ah ah;
};

/* The body of SIB_CTL_CM (in and out; what each cmd uses is listed in
 * enum sib_cm_cmd). */
struct sib_ctl_cm {
	uint32_t cmd;                 /* in: enum sib_cm_cmd */
	uint32_t channel;             /* in/out: channel handle */
	uint32_t id;                  /* in/out: id handle */
	uint32_t ps;                  /* in (CREATE_ID): enum rdma_port_space */
	uint64_t uid;                 /* in: the library's cookie for the id */
	uint32_t qp_type;             /* in (CREATE_ID): enum ibv_qp_type */
	uint32_t backlog;             /* in (LISTEN) */
	uint32_t timeout_ms;          /* in (RESOLVE_*) */
	uint32_t qp_state;            /* in (INIT_QP_ATTR) */
	uint32_t events_reported;     /* out (DESTROY_ID, MIGRATE_ID, LEAVE_MCAST) */
	uint32_t reason;              /* in (REJECT) */
	uint32_t level, optname;      /* in (SET_OPTION) */
	uint32_t event;               /* in (NOTIFY) */
	uint32_t join_flags;          /* in (JOIN_MCAST): enum rdma_cm_join_mc_attr_mask flags */
	uint32_t optlen;              /* in (SET_OPTION): bytes of optval */
	uint8_t optval[64];           /* in (SET_OPTION): an int or a byte; RDMA_OPTION_IB_PATH:
	                               * one struct sib_cm_path (ibv_path_data's 72 bytes do not fit) */
	uint16_t src_len, dst_len;    /* bytes of src_addr, dst_addr used */
	uint8_t src_addr[SIB_CM_ADDR_LEN]; /* in (BIND, RESOLVE_ADDR) / out (BIND, QUERY) */
	uint8_t dst_addr[SIB_CM_ADDR_LEN]; /* in (RESOLVE_ADDR, JOIN/LEAVE) / out (QUERY) */
	/* out (BIND, QUERY): where the id is attached; dev_index
	 * SIB_CM_NO_DEVICE until an address picks a device */
	uint32_t dev_index;           /* index in sib_fabric_shm.devs */
	uint32_t dev_gen;
	uint8_t port_num;
	uint8_t num_paths;            /* out (QUERY): paths[] used */
	uint16_t pkey;                /* out (QUERY) */
	uint8_t sgid[16], dgid[16];   /* out (QUERY) */
	struct sib_cm_path paths[SIB_CM_PATHS_MAX]; /* out (QUERY) */
	struct sib_cm_conn conn;      /* in (CONNECT, ACCEPT) */
	struct sib_cm_qp_attr qp_attr; /* out (INIT_QP_ATTR) */
	uint32_t pdata_len;           /* in (CONNECT, ACCEPT, REJECT, DISCONNECT) */
	uint8_t pdata[SIB_CM_PDATA_MAX];
};
#define SIB_CM_NO_DEVICE 0xffffffffu

/*
 * One event on a channel (rdma_cm_event; RDMA_CM_EVENT_* values of
 * rdma_cma.h in `event`).  For CONNECT_REQUEST `id` is the new id (a
 * handle of the listener's connection, on the listener's channel) and
 * listen_uid the listener's cookie; uid is 0 there (the library sets it
 * with ACCEPT or REJECT).  status as rdma_cm_event.status: 0, -errno,
 * or the REJ reason for REJECTED (IBA 12.6.7.2, 28 = consumer reject).
 * MULTICAST_JOIN / MULTICAST_ERROR: uid is the id's cookie and listen_uid
 * the group's (JOIN_MCAST's uid); ah the group's AV, ud_qp_num 0xFFFFFF.
 */
struct sib_ctl_cm_event {
	uint64_t uid;                 /* the id's cookie (0 for CONNECT_REQUEST) */
	uint64_t listen_uid;          /* CONNECT_REQUEST: the listener's cookie */
	uint32_t id;                  /* the id handle */
	uint32_t listen_id;           /* CONNECT_REQUEST: the listener's handle */
	uint32_t event;               /* enum rdma_cm_event_type */
	int32_t status;
	uint32_t dev_index, dev_gen;  /* CONNECT_REQUEST, ADDR_RESOLVED: the id's device */
	uint8_t port_num;
	uint8_t pad[3];
	uint32_t pdata_len;           /* private data bytes (research/rdmacm.md §2 "Private data") */
	struct sib_cm_conn conn;      /* connected QPs: the peer's QPN, depths, counts */
	struct sib_cm_ah ah;          /* UD: the AV to the peer or group */
	uint32_t ud_qp_num, ud_qkey;  /* UD: the peer's QPN (0xFFFFFF for a group) and Q_Key */
	uint8_t pdata[SIB_CM_PDATA_MAX];
};

_Static_assert(sizeof(struct sib_cm_conn) == 20, "cm conn is ABI");
_Static_assert(sizeof(struct sib_cm_path) == 52, "cm path is ABI");
_Static_assert(sizeof(struct sib_cm_ah) == 32, "cm ah is ABI");

#endif
