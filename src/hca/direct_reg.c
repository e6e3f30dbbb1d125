/* SPDX-License-Identifier: MIT */
/*
 * Direct placement, registration (direct_int.h): the process's registry of
 * registered pages moved onto memfds at reg_mr, read from /proc/self/maps
 * without malloc, and kept right across fork (a child gets private copies
 * of every page on a memfd).  The memfds' fds are given to softibd (DX_PUT)
 * and closed here: the process knows each by its inode.  Locking:
 * sib_dx_lock.
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


/* vm.max_map_count; 0: read /proc/sys/vm/max_map_count at the next
 * registration (tests set a lower one). */
unsigned long sib_dx_max_map_count;
/* Mappings a registration may add: the copy's temporary one and the two
 * pieces MAP_FIXED splits the old VMA into, and one to spare. */
#define DX_MAP_SLACK 4u

pthread_mutex_t sib_dx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sib_dx_region *dx_regions;
struct sib_dx *sib_dx_ctxs;            /* contexts with an export table */
struct sib_dx *sib_dx_all;             /* every context (direct_int.h) */
unsigned int sib_dx_fork_gen;          /* MRs inherited by a fork child are not ours */
pthread_once_t sib_dx_once = PTHREAD_ONCE_INIT;

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

/* len bytes at address src into dst, copied by the kernel (pread of
 * /proc/self/mem, fd mem) when it can: the pages registered are whole
 * pages around the MR, which may hold memory the application freed or
 * never had (malloc's free chunks, a sanitizer's redzones around the
 * buffer: Open MPI's registration cache registers page-aligned ranges),
 * which a sanitizer's memcpy would refuse to read. */
static void copy_mem(int mem, uint8_t *dst, uintptr_t src, size_t len)
{
	if (mem < 0 || pread(mem, dst, len, (off_t)src) != (ssize_t)len)
		memcpy(dst, (void *)src, len);
}

/* Copy the pages of [s, s + len) that hold data into dst: the pages the
 * process has touched (present or swapped, /proc/self/pagemap), so that a
 * sparse buffer does not become a full one.  Everything if pagemap cannot
 * be read.  Runs of such pages go in one copy_mem. */
static void copy_touched(uint8_t *dst, uintptr_t s, size_t len, size_t page)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	int mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	uint64_t ent[512];

	for (size_t off = 0; off < len;) {
		size_t n = (len - off) / page < 512 ? (len - off) / page : 512;
		ssize_t r = fd < 0 ? -1 : pread(fd, ent, n * 8, (off_t)((s + off) / page * 8));

		if (r != (ssize_t)(n * 8)) {
			copy_mem(mem, dst + off, s + off, len - off);
			break;
		}
		for (size_t i = 0, j; i < n; i = j) {
			if (!(ent[i] & (3ull << 62))) { /* neither present nor swapped */
				j = i + 1;
				continue;
			}
			for (j = i + 1; j < n && (ent[j] & (3ull << 62)); j++)
				;
			copy_mem(mem, dst + off + i * page, s + off + i * page, (j - i) * page);
		}
		off += n * page;
	}
	if (fd >= 0)
		close(fd);
	if (mem >= 0)
		close(mem);
}

/* softibd's fd of region id goes (DX_PUT drop): its memory with it. */
static void region_drop_fd(uint32_t id)
{
	struct sib_ctl_dx x = { .kind = SIB_DX_KIND_MR, .id = id, .drop = 1 };

	if (sib_host && sib_host->dx)
		(void)sib_host->dx(SIB_CTL_DX_PUT, &x, -1, NULL);
}

/* Forget the regions no MR uses whose memfd nobody maps any more (the
 * application unmapped them): their memory goes with softibd's fd. */
void sib_dx_region_prune(void)
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
			region_drop_fd(r->id);
			free(r);
		} else {
			pp = &r->next;
		}
	}
}

/* Is swap in use (a line after /proc/swaps' header)?  Without malloc. */
static bool swap_on(void)
{
	char b[256];
	int fd = open("/proc/swaps", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, b, sizeof(b) - 1) : -1;
	char *nl;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return true; /* unknown: assume it is */
	b[n] = 0;
	nl = strchr(b, '\n');
	return nl && nl[1];
}

/*
 * fork child: replace [lo, hi), a mapping of one of our MR memfds at file
 * offset `off` with permissions `perms`, by private anonymous memory with
 * the same contents and protection (as copy-on-write would have given).
 * The process holds no fd of the memfd (softibd does), so the pages with
 * data are the ones mincore() reports in memory (a hole is not): a sparse
 * region stays sparse.  A page of a memfd that went to swap is not in
 * memory either, so with swap in use every page is copied.  The kernel
 * copies (pread of /proc/self/mem): the pages may be memory the
 * application freed, which a sanitizer's memcpy would refuse to read.  A
 * mapping that fails keeps sharing.
 */
static void child_private(const struct maps_line *l, bool all)
{
	size_t len = l->hi - l->lo, page = (size_t)sysconf(_SC_PAGESIZE);
	int prot = (l->perms[0] == 'r' ? PROT_READ : 0) | (l->perms[1] == 'w' ? PROT_WRITE : 0) |
		   (l->perms[2] == 'x' ? PROT_EXEC : 0);
	int mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	unsigned char vec[256];
	void *tmp;

	tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tmp == MAP_FAILED || (!(prot & PROT_READ) && mprotect((void *)l->lo, len, PROT_READ))) {
		if (tmp != MAP_FAILED)
			munmap(tmp, len);
		if (mem >= 0)
			close(mem);
		return;
	}
	for (size_t off = 0; off < len;) {
		size_t n = (len - off) / page < sizeof(vec) ? (len - off) / page : sizeof(vec);
		bool known = !all && !mincore((void *)(l->lo + off), n * page, vec);

		for (size_t i = 0, j; i < n; i = j) {
			uint8_t *to = (uint8_t *)tmp + off + i * page;
			uintptr_t from = l->lo + off + i * page;
			size_t run;

			if (known && !(vec[i] & 1)) {
				j = i + 1; /* a hole: zero, as in tmp */
				continue;
			}
			for (j = i + 1; j < n && (!known || (vec[j] & 1)); j++)
				; /* a run of pages with data: one pread */
			run = (j - i) * page;
			if (mem < 0 || pread(mem, to, run, (off_t)from) != (ssize_t)run)
				memcpy(to, (void *)from, run);
		}
		off += n * page;
	}
	if (mem >= 0)
		close(mem);
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
	pthread_mutex_lock(&sib_dx_lock);
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
	pthread_mutex_unlock(&sib_dx_lock);
}


/*
 * fork: the child gets a private copy of every mapping of our MR memfds
 * it finds in /proc/self/maps (registered regions, the pages deregistered
 * MRs left on their memfds, pieces the application mprotect'ed or
 * mremap'ed), as copy-on-write would have given it; and its contexts stop
 * direct placement and writing the parent's export tables
 * (sib_dx_child_ctxs).  The parent is not affected.
 */
static void dx_child(void)
{
	struct maps_reader m = { .fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC) };
	struct sib_dx_region *r = dx_regions;
	struct maps_line l;
	bool all = swap_on();

	sib_dx_child_ctxs(); /* first: drops the mappings of peers' memfds */
	if (m.fd >= 0) {
		/* Lines already read stay valid: only [l.lo, l.hi) changes. */
		while (maps_next(&m, &l))
			if (maps_is_mr(&l))
				child_private(&l, all);
		close(m.fd);
	}
	/* The parent's regions: softibd keeps their fds for the parent. */
	while (r) {
		struct sib_dx_region *next = r->next;

		free(r);
		r = next;
	}
	dx_regions = NULL;
	/* The parent's engines are not in the child (no thread of them is),
	 * and a progress_lock held at fork stays held here: none to hold off. */
	sib_dx_all = NULL;
	sib_dx_fork_gen++;
	if (dx_fork_pipe[1] >= 0) {
		close(dx_fork_pipe[0]);
		if (write(dx_fork_pipe[1], "s", 1) != 1)
			(void)0; /* the parent sees the pipe close at exit */
		close(dx_fork_pipe[1]);
		dx_fork_pipe[0] = dx_fork_pipe[1] = -1;
	}
	pthread_mutex_unlock(&sib_dx_lock);
}

void sib_dx_init_once(void)
{
	(void)pthread_atfork(dx_prepare, dx_parent, dx_child);
}

/* How long a registration tries to hold every engine off before it gives
 * the MR no direct path instead (a thread that never lets go). */
#define DX_HOLD_WAIT_NS 1000000000ull

/*
 * Hold every engine of the process off its memory (sib_dx_lock held):
 * each context's progress_lock, so that no receive, READ response, atomic
 * result or direct READ is written into pages while they are copied onto a
 * memfd and the memfd mapped over them (a store between the copy and the
 * MAP_FIXED would be lost: Open MPI's btl openib registers the next
 * pipeline fragment while the engine places the previous one, whose last
 * page the new MR covers).  No order among the locks is assumed: the one
 * that was busy is waited for (timed) while holding none of the others,
 * the rest are tried; all or none.  false after DX_HOLD_WAIT_NS (a thread
 * holding one that long: then no pages move, the MR goes by packets).
 */
static bool engines_hold(void)
{
	uint64_t deadline = sib_now_ns() + DX_HOLD_WAIT_NS;
	struct timespec until;
	struct sib_dx *busy = NULL, *dx, *held;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(DX_HOLD_WAIT_NS / 1000000000ull);
	for (;;) {
		if (busy && pthread_mutex_timedlock(busy->progress, &until))
			return false;
		for (dx = sib_dx_all; dx; dx = dx->next_all)
			if (dx != busy && pthread_mutex_trylock(dx->progress))
				break;
		if (!dx)
			return true;
		for (held = sib_dx_all; held != dx; held = held->next_all)
			if (held != busy)
				pthread_mutex_unlock(held->progress);
		if (busy)
			pthread_mutex_unlock(busy->progress);
		busy = dx;
		if (sib_now_ns() > deadline)
			return false;
	}
}

static void engines_release(void)
{
	for (struct sib_dx *dx = sib_dx_all; dx; dx = dx->next_all)
		pthread_mutex_unlock(dx->progress);
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
struct sib_dx_region *sib_dx_region_get(uintptr_t s, uintptr_t e)
{
	struct sib_dx_region *r;
	size_t len = e - s;
	static uint32_t next_id;
	struct sib_ctl_dx x = { .kind = SIB_DX_KIND_MR };
	unsigned long nmaps;
	struct stat st;
	void *tmp;
	int fd;

	sib_dx_region_prune();
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
	/* softibd keeps the fd (DX_PUT) before the pages move: without it
	 * peers could not map them, so no direct path either */
	next_id = next_id % 0x7fffffffu + 1; /* 1 .. INT32_MAX: the entry's fd */
	x.id = next_id;
	if (!sib_host || !sib_host->dx || sib_host->dx(SIB_CTL_DX_PUT, &x, fd, NULL))
		goto err_fd;
	tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (tmp == MAP_FAILED || !engines_hold()) {
		if (tmp != MAP_FAILED)
			munmap(tmp, len);
		region_drop_fd(x.id);
		goto err_fd;
	}
	/* from the copy to the MAP_FIXED no engine of ours writes here */
	copy_touched(tmp, s, len, (size_t)sysconf(_SC_PAGESIZE));
	munmap(tmp, len);
	void *at = mmap((void *)s, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);

	engines_release();
	if (at == MAP_FAILED) {
		region_drop_fd(x.id);
		goto err_fd;
	}
	close(fd); /* nothing in /proc/self/fd: the mapping and softibd hold it */
	r->start = s;
	r->end = e;
	r->id = x.id;
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
 * copy (dx_child); an munmap by the application frees them (sib_dx_region_prune
 * closes our fd once nothing maps the memfd).
 */
void sib_dx_region_put(struct sib_dx_region *r)
{
	r->refs--;
	sib_dx_region_prune();
}
