/* SPDX-License-Identifier: MIT */
/*
 * Direct placement, the requester's side (direct_int.h): the engine's cache
 * of peers' export tables and MR windows, opened from the peer process's
 * memfds.  Everything a peer wrote is hostile (DESIGN principle 6): fds
 * are opened only when they are softib memfds of a process of our euid,
 * sizes are bounded by fstat, seqlocks are read once and rechecked.
 * Locking: the owning context's progress_lock.
 */
#include <dirent.h>
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

void sib_dx_peer_drop(struct sib_dx_peer *p)
{
	if (p->tab)
		munmap((void *)p->tab, SIB_DX_BYTES);
	if (p->cnt)
		munmap((void *)p->cnt, SIB_DX_CNT_BYTES);
	if (p->used && p->pidfd >= 0)
		close(p->pidfd);
	memset(p, 0, sizeof(*p));
	p->pidfd = -1;
}

void sib_dx_map_drop(struct sib_dx_map *m)
{
	if (m->base)
		munmap(m->base, m->len);
	memset(m, 0, sizeof(*m));
}

/* ---- peers (requester side, engine context) ---- */

/*
 * Open fd n of process pid, only if it is a softib memfd whose name starts
 * with `prefix` and that is sealed against shrinking: never a file the
 * owner merely points at; and only if pidfd's process (pid when the peer
 * was found) still runs after the open, so a reused pid is never
 * followed.  Returns the fd (oflags) and its size, or -1.
 */
bool sib_dx_pid_runs(int pidfd)
{
	struct pollfd pf = { .fd = pidfd, .events = POLLIN };

	/* A pidfd polls readable once its process has exited. */
	return pidfd >= 0 && poll(&pf, 1, 0) == 0;
}

static int open_peer_memfd(int32_t pid, int pidfd, int n, const char *prefix, int oflags,
			   size_t *size)
{
	char path[64], link[128], self[64];
	struct stat st;
	ssize_t l;
	int pfd, fd, seals;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, n);
	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -1;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	l = readlink(self, link, sizeof(link) - 1);
	if (l <= 0 || fstat(pfd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(pfd);
		return -1;
	}
	link[l] = 0;
	if (strncmp(link, "/memfd:", 7) || strncmp(link + 7, prefix, strlen(prefix))) {
		close(pfd);
		return -1;
	}
	fd = open(self, oflags | O_CLOEXEC);
	close(pfd);
	if (fd < 0)
		return -1;
	if (!sib_dx_pid_runs(pidfd)) {
		close(fd);
		return -1;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) || st.st_size < 0) {
		close(fd);
		return -1;
	}
	*size = (size_t)st.st_size;
	return fd;
}

/* Find the owner's table and counters: scan its fds for our names. */
static bool peer_open(struct sib_dx_peer *p, int32_t pid)
{
	char dpath[32], want_tab[64], want_cnt[64];
	struct stat st;
	DIR *d;
	struct dirent *de;
	int tab = -1, cnt = -1, seen = 0;
	size_t sz;

	snprintf(dpath, sizeof(dpath), "/proc/%d", pid);
	if (pid <= 0)
		return false;
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd < 0 || stat(dpath, &st) || st.st_uid != geteuid())
		return false;
	snprintf(want_tab, sizeof(want_tab), "softib-dx-%u-%u ", p->inbox, p->gen);
	snprintf(want_cnt, sizeof(want_cnt), "softib-dxc-%u-%u ", p->inbox, p->gen);
	snprintf(dpath, sizeof(dpath), "/proc/%d/fd", pid);
	d = opendir(dpath);
	if (!d)
		return false;
	while ((tab < 0 || cnt < 0) && seen++ < DX_FD_SCAN_MAX && (de = readdir(d))) {
		char lpath[64], link[128], *end;
		long n = strtol(de->d_name, &end, 10);
		ssize_t l;

		if (*end || n < 0 || n > INT_MAX)
			continue;
		/* A cheap look at the name first; open_peer_memfd checks again
		 * on the file it actually opens. */
		snprintf(lpath, sizeof(lpath), "/proc/%d/fd/%ld", pid, n);
		l = readlink(lpath, link, sizeof(link) - 1);
		if (l <= 7 || strncmp(link, "/memfd:softib-dx", 16))
			continue;
		link[l] = 0;
		if (tab < 0 && !strncmp(link + 7, want_tab, strlen(want_tab))) {
			tab = open_peer_memfd(pid, p->pidfd, (int)n, want_tab, O_RDONLY, &sz);
			if (tab >= 0 && sz != SIB_DX_BYTES) {
				close(tab);
				tab = -1;
			}
		} else if (cnt < 0 && !strncmp(link + 7, want_cnt, strlen(want_cnt))) {
			cnt = open_peer_memfd(pid, p->pidfd, (int)n, want_cnt, O_RDWR, &sz);
			if (cnt >= 0 && sz != SIB_DX_CNT_BYTES) {
				close(cnt);
				cnt = -1;
			}
		}
	}
	closedir(d);
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

/* Drop peer p (its table, counters, pidfd) and every map of its inbox. */
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

struct sib_dx_peer *sib_dx_peer_get(struct sib_dx *dx, uint32_t inbox, uint32_t gen)
{
	struct sib_dx_peer *p, *victim = &dx->peers[0];
	int32_t pid;

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
	pid = __atomic_load_n(&sib_fabric->inboxes[inbox].pid, __ATOMIC_RELAXED);
	p->pid = pid;
	p->none = !peer_open(p, pid) ||
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
struct sib_dx_map *sib_dx_map_get(struct sib_dx *dx, struct sib_dx_peer *p, uint32_t idx,
				  const struct sib_dx_ent *v, bool rw)
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
			if (map_is(m, p, idx, v, seq) && (m->rw || !rw)) {
				m->used = ++dx->tick;
				return m;
			}
			if (!map_is(m, p, idx, v, seq))
				sib_dx_map_drop(m); /* made from an older entry */
		}
		if (m->used < victim->used)
			victim = m;
	}
	if (v->fd < 0 || v->dhi <= v->dlo)
		return NULL;
	wlen = v->dhi - v->dlo;
	if (wlen > DX_MAP_MAX || v->off > UINT64_MAX - wlen - page)
		return NULL;
	fd = open_peer_memfd(p->pid, p->pidfd, v->fd, "softib-mr ", rw ? O_RDWR : O_RDONLY, &size);
	if (fd < 0)
		return NULL;
	/* Bounded by the file's real size, whatever the entry says. */
	if (v->off > size || wlen > size - v->off) {
		close(fd);
		return NULL;
	}
	moff = v->off & ~(page - 1);
	mend = (v->off + wlen + page - 1) & ~(page - 1);
	base = mmap(NULL, mend - moff, rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd,
		    (off_t)moff);
	close(fd);
	if (base == MAP_FAILED)
		return NULL;
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
	m->len = mend - moff;
	m->skew = v->off - moff;
	m->rw = rw;
	m->used = ++dx->tick;
	return m;
}
