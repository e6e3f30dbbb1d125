/* SPDX-License-Identifier: MIT */
/*
 * Direct placement, the requester's side (direct_int.h): the engine's cache
 * of peers' export tables and MR windows, mapped from the memfds softibd
 * hands out (DX_GET, daemon/dx.c).  Everything a peer wrote is hostile
 * (DESIGN principle 6): the files are checked (sealed, sized), sizes are
 * bounded by fstat, seqlocks are read once and rechecked.
 * Locking: the owning context's progress_lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hca/direct_int.h"
#include "hca/mw.h"
#include "hca/provider.h"
#include "hca/transport.h"

void sib_dx_peer_drop(struct sib_dx_peer *p)
{
	if (p->tab)
		munmap((void *)p->tab, SIB_DX_BYTES);
	if (p->cnt)
		munmap((void *)p->cnt, SIB_DX_CNT_BYTES);
	memset(p, 0, sizeof(*p));
}

void sib_dx_map_drop(struct sib_dx_map *m)
{
	if (m->base)
		munmap(m->base, m->len);
	memset(m, 0, sizeof(*m));
}

/* ---- peers (requester side, engine context) ---- */

/*
 * A peer's memfd from softibd, which hands it out only on our right (our
 * QP towards a QPN of that context) and only a file the peer gave it; the
 * file is hostile all the same: it must be sealed against shrinking (no
 * SIGBUS under our copy) and of the size we expect.  Where /proc/<pid>/fd
 * was opened before (the engine's peer cache: on the thread that runs
 * the requester, see docs/transport.md "Direct placement").
 */
int sib_dx_fetch(const struct sib_qp *qp, uint32_t inbox, uint32_t gen, uint32_t kind, uint32_t id,
		 int oflags, size_t min, bool exact, size_t *size)
{
	struct sib_ctl_dx x = {
		.kind = kind, .id = id, .qp_handle = qp->obj_handle, .inbox = inbox,
		.inbox_gen = gen, .qpn = qp->dest_qpn,
	};
	struct stat st;
	int fd = -1, seals;

	if (!sib_host || !sib_host->dx || sib_host->dx(SIB_CTL_DX_GET, &x, -1, &fd) || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < 0 || (size_t)st.st_size < min || (exact && (size_t)st.st_size != min) ||
	    ((oflags & O_ACCMODE) == O_RDWR && (fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDWR)) {
		close(fd);
		return -1;
	}
	*size = (size_t)st.st_size;
	return fd;
}

/* The owner's table and counters, from softibd. */
static bool peer_open(struct sib_dx_peer *p, const struct sib_qp *qp)
{
	int tab, cnt;
	size_t sz;

	tab = sib_dx_fetch(qp, p->inbox, p->gen, SIB_DX_KIND_TAB, 0, O_RDONLY, SIB_DX_BYTES, true, &sz);
	cnt = tab < 0 ? -1 :
	      sib_dx_fetch(qp, p->inbox, p->gen, SIB_DX_KIND_CNT, 0, O_RDWR, SIB_DX_CNT_BYTES, true, &sz);
	if (tab >= 0 && cnt >= 0) {
		void *t = mmap(NULL, SIB_DX_BYTES, PROT_READ, MAP_SHARED, tab, 0);
		void *c = mmap(NULL, SIB_DX_CNT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, cnt, 0);

		if (t != MAP_FAILED && c != MAP_FAILED &&
		    __atomic_load_n(&((const struct sib_dx_hdr *)t)->magic, __ATOMIC_ACQUIRE) == SIB_DX_MAGIC) {
			p->tab = t;
			p->cnt = c;
		} else {
			if (t != MAP_FAILED)
				munmap(t, SIB_DX_BYTES);
			if (c != MAP_FAILED)
				munmap(c, SIB_DX_CNT_BYTES);
		}
	}
	if (tab >= 0)
		close(tab);
	if (cnt >= 0)
		close(cnt);
	return p->tab != NULL;
}

/* Drop peer p (its table, counters) and every map of its inbox. */
void sib_dx_peer_forget(struct sib_dx *dx, struct sib_dx_peer *p)
{
	for (unsigned int j = 0; j < DX_MAPS; j++)
		if (dx->maps[j].used && dx->maps[j].inbox == p->inbox)
			sib_dx_map_drop(&dx->maps[j]);
	sib_dx_peer_drop(p);
}

/* Drop what we hold of inbox: its generation is no longer current. */
void sib_dx_inbox_forget(struct sib_dx *dx, uint32_t inbox)
{
	for (unsigned int i = 0; i < DX_PEERS; i++)
		if (dx->peers[i].used && dx->peers[i].inbox == inbox)
			sib_dx_peer_forget(dx, &dx->peers[i]);
	for (unsigned int j = 0; j < DX_MAPS; j++)
		if (dx->maps[j].used && dx->maps[j].inbox == inbox)
			sib_dx_map_drop(&dx->maps[j]);
}

/* Drop the maps of key index idx of peer p made from an entry other than
 * seq (the MR was deregistered or changed): they pin its old pages. */
void sib_dx_maps_stale(struct sib_dx *dx, const struct sib_dx_peer *p, uint32_t idx, uint32_t seq)
{
	for (unsigned int j = 0; j < DX_MAPS; j++) {
		struct sib_dx_map *m = &dx->maps[j];

		if (m->used && m->inbox == p->inbox && m->gen == p->gen && m->idx == idx && m->seq != seq)
			sib_dx_map_drop(m);
	}
}

struct sib_dx_peer *sib_dx_peer_get(struct sib_dx *dx, const struct sib_qp *qp, uint32_t inbox,
				    uint32_t gen)
{
	struct sib_dx_peer *p, *victim = &dx->peers[0];

	for (unsigned int i = 0; i < DX_PEERS; i++) {
		p = &dx->peers[i];
		if (p->used && p->inbox == inbox && p->gen == gen) {
			p->used = ++dx->tick;
			return p->none ? NULL : p;
		}
		if (p->used && p->inbox == inbox)
			sib_dx_peer_forget(dx, p); /* that peer is gone: its inbox has a new gen */
		if (p->used < victim->used)
			victim = p;
	}
	p = victim;
	sib_dx_peer_drop(p);
	p->inbox = inbox;
	p->gen = gen;
	p->used = ++dx->tick;
	p->none = !peer_open(p, qp) ||
		  sib_link_inbox_gen(inbox) != gen;
	if (p->none) {
		if (p->tab)
			munmap((void *)p->tab, SIB_DX_BYTES);
		if (p->cnt)
			munmap((void *)p->cnt, SIB_DX_CNT_BYTES);
		p->tab = NULL;
		p->cnt = NULL;
	}
	return p->none ? NULL : p;
}

/* A consistent copy of a peer's entry; false while it is being written. */
bool sib_dx_ent_read(const struct sib_dx_peer *p, uint32_t idx, struct sib_dx_ent *v)
{
	const struct sib_dx_ent *e = (const struct sib_dx_ent *)(p->tab + SIB_DX_ENT_OFF) + idx;
	uint32_t s = atomic_load_explicit(&e->seq, memory_order_acquire);

	if (!s || (s & 1))
		return false;
	v->rkey = __atomic_load_n(&e->rkey, __ATOMIC_RELAXED);
	v->iova = __atomic_load_n(&e->iova, __ATOMIC_RELAXED);
	v->length = __atomic_load_n(&e->length, __ATOMIC_RELAXED);
	v->access = __atomic_load_n(&e->access, __ATOMIC_RELAXED);
	v->pd = __atomic_load_n(&e->pd, __ATOMIC_RELAXED);
	v->fd = __atomic_load_n(&e->fd, __ATOMIC_RELAXED);
	v->off = __atomic_load_n(&e->off, __ATOMIC_RELAXED);
	v->dlo = __atomic_load_n(&e->dlo, __ATOMIC_RELAXED);
	v->dhi = __atomic_load_n(&e->dhi, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&e->seq, memory_order_relaxed) != s)
		return false;
	v->seq = s;
	return true;
}

/* Does map m stand for entry v (seq s) of key index idx of peer p? */
static bool map_is(const struct sib_dx_map *m, const struct sib_dx_peer *p, uint32_t idx,
		   const struct sib_dx_ent *v, uint32_t seq)
{
	return m->inbox == p->inbox && m->gen == p->gen && m->idx == idx && m->seq == seq &&
	       m->fd == v->fd && m->off == v->off && m->dlo == v->dlo && m->dhi == v->dhi;
}

/*
 * The mapping of entry v's window (seq s) of peer p: only the pages of
 * [off, off + (dhi - dlo)) of its memfd, bounded by the file's real size
 * and by DX_MAP_MAX.  A cached map is used only while the entry says
 * exactly what it was made from; maps of this key index made from another
 * entry (its seq moved, or a hostile owner rewrote it) are dropped.
 */
struct sib_dx_map *sib_dx_map_get(struct sib_dx *dx, const struct sib_qp *qp, struct sib_dx_peer *p,
				  uint32_t idx, const struct sib_dx_ent *v, bool rw)
{
	struct sib_dx_map *m, *victim = &dx->maps[0];
	uint32_t seq = atomic_load_explicit(&v->seq, memory_order_relaxed);
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), wlen, moff, mend;
	size_t size;
	void *base;
	int fd;

	for (unsigned int i = 0; i < DX_MAPS; i++) {
		m = &dx->maps[i];
		if (m->used && m->inbox == p->inbox && m->gen == p->gen && m->idx == idx) {
			if (map_is(m, p, idx, v, seq) && (m->rw || !rw || !m->base)) {
				m->used = ++dx->tick;
				return m->base ? m : NULL; /* no base: refused before */
			}
			if (!map_is(m, p, idx, v, seq))
				sib_dx_map_drop(m); /* made from an older entry */
		}
		if (m->used < victim->used)
			victim = m;
	}
	if (v->fd <= 0 || v->dhi <= v->dlo)
		return NULL;
	wlen = v->dhi - v->dlo;
	if (wlen > DX_MAP_MAX || v->off > UINT64_MAX - wlen - page)
		return NULL;
	base = NULL;
	fd = sib_dx_fetch(qp, p->inbox, p->gen, SIB_DX_KIND_MR, (uint32_t)v->fd,
			  rw ? O_RDWR : O_RDONLY, 0, false, &size);
	/* Bounded by the file's real size, whatever the entry says. */
	moff = v->off & ~(page - 1);
	mend = (v->off + wlen + page - 1) & ~(page - 1);
	if (fd >= 0 && v->off <= size && wlen <= size - v->off) {
		base = mmap(NULL, mend - moff, rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd,
			    (off_t)moff);
		if (base == MAP_FAILED)
			base = NULL;
	}
	if (fd >= 0)
		close(fd);
	/* A failure is remembered too (base NULL), so that the next WQE to
	 * this entry goes by packets without asking softibd again. */
	m = victim;
	sib_dx_map_drop(m);
	m->inbox = p->inbox;
	m->gen = p->gen;
	m->idx = idx;
	m->seq = seq;
	m->fd = v->fd;
	m->off = v->off;
	m->dlo = v->dlo;
	m->dhi = v->dhi;
	m->base = base;
	m->len = base ? mend - moff : 0;
	m->skew = v->off - moff;
	m->rw = rw;
	m->used = ++dx->tick;
	return base ? m : NULL;
}
