/* SPDX-License-Identifier: MIT */
/*
 * Direct placement, placing (direct_int.h): a WQE's RDMA WRITE or READ data
 * copied straight between its SGEs and the peer's registered pages, counted
 * in and out on the peer's in-flight counter, after every check the
 * responder would make.  Engine context (progress_lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hca/direct_int.h"
#include "hca/mw.h"
#include "hca/transport.h"

static bool dx_place(struct sib_qp *qp, struct sib_swqe *w, bool read);

void (*sib_dx_park_hook)(void);

/* Count ourselves in on a peer's counter word for entry seq: only while
 * the word is that generation's (a hostile or stale word: no copy). */
static bool cnt_in(_Atomic uint64_t *cnt, uint32_t seq)
{
	uint64_t c = atomic_load_explicit(cnt, memory_order_relaxed);

	do {
		if ((uint32_t)(c >> 32) != seq || (uint32_t)c == UINT32_MAX)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(cnt, &c, c + 1, memory_order_seq_cst,
							memory_order_relaxed));
	return true;
}

/* Count ourselves out, only from the generation we counted in on. */
static void cnt_out(_Atomic uint64_t *cnt, uint32_t seq)
{
	uint64_t c = atomic_load_explicit(cnt, memory_order_relaxed);

	do {
		if ((uint32_t)(c >> 32) != seq || !(uint32_t)c)
			return; /* a new generation (attach) or garbage: not ours */
	} while (!atomic_compare_exchange_weak_explicit(cnt, &c, c - 1, memory_order_release,
							memory_order_relaxed));
}

/* P_Key match as the responder applies it (IBA 10.9.3, recv.c): same low
 * 15 bits, not invalid, at least one full member. */
/*
 * Would the responder QP (its path word `path`, on CA dev) take our
 * packets?  What its receive demux checks (recv.c check_keys, check_addr)
 * and what it counts PSNs by: it is connected to our QPN, its DLID is our
 * port's LID (with our path bits), neither path is global, our P_Key
 * matches the one its port holds at its P_Key index (read now from the
 * fabric map), the path MTUs are equal, and our port passes.  Otherwise
 * packets, which the responder drops or NAKs as always.
 */
static bool path_ok(const struct sib_qp *qp, uint64_t path, uint32_t dev)
{
	uint8_t pn = qp->port_num ? qp->port_num : 1, rpn = (uint8_t)SIB_DX_QPP_PORT(path);
	const struct sib_shm_port *ours, *theirs;
	uint16_t pk, rpk;

	if (!(path & SIB_DX_QP_VALID) || (path & SIB_DX_QPP_GLOBAL) || qp->ah.is_global ||
	    SIB_DX_QPP_RQPN(path) != qp->ibv.qp_base.qp_num ||
	    SIB_DX_QPP_MTU(path) != (uint32_t)qp->path_mtu || dev >= SIB_MAX_DEVICES ||
	    pn > SIB_MAX_PORTS || rpn < 1 || rpn > SIB_MAX_PORTS)
		return false;
	if (!sib_port_passes(qp->ctx->dev->index, qp->ctx->dev->gen, pn))
		return false;
	ours = &sib_fabric->devs[qp->ctx->dev->index].ports[pn - 1];
	theirs = &sib_fabric->devs[dev].ports[rpn - 1];
	if (SIB_DX_QPP_DLID(path) != (uint16_t)(ours->lid | qp->ah.src_path_bits))
		return false;
	pk = ours->pkey[qp->pkey_index < SIB_PKEY_TBL_LEN ? qp->pkey_index : 0];
	rpk = theirs->pkey[SIB_DX_QPP_PKIX(path) < SIB_PKEY_TBL_LEN ? SIB_DX_QPP_PKIX(path) : 0];
	return sib_pkey_match(pk, rpk);
}

bool sib_dx_place(struct sib_qp *qp, struct sib_swqe *w, bool read)
{
	struct sib_dx *dx = qp->ctx->dx;
	bool ok = dx && dx->on && dx_place(qp, w, read);

	if (ok)
		dx->placed++;
	else if (dx && dx->on)
		dx->refused++;
	return ok;
}

static bool dx_place(struct sib_qp *qp, struct sib_swqe *w, bool read)
{
	struct sib_context *ctx = qp->ctx;
	struct sib_dx *dx = ctx->dx;
	unsigned int need = read ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE;
	uint32_t idx = w->rkey >> 8, inbox, gen;
	struct sib_dx_peer *p;
	struct sib_dx_map *m;
	struct sib_dx_ent v;
	_Atomic uint64_t *cnt;
	const _Atomic uint32_t *eseq;
	const _Atomic uint64_t *qp_word;
	uint64_t qw, path, va = w->remote_addr, len = w->length;
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	uint8_t *at;

	if (!dx || !dx->on || !len || sib_key_is_mw(w->rkey) || idx >= SIB_DX_MAX_MR ||
	    !sib_link_can_place(&ctx->link, qp->dest.dest))
		return false; /* the link's word (link.h): shared memory, nobody capturing */
	inbox = SIB_QPO_INBOX(qp->dest.owner);
	gen = SIB_QPO_GEN(qp->dest.owner);
	if (inbox >= SIB_MAX_INBOXES || qp->dest_qpn >= SIB_MAX_QPN)
		return false;
	/* The QPN still belongs to the process we resolved, by the current
	 * routes, and its inbox generation is current: never a cached peer
	 * of a dead owner. */
	if (sib_link_qpn_owner(qp->dest_qpn) !=
	    qp->dest.owner || !(qp->dest.owner & SIB_QPO_VALID) ||
	    atomic_load_explicit(&sib_fabric->route_gen, memory_order_acquire) != qp->dest.route_gen)
		return false; /* resolved again by the packet's sib_tx_begin */
	if (sib_link_inbox_gen(inbox) != gen) {
		sib_dx_inbox_forget(dx, inbox);
		return false;
	}
	p = sib_dx_peer_get(dx, qp, inbox, gen);
	if (!p)
		return false;
	/* The responder QP's PD and access, as its CHK_OP_VALID and CHK_KEYS
	 * will see them: no copy its checks would refuse. */
	qp_word = (const _Atomic uint64_t *)(p->tab + SIB_DX_QP_OFF) + qp->dest_qpn;
	qw = atomic_load_explicit(qp_word, memory_order_seq_cst);
	path = atomic_load_explicit((const _Atomic uint64_t *)(p->tab + SIB_DX_QPP_OFF) + qp->dest_qpn,
				    memory_order_seq_cst);
	if (!(qw & SIB_DX_QP_VALID) || !((qw >> 32) & need) ||
	    atomic_load_explicit(qp_word, memory_order_seq_cst) != qw ||
	    !path_ok(qp, path, SIB_QPO_DEV(qp->dest.owner)))
		return false;
	if (!sib_dx_ent_read(p, idx, &v))
		return false;
	sib_dx_maps_stale(dx, p, idx, v.seq);
	if (v.rkey != w->rkey || (v.access & need) != need || v.pd != (uint32_t)qw || v.fd < 0)
		return false;
	/* Inside the MR and inside its memfd-backed pages (overflow-safe). */
	if (len > v.length || va < v.iova || va - v.iova > v.length - len ||
	    va < v.dlo || v.dhi < v.dlo || len > v.dhi - v.dlo || va - v.dlo > v.dhi - v.dlo - len)
		return false;
	m = sib_dx_map_get(dx, qp, p, idx, &v, !read);
	if (!m)
		return false;
	cnt = &p->cnt[idx];
	eseq = &((const struct sib_dx_ent *)(p->tab + SIB_DX_ENT_OFF))[idx].seq;
	if (!cnt_in(cnt, v.seq))
		return false; /* the counter is another generation's */
	if (sib_dx_park_hook)
		sib_dx_park_hook();
	/* v passed the range checks above and equals the map's entry, so
	 * [at, at + len) lies inside the mapped window.  In chunks: the
	 * entry's seq is checked (after our count, seq_cst: revoke's Dekker
	 * pair) before each, so that a revoke waits at most one chunk. */
	at = m->base + m->skew + (va - v.dlo);
	for (uint64_t done = 0, n; done < len && st == IBV_WC_SUCCESS; done += n) {
		n = len - done < SIB_DX_CHUNK ? len - done : SIB_DX_CHUNK;
		if (atomic_load_explicit(eseq, memory_order_seq_cst) != v.seq) {
			st = IBV_WC_REM_ACCESS_ERR; /* deregistered or changed: packets */
			break;
		}
		if (read)
			st = sib_sge_copy_in(ctx, qp->ibv.qp_base.pd->handle, w->sge, w->num_sge,
					     (uint32_t)done, at + done, (uint32_t)n);
		else if (w->inline_data)
			sib_place(at + done, (const uint8_t *)w->inline_data + done, n);
		else
			st = sib_sge_copy_out(ctx, qp->ibv.qp_base.pd->handle, w->sge, w->num_sge,
					      (uint32_t)done, at + done, (uint32_t)n);
	}
	cnt_out(cnt, v.seq);
	return st == IBV_WC_SUCCESS;
}
