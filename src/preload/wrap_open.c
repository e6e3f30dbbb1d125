/* SPDX-License-Identifier: MIT */
/*
 * libsoftib_view.so: the calls that open a path (docs/clients.md "The
 * interposer"): open, openat and their 64-bit and _FORTIFY_SOURCE forms,
 * creat, fopen, opendir, scandir and scandirat.  glibc 2.36 reaches the
 * kernel from fopen, opendir and scandir through internal calls (__open,
 * __openat64_nocancel, __opendir) that an interposer cannot see, so each is
 * wrapped itself.  The path goes through sib_view_path; the kernel gets it
 * by the openat system call; fopen, opendir and scandir build their objects
 * on that fd (fdopen, fdopendir), so errno is the kernel's or libc's own.
 */
#undef _FORTIFY_SOURCE
#include "view.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The _FORTIFY_SOURCE entry points (glibc debug/open_2.c and friends); their
 * declarations are in <bits/fcntl2.h> only under _FORTIFY_SOURCE. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
void __chk_fail(void) __attribute__((noreturn));
/* glibc's fopen under its other exported name: not wrapped, so a path
 * outside the view opens exactly as without the interposer. */
FILE *_IO_fopen(const char *path, const char *mode);

/* Whether FLAGS take a mode argument (open(2)). */
static int wants_mode(int flags)
{
	return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

/* Whether the real path P exists (links followed): 0, or -1 with errno;
 * *DIR: whether it is a directory ("P/" found too). */
static int exists(char *p, int *dir)
{
	long r = syscall(SYS_faccessat, AT_FDCWD, p, F_OK);
	if (r != 0)
		return -1;
	size_t n = strlen(p);
	*dir = 1;
	if (n + 1 < PATH_MAX && p[n - 1] != '/') {
		int e = errno;
		p[n] = '/', p[n + 1] = 0;
		*dir = syscall(SYS_faccessat, AT_FDCWD, p, F_OK) == 0;
		p[n] = 0;
		errno = e;
	}
	return 0;
}

/*
 * An open of the view path P (rewritten, PATH_MAX bytes) that would write
 * or create: refused as sysfs and /dev refuse an ordinary user (fs/namei.c
 * do_open and may_open, kernfs_fop_open, vfs_create): EEXIST for
 * O_CREAT|O_EXCL of what exists, EISDIR for a directory opened to write or
 * create, EOPNOTSUPP for O_TMPFILE (sysfs has no tmpfile), EACCES for the
 * rest; ENOENT or ENOTDIR when the path or its directory is not there.
 * The view's /dev/infiniband nodes open read-write (they are /dev/null).
 * 0 to go on (O_CREAT then dropped from *FLAGS), -1 with errno.
 */
static int view_open_guard(char *p, int cls, int *flags)
{
	int f = *flags, dir = 0;
	int tmpf = (f & O_TMPFILE) == O_TMPFILE, creat = (f & O_CREAT) != 0;
	int wr = (f & O_ACCMODE) != O_RDONLY || (f & O_TRUNC) != 0;

	if (cls == SIB_VIEW_NONE || (!creat && !tmpf && (!wr || cls == SIB_VIEW_DEV)))
		return 0;
	if (exists(p, &dir) == 0) {
		if (creat && (f & O_EXCL)) {
			errno = EEXIST;
			return -1;
		}
		if (tmpf) {
			errno = !dir ? ENOTDIR : cls == SIB_VIEW_SYS ? EOPNOTSUPP : EACCES;
			return -1;
		}
		if (dir && (creat || wr)) {
			errno = EISDIR;
			return -1;
		}
		if (wr && cls == SIB_VIEW_SYS) {
			errno = EACCES;
			return -1;
		}
		*flags = f & ~O_CREAT;
		return 0;
	}
	if (errno != ENOENT || !creat)
		return -1;
	/* O_CREAT of a name that is not there: EACCES when its directory is */
	char *slash = strrchr(p, '/');
	size_t n = strlen(p);
	if (p[n - 1] == '/') {
		errno = EISDIR;
		return -1;
	}
	*slash = 0;
	long r = syscall(SYS_faccessat, AT_FDCWD, slash == p ? "/" : p, F_OK);
	*slash = '/';
	if (r == 0)
		errno = EACCES;
	return -1;
}

static __attribute__((noinline)) int view_openat_slow(int dirfd, const char *path, int flags, mode_t mode)
{
	char buf[PATH_MAX];
	int cls = SIB_VIEW_NONE;
	/* only a call that would write or create needs to know where a
	 * relative path left alone is (a getcwd more) */
	int change = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) != 0 ||
		(flags & O_TMPFILE) == O_TMPFILE;
	const char *p = change ? sib_view_target(dirfd, path, buf, &cls) : sib_view_path(dirfd, path, buf);
	if (p == NULL || (cls != SIB_VIEW_NONE && view_open_guard(buf, cls, &flags) != 0))
		return -1;
	return (int)syscall(SYS_openat, dirfd, p, flags, mode);
}

static int view_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	if (!sib_view_on())
		return (int)syscall(SYS_openat, dirfd, path, flags, mode);
	return view_openat_slow(dirfd, path, flags, mode);
}

#define SIB_MODE_ARG(flags, mode) do { \
	if (wants_mode(flags)) { \
		va_list ap; \
		va_start(ap, flags); \
		mode = va_arg(ap, mode_t); \
		va_end(ap); \
	} \
} while (0)

SIB_WRAP int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	SIB_MODE_ARG(flags, mode);
	return view_openat(AT_FDCWD, path, flags, mode);
}

SIB_WRAP int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;
	SIB_MODE_ARG(flags, mode);
	return view_openat(AT_FDCWD, path, flags | O_LARGEFILE, mode);
}

SIB_WRAP int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	SIB_MODE_ARG(flags, mode);
	return view_openat(dirfd, path, flags, mode);
}

SIB_WRAP int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	SIB_MODE_ARG(flags, mode);
	return view_openat(dirfd, path, flags | O_LARGEFILE, mode);
}

/* __open_2 and friends: open without a mode; O_CREAT or O_TMPFILE here is
 * a program bug that glibc ends with __chk_fail (debug/open_2.c). */
SIB_WRAP int __open_2(const char *path, int flags)
{
	if (wants_mode(flags))
		__chk_fail();
	return view_openat(AT_FDCWD, path, flags, 0);
}

SIB_WRAP int __open64_2(const char *path, int flags)
{
	if (wants_mode(flags))
		__chk_fail();
	return view_openat(AT_FDCWD, path, flags | O_LARGEFILE, 0);
}

SIB_WRAP int __openat_2(int dirfd, const char *path, int flags)
{
	if (wants_mode(flags))
		__chk_fail();
	return view_openat(dirfd, path, flags, 0);
}

SIB_WRAP int __openat64_2(int dirfd, const char *path, int flags)
{
	if (wants_mode(flags))
		__chk_fail();
	return view_openat(dirfd, path, flags | O_LARGEFILE, 0);
}

SIB_WRAP int creat(const char *path, mode_t mode)
{
	return view_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

SIB_WRAP int creat64(const char *path, mode_t mode)
{
	return view_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC | O_LARGEFILE, mode);
}

/* fopen(3)'s MODE as open(2) flags (glibc libio/fileops.c: r, w, a, '+',
 * 'x', 'e'; the rest, "ccs=" included, is fdopen's business).  -1 and
 * EINVAL on a bad first character. */
static int fopen_flags(const char *mode)
{
	int flags;
	switch (mode[0]) {
	case 'r': flags = O_RDONLY; break;
	case 'w': flags = O_WRONLY | O_CREAT | O_TRUNC; break;
	case 'a': flags = O_WRONLY | O_CREAT | O_APPEND; break;
	default: errno = EINVAL; return -1;
	}
	for (const char *m = mode + 1; *m && *m != ','; m++) {
		if (*m == '+')
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		else if (*m == 'x')
			flags |= O_EXCL;
		else if (*m == 'e')
			flags |= O_CLOEXEC;
	}
	return flags;
}

/* A stream on the path P by the openat system call; CLS: what
 * sib_view_target said of P (a PATH_MAX buffer then), for view_open_guard. */
static FILE *view_fopen(char *p, const char *mode, int large, int cls)
{
	int flags = fopen_flags(mode);
	if (flags < 0 || (cls != SIB_VIEW_NONE && view_open_guard(p, cls, &flags) != 0))
		return NULL;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, p, flags | (large ? O_LARGEFILE : 0), 0666);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, mode);
	if (f == NULL) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

/* fopen and fopen64 through the view; SELF: PATH itself is to be opened by
 * glibc (outside the view), told by *SELF = 1. */
static __attribute__((noinline)) FILE *view_fopen_slow(const char *path, const char *mode, int large, int *self)
{
	char buf[PATH_MAX];
	int cls = SIB_VIEW_NONE;
	int change = mode[0] != 'r' || strchr(mode, '+') != NULL;
	const char *p = change ? sib_view_target(AT_FDCWD, path, buf, &cls) : sib_view_path(AT_FDCWD, path, buf);
	if (p == NULL)
		return NULL;
	if (p == path) {
		*self = 1;
		return NULL;
	}
	return view_fopen(buf, mode, large, cls);
}

SIB_WRAP FILE *fopen(const char *path, const char *mode)
{
	int self = !sib_view_on();
	FILE *f = self ? NULL : view_fopen_slow(path, mode, 0, &self);
	return self ? _IO_fopen(path, mode) : f;
}

SIB_WRAP FILE *fopen64(const char *path, const char *mode)
{
	int self = !sib_view_on();
	FILE *f = self ? NULL : view_fopen_slow(path, mode, 1, &self);
	if (!self)
		return f;
#if defined(__LP64__)
	return _IO_fopen(path, mode); /* fopen64 is fopen here */
#else
	return view_fopen((char *)path, mode, 1, SIB_VIEW_NONE);
#endif
}

/* opendir as glibc's (sysdeps/unix/sysv/linux/opendir.c): O_RDONLY,
 * O_NDELAY, O_DIRECTORY, O_LARGEFILE, O_CLOEXEC, then the stream. */
static DIR *view_opendirat(int dirfd, const char *path)
{
	int fd = view_openat(dirfd, path,
		O_RDONLY | O_NDELAY | O_DIRECTORY | O_LARGEFILE | O_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

SIB_WRAP DIR *opendir(const char *path)
{
	return view_opendirat(AT_FDCWD, path);
}

/*
 * scandir(3) and scandirat(3) (glibc dirent/scandir-tail-common.c): the
 * entries FILTER keeps, copied, sorted with COMPAR by qsort_r; -1 and errno
 * from the open, a readdir error or ENOMEM, errno otherwise as it was.
 * One body per dirent type (struct dirent, struct dirent64).
 */
#define SIB_SCANDIR(NAME, DIRENT, READDIR) \
typedef int NAME##_cmp(const struct DIRENT **, const struct DIRENT **); \
static int NAME##_sort(const void *a, const void *b, void *arg) \
{ \
	NAME##_cmp **cmp = arg; \
	return (**cmp)((const struct DIRENT **)a, (const struct DIRENT **)b); \
} \
static int NAME##_body(int dirfd, const char *path, struct DIRENT ***list, \
	int (*filter)(const struct DIRENT *), NAME##_cmp *compar) \
{ \
	DIR *d = view_opendirat(dirfd, path); \
	if (d == NULL) \
		return -1; \
	int saved = errno; \
	struct DIRENT **v = NULL, *e; \
	size_t n = 0, cap = 0; \
	errno = 0; \
	while ((e = READDIR(d)) != NULL) { \
		if (filter != NULL) { \
			int keep = filter(e); \
			errno = 0; \
			if (!keep) \
				continue; \
		} \
		if (n == cap) { \
			size_t ncap = cap ? cap * 2 : 16; \
			struct DIRENT **nv = realloc(v, ncap * sizeof(*v)); \
			if (nv == NULL) \
				break; \
			v = nv; \
			cap = ncap; \
		} \
		size_t sz = offsetof(struct DIRENT, d_name) + strlen(e->d_name) + 1; \
		struct DIRENT *c = malloc(sz < sizeof(*c) ? sizeof(*c) : sz); \
		if (c == NULL) \
			break; \
		memcpy(c, e, sz); \
		v[n++] = c; \
	} \
	int err = errno; \
	closedir(d); \
	if (err != 0) { \
		while (n > 0) \
			free(v[--n]); \
		free(v); \
		errno = err; \
		return -1; \
	} \
	if (compar != NULL && n > 1) \
		qsort_r(v, n, sizeof(*v), NAME##_sort, &compar); \
	*list = v; \
	errno = saved; \
	return (int)n; \
}

SIB_SCANDIR(sib_scandir, dirent, readdir)
SIB_SCANDIR(sib_scandir64, dirent64, readdir64)

SIB_WRAP int scandir(const char *path, struct dirent ***list,
	int (*filter)(const struct dirent *), sib_scandir_cmp *compar)
{
	return sib_scandir_body(AT_FDCWD, path, list, filter, compar);
}

SIB_WRAP int scandir64(const char *path, struct dirent64 ***list,
	int (*filter)(const struct dirent64 *), sib_scandir64_cmp *compar)
{
	return sib_scandir64_body(AT_FDCWD, path, list, filter, compar);
}

SIB_WRAP int scandirat(int dirfd, const char *path, struct dirent ***list,
	int (*filter)(const struct dirent *), sib_scandir_cmp *compar)
{
	return sib_scandir_body(dirfd, path, list, filter, compar);
}

SIB_WRAP int scandirat64(int dirfd, const char *path, struct dirent64 ***list,
	int (*filter)(const struct dirent64 *), sib_scandir64_cmp *compar)
{
	return sib_scandir64_body(dirfd, path, list, filter, compar);
}
