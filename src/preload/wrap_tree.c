/* SPDX-License-Identifier: MIT */
/*
 * libsoftib_view.so: the calls that change a tree's shape (docs/clients.md
 * "The interposer"): mkdir, mkdirat, unlink, unlinkat, rmdir, rename,
 * renameat, renameat2.  On a view path they fail as sysfs fails them
 * (fs/namei.c, fs/kernfs/dir.c): the lookup's own errors first (ENOENT,
 * ENOTDIR, EEXIST for a mkdir of what exists, EISDIR for an unlink of a
 * directory), then EACCES for an ordinary user (the directories are root's,
 * 0755) or EPERM for root (kernfs has no such operation); a rename between
 * the view and the system is EXDEV (two file systems).  Elsewhere the system
 * call, on the path sib_view_path made.
 */
#undef _FORTIFY_SOURCE
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

/* What the view path P is without following a last link: -1 (errno: not
 * there), 0 not a directory, 1 a directory.  P is a PATH_MAX buffer. */
static int what(char *p)
{
	char c;
	if (sib_sys_readlinkat(AT_FDCWD, p, &c, 1) >= 0)
		return 0; /* a link */
	if (errno != EINVAL)
		return -1;
	size_t n = strlen(p);
	if (n + 1 >= PATH_MAX || p[n - 1] == '/')
		return syscall(SYS_faccessat, AT_FDCWD, p, F_OK) == 0;
	p[n] = '/', p[n + 1] = 0;
	int e = errno;
	int dir = syscall(SYS_faccessat, AT_FDCWD, p, F_OK) == 0;
	p[n] = 0;
	errno = e;
	return dir;
}

/* renameat2 as the system call, renameat when FLAGS is 0 (kernels before
 * 3.15 have no renameat2). */
static int sys_renameat2(int od, const char *op, int nd, const char *np, unsigned flags)
{
#ifdef SYS_renameat
	if (flags == 0)
		return (int)syscall(SYS_renameat, od, op, nd, np);
#endif
	return (int)syscall(SYS_renameat2, od, op, nd, np, flags);
}

/* The answer of sysfs to a change it does not allow, after the lookups. */
static int refuse(void)
{
	errno = geteuid() == 0 ? EPERM : EACCES;
	return -1;
}

/* Whether the directory of the view path P (a PATH_MAX buffer) exists:
 * 0, or -1 with errno. */
static int parent_ok(char *p)
{
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		n--;
	char *slash = memrchr(p, '/', n);
	if (slash == NULL)
		return 0;
	char c = slash[1];
	slash[1] = 0;
	long r = syscall(SYS_faccessat, AT_FDCWD, p, F_OK);
	slash[1] = c;
	return r == 0 ? 0 : -1;
}

static __attribute__((noinline)) int view_mkdirat(int dirfd, const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	int cls;
	const char *p = sib_view_target(dirfd, path, buf, &cls);
	if (p == NULL)
		return -1;
	if (cls == SIB_VIEW_NONE)
		return (int)syscall(SYS_mkdirat, dirfd, p, mode);
	if (what(buf) >= 0) {
		errno = EEXIST;
		return -1;
	}
	if (errno != ENOENT || parent_ok(buf) != 0)
		return -1;
	return refuse();
}

/* unlink (FLAGS 0) and rmdir (AT_REMOVEDIR). */
static __attribute__((noinline)) int view_unlinkat(int dirfd, const char *path, int flags)
{
	char buf[PATH_MAX];
	int cls;
	const char *p = sib_view_target(dirfd, path, buf, &cls);
	if (p == NULL)
		return -1;
	if (cls == SIB_VIEW_NONE)
		return (int)syscall(SYS_unlinkat, dirfd, p, flags);
	if (flags & ~AT_REMOVEDIR) {
		errno = EINVAL; /* before the lookup, as the kernel */
		return -1;
	}
	int w = what(buf);
	if (w < 0)
		return -1;
	if ((flags & AT_REMOVEDIR) && w == 0) {
		errno = ENOTDIR;
		return -1;
	}
	if (!(flags & AT_REMOVEDIR) && w == 1) {
		errno = EISDIR;
		return -1;
	}
	return refuse();
}

/*
 * rename: OLD's rewrite in BUF, checked, then NEW's in BUF again when OLD's
 * is no longer needed; only a rename between two system paths that both
 * went through the view needs a second buffer, mapped for the call.
 */
static __attribute__((noinline)) int view_renameat2(int olddirfd, const char *oldpath,
	int newdirfd, const char *newpath, unsigned flags)
{
	char buf[PATH_MAX], *buf2 = NULL;
	int co, cn;
	const char *po = sib_view_target(olddirfd, oldpath, buf, &co);
	if (po == NULL)
		return -1;
	if (co != SIB_VIEW_NONE && what(buf) < 0)
		return -1;
	char *nb = buf;
	if (co == SIB_VIEW_NONE && po == buf) {
		buf2 = mmap(NULL, PATH_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf2 == MAP_FAILED)
			return -1;
		nb = buf2;
	}
	int r;
	const char *pn = sib_view_target(newdirfd, newpath, nb, &cn);
	if (pn == NULL) {
		r = -1;
	} else if (co == SIB_VIEW_NONE && cn == SIB_VIEW_NONE) {
		r = sys_renameat2(olddirfd, po, newdirfd, pn, flags);
	} else if (co != cn) {
		errno = EXDEV;
		r = -1;
	} else if ((flags & RENAME_NOREPLACE) && what(nb) >= 0) {
		errno = EEXIST;
		r = -1;
	} else {
		r = refuse();
	}
	if (buf2 != NULL) {
		int e = errno;
		munmap(buf2, PATH_MAX);
		errno = e;
	}
	return r;
}

SIB_WRAP int mkdir(const char *path, mode_t mode)
{
	return sib_view_on() ? view_mkdirat(AT_FDCWD, path, mode) : (int)syscall(SYS_mkdirat, AT_FDCWD, path, mode);
}

SIB_WRAP int mkdirat(int dirfd, const char *path, mode_t mode)
{
	return sib_view_on() ? view_mkdirat(dirfd, path, mode) : (int)syscall(SYS_mkdirat, dirfd, path, mode);
}

SIB_WRAP int unlink(const char *path)
{
	return sib_view_on() ? view_unlinkat(AT_FDCWD, path, 0) : (int)syscall(SYS_unlinkat, AT_FDCWD, path, 0);
}

SIB_WRAP int unlinkat(int dirfd, const char *path, int flags)
{
	return sib_view_on() ? view_unlinkat(dirfd, path, flags) : (int)syscall(SYS_unlinkat, dirfd, path, flags);
}

SIB_WRAP int rmdir(const char *path)
{
	return sib_view_on() ? view_unlinkat(AT_FDCWD, path, AT_REMOVEDIR)
		: (int)syscall(SYS_unlinkat, AT_FDCWD, path, AT_REMOVEDIR);
}

SIB_WRAP int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned flags)
{
	if (!sib_view_on())
		return sys_renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
	return view_renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
}

SIB_WRAP int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
	return renameat2(olddirfd, oldpath, newdirfd, newpath, 0);
}

SIB_WRAP int rename(const char *oldpath, const char *newpath)
{
	return renameat2(AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}
