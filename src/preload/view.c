/* SPDX-License-Identifier: MIT */
/*
 * The view of libsoftib_view.so (docs/clients.md "The interposer"): which
 * paths move under SOFTIB_VIEW, the lexical normalisation before the match,
 * relative paths against the cwd or a directory fd only when they can reach
 * the view, and the way back for getcwd, realpath and readlink.  No malloc:
 * PATH_MAX buffers on the stack, raw system calls.
 */
#undef _FORTIFY_SOURCE
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's RDMA paths, as rdma-core, UCX, Open MPI and ibstatus read them
 * (../shared/research/clients.md "Device visibility"). */
static const char *const sib_mapped[] = {
	"/sys/class/infiniband",
	"/sys/class/infiniband_verbs",
	"/sys/class/infiniband_mad",
	"/sys/class/infiniband_ucma",
	"/sys/class/misc/rdma_cm",
	"/dev/infiniband",
};
#define SIB_NMAPPED (sizeof(sib_mapped) / sizeof(sib_mapped[0]))

/* The first component of a relative path that can lead into the view from a
 * directory outside it (/, /sys, /sys/class, /sys/class/misc, /dev). */
static const char *const sib_entry[] = {
	"sys", "dev", "class", "misc", "infiniband", "infiniband_verbs",
	"infiniband_mad", "infiniband_ucma", "rdma_cm",
};

/* ROOT as given (normalised) and as the kernel resolves it (symbolic links
 * followed), read once from SOFTIB_VIEW. */
static char sib_root[PATH_MAX];
static size_t sib_rootlen;
static char sib_rootc[PATH_MAX];
static size_t sib_rootclen;
static int sib_state; /* 0 unread, 1 being read, 2 read */
/* The walk's scratch for reading ROOT: used once, by the one thread that
 * reads it (so no stack for it in a call that comes first on a small stack). */
static char sib_scratch[2][PATH_MAX];

long sib_sys_getcwd(char *buf, size_t size)
{
	return syscall(SYS_getcwd, buf, size);
}

long sib_sys_readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
	return syscall(SYS_readlinkat, dirfd, path, buf, size);
}

/* Does the path of len bytes end so that the kernel wants a directory:
 * in "/", "/." or "/.."? */
static int ends_as_dir(const char *buf, size_t len)
{
	return len > 1 && (buf[len - 1] == '/' || (buf[len - 1] == '.' && buf[len - 2] == '/') ||
			   (len > 2 && buf[len - 1] == '.' && buf[len - 2] == '.' &&
			    buf[len - 3] == '/'));
}


/* Which mapped path the normalised absolute path P (LEN bytes, not
 * necessarily NUL-terminated) is or is below: its index + 1, or 0. */
static int mapped_n(const char *p, size_t len)
{
	for (size_t i = 0; i < SIB_NMAPPED; i++) {
		size_t n = strlen(sib_mapped[i]);
		if (len >= n && memcmp(p, sib_mapped[i], n) == 0 && (len == n || p[n] == '/'))
			return (int)i + 1;
	}
	return 0;
}

static int mapped(const char *p)
{
	return mapped_n(p, strlen(p));
}

static size_t normalise(char *buf);

/* Read SOFTIB_VIEW into sib_root and sib_rootc (once; the constructor does
 * it before main, the first wrapped call otherwise). */
static void view_read(void)
{
	const char *env = getenv("SOFTIB_VIEW");
	size_t n = env ? strlen(env) : 0;

	if (n == 0 || env[0] != '/' || n >= PATH_MAX)
		return;
	memcpy(sib_root, env, n + 1);
	n = normalise(sib_root);
	if (n > 1 && sib_root[n - 1] == '/')
		sib_root[--n] = 0;
	if (n <= 1)
		return; /* "/": the view is the system itself */
	int e = errno;
	if (sib_realpath_walk(sib_root, sib_rootc, sib_scratch[0], sib_scratch[1]) == 0)
		sib_rootclen = strlen(sib_rootc);
	errno = e;
	sib_rootlen = n;
}

__attribute__((constructor(101))) static void view_init(void)
{
	int zero = 0;
	if (__atomic_compare_exchange_n(&sib_state, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		view_read();
		__atomic_store_n(&sib_state, 2, __ATOMIC_RELEASE);
	}
}

/* ROOT and its length, 0 when the view is off.  A call that races the first
 * reading (a thread started by another library's constructor) sees the view
 * off rather than wait. */
static size_t view_root(const char **root)
{
	if (__atomic_load_n(&sib_state, __ATOMIC_ACQUIRE) != 2) {
		view_init();
		if (__atomic_load_n(&sib_state, __ATOMIC_ACQUIRE) != 2)
			return 0;
	}
	*root = sib_root;
	return sib_rootlen;
}

int sib_view_on(void)
{
	const char *r;
	return view_root(&r) != 0;
}

/* Whether the relative path P can reach the view from a directory outside it,
 * or leave it from a directory inside: a ".." anywhere, or a first component
 * that names a step towards a mapped path. */
static int needs_base(const char *p)
{
	int first = 1;
	while (*p) {
		while (*p == '/')
			p++;
		const char *s = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - s);
		if (n == 0 || (n == 1 && s[0] == '.'))
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return 1;
		if (first) {
			for (size_t i = 0; i < sizeof(sib_entry) / sizeof(sib_entry[0]); i++)
				if (strlen(sib_entry[i]) == n && memcmp(sib_entry[i], s, n) == 0)
					return 1;
			first = 0;
		}
	}
	return 0;
}

/* The directory a relative path starts from, into OUT: the cwd, or the path
 * of DIRFD from /proc/self/fd.  Its length, or 0 when unknown. */
static size_t base_dir(int dirfd, char *out)
{
	long n;
	if (dirfd == AT_FDCWD) {
		n = sib_sys_getcwd(out, PATH_MAX);
		if (n <= 0 || out[0] != '/')
			return 0;
		return strlen(out);
	}
	if (dirfd < 0)
		return 0;
	char proc[32] = "/proc/self/fd/", digits[12];
	int d = 0;
	unsigned v = (unsigned)dirfd;
	do
		digits[d++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	size_t at = strlen(proc);
	while (d > 0)
		proc[at++] = digits[--d];
	proc[at] = 0;
	n = sib_sys_readlinkat(AT_FDCWD, proc, out, PATH_MAX - 1);
	if (n <= 0 || out[0] != '/')
		return 0;
	out[n] = 0;
	return (size_t)n;
}

/* OUT (normalised, virtual) prefixed with ROOT; NULL and ENAMETOOLONG when
 * too long. */
static const char *prefix_root(char *out, size_t len, const char *root, size_t rootlen)
{
	if (rootlen + len >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	memmove(out + rootlen, out, len + 1);
	memcpy(out, root, rootlen);
	return out;
}

/* Whether ROOT/POS (POS: BUF's first W bytes, a mapped path) is a directory
 * the kernel can step through: ROOT opened, then "POS/" looked up from it.
 * BUF[W] and BUF[W + 1] are bytes of the source the walk has consumed (the
 * "/" and the first "." of the ".." being applied), free to write.  0, or -1
 * with the kernel's errno (ENOENT, ENOTDIR, EACCES, ELOOP). */
static int view_dir_ok(char *buf, size_t w, const char *root)
{
	buf[w] = '/';
	buf[w + 1] = 0;
	int rfd = (int)syscall(SYS_openat, AT_FDCWD, root, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (rfd < 0)
		return -1;
	long r = syscall(SYS_faccessat, rfd, buf + 1, F_OK);
	int e = errno;
	syscall(SYS_close, rfd);
	errno = e;
	return r == 0 ? 0 : -1;
}

/*
 * The walk of sib_view_path, in place over BUF (an absolute path): lexical,
 * lexically, except that a ".." applied to a position inside the view
 * first checks that the view has that directory, as the kernel requires of
 * every component it steps back from ("nosuch/.." is ENOENT, "file/.." is
 * ENOTDIR).  VERIFIED: BUF's first VERIFIED bytes name a directory that
 * exists (the cwd), 0 for none.  *LEN: the normal form's length; *PASSED:
 * whether some prefix of the path was in the view.  0, or -1 with errno.
 */
static int view_walk(char *buf, size_t verified, const char *root, size_t *len, int *passed)
{
	size_t r = 0, w = 0, n0 = strlen(buf);
	int ok = verified > 0; /* the position is known to exist */
	int dir_end = ends_as_dir(buf, n0);

	while (buf[r]) {
		while (buf[r] == '/')
			r++;
		size_t s = r;
		while (buf[r] && buf[r] != '/')
			r++;
		size_t n = r - s;
		if (n == 0 || (n == 1 && buf[s] == '.'))
			continue;
		if (n == 2 && buf[s] == '.' && buf[s + 1] == '.') {
			if (mapped_n(buf, w)) {
				*passed = 1;
				if (!ok && view_dir_ok(buf, w, root) != 0)
					return -1;
				ok = 1;
			}
			while (w > 0 && buf[--w] != '/')
				;
			continue;
		}
		buf[w++] = '/';
		memmove(buf + w, buf + s, n);
		w += n;
		if (r >= verified)
			ok = 0;
		if (mapped_n(buf, w))
			*passed = 1;
	}
	if (w == 0)
		buf[w++] = '/';
	else if (dir_end)
		buf[w++] = '/';
	buf[w] = 0;
	*len = w;
	return 0;
}

/* Lexical normalisation of the absolute path BUF, in place: "//" and "/./"
 * collapse, ".." drops the component before it (never above "/"), a trailing
 * "/", "/." or "/.." keeps one "/" (the kernel then wants a directory):
 * view_walk with every position taken as existing, so that no ".." is
 * checked against the view.  Returns the length. */
static size_t normalise(char *buf)
{
	size_t len = 0;
	int passed = 0;

	view_walk(buf, SIZE_MAX, NULL, &len, &passed);
	return len;
}

const char *sib_view_path(int dirfd, const char *path, char *out)
{
	const char *root;
	size_t rootlen = view_root(&root);
	size_t n, verified = 0;
	int passed = 0;

	if (path == NULL) {
		errno = EFAULT; /* the kernel's answer to a NULL path */
		return NULL;
	}
	if (rootlen == 0 || path[0] == 0)
		return path;
	if (path[0] == '/') {
		/* quick: neither /s..., /d..., //, /. nor a ".." that could lead there */
		char c = path[1];
		if (c != 's' && c != 'd' && c != '/' && c != '.' && strstr(path, "/..") == NULL)
			return path;
		n = strlen(path);
		if (n >= PATH_MAX)
			return path; /* the kernel says ENAMETOOLONG itself */
		memcpy(out, path, n + 1);
	} else {
		if (!needs_base(path))
			return path;
		int e = errno;
		size_t b = base_dir(dirfd, out);
		errno = e;
		if (b == 0)
			return path;
		size_t virt = sib_view_unmap(out);
		passed = virt != b; /* the base is in the view */
		n = strlen(path);
		if (virt + 1 + n >= PATH_MAX)
			return path;
		out[virt] = '/';
		memcpy(out + virt + 1, path, n + 1);
		verified = virt + 1;
	}
	if (view_walk(out, verified, root, &n, &passed) != 0)
		return NULL;
	if (mapped_n(out, n))
		return prefix_root(out, n, root, rootlen);
	/* through the view and out of it: the normal form, which the kernel
	 * resolves on the system as it would the same spelling on a host */
	return passed ? out : path;
}

int sib_view_class(const char *p)
{
	const char *roots[2] = { sib_root, sib_rootc };
	size_t lens[2] = { sib_rootlen, sib_rootclen };

	if (!sib_view_on())
		return SIB_VIEW_NONE;
	for (int i = 0; i < 2; i++) {
		if (lens[i] == 0 || strncmp(p, roots[i], lens[i]) != 0 || p[lens[i]] != '/')
			continue;
		int m = mapped(p + lens[i]);
		if (m == 0)
			return SIB_VIEW_NONE;
		return strcmp(sib_mapped[m - 1], "/dev/infiniband") == 0 ? SIB_VIEW_DEV : SIB_VIEW_SYS;
	}
	return SIB_VIEW_NONE;
}

const char *sib_view_target(int dirfd, const char *path, char *out, int *cls)
{
	const char *p = sib_view_path(dirfd, path, out);
	*cls = SIB_VIEW_NONE;
	if (p == NULL)
		return NULL;
	if (p == out) {
		*cls = sib_view_class(out);
		return p;
	}
	if (path[0] == '/' || path[0] == 0 || !sib_view_on())
		return p;
	/* relative, left alone: in the view when its base is (a base that only
	 * leads towards it, ROOT itself for one, is the tree's writer's) */
	const char *root;
	size_t rootlen = view_root(&root);
	int e = errno;
	size_t b = base_dir(dirfd, out);
	errno = e;
	size_t virt = b == 0 ? 0 : sib_view_unmap(out);
	size_t n = strlen(path);
	if (virt == b || virt + 1 + n >= PATH_MAX)
		return p;
	out[virt] = '/';
	memcpy(out + virt + 1, path, n + 1);
	n = normalise(out);
	if (!mapped_n(out, n) || rootlen + n >= PATH_MAX)
		return p;
	prefix_root(out, n, root, rootlen);
	*cls = sib_view_class(out);
	return out;
}

int sib_view_devnode(const char *real)
{
	static const char dev[] = "/dev/infiniband/";
	const char *roots[2] = { sib_root, sib_rootc };
	size_t lens[2] = { sib_rootlen, sib_rootclen };
	char link[16];

	if (!sib_view_on())
		return 0;
	for (int i = 0; i < 2; i++) {
		const char *q = real + lens[i];
		if (lens[i] == 0 || strncmp(real, roots[i], lens[i]) != 0 ||
		    strncmp(q, dev, sizeof(dev) - 1) != 0)
			continue;
		q += sizeof(dev) - 1;
		if (*q == 0 || *q == '/' || strchr(q, '/') != NULL)
			return 0;
		int e = errno;
		long l = sib_sys_readlinkat(AT_FDCWD, real, link, sizeof(link));
		errno = e;
		return l == 9 && memcmp(link, "/dev/null", 9) == 0;
	}
	return 0;
}

int sib_view_devnode_at(int dirfd, const char *path, const char *p, char *scratch)
{
	if (p != path)
		return sib_view_devnode(p);
	if (path[0] == '/' || path[0] == 0 || !sib_view_on())
		return 0;
	int e = errno;
	size_t b = base_dir(dirfd, scratch);
	errno = e;
	size_t n = strlen(path);
	if (b == 0 || b + 1 + n >= PATH_MAX)
		return 0;
	scratch[b] = '/';
	memcpy(scratch + b + 1, path, n + 1);
	normalise(scratch);
	return sib_view_devnode(scratch);
}

size_t sib_view_unmap(char *buf)
{
	const char *root;
	size_t rootlen = view_root(&root);
	size_t len = strlen(buf);

	if (rootlen == 0)
		return len;
	const char *roots[2] = { sib_root, sib_rootc };
	size_t lens[2] = { sib_rootlen, sib_rootclen };
	for (int i = 0; i < 2; i++) {
		size_t n = lens[i];
		if (n == 0 || len <= n || strncmp(buf, roots[i], n) != 0 || buf[n] != '/')
			continue;
		if (!mapped(buf + n))
			continue;
		memmove(buf, buf + n, len - n + 1);
		return len - n;
	}
	return len;
}
