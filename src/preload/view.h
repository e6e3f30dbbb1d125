/* SPDX-License-Identifier: MIT */
/*
 * libsoftib_view.so, the interposer of `softib run` (docs/clients.md "The
 * interposer"): what its files share.  The view maps the kernel's RDMA paths
 * (/sys/class/infiniband..., /dev/infiniband) to the same paths under
 * SOFTIB_VIEW, an absolute directory.  Every helper here uses only the stack
 * (one PATH_MAX buffer per call at most, the caller's) and raw system calls:
 * no malloc, no lock, async-signal-safe.
 */
#ifndef SIB_PRELOAD_VIEW_H
#define SIB_PRELOAD_VIEW_H

#include <limits.h>
#include <stddef.h>

/* An exported wrapper (the library is built with hidden visibility). */
#define SIB_WRAP __attribute__((visibility("default")))

/*
 * sib_view_path: the path the kernel must see for PATH, relative to DIRFD
 * (AT_FDCWD or a directory fd).  Returns PATH itself when it is outside the
 * view (or the view is off), OUT (PATH_MAX bytes) holding ROOT + the
 * normalised virtual path when it is inside, or the normalised real path when
 * a PATH that passes through the view leaves it through "..".  A ".." inside
 * the view needs the directory before it to exist there, as the kernel
 * does.  NULL with errno: EFAULT for a NULL PATH, ENAMETOOLONG when the
 * result would not fit in PATH_MAX, ENOENT, ENOTDIR or EACCES from a
 * directory before a "..", as the kernel would say.  errno is otherwise
 * untouched.
 */
const char *sib_view_path(int dirfd, const char *path, char *out);

/*
 * sib_view_unmap: BUF (a NUL-terminated real path of at most PATH_MAX bytes)
 * back to the virtual path when it names ROOT/<mapped prefix>...: in place;
 * returns the new length.  Used for getcwd, realpath and readlink answers.
 */
size_t sib_view_unmap(char *buf);

/* What a path sib_view_path rewrote is: not in the view, a file of the
 * view's sysfs (/sys/class/...), or of its /dev/infiniband. */
enum { SIB_VIEW_NONE, SIB_VIEW_SYS, SIB_VIEW_DEV };
int sib_view_class(const char *p);

/* sib_view_path for a call that would change what it names: *CLS tells
 * whether the path the kernel gets is in the view; a relative PATH left
 * alone is made absolute in OUT when its base is in the view (so that its
 * existence can be checked there).  NULL with errno as sib_view_path. */
const char *sib_view_target(int dirfd, const char *path, char *out, int *cls);

/*
 * sib_view_devnode: whether the real path REAL names an entry of the view's
 * /dev/infiniband that is a symbolic link to /dev/null, which the view shows
 * as the character device it stands for (lstat answers /dev/null's stat,
 * readlink EINVAL).  sib_view_devnode_at: the same for PATH from DIRFD, P
 * being what sib_view_path made of it (a relative PATH it left alone is
 * resolved against DIRFD in SCRATCH, PATH_MAX bytes).  errno untouched.
 */
int sib_view_devnode(const char *real);
int sib_view_devnode_at(int dirfd, const char *path, const char *p, char *scratch);

/* Whether the view is on (SOFTIB_VIEW set to an absolute path). */
int sib_view_on(void);

/*
 * sib_realpath_walk: PATH (a real path, already through sib_view_path)
 * resolved the way realpath(3) does (every symbolic link, ".", ".."), into
 * OUT (PATH_MAX bytes), by readlinkat system calls; REST and LINK are
 * PATH_MAX bytes of scratch (REST may be PATH itself).  A link of the view's
 * /dev/infiniband to /dev/null is a device node here, not a link.  0, or -1
 * with errno (ENOENT, ENOTDIR, ELOOP, EACCES, ENAMETOOLONG) as glibc's
 * realpath sets it.
 */
int sib_realpath_walk(const char *path, char *out, char *rest, char *link);

/* Raw system calls that bypass every wrapper (the view's own lookups). */
long sib_sys_getcwd(char *buf, size_t size);
long sib_sys_readlinkat(int dirfd, const char *path, char *buf, size_t size);

#endif
