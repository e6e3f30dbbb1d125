/* SPDX-License-Identifier: MIT */
/*
 * Direct placement (docs/transport.md "Direct placement"; not IBA: the
 * memory link's shortcut for RDMA WRITE and READ, keeping IBA 9.7's
 * semantics).  Owns: the process's registry of registered pages moved onto
 * memfds (reg/dereg/fork), each context's export table and in-flight
 * counters, and the engine's cache of peers' tables and MR mappings.
 * Everything a peer wrote is hostile (DESIGN principle 6): fds are opened
 * only when they are softib memfds of a process of our euid, sizes are
 * bounded by fstat, seqlocks are read once and rechecked.  Must not: touch
 * partial pages, file or shared mappings, or block a post for long.
 * Locking: dx_lock for the registry and the list of contexts; the peer
 * cache under progress_lock.
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

#include "hca/direct.h"
#include "hca/mw.h"
#include "hca/transport.h"

#define DX_PEERS 8                 /* peers' tables a context keeps mapped */
#define DX_MAPS  64                /* peers' MR memfds a context keeps mapped */
#define DX_FD_SCAN_MAX 65536       /* fds looked at when finding a peer's table */
#define DX_REVOKE_WAIT_NS 5000000000ull /* as destroy waits for its users (qp.c) */
#define DX_MAP_MAX (4ull << 30)    /* longest peer MR window mapped (address space) */

/* ---- /proc/self/maps, without malloc (also in a fork child) ---- */

struct maps_line {
	uintptr_t lo, hi;
	uint64_t off;                  /* file offset of lo */
	char perms[5];
	unsigned long ino;
	char path[64];
};

struct maps_reader {
	int fd;
	char buf[4096];
	size_t len, pos;
};

static bool maps_next(struct maps_reader *m, struct maps_line *l)
{
	char line[512];
	size_t n = 0;

	for (;;) {
		if (m->pos == m->len) {
			ssize_t r = read(m->fd, m->buf, sizeof(m->buf));

			if (r <= 0)
				return false;
			m->len = (size_t)r;
			m->pos = 0;
		}
		char c = m->buf[m->pos++];

		if (c == '\n')
			break;
		if (n < sizeof(line) - 1)
			line[n++] = c;
	}
	line[n] = 0;
	unsigned long lo, hi, off, ino;
	unsigned int maj, mnr;
	int pathpos = 0;

	memset(l, 0, sizeof(*l));
	if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu %n", &lo, &hi, l->perms, &off, &maj, &mnr, &ino,
		   &pathpos) < 7)
		return maps_next(m, l);
	l->lo = lo;
	l->hi = hi;
	l->off = off;
	l->ino = ino;
	if (pathpos > 0 && (size_t)pathpos < n)
		snprintf(l->path, sizeof(l->path), "%s", line + pathpos);
	return true;
}

/* A mapping of one of our MR memfds ("softib-mr", shown deleted). */
static bool maps_is_mr(const struct maps_line *l)
{
	return !strncmp(l->path, "/memfd:softib-mr ", 17) && l->perms[3] == 's';
}

/*
 * Is every page of [s, e) private anonymous read-write memory (ino 0), or
 * (ino != 0) a read-write mapping of our memfd of that inode at file
 * offset `address - base`?  With *nlines, the whole file is read and its
 * line count (the process's mappings) returned too.
 */
static bool maps_cover(uintptr_t s, uintptr_t e, unsigned long ino, uintptr_t base,
		       unsigned long *nlines)
{
	struct maps_reader m = { .fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC) };
	struct maps_line l;
	uintptr_t at = s;
	bool hole = false;
	unsigned long n = 0;

	if (m.fd < 0)
		return false;
	while ((nlines || (at < e && !hole)) && maps_next(&m, &l)) {
		bool ok;

		n++;
		if (hole || at >= e || l.hi <= at)
			continue;
		if (l.lo > at) {
			hole = true; /* a hole */
			continue;
		}
		if (ino)
			ok = l.ino == ino && maps_is_mr(&l) && !strcmp(l.perms, "rw-s") &&
			     l.lo - l.off == base;
		else
			ok = l.ino == 0 && !strcmp(l.perms, "rw-p") &&
			     (!l.path[0] || !strcmp(l.path, "[heap]"));
		if (ok)
			at = l.hi;
		else
			hole = true;
	}
	close(m.fd);
	if (nlines)
		*nlines = n;
	return !hole && at >= e;
}

/* ---- the registry of pages on memfds ---- */

/*
 * A range of pages moved onto memfd `fd` (page `start` at offset 0).  refs
 * counts the MRs on it; at 0 the pages stay on the memfd (they are the
 * application's memory now, see region_put) and the region stays here with
 * its fd so that a later reg_mr over them shares it, until no mapping of
 * the memfd is left (region_prune).
 */
struct sib_dx_region {
	uintptr_t start, end;
	int fd;
	unsigned long ino;
	unsigned int refs;
	bool mapped;                   /* region_prune's mark */
	struct sib_dx_region *next;
};

/* vm.max_map_count; 0: read /proc/sys/vm/max_map_count at the next
 * registration (tests set a lower one). */
unsigned long sib_dx_max_map_count;
/* Mappings a registration may add: the copy's temporary one and the two
 * pieces MAP_FIXED splits the old VMA into, and one to spare. */
#define DX_MAP_SLACK 4u

static pthread_mutex_t dx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sib_dx_region *dx_regions;
static struct sib_dx *dx_ctxs;            /* contexts with an export table */
static unsigned int dx_fork_gen;          /* MRs inherited by a fork child are not ours */
static pthread_once_t dx_once = PTHREAD_ONCE_INIT;

static unsigned long map_max(void)
{
	char b[32];
	int fd;
	ssize_t n;

	if (sib_dx_max_map_count)
		return sib_dx_max_map_count;
	sib_dx_max_map_count = 65530; /* the kernel's default */
	fd = open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, b, sizeof(b) - 1);
		if (n > 0) {
			b[n] = 0;
			if (strtoul(b, NULL, 10) > 0)
				sib_dx_max_map_count = strtoul(b, NULL, 10);
		}
		close(fd);
	}
	return sib_dx_max_map_count;
}

/* Copy the pages of [s, s + len) that hold data into dst: the pages the
 * process has touched (present or swapped, /proc/self/pagemap), so that a
 * sparse buffer does not become a full one.  Everything if pagemap cannot
 * be read. */
static void copy_touched(uint8_t *dst, uintptr_t s, size_t len, size_t page)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	uint64_t ent[512];

	if (fd < 0) {
		memcpy(dst, (void *)s, len);
		return;
	}
	for (size_t off = 0; off < len;) {
		size_t n = (len - off) / page < 512 ? (len - off) / page : 512;
		ssize_t r = pread(fd, ent, n * 8, (off_t)((s + off) / page * 8));

		if (r != (ssize_t)(n * 8)) {
			memcpy(dst + off, (void *)(s + off), len - off);
			break;
		}
		for (size_t i = 0; i < n; i++)
			if (ent[i] & (3ull << 62)) /* present or swapped */
				memcpy(dst + off + i * page, (void *)(s + off + i * page), page);
		off += n * page;
	}
	close(fd);
}

/* Forget the regions no MR uses whose memfd nobody maps any more (the
 * application unmapped them): their memory goes with our fd. */
static void region_prune(void)
{
	struct maps_reader m = { .fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC) };
	struct sib_dx_region **pp, *r;
	struct maps_line l;
	bool orphans = false;

	for (r = dx_regions; r; r = r->next) {
		r->mapped = false;
		orphans |= !r->refs;
	}
	if (!orphans || m.fd < 0) {
		if (m.fd >= 0)
			close(m.fd);
		return;
	}
	while (maps_next(&m, &l))
		if (maps_is_mr(&l))
			for (r = dx_regions; r; r = r->next)
				r->mapped |= r->ino == l.ino;
	close(m.fd);
	for (pp = &dx_regions; (r = *pp);) {
		if (!r->refs && !r->mapped) {
			*pp = r->next;
			close(r->fd);
			free(r);
		} else {
			pp = &r->next;
		}
	}
}

/* fork child: replace [lo, hi), a mapping of one of our MR memfds at file
 * offset `off` with permissions `perms`, by private anonymous memory with
 * the same contents and protection (as copy-on-write would have given).
 * Only the file's data runs are copied when its fd is known (a sparse
 * region stays sparse); a mapping that fails keeps sharing. */
static void child_private(const struct maps_line *l)
{
	size_t len = l->hi - l->lo;
	int prot = (l->perms[0] == 'r' ? PROT_READ : 0) | (l->perms[1] == 'w' ? PROT_WRITE : 0) |
		   (l->perms[2] == 'x' ? PROT_EXEC : 0);
	struct sib_dx_region *r;
	int fd = -1;
	void *tmp;

	tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tmp == MAP_FAILED)
		return;
	if (!(prot & PROT_READ) && mprotect((void *)l->lo, len, PROT_READ)) {
		munmap(tmp, len);
		return;
	}
	for (r = dx_regions; r; r = r->next)
		if (r->ino == l->ino)
			fd = r->fd;
	/* The kernel copies (pread): the pages may be memory the application
	 * freed, which a sanitizer's memcpy would refuse to read. */
	if (fd < 0) {
		int mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);

		if (mem < 0 || pread(mem, tmp, len, (off_t)l->lo) != (ssize_t)len)
			memcpy(tmp, (void *)l->lo, len);
		if (mem >= 0)
			close(mem);
	} else {
		off_t at = (off_t)l->off, hole, end = (off_t)(l->off + len);

		while (at < end && (at = lseek(fd, at, SEEK_DATA)) >= 0 && at < end) {
			uint8_t *to = (uint8_t *)tmp + (at - (off_t)l->off);

			hole = lseek(fd, at, SEEK_HOLE);
			if (hole < 0 || hole > end)
				hole = end;
			if (pread(fd, to, (size_t)(hole - at), at) != hole - at)
				memcpy(to, (uint8_t *)l->lo + (at - (off_t)l->off), (size_t)(hole - at));
			at = hole;
		}
	}
	if (mprotect(tmp, len, prot) ||
	    mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)l->lo) == MAP_FAILED)
		munmap(tmp, len);
}

/* The child tells the parent on this pipe when its snapshot is taken, so
 * that fork() returns in the parent only then: the parent's writes after
 * fork() never show in the child (peers' writes meanwhile may; see
 * docs/transport.md). */
static int dx_fork_pipe[2] = { -1, -1 };

static void dx_prepare(void)
{
	pthread_mutex_lock(&dx_lock);
	if (dx_regions && pipe2(dx_fork_pipe, O_CLOEXEC))
		dx_fork_pipe[0] = dx_fork_pipe[1] = -1;
}

static void dx_parent(void)
{
	if (dx_fork_pipe[0] >= 0) {
		struct pollfd p = { .fd = dx_fork_pipe[0], .events = POLLIN };

		close(dx_fork_pipe[1]);
		/* bounded: a child that dies first closes the pipe (POLLHUP) */
		(void)poll(&p, 1, 10000);
		close(dx_fork_pipe[0]);
		dx_fork_pipe[0] = dx_fork_pipe[1] = -1;
	}
	pthread_mutex_unlock(&dx_lock);
}

static void dx_child_ctxs(void);

/*
 * fork: the child gets a private copy of every mapping of our MR memfds
 * it finds in /proc/self/maps (registered regions, the pages deregistered
 * MRs left on their memfds, pieces the application mprotect'ed or
 * mremap'ed), as copy-on-write would have given it; and its contexts stop
 * direct placement and writing the parent's export tables
 * (dx_child_ctxs).  The parent is not affected.
 */
static void dx_child(void)
{
	struct maps_reader m = { .fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC) };
	struct sib_dx_region *r = dx_regions;
	struct maps_line l;

	dx_child_ctxs(); /* first: drops the mappings of peers' memfds */
	if (m.fd >= 0) {
		/* Lines already read stay valid: only [l.lo, l.hi) changes. */
		while (maps_next(&m, &l))
			if (maps_is_mr(&l))
				child_private(&l);
		close(m.fd);
	}
	while (r) {
		struct sib_dx_region *next = r->next;

		close(r->fd);
		free(r);
		r = next;
	}
	dx_regions = NULL;
	dx_fork_gen++;
	if (dx_fork_pipe[1] >= 0) {
		close(dx_fork_pipe[0]);
		if (write(dx_fork_pipe[1], "s", 1) != 1)
			(void)0; /* the parent sees the pipe close at exit */
		close(dx_fork_pipe[1]);
		dx_fork_pipe[0] = dx_fork_pipe[1] = -1;
	}
	pthread_mutex_unlock(&dx_lock);
}

static void dx_init_once(void)
{
	(void)pthread_atfork(dx_prepare, dx_parent, dx_child);
}

/*
 * The region holding [s, e) (page aligned): an existing one that contains
 * it, if /proc/self/maps still shows its memfd there read-write at the
 * right offset (one more reference), or a new one.  NULL: not eligible,
 * among others pages that lie on one of our memfds in another way (never
 * copied onto a second memfd), or a process near vm.max_map_count (a
 * MAP_FIXED that fails there may already have unmapped the old range on
 * older kernels).
 */
static struct sib_dx_region *region_get(uintptr_t s, uintptr_t e)
{
	struct sib_dx_region *r;
	size_t len = e - s;
	unsigned long nmaps;
	struct stat st;
	void *tmp;
	int fd;

	region_prune();
	for (r = dx_regions; r; r = r->next) {
		if (s >= r->start && e <= r->end) {
			if (!maps_cover(s, e, r->ino, r->start, NULL))
				return NULL;
			r->refs++;
			return r;
		}
		if (s < r->end && e > r->start)
			return NULL; /* overlaps partly: no direct path for this MR */
	}
	if (!maps_cover(s, e, 0, 0, &nmaps) || nmaps + DX_MAP_SLACK > map_max())
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	fd = memfd_create("softib-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		goto err;
	if (ftruncate(fd, (off_t)len) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) || fstat(fd, &st))
		goto err_fd;
	tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (tmp == MAP_FAILED)
		goto err_fd;
	copy_touched(tmp, s, len, (size_t)sysconf(_SC_PAGESIZE));
	munmap(tmp, len);
	if (mmap((void *)s, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
		goto err_fd;
	r->start = s;
	r->end = e;
	r->fd = fd;
	r->ino = (unsigned long)st.st_ino;
	r->refs = 1;
	r->next = dx_regions;
	dx_regions = r;
	return r;
err_fd:
	close(fd);
err:
	free(r);
	return NULL;
}

/*
 * One MR less on r.  The last one leaves the pages on the memfd: copying
 * them back to private memory would lose the stores other threads (and our
 * engine, through another MR) make meanwhile.  They stay the application's
 * memory, shared only with peers that still map the memfd (and those
 * write no more: the entry was revoked); fork gives children a private
 * copy (dx_child); an munmap by the application frees them (region_prune
 * closes our fd once nothing maps the memfd).
 */
static void region_put(struct sib_dx_region *r)
{
	r->refs--;
	region_prune();
}

/* ---- the export table (owner side) ---- */

struct sib_dx_peer {
	uint32_t inbox, gen;
	bool none;                     /* looked, exports nothing usable */
	const uint8_t *tab;            /* SIB_DX_BYTES, read-only */
	_Atomic uint64_t *cnt;         /* SIB_DX_CNT_BYTES, read-write */
	int32_t pid;
	int pidfd;                     /* the owner process (pidfd_open), -1 none */
	uint64_t used;
};

/* A peer MR's window: [off, off + (dhi - dlo)) of its memfd rounded out to
 * pages, mapped at base (len bytes); at = base + skew + (va - dlo).  Used
 * only while the entry still says exactly fd, off, dlo, dhi (and seq). */
struct sib_dx_map {
	uint32_t inbox, gen, idx, seq;
	int32_t fd;
	uint64_t off, dlo, dhi;        /* the entry the map was made from */
	uint8_t *base;
	size_t len, skew;
	bool rw;
	uint64_t used;
};

struct sib_dx {
	bool on;                       /* SOFTIB_DIRECT is not 0 */
	int tab_fd, cnt_fd;
	uint8_t *tab;                  /* our export table (read-write) */
	_Atomic uint64_t *cnt;         /* our in-flight counters (seq << 32 | count) */
	uint64_t tick;
	uint64_t placed, refused;      /* WQEs placed; tries that went to packets */
	struct sib_dx_peer peers[DX_PEERS];
	struct sib_dx_map maps[DX_MAPS];
	struct sib_dx *next;           /* dx_ctxs, under dx_lock */
};

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

int sib_dx_ctx_init(struct sib_context *ctx)
{
	const char *v = getenv("SOFTIB_DIRECT");
	struct sib_dx *dx = calloc(1, sizeof(*dx));
	char name[64];
	void *m;
	int fd;

	if (!dx)
		return ENOMEM;
	dx->tab_fd = dx->cnt_fd = -1;
	for (unsigned int i = 0; i < DX_PEERS; i++)
		dx->peers[i].pidfd = -1;
	ctx->dx = dx;
	if (v && !strcmp(v, "0"))
		return 0;
	pthread_once(&dx_once, dx_init_once);
	snprintf(name, sizeof(name), "softib-dx-%u-%u", ctx->inbox_idx, ctx->inbox_gen);
	fd = dx_memfd(name, SIB_DX_BYTES, &m);
	if (fd < 0)
		return -fd;
	dx->tab_fd = fd;
	dx->tab = m;
	snprintf(name, sizeof(name), "softib-dxc-%u-%u", ctx->inbox_idx, ctx->inbox_gen);
	fd = dx_memfd(name, SIB_DX_CNT_BYTES, &m);
	if (fd < 0) {
		munmap(dx->tab, SIB_DX_BYTES);
		close(dx->tab_fd);
		dx->tab = NULL;
		dx->tab_fd = -1;
		return -fd;
	}
	dx->cnt_fd = fd;
	dx->cnt = m;
	((struct sib_dx_hdr *)dx->tab)->max_mr = SIB_DX_MAX_MR;
	__atomic_store_n(&((struct sib_dx_hdr *)dx->tab)->magic, SIB_DX_MAGIC, __ATOMIC_RELEASE);
	dx->on = true;
	pthread_mutex_lock(&dx_lock);
	dx->next = dx_ctxs;
	dx_ctxs = dx;
	pthread_mutex_unlock(&dx_lock);
	return 0;
}

static void peer_drop(struct sib_dx_peer *p)
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

static void map_drop(struct sib_dx_map *m)
{
	if (m->base)
		munmap(m->base, m->len);
	memset(m, 0, sizeof(*m));
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
		peer_drop(&dx->peers[i]);
	for (unsigned int i = 0; i < DX_MAPS; i++)
		map_drop(&dx->maps[i]);
	if (dx->tab) {
		struct sib_dx **pp;

		pthread_mutex_lock(&dx_lock);
		for (pp = &dx_ctxs; *pp && *pp != dx; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = dx->next;
		region_prune(); /* the memfds of unmapped deregistered pages */
		pthread_mutex_unlock(&dx_lock);
		munmap(dx->tab, SIB_DX_BYTES);
		munmap((void *)dx->cnt, SIB_DX_CNT_BYTES);
		if (dx->tab_fd >= 0)
			close(dx->tab_fd);
		if (dx->cnt_fd >= 0)
			close(dx->cnt_fd);
	}
	free(dx);
	ctx->dx = NULL;
}

/*
 * fork child (dx_lock held since dx_prepare): every context of the
 * process stops direct placement, drops its peers' tables and MR mappings
 * and gets private anonymous memory in place of its export table and
 * counters, so the child never writes the parent's (its MR and QP calls
 * then change nothing peers see).
 */
static void dx_child_ctxs(void)
{
	for (struct sib_dx *dx = dx_ctxs; dx; dx = dx->next) {
		dx->on = false;
		for (unsigned int i = 0; i < DX_PEERS; i++)
			peer_drop(&dx->peers[i]);
		for (unsigned int i = 0; i < DX_MAPS; i++)
			map_drop(&dx->maps[i]);
		if (mmap(dx->tab, SIB_DX_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			munmap(dx->tab, SIB_DX_BYTES); /* never shared again */
		if (mmap((void *)dx->cnt, SIB_DX_CNT_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			munmap((void *)dx->cnt, SIB_DX_CNT_BYTES);
		close(dx->tab_fd);
		close(dx->cnt_fd);
		dx->tab_fd = dx->cnt_fd = -1;
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
	if (r && (!want || mr->dx_fork_gen != dx_fork_gen || s < r->start || e > r->end)) {
		sib_dx_mr_detach(mr);
		r = NULL;
	}
	if (want && !r) {
		pthread_mutex_lock(&dx_lock);
		r = region_get(s, e);
		pthread_mutex_unlock(&dx_lock);
	}
	if (want && r) {
		mr->dx_region = r;
		mr->dx_fork_gen = dx_fork_gen;
		v.fd = r->fd;
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
	pthread_mutex_lock(&dx_lock);
	if (mr->dx_fork_gen == dx_fork_gen)
		region_put(r);
	pthread_mutex_unlock(&dx_lock);
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

/* ---- peers (requester side, engine context) ---- */

/*
 * Open fd n of process pid, only if it is a softib memfd whose name starts
 * with `prefix` and that is sealed against shrinking: never a file the
 * owner merely points at; and only if pidfd's process (pid when the peer
 * was found) still runs after the open, so a reused pid is never
 * followed.  Returns the fd (oflags) and its size, or -1.
 */
static bool pid_runs(int pidfd)
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
	if (!pid_runs(pidfd)) {
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
static void peer_forget(struct sib_dx *dx, struct sib_dx_peer *p)
{
	for (unsigned int j = 0; j < DX_MAPS; j++)
		if (dx->maps[j].used && dx->maps[j].inbox == p->inbox)
			map_drop(&dx->maps[j]);
	peer_drop(p);
}

/* Drop what we hold of inbox: its generation is no longer current. */
static void inbox_forget(struct sib_dx *dx, uint32_t inbox)
{
	for (unsigned int i = 0; i < DX_PEERS; i++)
		if (dx->peers[i].used && dx->peers[i].inbox == inbox)
			peer_forget(dx, &dx->peers[i]);
	for (unsigned int j = 0; j < DX_MAPS; j++)
		if (dx->maps[j].used && dx->maps[j].inbox == inbox)
			map_drop(&dx->maps[j]);
}

/* Drop the maps of key index idx of peer p made from an entry other than
 * seq (the MR was deregistered or changed): they pin its old pages. */
static void maps_stale(struct sib_dx *dx, const struct sib_dx_peer *p, uint32_t idx, uint32_t seq)
{
	for (unsigned int j = 0; j < DX_MAPS; j++) {
		struct sib_dx_map *m = &dx->maps[j];

		if (m->used && m->inbox == p->inbox && m->gen == p->gen && m->idx == idx && m->seq != seq)
			map_drop(m);
	}
}

static struct sib_dx_peer *peer_get(struct sib_dx *dx, uint32_t inbox, uint32_t gen)
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
			peer_forget(dx, p); /* that peer is gone: its inbox has a new gen */
		if (p->used < victim->used)
			victim = p;
	}
	p = victim;
	peer_drop(p);
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
static bool ent_read(const struct sib_dx_peer *p, uint32_t idx, struct sib_dx_ent *v)
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
static struct sib_dx_map *map_get(struct sib_dx *dx, struct sib_dx_peer *p, uint32_t idx,
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
				map_drop(m); /* made from an older entry */
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
	map_drop(m);
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
	const struct sib_link_stats *ps;
	const _Atomic uint64_t *qp_word;
	uint64_t qw, path, va = w->remote_addr, len = w->length;
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	uint8_t *at;

	if (!dx || !dx->on || !len || sib_key_is_mw(w->rkey) || idx >= SIB_DX_MAX_MR || !qp->dest.dest)
		return false;
	/* A capture at the receiver records what it receives: real packets,
	 * so no placement toward it (its link reports the capture in its
	 * inbox header; display data, trusted only to fall back). */
	ps = (const struct sib_link_stats *)((const uint8_t *)qp->dest.dest->ring.hdr + SIB_LINK_STATS_OFF);
	if (atomic_load_explicit(&ps->flags, memory_order_relaxed) & SIB_LINK_STAT_CAPTURE)
		return false;
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
		inbox_forget(dx, inbox);
		return false;
	}
	p = peer_get(dx, inbox, gen);
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
	if (!ent_read(p, idx, &v))
		return false;
	maps_stale(dx, p, idx, v.seq);
	if (v.rkey != w->rkey || (v.access & need) != need || v.pd != (uint32_t)qw || v.fd < 0)
		return false;
	/* Inside the MR and inside its memfd-backed pages (overflow-safe). */
	if (len > v.length || va < v.iova || va - v.iova > v.length - len ||
	    va < v.dlo || v.dhi < v.dlo || len > v.dhi - v.dlo || va - v.dlo > v.dhi - v.dlo - len)
		return false;
	m = map_get(dx, p, idx, &v, !read);
	if (!m) {
		if (!pid_runs(p->pidfd))
			peer_forget(dx, p); /* the owner exited */
		return false;
	}
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
			memcpy(at + done, (const uint8_t *)w->inline_data + done, n);
		else
			st = sib_sge_copy_out(ctx, qp->ibv.qp_base.pd->handle, w->sge, w->num_sge,
					      (uint32_t)done, at + done, (uint32_t)n);
	}
	cnt_out(cnt, v.seq);
	return st == IBV_WC_SUCCESS;
}
