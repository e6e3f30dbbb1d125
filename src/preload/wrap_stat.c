/* SPDX-License-Identifier: MIT */
/*
 * libsoftib_view.so: the calls that look a path up without opening it
 * (docs/clients.md "The interposer"): stat, lstat, fstatat (and their 64-bit
 * forms), statx, glibc's old __xstat family, access, faccessat, eaccess,
 * euidaccess, and the extended-attribute reads.  Each rewrites the path
 * (sib_view_path) and makes the system call itself: newfstatat where the kernel's struct stat is glibc's (x86_64,
 * aarch64), statx converted otherwise; faccessat2 with the flags, as glibc
 * 2.36 does, and glibc's own fallback when the kernel lacks it.
 */
#undef _FORTIFY_SOURCE
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#if ((defined(__x86_64__) && !defined(__ILP32__)) || defined(__aarch64__)) && !defined(SIB_VIEW_STATX)
#define SIB_KERNEL_STAT 1 /* the kernel's struct stat is glibc's stat and stat64 (SIB_VIEW_STATX: the statx way, to test it here) */
#endif

#ifdef SIB_KERNEL_STAT
static int sys_fstatat(int dirfd, const char *p, struct stat *st, int flags)
{
	return (int)syscall(SYS_newfstatat, dirfd, p, st, flags);
}

static int sys_fstatat64(int dirfd, const char *p, struct stat64 *st, int flags)
{
	return (int)syscall(SYS_newfstatat, dirfd, p, st, flags);
}
#else
/* struct stat from statx, as glibc does on the ports without newfstatat
 * (sysdeps/unix/sysv/linux/statx_cp.c); EOVERFLOW where a field does not fit. */
#define SIB_FROM_STATX(NAME, STAT) \
static int NAME(int dirfd, const char *p, struct STAT *st, int flags) \
{ \
	struct statx x; \
	if (syscall(SYS_statx, dirfd, p, flags | AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &x) != 0) \
		return -1; \
	memset(st, 0, sizeof(*st)); \
	st->st_dev = makedev(x.stx_dev_major, x.stx_dev_minor); \
	st->st_ino = x.stx_ino; \
	st->st_mode = x.stx_mode; \
	st->st_nlink = x.stx_nlink; \
	st->st_uid = x.stx_uid; \
	st->st_gid = x.stx_gid; \
	st->st_rdev = makedev(x.stx_rdev_major, x.stx_rdev_minor); \
	st->st_size = x.stx_size; \
	st->st_blksize = x.stx_blksize; \
	st->st_blocks = x.stx_blocks; \
	st->st_atim.tv_sec = x.stx_atime.tv_sec; \
	st->st_atim.tv_nsec = x.stx_atime.tv_nsec; \
	st->st_mtim.tv_sec = x.stx_mtime.tv_sec; \
	st->st_mtim.tv_nsec = x.stx_mtime.tv_nsec; \
	st->st_ctim.tv_sec = x.stx_ctime.tv_sec; \
	st->st_ctim.tv_nsec = x.stx_ctime.tv_nsec; \
	if ((unsigned long long)st->st_ino != x.stx_ino || \
	    (unsigned long long)st->st_size != x.stx_size) { \
		errno = EOVERFLOW; \
		return -1; \
	} \
	return 0; \
}
SIB_FROM_STATX(sys_fstatat, stat)
SIB_FROM_STATX(sys_fstatat64, stat64)
#endif

/* One body per struct: the path rewritten (one PATH_MAX buffer, in a
 * function of its own so that a call with the view off never has it on the
 * stack); a lstat of a device node of the view (a link to /dev/null in the
 * tree) answers /dev/null's stat, as a host's lstat of the node would. */
#define SIB_VIEW_FSTATAT(NAME, STAT, SYS) \
static __attribute__((noinline)) int NAME##_slow(int dirfd, const char *path, struct STAT *st, int flags) \
{ \
	char buf[PATH_MAX]; \
	const char *p = sib_view_path(dirfd, path, buf); \
	if (p == NULL || SYS(dirfd, p, st, flags) != 0) \
		return -1; \
	if ((flags & AT_SYMLINK_NOFOLLOW) && S_ISLNK(st->st_mode) && \
	    sib_view_devnode_at(dirfd, path, p, buf)) \
		return SYS(dirfd, p, st, flags & ~AT_SYMLINK_NOFOLLOW); \
	return 0; \
} \
static int NAME(int dirfd, const char *path, struct STAT *st, int flags) \
{ \
	return sib_view_on() ? NAME##_slow(dirfd, path, st, flags) : SYS(dirfd, path, st, flags); \
}
SIB_VIEW_FSTATAT(view_fstatat, stat, sys_fstatat)
SIB_VIEW_FSTATAT(view_fstatat64, stat64, sys_fstatat64)

SIB_WRAP int stat(const char *path, struct stat *st)
{
	return view_fstatat(AT_FDCWD, path, st, 0);
}

SIB_WRAP int stat64(const char *path, struct stat64 *st)
{
	return view_fstatat64(AT_FDCWD, path, st, 0);
}

SIB_WRAP int lstat(const char *path, struct stat *st)
{
	return view_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

SIB_WRAP int lstat64(const char *path, struct stat64 *st)
{
	return view_fstatat64(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

SIB_WRAP int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return view_fstatat(dirfd, path, st, flags);
}

SIB_WRAP int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	return view_fstatat64(dirfd, path, st, flags);
}

#ifdef SYS_statx
static __attribute__((noinline)) int view_statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *stx)
{
	char buf[PATH_MAX];
	const char *p = sib_view_path(dirfd, path, buf);
	if (p == NULL || syscall(SYS_statx, dirfd, p, flags, mask, stx) != 0)
		return -1;
	if ((flags & AT_SYMLINK_NOFOLLOW) && (stx->stx_mask & STATX_TYPE) && S_ISLNK(stx->stx_mode) &&
	    sib_view_devnode_at(dirfd, path, p, buf))
		return (int)syscall(SYS_statx, dirfd, p, flags & ~AT_SYMLINK_NOFOLLOW, mask, stx);
	return 0;
}

SIB_WRAP int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *stx)
{
	if (!sib_view_on())
		return (int)syscall(SYS_statx, dirfd, path, flags, mask, stx);
	return view_statx(dirfd, path, flags, mask, stx);
}
#endif

#ifdef SIB_KERNEL_STAT
/* glibc before 2.33 compiled stat() into calls of these (still exported as
 * compat symbols for old binaries); VER is _STAT_VER, one layout here. */
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

SIB_WRAP int __xstat(int ver, const char *path, struct stat *st)
{
	return view_fstatat(AT_FDCWD, path, st, 0);
}

SIB_WRAP int __xstat64(int ver, const char *path, struct stat64 *st)
{
	return view_fstatat64(AT_FDCWD, path, st, 0);
}

SIB_WRAP int __lxstat(int ver, const char *path, struct stat *st)
{
	return view_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

SIB_WRAP int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	return view_fstatat64(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

SIB_WRAP int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	return view_fstatat(dirfd, path, st, flags);
}

SIB_WRAP int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
	return view_fstatat64(dirfd, path, st, flags);
}
#endif

/* faccessat's answer without faccessat2 (glibc sysdeps/unix/sysv/linux/
 * faccessat.c): the plain call when the flags change nothing, else the
 * permission bits against the effective ids. */
static int access_fallback(int dirfd, const char *p, int mode, int flags)
{
	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EACCESS)) {
		errno = EINVAL;
		return -1;
	}
	if ((flags == 0 || ((flags & AT_EACCESS) && getuid() == geteuid() && getgid() == getegid()))
	    && !(flags & AT_SYMLINK_NOFOLLOW))
		return (int)syscall(SYS_faccessat, dirfd, p, mode);
	struct stat st;
	if (sys_fstatat(dirfd, p, &st, flags & AT_SYMLINK_NOFOLLOW) != 0)
		return -1;
	mode &= (X_OK | W_OK | R_OK);
	if (mode == F_OK)
		return 0;
	uid_t uid = (flags & AT_EACCESS) ? geteuid() : getuid();
	if (uid == 0 && ((mode & X_OK) == 0 || (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))))
		return 0;
	gid_t gid = (flags & AT_EACCESS) ? getegid() : getgid();
	int granted = uid == st.st_uid ? (int)((st.st_mode & (mode << 6)) >> 6)
		: (gid == st.st_gid || group_member(st.st_gid)) ? (int)((st.st_mode & (mode << 3)) >> 3)
		: (int)(st.st_mode & mode);
	if (granted == mode)
		return 0;
	errno = EACCES;
	return -1;
}

static int sys_faccessat(int dirfd, const char *p, int mode, int flags)
{
	if (flags == 0)
		return (int)syscall(SYS_faccessat, dirfd, p, mode);
#ifdef SYS_faccessat2
	int e = errno;
	int r = (int)syscall(SYS_faccessat2, dirfd, p, mode, flags);
	if (r == 0 || errno != ENOSYS)
		return r;
	errno = e;
#endif
	return access_fallback(dirfd, p, mode, flags);
}

static __attribute__((noinline)) int view_faccessat_slow(int dirfd, const char *path, int mode, int flags)
{
	char buf[PATH_MAX];
	const char *p = sib_view_path(dirfd, path, buf);
	return p == NULL ? -1 : sys_faccessat(dirfd, p, mode, flags);
}

static int view_faccessat(int dirfd, const char *path, int mode, int flags)
{
	if (!sib_view_on())
		return sys_faccessat(dirfd, path, mode, flags);
	return view_faccessat_slow(dirfd, path, mode, flags);
}

SIB_WRAP int access(const char *path, int mode)
{
	return view_faccessat(AT_FDCWD, path, mode, 0);
}

SIB_WRAP int faccessat(int dirfd, const char *path, int mode, int flags)
{
	return view_faccessat(dirfd, path, mode, flags);
}

SIB_WRAP int euidaccess(const char *path, int mode)
{
	return view_faccessat(AT_FDCWD, path, mode, AT_EACCESS);
}

SIB_WRAP int eaccess(const char *path, int mode)
{
	return view_faccessat(AT_FDCWD, path, mode, AT_EACCESS);
}

/* The extended attributes a lookup reads (ls -l asks lgetxattr for the
 * security label and the ACL of each entry). */
static __attribute__((noinline)) ssize_t view_xattr_slow(long nr, const char *path, const char *name, void *val, size_t size)
{
	char buf[PATH_MAX];
	const char *p = sib_view_path(AT_FDCWD, path, buf);
	if (p == NULL)
		return -1;
	return name != NULL ? syscall(nr, p, name, val, size) : syscall(nr, p, val, size);
}

static ssize_t view_xattr(long nr, const char *path, const char *name, void *val, size_t size)
{
	if (!sib_view_on())
		return name != NULL ? syscall(nr, path, name, val, size) : syscall(nr, path, val, size);
	return view_xattr_slow(nr, path, name, val, size);
}

SIB_WRAP ssize_t getxattr(const char *path, const char *name, void *val, size_t size)
{
	return view_xattr(SYS_getxattr, path, name, val, size);
}

SIB_WRAP ssize_t lgetxattr(const char *path, const char *name, void *val, size_t size)
{
	return view_xattr(SYS_lgetxattr, path, name, val, size);
}

SIB_WRAP ssize_t listxattr(const char *path, char *list, size_t size)
{
	return view_xattr(SYS_listxattr, path, NULL, list, size);
}

SIB_WRAP ssize_t llistxattr(const char *path, char *list, size_t size)
{
	return view_xattr(SYS_llistxattr, path, NULL, list, size);
}
