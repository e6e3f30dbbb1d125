/* SPDX-License-Identifier: MIT */
/*
 * The system view's node store (src/sysview/tree.c) against a model, in
 * randomized passes (SIB_SYSVIEW_SEED=N replays one run; the seed is
 * printed): each pass writes a random subset of a small tree of directories,
 * files and symlinks (files and links swapping kinds at the same name,
 * values from a small set so that many writes change nothing), keeps some
 * untouched subtrees with sv_keep, and ends; then the disk must hold
 * exactly the model: the same entries, contents, link targets, sysfs modes,
 * no temporaries, and a file whose value did not change keeps its inode
 * (it was not rewritten).  Finally sv_tree_fini(remove) empties the root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sysview/sysview_int.h"

#define NTOP   3   /* d0..d2 under root */
#define NSUB   2   /* d0..d1 under each */
#define NENT   4   /* x0..x3 in every directory */
#define PASSES 300

/* Model: one slot per possible path. */
enum { M_NONE, M_DIR, M_FILE, M_LINK };

struct slot {
	char path[32];
	int parent;          /* slot index, -1: root */
	bool is_dir;
	int kind;            /* M_* on disk */
	int val;             /* value index */
	int prev_val;        /* before this pass */
	int next_kind;       /* what this pass wrote (touched) */
	ino_t ino;           /* the file's inode when last checked */
	bool touched, kept;
};

static struct slot slots[NTOP * (1 + NSUB) * (1 + NENT) + NTOP * NENT + 8];
static int nslots;
static char root[64];
static const char *const values[] = { "0\n", "1\n", "0x1\n", "4: ACTIVE\n" };

static int add(const char *path, int parent, bool is_dir)
{
	struct slot *s = &slots[nslots];

	snprintf(s->path, sizeof(s->path), "%s", path);
	s->parent = parent;
	s->is_dir = is_dir;
	return nslots++;
}

static void build_slots(void)
{
	char p[32];

	for (int a = 0; a < NTOP; a++) {
		snprintf(p, sizeof(p), "d%d", a);
		int da = add(p, -1, true);

		for (int e = 0; e < NENT; e++) {
			snprintf(p, sizeof(p), "d%d/x%d", a, e);
			add(p, da, false);
		}
		for (int b = 0; b < NSUB; b++) {
			snprintf(p, sizeof(p), "d%d/d%d", a, b);
			int db = add(p, da, true);

			for (int e = 0; e < NENT; e++) {
				snprintf(p, sizeof(p), "d%d/d%d/x%d", a, b, e);
				add(p, db, false);
			}
		}
	}
}

/* Is slot i at or under slot k? */
static bool under(int i, int k)
{
	for (; i >= 0; i = slots[i].parent)
		if (i == k)
			return true;
	return false;
}

static bool parent_ok(int i)
{
	int p = slots[i].parent;

	return p < 0 || slots[p].touched || slots[p].kept || slots[p].kind == M_DIR;
}

static void one_pass(struct sv_tree *t)
{
	sv_pass_begin(t);
	for (int i = 0; i < nslots; i++) {
		slots[i].touched = slots[i].kept = false;
		slots[i].prev_val = slots[i].val;
	}
	/* Keep some live directories' subtrees as they are. */
	for (int i = 0; i < nslots; i++)
		if (slots[i].is_dir && slots[i].kind == M_DIR && rand() % 6 == 0) {
			sv_keep(t, slots[i].path);
			for (int j = 0; j < nslots; j++)
				if (under(j, i) && slots[j].kind != M_NONE)
					slots[j].kept = true;
		}
	/* Write a random subset, parents first (slots are in that order). */
	for (int i = 0; i < nslots; i++) {
		struct slot *s = &slots[i];

		if (!parent_ok(i) || rand() % 3 == 0)
			continue;
		s->touched = true;
		if (s->is_dir) {
			s->next_kind = M_DIR;
			assert_int_equal(sv_dir(t, "%s", s->path), 0);
		} else if (rand() % 4 == 0) {
			s->next_kind = M_LINK;
			s->val = rand() % 4;
			assert_int_equal(sv_link(t, values[s->val], "%s", s->path), 0);
		} else {
			s->next_kind = M_FILE;
			s->val = rand() % 4;
			assert_int_equal(sv_file(t, values[s->val], "%s", s->path), 0);
		}
	}
	/* A directory with something written or kept in it stays. */
	for (int i = nslots; i-- > 0;) {
		int p = slots[i].parent;

		if ((slots[i].touched || slots[i].kept) && p >= 0 && !slots[p].touched)
			slots[p].kept = true;
	}
	assert_int_equal(sv_pass_end(t), 0);
}

/* The model after a pass, and the disk against it. */
static void check(int pass)
{
	for (int i = 0; i < nslots; i++) {
		struct slot *s = &slots[i];
		char path[160], buf[64];
		struct stat st;
		int want, old = s->kind;

		want = s->touched ? s->next_kind : s->kept ? old : M_NONE;
		snprintf(path, sizeof(path), "%.63s/%.31s", root, s->path);
		if (lstat(path, &st)) {
			if (want != M_NONE)
				fail_msg("pass %d: %s missing", pass, s->path);
			s->kind = M_NONE;
			continue;
		}
		if (want == M_NONE)
			fail_msg("pass %d: %s left behind", pass, s->path);
		if (s->is_dir) {
			assert_true(S_ISDIR(st.st_mode));
			assert_int_equal(st.st_mode & 07777, 0755);
			s->kind = M_DIR;
			continue;
		}
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlink(path, buf, sizeof(buf) - 1);

			assert_true(n > 0);
			buf[n] = '\0';
			assert_int_equal(want, M_LINK);
			s->kind = M_LINK;
		} else {
			int fd = open(path, O_RDONLY);
			ssize_t n;

			assert_true(S_ISREG(st.st_mode));
			assert_int_equal(st.st_mode & 07777, 0444);
			assert_true(fd >= 0);
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			assert_true(n >= 0);
			buf[n] = '\0';
			/* Unchanged value and kind: not rewritten. */
			assert_int_equal(want, M_FILE);
			if (old == M_FILE && s->val == s->prev_val && s->ino && st.st_ino != s->ino)
				fail_msg("pass %d: %s rewritten with the same value", pass, s->path);
			s->kind = M_FILE;
			s->ino = st.st_ino;
		}
		if (strcmp(buf, values[s->val]))
			fail_msg("pass %d: %s holds '%s', want '%s'", pass, s->path, buf, values[s->val]);
	}
}

/* No entry on disk outside the model (temporaries included). */
static int count_disk(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char p[512];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_name[0] == '.')
			fail_msg("%s/%s: a temporary", dir, e->d_name);
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		n++;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			n += count_disk(p);
	}
	closedir(d);
	return n;
}

static void test_tree_random(void **state)
{
	const char *env = getenv("SIB_SYSVIEW_SEED");
	unsigned seed = env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();
	struct sv_tree t;

	(void)state;
	printf("SIB_SYSVIEW_SEED=%u\n", seed);
	srand(seed);
	build_slots();
	snprintf(root, sizeof(root), "/dev/shm/sysview-tree.XXXXXX");
	if (!mkdtemp(root)) {
		snprintf(root, sizeof(root), "/tmp/sysview-tree.XXXXXX");
		assert_non_null(mkdtemp(root));
	}
	assert_int_equal(sv_tree_init(&t, root), 0);
	for (int pass = 0; pass < PASSES; pass++) {
		int live = 0;

		one_pass(&t);
		check(pass);
		for (int i = 0; i < nslots; i++)
			live += slots[i].kind != M_NONE;
		assert_int_equal(count_disk(root), live);
	}
	sv_tree_fini(&t, true);
	assert_int_equal(count_disk(root), 0);
	assert_int_equal(rmdir(root), 0);
}

/* Paths too long, a parent missing, a root that is not a directory. */
static void test_tree_errors(void **state)
{
	struct sv_tree t;
	char longname[600];

	(void)state;
	assert_int_equal(sv_tree_init(&t, "/nonexistent/x"), -ENOENT);
	assert_int_equal(sv_tree_init(&t, "/dev/null"), -ENOTDIR);
	snprintf(root, sizeof(root), "/tmp/sysview-tree.XXXXXX");
	assert_non_null(mkdtemp(root));
	assert_int_equal(sv_tree_init(&t, root), 0);
	sv_pass_begin(&t);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(sv_file(&t, "x\n", "%s", longname), -ENAMETOOLONG);
	assert_int_equal(sv_file(&t, "x\n", "nodir/f"), -ENOENT);
	assert_int_equal(sv_dir(&t, "d"), 0);
	assert_int_equal(sv_file(&t, "x\n", "d/f"), 0);
	/* A symlink where a directory goes is not followed. */
	char link[128], other[128], victim[160];
	struct stat st;

	snprintf(link, sizeof(link), "%s/evil", root);
	snprintf(other, sizeof(other), "%s/other", root);
	snprintf(victim, sizeof(victim), "%s/f", other);
	assert_int_equal(mkdir(other, 0700), 0);
	assert_int_equal(symlink("other", link), 0);
	assert_int_equal(sv_dir(&t, "evil"), -ENOTDIR);
	assert_int_equal(sv_file(&t, "x\n", "evil/f"), -ENOENT);
	assert_int_equal(sv_link(&t, "/dev/null", "evil/l"), -ENOENT);
	assert_int_equal(sv_dir(&t, "evil/d"), -ENOENT);
	assert_int_equal(lstat(victim, &st), -1);
	assert_int_equal(stat(other, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700); /* not chmod'ed through the link */
	assert_int_equal(sv_pass_end(&t), -ENAMETOOLONG); /* the pass's first error */
	assert_int_equal(unlink(link), 0);
	assert_int_equal(rmdir(other), 0);
	sv_tree_fini(&t, true);
	assert_int_equal(rmdir(root), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_random),
		cmocka_unit_test(test_tree_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
