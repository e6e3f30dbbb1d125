/* SPDX-License-Identifier: MIT */
/*
 * rsockets (<rdma/rsocket.h>, rdma-core v44 man rsocket; docs/rdmacm.md
 * "rsockets"): what rsocket.c (sockets, connections, options), rs_data.c
 * (the data path over an RC QP) and rs_poll.c (rpoll, rselect) share.
 *
 * An rsocket's number is the fd of its own rdma_cm event channel, as in
 * rdma-core: a real descriptor of this process, so it never collides with
 * another fd, and rpoll waits on it (connection events) and on the
 * completion channel of its CQ (data).
 *
 * The wire protocol (softib's own, modelled on rdma-core's; not
 * interoperable with it):
 *  - the connection's private data (REQ and REP) is struct rs_conn_data:
 *    the receive ring's address, R_Key and size, the receive WQEs posted;
 *  - data: RDMA WRITE with immediate into the peer's receive ring, in
 *    order, at the sender's running offset; the immediate is the length;
 *  - control: a SEND of one struct rs_ctrl (inline) into a receive WQE's
 *    slot: credits (the bytes the reader consumed and the receive WQEs it
 *    reposted, both running totals), FIN (SHUT_WR), riomap windows;
 *  - riowrite: RDMA WRITE (no immediate) into a window the peer announced.
 * Every message consumes one of the peer's receive WQEs; data needs more
 * than RS_CTRL_RESERVE of them left, so control always gets through.
 */
#ifndef SIB_RDMACM_RS_PRIV_H
#define SIB_RDMACM_RS_PRIV_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#define RS_PROTO_VERSION   1
#define RS_DEF_BUF         (1u << 17)  /* rdma-core's default send/receive buffer (bytes) */
#define RS_MIN_BUF         4096u
#define RS_MAX_BUF         (1u << 26)
#define RS_DEF_QSIZE       384         /* rdma-core's default SQ and RQ size (WQEs) */
#define RS_MIN_QSIZE       16
#define RS_MAX_QSIZE       4096
#define RS_DEF_INLINE      64          /* rdma-core's default inline size */
#define RS_MAX_INLINE      512
#define RS_MAX_TRANSFER    65536       /* bytes per RDMA WRITE (rdma-core RS_MAX_TRANSFER) */
#define RS_CTRL_RESERVE    2           /* peer receive WQEs kept for control */
#define RS_MAX_IOMAP       64          /* RDMA_IOMAPSIZE's upper bound */
#define RS_CLOSE_DRAIN_MS  2000        /* rclose waits this long for sends in flight */
#define RS_CONNECT_TIMEOUT_MS 2000     /* address and route resolution */
#define RS_BACKLOG_MAX     64

/* The private data of the REQ and the REP (network byte order). */
struct rs_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;       /* receive WQEs posted: the messages the peer may send */
	uint32_t iomap_size;    /* riomap windows the sender may announce */
	uint32_t rbuf_rkey;
	uint32_t rbuf_size;     /* bytes */
	uint64_t rbuf_addr;
} __attribute__((packed));
_Static_assert(sizeof(struct rs_conn_data) == 24, "rs_conn_data is wire format");

enum rs_ctrl_op {
	RS_CTRL_CREDIT = 1,     /* credits only */
	RS_CTRL_FIN,            /* no more data from the sender (SHUT_WR, rclose) */
	RS_CTRL_IOMAP,          /* window [offset, offset + len) at addr/rkey in slot */
	RS_CTRL_IOUNMAP,        /* slot no longer valid */
};

/* A control message (network byte order); every one carries credits. */
struct rs_ctrl {
	uint8_t op;             /* enum rs_ctrl_op */
	uint8_t pad;
	uint16_t slot;          /* IOMAP/IOUNMAP: the window's slot */
	uint32_t granted;       /* running total of receive WQEs posted for the peer */
	uint64_t consumed;      /* running total of ring bytes the reader consumed */
	uint64_t io_offset;
	uint64_t io_addr;
	uint32_t io_len;
	uint32_t io_rkey;
} __attribute__((packed));
_Static_assert(sizeof(struct rs_ctrl) == 40, "rs_ctrl is wire format");
#define RS_RECV_SLOT 64         /* bytes of a receive WQE's slot (>= sizeof(struct rs_ctrl)) */

enum rs_state {
	RS_INIT,                /* rsocket */
	RS_BOUND,               /* rbind */
	RS_LISTENING,           /* rlisten */
	RS_RESOLVING_ADDR,      /* rconnect, nonblocking stages */
	RS_RESOLVING_ROUTE,
	RS_CONNECTING,
	RS_CONNECTED,           /* data may flow (the passive side after rdma_accept) */
	RS_ERROR,               /* connect failed or the connection broke: err */
	RS_CLOSED,              /* disconnected after both sides finished */
};

/* A peer's riomap window as it announced it. */
struct rs_iomap {
	bool valid;
	uint64_t offset, len, addr;
	uint32_t rkey;
};

/* One of our own riomap windows. */
struct rs_iomr {
	bool used;
	bool announced;              /* the peer was told (RS_CTRL_IOMAP sent) */
	void *buf;
	size_t len;
	off_t offset;
	struct ibv_mr *mr;
};

/* A CONNECT_REQUEST a listener took from its channel, for raccept. */
struct rs_pending {
	struct rdma_cm_id *id;
	struct rs_conn_data peer;
	bool pdata_ok;
};

/* Counters of hostile or broken input (rs_data.c), for tests and docs. */
struct rs_counters {
	unsigned long bad_data, bad_ctrl, bad_pdata, bad_completion;
};

struct rsocket {
	int index;                          /* the user's number: channel->fd */
	pthread_mutex_t lock;
	enum rs_state state;
	int type;                           /* SOCK_STREAM */
	int domain;
	bool nonblock;                      /* O_NONBLOCK (rfcntl) */
	int err;                            /* SO_ERROR / the error of RS_ERROR */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;

	/* options (rsetsockopt), fixed once connected */
	uint32_t sbuf_size, rbuf_size;
	uint32_t sq_size, rq_size;
	uint32_t inline_size;
	uint32_t iomap_size;
	int reuseaddr, keepalive, keepidle, nodelay, oobinline;
	struct linger linger;

	/* listener */
	struct rs_pending *backlog;
	int backlog_max, backlog_cnt;

	/* verbs resources of a connection */
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	bool cq_armed;
	unsigned int cq_events;             /* got, not yet acked */
	uint8_t *rbuf, *sbuf, *rslots;      /* receive ring, send ring, receive slots */
	struct ibv_mr *rbuf_mr, *sbuf_mr, *rslots_mr;

	/* the peer, from its private data */
	struct rs_conn_data peer;
	uint64_t peer_rbuf_addr;
	uint32_t peer_rbuf_size, peer_rkey, peer_credits, peer_iomap_size;

	/* send side: running totals */
	uint64_t sent;                      /* data bytes written into the peer's ring */
	uint64_t peer_consumed;             /* ... of which the peer's reader consumed */
	uint32_t msgs_sent;                 /* messages that took a peer receive WQE */
	uint32_t peer_granted;              /* receive WQEs the peer posted, total */
	uint64_t sbuf_head, sbuf_tail;      /* send ring: copied / completed */
	uint32_t sq_outstanding;            /* posted, not completed */
	uint32_t sq_head, sq_tail;          /* the FIFO of sq_bytes below */
	uint32_t *sq_bytes;                 /* send-ring bytes of each posted WR */
	bool fin_pending, fin_sent;

	/* receive side: running totals */
	uint64_t rhead;                     /* bytes written by the peer */
	uint64_t rtail;                     /* bytes the reader consumed */
	uint64_t consumed_told;             /* rtail as last sent in a credit */
	uint32_t granted;                   /* receive WQEs posted, total */
	uint32_t granted_told;
	bool credit_pending;
	bool fin_rcvd;
	bool disconnected;                  /* DISCONNECTED seen, or our rdma_disconnect */
	bool shut_rd, shut_wr;

	/* riomap */
	struct rs_iomap *peer_iomap;        /* peer_iomap_size entries */
	struct rs_iomr *iomr;               /* iomap_size entries */
	bool iomap_pending;                 /* an IOMAP/IOUNMAP could not be sent yet */

	struct rs_counters bad;
};

/* rsocket.c */
struct rsocket *rs_get(int socket);          /* locked, or NULL with errno EBADF */
void rs_put(struct rsocket *rs);
int rs_set_err(int e);                       /* errno = e, -1 */
int rs_cm_progress(struct rsocket *rs);      /* handle queued cm events: 0 or -1 */
bool rs_lookup_exists(int fd);
int rs_connecting(struct rsocket *rs, bool nonblock); /* 0 connected, or -1/errno */

/* rs_data.c */
int rs_create_resources(struct rsocket *rs);  /* PD, CQ, QP attrs, rings: 0 or -1/errno */
int rs_create_qp(struct rsocket *rs);
void rs_destroy_resources(struct rsocket *rs);
void rs_fill_conn_data(struct rsocket *rs, struct rs_conn_data *cd);
int rs_take_peer(struct rsocket *rs, const void *pdata, size_t len); /* 0 or -1 EPROTO */
int rs_post_recvs(struct rsocket *rs);
int rs_progress(struct rsocket *rs);          /* poll the CQ, send credits: 0 or -1 */
int rs_wait(struct rsocket *rs, int timeout_ms); /* sleep on CQ/cm channels, lock dropped */
bool rs_can_send(const struct rsocket *rs);
bool rs_can_recv(const struct rsocket *rs);
int rs_send_fin(struct rsocket *rs);
int rs_drain_sends(struct rsocket *rs, int timeout_ms);
ssize_t rs_sendv(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags);
ssize_t rs_recvv(struct rsocket *rs, const struct iovec *iov, int iovcnt, int flags);
void rs_arm(struct rsocket *rs);
void rs_get_cq_events(struct rsocket *rs);
uint64_t rs_now_ms(void);

/* rs_poll.c */
short rs_revents(struct rsocket *rs, short events);

#endif
