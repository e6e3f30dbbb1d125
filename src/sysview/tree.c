// SPDX-License-Identifier: MIT
/*
 * What the system view made under its root (sysview_int.h): one node per
 * directory, file and symlink, found by path through a hash, in creation
 * order so that removal goes children first.  A file is rewritten only when
 * its value changed, through a dot-named temporary in the same directory
 * renamed over it, so a reader sees the old value or the new one, whole.
 * Every call works relative to root's fd (openat, mkdirat, renameat), and
 * only inside directories the view made itself: a symlink someone put in
 * their place is never followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysview/sysview_int.h"

#define SV_PATH_MAX 512

int sv_tree_init(struct sv_tree *t, const char *root)
{
	memset(t, 0, sizeof(*t));
	t->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->root_fd < 0)
		return -errno;
	return 0;
}

/* FNV-1a. */
static uint32_t hash_of(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static int rehash(struct sv_tree *t, size_t cap)
{
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t j = hash_of(t->nodes[i].path) & (cap - 1);

		while (h[j])
			j = (j + 1) & (cap - 1);
		h[j] = (uint32_t)i + 1;
	}
	free(t->hash);
	t->hash = h;
	t->hash_cap = cap;
	return 0;
}

/* The node of path (len bytes of it), or NULL. */
static struct sv_node *find(struct sv_tree *t, const char *path, size_t len)
{
	uint32_t h = 2166136261u;

	if (!t->hash_cap)
		return NULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)path[i]) * 16777619u;
	for (size_t j = h & (t->hash_cap - 1); t->hash[j]; j = (j + 1) & (t->hash_cap - 1)) {
		struct sv_node *nd = &t->nodes[t->hash[j] - 1];

		if (!strncmp(nd->path, path, len) && nd->path[len] == '\0')
			return nd;
	}
	return NULL;
}

/* The node of path, made (not live yet) if new; NULL: ENOMEM. */
static struct sv_node *node_of(struct sv_tree *t, const char *path, enum sv_kind kind)
{
	struct sv_node *found = find(t, path, strlen(path));
	size_t j;

	if (found)
		return found;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct sv_node *n = realloc(t->nodes, cap * sizeof(*n));

		if (!n)
			return NULL;
		t->nodes = n;
		t->cap = cap;
	}
	if (t->hash_cap < 2 * t->cap && rehash(t, 4 * t->cap))
		return NULL;
	struct sv_node *nd = &t->nodes[t->n];

	memset(nd, 0, sizeof(*nd));
	nd->path = strdup(path);
	if (!nd->path)
		return NULL;
	nd->kind = (uint8_t)kind;
	for (j = hash_of(path) & (t->hash_cap - 1); t->hash[j]; j = (j + 1) & (t->hash_cap - 1))
		;
	t->hash[j] = (uint32_t)++t->n;
	return nd;
}

static int fail(struct sv_tree *t, int err)
{
	if (!t->err)
		t->err = err;
	return err;
}

/* The temporary beside path: <dir>/.<base>.<pid>.sysview */
static int tmp_name(char *out, size_t size, const char *path)
{
	const char *slash = strrchr(path, '/');
	int dl = slash ? (int)(slash - path + 1) : 0;
	int n = snprintf(out, size, "%.*s.%s.%d.sysview", dl, path, path + dl, (int)getpid());

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int write_atomic(struct sv_tree *t, const char *path, const char *val)
{
	char tmp[SV_PATH_MAX + 32];
	size_t len = strlen(val), off = 0;
	int fd, rc = tmp_name(tmp, sizeof(tmp), path);

	if (rc)
		return rc;
	fd = openat(t->root_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd < 0 && errno == EEXIST && !unlinkat(t->root_fd, tmp, 0)) /* a crashed run's */
		fd = openat(t->root_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t w = write(fd, val + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)w;
	}
	if (!rc && fchmod(fd, 0444))
		rc = -errno;
	close(fd);
	if (!rc && renameat(t->root_fd, tmp, t->root_fd, path))
		rc = -errno;
	if (rc)
		unlinkat(t->root_fd, tmp, 0);
	return rc;
}

static int link_atomic(struct sv_tree *t, const char *path, const char *target)
{
	char tmp[SV_PATH_MAX + 32];
	int rc = tmp_name(tmp, sizeof(tmp), path);

	if (rc)
		return rc;
	if (symlinkat(target, t->root_fd, tmp) &&
	    (errno != EEXIST || unlinkat(t->root_fd, tmp, 0) || symlinkat(target, t->root_fd, tmp)))
		return -errno;
	if (renameat(t->root_fd, tmp, t->root_fd, path)) {
		rc = -errno;
		unlinkat(t->root_fd, tmp, 0);
	}
	return rc;
}

static int vpath(char *out, const char *fmt, va_list ap)
{
	int n = vsnprintf(out, SV_PATH_MAX, fmt, ap);

	return n < 0 || n >= SV_PATH_MAX ? -ENAMETOOLONG : 0;
}

/* Is path's directory one the view made (never someone's symlink)? */
static bool parent_ours(struct sv_tree *t, const char *path)
{
	const char *slash = strrchr(path, '/');
	struct sv_node *p;

	if (!slash)
		return true; /* root itself */
	p = find(t, path, (size_t)(slash - path));
	return p && p->live && p->kind == SV_DIR;
}

int sv_dir(struct sv_tree *t, const char *fmt, ...)
{
	char path[SV_PATH_MAX];
	struct sv_node *nd;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vpath(path, fmt, ap);
	va_end(ap);
	if (rc)
		return fail(t, rc);
	if (!parent_ours(t, path))
		return fail(t, -ENOENT);
	nd = node_of(t, path, SV_DIR);
	if (!nd)
		return fail(t, -ENOMEM);
	nd->gen = t->gen;
	if (nd->live)
		return 0;
	if (mkdirat(t->root_fd, path, 0755)) {
		struct stat st;

		if (errno != EEXIST)
			return fail(t, -errno);
		/* Someone else's symlink or file there: never write through it. */
		if (fstatat(t->root_fd, path, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
			return fail(t, -ENOTDIR);
	}
	/* sysfs's mode whatever the umask (a mount point's too). */
	if (fchmodat(t->root_fd, path, 0755, 0))
		return fail(t, -errno);
	nd->kind = SV_DIR;
	nd->live = true;
	return 0;
}

/* A file or a symlink: rewritten when its value, or kind, changed. */
static int put(struct sv_tree *t, enum sv_kind kind, const char *val, const char *path)
{
	struct sv_node *nd;
	char *copy;
	int rc;

	if (!parent_ours(t, path))
		return fail(t, -ENOENT);
	nd = node_of(t, path, kind);

	if (!nd)
		return fail(t, -ENOMEM);
	nd->gen = t->gen;
	if (nd->live && nd->kind == kind && nd->val && !strcmp(nd->val, val))
		return 0;
	copy = strdup(val);
	if (!copy)
		return fail(t, -ENOMEM);
	rc = kind == SV_LINK ? link_atomic(t, path, val) : write_atomic(t, path, val);
	if (rc) {
		free(copy);
		return fail(t, rc);
	}
	free(nd->val);
	nd->val = copy;
	nd->kind = (uint8_t)kind;
	nd->live = true;
	return 0;
}

int sv_file(struct sv_tree *t, const char *val, const char *fmt, ...)
{
	char path[SV_PATH_MAX];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vpath(path, fmt, ap);
	va_end(ap);
	return rc ? fail(t, rc) : put(t, SV_FILE, val, path);
}

int sv_link(struct sv_tree *t, const char *target, const char *fmt, ...)
{
	char path[SV_PATH_MAX];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vpath(path, fmt, ap);
	va_end(ap);
	return rc ? fail(t, rc) : put(t, SV_LINK, target, path);
}

void sv_keep(struct sv_tree *t, const char *prefix)
{
	size_t len = strlen(prefix);

	for (size_t i = 0; i < t->n; i++) {
		struct sv_node *nd = &t->nodes[i];

		if (nd->live && !strncmp(nd->path, prefix, len) &&
		    (nd->path[len] == '\0' || nd->path[len] == '/'))
			nd->gen = t->gen;
	}
}

void sv_pass_begin(struct sv_tree *t)
{
	t->gen++;
	t->err = 0;
}

static void unmake(struct sv_tree *t, struct sv_node *nd)
{
	if (unlinkat(t->root_fd, nd->path, nd->kind == SV_DIR ? AT_REMOVEDIR : 0) &&
	    errno != ENOENT) {
		fail(t, -errno);
		if (nd->kind == SV_DIR)
			return; /* someone else's file in it: leave it */
	}
	nd->live = false;
	free(nd->val);
	nd->val = NULL;
}

/* Remove what the pass did not touch, children first; a directory that
 * holds something the pass touched or kept stays with it (the caller
 * wrote a file in it without writing the directory again). */
int sv_pass_end(struct sv_tree *t)
{
	for (size_t i = t->n; i-- > 0;) {
		struct sv_node *nd = &t->nodes[i];
		const char *slash;

		if (!nd->live)
			continue;
		if (nd->gen != t->gen) {
			unmake(t, nd);
			continue;
		}
		slash = strrchr(nd->path, '/');
		if (slash) {
			struct sv_node *parent = find(t, nd->path, (size_t)(slash - nd->path));

			if (parent)
				parent->gen = t->gen;
		}
	}
	return t->err;
}

void sv_tree_fini(struct sv_tree *t, bool remove)
{
	for (size_t i = t->n; i-- > 0;) {
		if (remove && t->nodes[i].live)
			unmake(t, &t->nodes[i]);
		free(t->nodes[i].path);
		free(t->nodes[i].val);
	}
	free(t->nodes);
	free(t->hash);
	if (t->root_fd >= 0)
		close(t->root_fd);
	memset(t, 0, sizeof(*t));
	t->root_fd = -1;
}
