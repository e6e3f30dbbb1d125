/* SPDX-License-Identifier: MIT */
/*
 * libsoftib_view.so, the interposer of `softib run` (docs/clients.md "The
 * interposer"): what its files share.  The view maps the kernel's RDMA paths
 * (/sys/class/infiniband..., /dev/infiniband) to the same paths under
 * SOFTIB_VIEW, an absolute directory.  Every helper here uses only the stack
 * and raw system calls: no malloc, no lock, async-signal-safe.
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
 * a relative PATH steps out of a directory of the view through "..".  NULL
 * with errno ENAMETOOLONG when the result would not fit in PATH_MAX, as the
 * kernel would say.  errno is otherwise untouched.
 */
const char *sib_view_path(int dirfd, const char *path, char *out);

/*
 * sib_view_unmap: BUF (a NUL-terminated real path of at most PATH_MAX bytes)
 * back to the virtual path when it names ROOT/<mapped prefix>...: in place;
 * returns the new length.  Used for getcwd, realpath and readlink answers.
 */
size_t sib_view_unmap(char *buf);

/* Whether the view is on (SOFTIB_VIEW set to an absolute path). */
int sib_view_on(void);

/*
 * sib_realpath_walk: PATH (a real path, already through sib_view_path)
 * resolved the way realpath(3) does (every symbolic link, ".", ".."), into
 * OUT (PATH_MAX bytes), by readlinkat system calls.  0, or -1 with errno
 * (ENOENT, ENOTDIR, ELOOP, EACCES, ENAMETOOLONG) as glibc's realpath sets it.
 */
int sib_realpath_walk(const char *path, char *out);

/* Raw system calls that bypass every wrapper (the view's own lookups). */
long sib_sys_getcwd(char *buf, size_t size);
long sib_sys_readlinkat(int dirfd, const char *path, char *buf, size_t size);

#endif
