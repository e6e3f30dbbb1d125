/* SPDX-License-Identifier: MIT */
/*
 * Direct placement (docs/transport.md "Direct placement"; not IBA: the
 * memory link's shortcut for RDMA WRITE and READ, keeping IBA 9.7's
 * semantics).  This file owns each context's export table and in-flight
 * counters (the owner's side); direct_reg.c the registry of registered
 * pages on memfds and fork, direct_peer.c the engine's cache of peers'
 * tables and MR mappings, direct_place.c the copy (direct_int.h).
 * Everything a peer wrote is hostile (DESIGN principle 6): peers' memfds
 * come only from softibd (DX_GET, on the right of a QP towards them),
 * sizes are bounded by fstat, seqlocks are read once and rechecked.  No
 * memfd of ours stays in our fd table: softibd keeps them (DX_PUT).  Must not: touch
 * partial pages, file or shared mappings, or block a post for long.
 * Locking: dx_lock for the registry and the list of contexts; the peer
 * cache under progress_lock.
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
#include "hca/provider.h"
#include "hca/transport.h"

static struct sib_dx_ent *tab_ent(uint8_t *tab, uint32_t idx)
{
	return (struct sib_dx_ent *)(tab + SIB_DX_ENT_OFF) + idx;
}

static _Atomic uint64_t *tab_qp(uint8_t *tab, uint32_t qpn, unsigned int word)
{
	return (_Atomic uint64_t *)(tab + (word ? SIB_DX_QPP_OFF : SIB_DX_QP_OFF)) + qpn;
}

static int dx_memfd(const char *name, size_t len, void **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	*map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*map == MAP_FAILED) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

/* Give softibd a table's memfd (DX_PUT of kind for our context) and close
 * ours: 0 or errno (direct placement stays off). */
static int dx_give(struct sib_context *ctx, uint32_t kind, int fd)
{
	struct sib_ctl_dx x = { .kind = kind, .dev_handle = ctx->dev_handle };
	int rc = sib_host->dx(SIB_CTL_DX_PUT, &x, fd, NULL);

	close(fd);
	return rc;
}

int sib_dx_ctx_init(struct sib_context *ctx)
{
	const char *v = getenv("SOFTIB_DIRECT");
	struct sib_dx *dx = calloc(1, sizeof(*dx));
	char name[64];
	void *m;
	int fd, rc;

	if (!dx)
		return ENOMEM;
	ctx->dx = dx;
	pthread_once(&sib_dx_once, sib_dx_init_once);
	dx->progress = &ctx->progress_lock;
	pthread_mutex_lock(&sib_dx_lock);
	dx->next_all = sib_dx_all;
	sib_dx_all = dx;
	pthread_mutex_unlock(&sib_dx_lock);
	if ((v && !strcmp(v, "0")) || !sib_host || !sib_host->dx)
		return 0; /* off, or no broker to keep our memfds */
	snprintf(name, sizeof(name), "softib-dx-%u-%u", ctx->inbox_idx, ctx->inbox_gen);
	fd = dx_memfd(name, SIB_DX_BYTES, &m);
	if (fd < 0)
		return -fd;
	dx->tab = m;
	rc = dx_give(ctx, SIB_DX_KIND_TAB, fd);
	snprintf(name, sizeof(name), "softib-dxc-%u-%u", ctx->inbox_idx, ctx->inbox_gen);
	fd = rc ? -rc : dx_memfd(name, SIB_DX_CNT_BYTES, &m);
	if (fd >= 0) {
		dx->cnt = m;
		rc = dx_give(ctx, SIB_DX_KIND_CNT, fd);
	}
	if (fd < 0 || rc) {
		munmap(dx->tab, SIB_DX_BYTES);
		if (dx->cnt)
			munmap((void *)dx->cnt, SIB_DX_CNT_BYTES);
		dx->tab = NULL;
		dx->cnt = NULL;
		return fd < 0 ? -fd : rc;
	}
	((struct sib_dx_hdr *)dx->tab)->max_mr = SIB_DX_MAX_MR;
	__atomic_store_n(&((struct sib_dx_hdr *)dx->tab)->magic, SIB_DX_MAGIC, __ATOMIC_RELEASE);
	dx->on = true;
	pthread_mutex_lock(&sib_dx_lock);
	dx->next = sib_dx_ctxs;
	sib_dx_ctxs = dx;
	pthread_mutex_unlock(&sib_dx_lock);
	return 0;
}

void sib_dx_ctx_fini(struct sib_context *ctx)
{
	struct sib_dx *dx = ctx->dx;

	if (!dx)
		return;
	if (getenv("SOFTIB_STATS"))
		fprintf(stderr, "softib %s: direct %s placed=%llu refused=%llu\n", ctx->dev->ibv.name,
			dx->on ? "on" : "off", (unsigned long long)dx->placed,
			(unsigned long long)dx->refused);
	for (unsigned int i = 0; i < DX_PEERS; i++)
		sib_dx_peer_drop(&dx->peers[i]);
	for (unsigned int i = 0; i < DX_MAPS; i++)
		sib_dx_map_drop(&dx->maps[i]);
	pthread_mutex_lock(&sib_dx_lock);
	for (struct sib_dx **pp = &sib_dx_all; *pp; pp = &(*pp)->next_all) {
		if (*pp == dx) {
			*pp = dx->next_all;
			break;
		}
	}
	pthread_mutex_unlock(&sib_dx_lock);
	if (dx->tab) {
		struct sib_dx **pp;

		pthread_mutex_lock(&sib_dx_lock);
		for (pp = &sib_dx_ctxs; *pp && *pp != dx; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = dx->next;
		sib_dx_region_prune(); /* the memfds of unmapped deregistered pages */
		pthread_mutex_unlock(&sib_dx_lock);
		/* softibd drops its fds of our tables with the context */
		munmap(dx->tab, SIB_DX_BYTES);
		munmap((void *)dx->cnt, SIB_DX_CNT_BYTES);
	}
	free(dx);
	ctx->dx = NULL;
}

/*
 * fork child (sib_dx_lock held since dx_prepare): every context of the
 * process stops direct placement, drops its peers' tables and MR mappings
 * and gets private anonymous memory in place of its export table and
 * counters, so the child never writes the parent's (its MR and QP calls
 * then change nothing peers see).
 */
void sib_dx_child_ctxs(void)
{
	for (struct sib_dx *dx = sib_dx_ctxs; dx; dx = dx->next) {
		dx->on = false;
		for (unsigned int i = 0; i < DX_PEERS; i++)
			sib_dx_peer_drop(&dx->peers[i]);
		for (unsigned int i = 0; i < DX_MAPS; i++)
			sib_dx_map_drop(&dx->maps[i]);
		if (mmap(dx->tab, SIB_DX_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			munmap(dx->tab, SIB_DX_BYTES); /* never shared again */
		if (mmap((void *)dx->cnt, SIB_DX_CNT_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			munmap((void *)dx->cnt, SIB_DX_CNT_BYTES);
	}
}

/* Seqlock write of entry idx. */
static void ent_write(struct sib_dx *dx, uint32_t idx, const struct sib_dx_ent *v)
{
	struct sib_dx_ent *e = tab_ent(dx->tab, idx);
	uint32_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);

	if (v->fd >= 0) /* a new generation: its count starts at 0 (never
			   an older one's, whose stragglers' CAS now fail) */
		atomic_store_explicit(&dx->cnt[idx], (uint64_t)((s | 1) + 1) << 32, memory_order_seq_cst);

	atomic_store_explicit(&e->seq, s | 1, memory_order_seq_cst);
	__atomic_store_n(&e->rkey, v->rkey, __ATOMIC_RELAXED);
	__atomic_store_n(&e->iova, v->iova, __ATOMIC_RELAXED);
	__atomic_store_n(&e->length, v->length, __ATOMIC_RELAXED);
	__atomic_store_n(&e->access, v->access, __ATOMIC_RELAXED);
	__atomic_store_n(&e->pd, v->pd, __ATOMIC_RELAXED);
	__atomic_store_n(&e->fd, v->fd, __ATOMIC_RELAXED);
	__atomic_store_n(&e->off, v->off, __ATOMIC_RELAXED);
	__atomic_store_n(&e->dlo, v->dlo, __ATOMIC_RELAXED);
	__atomic_store_n(&e->dhi, v->dhi, __ATOMIC_RELAXED);
	atomic_store_explicit(&e->seq, (s | 1) + 1, memory_order_release);
}

void sib_dx_mr_attach(struct sib_context *ctx, struct sib_mr *mr)
{
	struct sib_dx *dx = ctx->dx;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)mr->ibv.addr, s, e;
	uint32_t idx = mr->ibv.rkey >> 8;
	struct sib_dx_ent v = { .fd = -1 };
	struct sib_dx_region *r = mr->dx_region;
	bool want;

	if (!dx || !dx->on || idx >= SIB_DX_MAX_MR)
		return;
	s = (a + page - 1) & ~(page - 1);
	e = (a + mr->ibv.length) & ~(page - 1);
	want = (mr->range.access & (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)) &&
	       !(mr->range.access & (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB)) &&
	       a + mr->ibv.length > a && s < e;
	/* rereg: keep the region when the pages stay the same */
	if (r && (!want || mr->dx_fork_gen != sib_dx_fork_gen || s < r->start || e > r->end)) {
		sib_dx_mr_detach(mr);
		r = NULL;
	}
	if (want && !r) {
		pthread_mutex_lock(&sib_dx_lock);
		r = sib_dx_region_get(s, e);
		pthread_mutex_unlock(&sib_dx_lock);
	}
	if (want && r) {
		mr->dx_region = r;
		mr->dx_fork_gen = sib_dx_fork_gen;
		v.fd = (int32_t)r->id;
		v.off = s - r->start;
		v.dlo = mr->range.iova + (s - a);
		v.dhi = v.dlo + (e - s);
	}
	v.rkey = mr->ibv.rkey;
	v.iova = mr->range.iova;
	v.length = mr->range.length;
	v.access = mr->range.access;
	v.pd = mr->range.pd;
	ent_write(dx, idx, &v);
}

void sib_dx_mr_revoke(struct sib_context *ctx, struct sib_mr *mr)
{
	struct sib_dx *dx = ctx->dx;
	uint32_t idx = mr->ibv.rkey >> 8;
	struct sib_dx_ent v = { .fd = -1 };
	uint64_t deadline, c;
	uint32_t old;

	if (!dx || !dx->on || idx >= SIB_DX_MAX_MR)
		return;
	old = atomic_load_explicit(&tab_ent(dx->tab, idx)->seq, memory_order_relaxed);
	ent_write(dx, idx, &v); /* seq moved: a peer that counted itself in
				   after this sees it and copies nothing */
	deadline = sib_now_ns() + DX_REVOKE_WAIT_NS;
	/* Peers counted in under the old entry: copying now, or about to see
	 * the seq move (they re-check it before every chunk). */
	while ((c = atomic_load_explicit(&dx->cnt[idx], memory_order_seq_cst)) >> 32 == old &&
	       (uint32_t)c > 0) {
		struct timespec ts = { 0, 10000 };

		if (sib_now_ns() > deadline) {
			fprintf(stderr, "softib: MR 0x%x: a peer never finished its direct copy\n",
				mr->ibv.rkey);
			break;
		}
		nanosleep(&ts, NULL);
	}
}

void sib_dx_mr_detach(struct sib_mr *mr)
{
	struct sib_dx_region *r = mr->dx_region;

	if (!r)
		return;
	mr->dx_region = NULL;
	pthread_mutex_lock(&sib_dx_lock);
	if (mr->dx_fork_gen == sib_dx_fork_gen)
		sib_dx_region_put(r);
	pthread_mutex_unlock(&sib_dx_lock);
}

void sib_dx_qp_export(struct sib_qp *qp)
{
	struct sib_dx *dx = qp->ctx->dx;
	uint32_t qpn = qp->ibv.qp_base.qp_num;
	uint64_t w = 0, path = 0;
	_Atomic uint64_t *q0, *q1;

	if (!dx || !dx->on || qpn >= SIB_MAX_QPN)
		return;
	q0 = tab_qp(dx->tab, qpn, 0);
	q1 = tab_qp(dx->tab, qpn, 1);
	/* Only a QP that accepts requests (recv.c check 9): RTR, RTS, SQD. */
	if (qp->ibv.qp_base.qp_type == IBV_QPT_RC && qp->ibv.qp_base.pd &&
	    (qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD) &&
	    qp->dest_qpn <= 0xffffff && qp->pkey_index <= 0xff && qp->port_num <= 3 &&
	    qp->path_mtu <= 7) {
		w = SIB_DX_QP_VALID | (uint64_t)(qp->access & 0x7fffffffu) << 32 |
		    qp->ibv.qp_base.pd->handle;
		path = SIB_DX_QP_VALID | qp->dest_qpn | (uint64_t)qp->ah.dlid << 24 |
		       (uint64_t)qp->pkey_index << 40 | (uint64_t)qp->path_mtu << 48 |
		       (uint64_t)qp->port_num << 51 | (qp->ah.is_global ? SIB_DX_QPP_GLOBAL : 0);
	}
	/* Word 0 off while word 1 changes: a peer reads 0, 1, 0 again and
	 * uses them only if both reads of word 0 agree. */
	atomic_store_explicit(q0, 0, memory_order_seq_cst);
	atomic_store_explicit(q1, path, memory_order_seq_cst);
	atomic_store_explicit(q0, w, memory_order_seq_cst);
}

void sib_dx_qp_unexport(struct sib_qp *qp)
{
	struct sib_dx *dx = qp->ctx->dx;
	uint32_t qpn = qp->ibv.qp_base.qp_num;

	if (dx && dx->on && qpn < SIB_MAX_QPN) {
		atomic_store_explicit(tab_qp(dx->tab, qpn, 0), 0, memory_order_seq_cst);
		atomic_store_explicit(tab_qp(dx->tab, qpn, 1), 0, memory_order_seq_cst);
	}
}
