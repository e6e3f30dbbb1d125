/* SPDX-License-Identifier: MIT */
/*
 * The harness of the tests through the built library (verbs_harness.c):
 * a private softibd (daemon_fixture.h), one RC end per device and a
 * connected pair, posting and bounded polling, and forged packets injected into a QP's inbox.
 */
#ifndef SIB_TESTS_VERBS_HARNESS_H
#define SIB_TESTS_VERBS_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "common/ctl.h"
#include "common/sib_ctl.h"
#include "common/sib_shm.h"
#include "link/pair.h"
#include "iba/iba.h"

#include "daemon_fixture.h"            /* start_daemon, stop_daemon, now_ms */

#define BUF_SIZE (4u << 20)

/* One end: a context with a PD, a CQ, an RC QP and a BUF_SIZE buffer
 * registered for local write and remote read/write. */
struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint16_t lid;
};

struct pair {
	struct end e[2];
};

/* How qp_connect takes a QP to RTS. */
struct conn_opts {
	enum ibv_mtu mtu;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	int access;
	uint32_t force_dest_qpn; /* 0: the real peer */
	bool global;             /* the path has a GRH (DGID = the peer's GID 0) */
	uint32_t psn;            /* sq_psn and rq_psn; 0: 0x123456 */
};

/* A hand-made producer into the context that owns a QP, as any process
 * of the same uid can be: its own connection and device context (HELLO,
 * OPEN_DEVICE), and the pair ring softibd makes from it to that context
 * (PAIR_OPEN, GET_INBOX for the receiver's doorbell).  Whatever it sends
 * is known to come from its own context, never from the QP's peer. */
struct sib_context;
struct sib_link_dest;
struct inbox_map {
	int fd;
	struct sib_fabric_shm *fab;
	size_t fab_size;
	uint32_t dev_handle, inbox;    /* the forger's own context */
	void *base, *db;               /* the ring and the receiver's page */
	struct sib_pair_tx own;        /* the forger's ring ... */
	struct sib_pair_tx *tx;        /* ... or the peer's (inbox_map_peer) */
	struct sib_context *peer;      /* inbox_map_peer: whose ring, locked while used */
	struct sib_link_dest *dest;
};

extern const struct conn_opts default_opts;

/* Poll one completion, failing the test after timeout_ms. */
void poll_one(struct ibv_cq *cq, struct ibv_wc *wc, unsigned int timeout_ms);
/* Fail if a completion arrives within ms. */
void expect_no_completion(struct ibv_cq *cq, unsigned int ms);
struct ibv_device *find_device(const char *name);
void end_open(struct end *e, const char *dev, int sq_sig_all, int qp_access);
void end_close(struct end *e);
/* An end on dev whose QP (RC, UC or UD) comes from ibv_create_qp_ex with
 * IBV_QP_EX_WITH_SEND, so both post APIs work: sq/rq WRs, send_sge SGEs,
 * 64 bytes of inline data, a CQ of cqe entries and bufsize bytes of buffer
 * registered for local write.  end_close() frees it. */
void end_open_ex(struct end *e, const char *dev, enum ibv_qp_type type, uint32_t sq, uint32_t rq,
		 uint32_t send_sge, int sq_sig_all, uint32_t cqe, size_t bufsize);
/* RESET to RTS towards peer: RC and UC through qp_connect(default_opts);
 * UD with Q_Key qkey and send PSN 0. */
void end_to_rts(struct end *e, const struct end *peer, uint32_t qkey);
/* INIT, RTR, RTS towards peer. */
void qp_connect(struct end *self, const struct end *peer, const struct conn_opts *o);
/* e[0] on softib0 and e[1] on softib1, connected (NULL options: default_opts). */
void pair_open(struct pair *p, int sq_sig_all, const struct conn_opts *oa, const struct conn_opts *ob);
void pair_close(struct pair *p);
/* A receive of len bytes at buf + off. */
void post_recv(struct end *e, uint64_t wr_id, uint32_t off, uint32_t len);
/* One send WR; ibv_post_send's result (*bad_wr checked on failure). */
int post_send(struct end *e, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *sge, int nsge,
	      int flags, uint64_t raddr, uint32_t rkey, uint32_t imm);
enum ibv_qp_state qp_state(struct ibv_qp *qp);
/* Map the inbox of the process that owns qpn, through softibd. */
void inbox_map(struct inbox_map *m, uint32_t qpn);
/* Packets from the QP's peer context `from` itself (a context of this
 * process), through its own pair ring, under its progress lock: a peer
 * that misbehaves, for tests of the responder's rules. */
void inbox_map_peer(struct inbox_map *m, struct ibv_context *from, uint32_t qpn);
void inbox_unmap(struct inbox_map *m);
/* Build a packet from h and payload straight into the inbox and publish it. */
void inject(struct inbox_map *m, const struct iba_pkt *h, const void *payload, size_t paylen);
/* The next slot of the forger's ring (fails the test when full). */
struct sib_ring_slot *forge_slot(struct inbox_map *m);
/* Publish it: len bytes, slot flags. */
void forge_publish(struct inbox_map *m, struct sib_ring_slot *s, uint32_t len, uint32_t flags);

#endif
