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

long sib_sys_getcwd(char *buf, size_t size)
{
	return syscall(SYS_getcwd, buf, size);
}

long sib_sys_readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
	return syscall(SYS_readlinkat, dirfd, path, buf, size);
}

/* Lexical normalisation of the absolute path BUF, in place: "//" and "/./"
 * collapse, ".." drops the component before it (never above "/"), a trailing
 * "/", "/." or "/.." keeps one "/" (the kernel then wants a directory). */
static size_t normalise(char *buf)
{
	size_t r = 0, w = 0, len = strlen(buf);
	int dir_end = len > 1 && (buf[len - 1] == '/' ||
		(buf[len - 1] == '.' && buf[len - 2] == '/') ||
		(len > 2 && buf[len - 1] == '.' && buf[len - 2] == '.' && buf[len - 3] == '/'));

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
			while (w > 0 && buf[--w] != '/')
				;
			continue;
		}
		buf[w++] = '/';
		memmove(buf + w, buf + s, n);
		w += n;
	}
	if (w == 0)
		buf[w++] = '/';
	else if (dir_end)
		buf[w++] = '/';
	buf[w] = 0;
	return w;
}

/* Whether the normalised absolute path P is a mapped path or below one. */
static int mapped(const char *p)
{
	for (size_t i = 0; i < SIB_NMAPPED; i++) {
		size_t n = strlen(sib_mapped[i]);
		if (strncmp(p, sib_mapped[i], n) == 0 && (p[n] == 0 || p[n] == '/'))
			return 1;
	}
	return 0;
}

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
	if (sib_realpath_walk(sib_root, sib_rootc) == 0)
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

const char *sib_view_path(int dirfd, const char *path, char *out)
{
	const char *root;
	size_t rootlen = view_root(&root);

	if (rootlen == 0 || path == NULL || path[0] == 0)
		return path;
	if (path[0] == '/') {
		/* quick: neither /s..., /d..., //, /. nor a ".." that could lead there */
		char c = path[1];
		if (c != 's' && c != 'd' && c != '/' && c != '.' && strstr(path, "/..") == NULL)
			return path;
		size_t n = strlen(path);
		if (n >= PATH_MAX)
			return path; /* the kernel says ENAMETOOLONG itself */
		memcpy(out, path, n + 1);
		n = normalise(out);
		return mapped(out) ? prefix_root(out, n, root, rootlen) : path;
	}
	if (!needs_base(path))
		return path;
	int e = errno;
	size_t b = base_dir(dirfd, out);
	errno = e;
	if (b == 0)
		return path;
	size_t virt = sib_view_unmap(out);
	int inside = virt != b;
	size_t n = strlen(path);
	if (virt + 1 + n >= PATH_MAX)
		return path;
	out[virt] = '/';
	memcpy(out + virt + 1, path, n + 1);
	n = normalise(out);
	if (mapped(out))
		return prefix_root(out, n, root, rootlen);
	return inside ? out : path;
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
