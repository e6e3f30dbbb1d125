/* SPDX-License-Identifier: MIT */
/*
 * libsoftib_view.so: the calls that answer with a path or move the cwd
 * (docs/clients.md "The interposer"): readlink, readlinkat, realpath,
 * canonicalize_file_name, chdir, getcwd, get_current_dir_name and the
 * _FORTIFY_SOURCE forms.  glibc 2.36's realpath walks the path with internal
 * calls (__readlink, __lstat64), so it is done here (sib_realpath_walk).  An
 * answer that names ROOT/<mapped path> is given back as the virtual path: a
 * process that chdir'ed into /sys/class/infiniband finds itself there.
 */
#undef _FORTIFY_SOURCE
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The _FORTIFY_SOURCE entry points (glibc debug/); declared by the headers
 * only under _FORTIFY_SOURCE. */
ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen);
ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len, size_t buflen);
char *__realpath_chk(const char *path, char *resolved, size_t resolvedlen);
char *__getcwd_chk(char *buf, size_t size, size_t buflen);
void __chk_fail(void) __attribute__((noreturn));

/* The links one resolution follows at most (glibc's __eloop_threshold). */
#define SIB_MAXLINKS 40

/* Append the component S (N bytes) to OUT (length *O); ENAMETOOLONG. */
static int append(char *out, size_t *o, const char *s, size_t n)
{
	size_t sep = out[*o - 1] != '/';
	if (*o + sep + n >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (sep)
		out[(*o)++] = '/';
	memcpy(out + *o, s, n);
	*o += n;
	out[*o] = 0;
	return 0;
}

/* REST (a link's target and what followed the link) into BUF, for the walk
 * to go on with.  ENAMETOOLONG. */
static int splice_link(char *link, size_t n, const char *rest, char *buf)
{
	size_t r = strlen(rest);
	if (n + 1 + r >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	link[n] = '/';
	memcpy(link + n + 1, rest, r + 1);
	memcpy(buf, link, n + 1 + r + 1);
	return 0;
}

int sib_realpath_walk(const char *path, char *out, char *rest, char *link)
{
	size_t o, len = strlen(path);
	int links = 0, dir_end = len > 0 && path[len - 1] == '/';

	if (len == 0) {
		errno = ENOENT;
		return -1;
	}
	if (len >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memmove(rest, path, len + 1);
	if (rest[0] == '/') {
		out[0] = '/', out[1] = 0, o = 1;
	} else {
		if (sib_sys_getcwd(out, PATH_MAX) < 0)
			return -1;
		if (out[0] != '/') {
			errno = ENOENT;
			return -1;
		}
		o = strlen(out);
	}
	const char *p = rest;
	while (*p) {
		while (*p == '/')
			p++;
		const char *s = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - s);
		if (n == 0 || (n == 1 && s[0] == '.'))
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			while (o > 1 && out[--o] != '/')
				;
			out[o > 0 ? o : 1] = 0;
			if (o == 0)
				o = 1;
			continue;
		}
		if (append(out, &o, s, n) != 0)
			return -1;
		long l = sib_sys_readlinkat(AT_FDCWD, out, link, PATH_MAX - 1);
		if (l < 0) {
			if (errno != EINVAL)
				return -1;
			continue; /* not a link; a later component or ENOTDIR tells */
		}
		if (sib_view_devnode(out))
			continue; /* a device node of the view */
		if (++links > SIB_MAXLINKS) {
			errno = ELOOP;
			return -1;
		}
		if (link[0] == '/') {
			o = 1;
		} else {
			while (o > 1 && out[--o] != '/')
				;
			if (o == 0)
				o = 1;
		}
		out[o] = 0;
		if (splice_link(link, (size_t)l, p, rest) != 0)
			return -1;
		p = rest;
	}
	if (dir_end && o > 1) {
		/* "file/" is ENOTDIR: ask the kernel with the slash */
		if (o + 1 >= PATH_MAX) {
			errno = ENAMETOOLONG;
			return -1;
		}
		out[o] = '/', out[o + 1] = 0;
		long r = syscall(SYS_faccessat, AT_FDCWD, out, F_OK);
		out[o] = 0;
		if (r != 0)
			return -1;
	}
	return 0;
}

/* readlinkat through the view, one PATH_MAX buffer: the rewritten path is
 * read into the buffer that holds it (the kernel copies a path in before it
 * writes the answer out).  An absolute answer naming ROOT/<view path> is
 * given back virtual; a device node of the view is no link (EINVAL). */
static __attribute__((noinline)) ssize_t view_readlinkat_slow(int dirfd, const char *path, char *buf, size_t size)
{
	char tmp[PATH_MAX];
	const char *p = sib_view_path(dirfd, path, tmp);
	if (p == NULL)
		return -1;
	if (size == 0 || (p == path && path[0] == '/'))
		return sib_sys_readlinkat(dirfd, p, buf, size);
	int dev = p != path && sib_view_devnode(p);
	long n = sib_sys_readlinkat(dirfd, p, tmp, PATH_MAX - 1);
	if (n < 0)
		return -1;
	tmp[n] = 0;
	if (n == 9 && memcmp(tmp, "/dev/null", 9) == 0 &&
	    (dev || (p == path && sib_view_devnode_at(dirfd, path, path, tmp)))) {
		errno = EINVAL;
		return -1;
	}
	size_t len = p != path && tmp[0] == '/' ? sib_view_unmap(tmp) : (size_t)n;
	if (len > size)
		len = size;
	memcpy(buf, tmp, len);
	return (ssize_t)len;
}

static ssize_t view_readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
	if (!sib_view_on())
		return sib_sys_readlinkat(dirfd, path, buf, size);
	return view_readlinkat_slow(dirfd, path, buf, size);
}

SIB_WRAP ssize_t readlink(const char *path, char *buf, size_t size)
{
	return view_readlinkat(AT_FDCWD, path, buf, size);
}

SIB_WRAP ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
	return view_readlinkat(dirfd, path, buf, size);
}

SIB_WRAP ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return view_readlinkat(AT_FDCWD, path, buf, len);
}

SIB_WRAP ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return view_readlinkat(dirfd, path, buf, len);
}

/* realpath(3) through the view: the walk's three PATH_MAX buffers on the
 * heap, as glibc's realpath keeps its own (a thread's small stack holds no
 * 12 KiB); ENOMEM when there is none. */
static char *view_realpath(const char *path, char *resolved)
{
	if (path == NULL) {
		errno = EINVAL;
		return NULL;
	}
	char *s = malloc(3 * (size_t)PATH_MAX);
	if (s == NULL)
		return NULL;
	char *pbuf = s, *link = s + PATH_MAX, *out = s + 2 * PATH_MAX;
	const char *p = sib_view_path(AT_FDCWD, path, pbuf);
	if (p == NULL || sib_realpath_walk(p, out, pbuf, link) != 0) {
		int e = errno;
		free(s);
		errno = e;
		return NULL;
	}
	size_t len = sib_view_unmap(out);
	if (resolved == NULL)
		resolved = malloc(len + 1);
	if (resolved != NULL)
		memcpy(resolved, out, len + 1);
	free(s);
	return resolved;
}

SIB_WRAP char *realpath(const char *path, char *resolved)
{
	return view_realpath(path, resolved);
}

SIB_WRAP char *__realpath_chk(const char *path, char *resolved, size_t resolvedlen)
{
	if (resolvedlen < PATH_MAX)
		__chk_fail();
	return view_realpath(path, resolved);
}

SIB_WRAP char *canonicalize_file_name(const char *path)
{
	return view_realpath(path, NULL);
}

static __attribute__((noinline)) int view_chdir(const char *path)
{
	char buf[PATH_MAX];
	const char *p = sib_view_path(AT_FDCWD, path, buf);
	return p == NULL ? -1 : (int)syscall(SYS_chdir, p);
}

SIB_WRAP int chdir(const char *path)
{
	return sib_view_on() ? view_chdir(path) : (int)syscall(SYS_chdir, path);
}

/* getcwd(3) (glibc sysdeps/unix/sysv/linux/getcwd.c): BUF of SIZE, or one
 * allocated (SIZE bytes, or as long as needed when 0); EINVAL for a BUF of
 * size 0, ERANGE when too short, ENOENT for a cwd outside the root. */
static char *view_getcwd(char *buf, size_t size)
{
	char tmp[PATH_MAX];
	if (buf != NULL && size == 0) {
		errno = EINVAL;
		return NULL;
	}
	if (sib_sys_getcwd(tmp, sizeof(tmp)) < 0)
		return NULL;
	if (tmp[0] != '/') {
		errno = ENOENT;
		return NULL;
	}
	size_t len = sib_view_unmap(tmp);
	if (size != 0 && size < len + 1) {
		errno = ERANGE;
		return NULL;
	}
	if (buf == NULL) {
		buf = malloc(size != 0 ? size : len + 1);
		if (buf == NULL)
			return NULL;
	}
	memcpy(buf, tmp, len + 1);
	return buf;
}

SIB_WRAP char *getcwd(char *buf, size_t size)
{
	return view_getcwd(buf, size);
}

SIB_WRAP char *__getcwd_chk(char *buf, size_t size, size_t buflen)
{
	if (size > buflen)
		__chk_fail();
	return view_getcwd(buf, size);
}

/* get_current_dir_name(3): $PWD when it names the cwd, else getcwd. */
SIB_WRAP char *get_current_dir_name(void)
{
	const char *pwd = getenv("PWD");
	struct stat a, b;
	if (pwd != NULL && pwd[0] == '/' && stat(pwd, &a) == 0 && stat(".", &b) == 0
	    && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return strdup(pwd);
	return view_getcwd(NULL, 0);
}
