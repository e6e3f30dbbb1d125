/* SPDX-License-Identifier: MIT */
/*
 * libsoftib_view.so (src/preload, docs/clients.md "The interposer") from a C
 * program: every wrapped entry point on virtual paths of a tree this test
 * makes, the paths outside the view untouched, relative paths after chdir,
 * a directory fd, a fork+exec'd /bin/cat, threads, and a randomized run of
 * path spellings against a model of the lexical rewrite
 * (SIB_PRELOAD_SEED=N replays one).  Built twice: plain and with
 * -O2 -D_FORTIFY_SOURCE=2 (the __open_2 and _chk entry points).
 *
 * usage: test_preload LIBSOFTIB_VIEW.so   (it re-executes itself with
 * LD_PRELOAD and SOFTIB_VIEW set on a tree in $TMPDIR; exit 0 when all hold)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen);
ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len, size_t buflen);
char *__realpath_chk(const char *path, char *resolved, size_t resolvedlen);
char *__getcwd_chk(char *buf, size_t size, size_t buflen);
#if defined(__x86_64__) && !defined(__ILP32__) && !defined(__SANITIZE_ADDRESS__)
/* glibc 2.33+ keeps these for old binaries only: reach the compat versions.
 * Not in the ASan build: libasan defines them unversioned, and the link then
 * leaves empty PLT relocations that the loader refuses; the plain and
 * fortified builds call them. */
int old_xstat(int, const char *, struct stat *);
int old_lxstat(int, const char *, struct stat *);
int old_xstat64(int, const char *, struct stat64 *);
int old_lxstat64(int, const char *, struct stat64 *);
int old_fxstatat(int, int, const char *, struct stat *, int);
int old_fxstatat64(int, int, const char *, struct stat64 *, int);
__asm__(".symver old_xstat,__xstat@GLIBC_2.2.5");
__asm__(".symver old_lxstat,__lxstat@GLIBC_2.2.5");
__asm__(".symver old_xstat64,__xstat64@GLIBC_2.2.5");
__asm__(".symver old_lxstat64,__lxstat64@GLIBC_2.2.5");
__asm__(".symver old_fxstatat,__fxstatat@GLIBC_2.4");
__asm__(".symver old_fxstatat64,__fxstatat64@GLIBC_2.4");
#define HAVE_OLD_XSTAT 1
#endif

static int failures;
static const char *root;

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "FAIL %s:%d: %s (errno %d %s)\n", __FILE__, __LINE__, #cond, \
			errno, strerror(errno)); \
		failures++; \
	} \
} while (0)
/* CALL fails with errno E. */
#define CHECK_ERR(call, e) do { \
	errno = 0; \
	int ok_ = (call); \
	CHECK(ok_ && errno == (e)); \
} while (0)

#define STATE "/sys/class/infiniband/softib0/ports/1/state"
#define UVERBS "/dev/infiniband/uverbs0"

/* ---- the tree (parent side) ---- */

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = 0;
		mkdir(p, 0755);
		*s = '/';
	}
	if (text != NULL) {
		FILE *f = fopen(p, "w");
		if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
			perror(p);
			exit(2);
		}
	}
}

static void link_at(const char *target, const char *rel)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (symlink(target, p) != 0) {
		perror(p);
		exit(2);
	}
}

static void make_tree(void)
{
	put("sys/class/infiniband/softib0/node_type", "1: CA\n");
	put(STATE + 1, "4: ACTIVE\n");
	put("sys/class/infiniband/softib0/ports/1/lid", "0x1\n");
	put("sys/class/infiniband_verbs/uverbs0/ibdev", "softib0\n");
	put("sys/class/infiniband_mad/abi_version", "5\n");
	put("sys/class/infiniband_ucma/abi_version", "4\n");
	put("sys/class/misc/rdma_cm/abi_version", "4\n");
	put("sys/class/infinibandfoo/x", "not in the view\n");
	put("sys/devices/softib0/vendor", "0x0000\n");
	put("dev/infiniband/", NULL);
	link_at("../../../devices/softib0", "sys/class/infiniband/softib0/device");
	link_at("/dev/null", UVERBS + 1);
	link_at("/dev/null", "dev/infiniband/rdma_cm");
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

/* LD_PRELOAD for the child: the ASan runtime first when this program has it
 * (it must come first), then the interposer. */
static void set_preload(const char *lib)
{
	char line[PATH_MAX + 256], val[2 * PATH_MAX + 2] = "";
	FILE *m = fopen("/proc/self/maps", "r");
	while (m != NULL && fgets(line, sizeof(line), m) != NULL) {
		char *p = strchr(line, '/');
		if (p != NULL && strstr(p, "/libasan.so") != NULL) {
			p[strcspn(p, "\n")] = 0;
			snprintf(val, sizeof(val), "%s:", p);
			setenv("ASAN_OPTIONS", "detect_leaks=0", 0);
			break;
		}
	}
	if (m != NULL)
		fclose(m);
	char abs[PATH_MAX]; /* the children chdir: an absolute path */
	strncat(val, realpath(lib, abs) != NULL ? abs : lib, sizeof(val) - strlen(val) - 1);
	setenv("LD_PRELOAD", val, 1);
}

static int run_child(char **argv, const char *mode)
{
	pid_t pid = fork();
	if (pid == 0) {
		char *args[] = { argv[0], (char *)mode, (char *)root, NULL };
		execv("/proc/self/exe", args);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "test_preload: %s run failed (status %#x)\n", mode, st);
		return 1;
	}
	return 0;
}

/* ---- the checks (child side, interposer loaded) ---- */

/* The first bytes of the file FD as a string (closes FD). */
static const char *fd_text(int fd)
{
	static __thread char buf[256];
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	return buf;
}

static int is_state(int fd)
{
	return strcmp(fd_text(fd), "4: ACTIVE\n") == 0;
}

/* The real inode of PATH, by the system call the interposer cannot see. */
static ino_t raw_ino(const char *path)
{
	struct stat st;
	if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) != 0)
		return 0;
	return st.st_ino;
}

static void check_open(void)
{
	volatile int rd = O_RDONLY; /* not a constant: the fortified build calls __open_2 */
	mode_t m = 0644;
	char p[PATH_MAX];

	CHECK(is_state(open(STATE, O_RDONLY)));
	CHECK(is_state(open(STATE, rd)));
	CHECK(is_state(open64(STATE, O_RDONLY)));
	CHECK(is_state(openat(AT_FDCWD, STATE, O_RDONLY)));
	CHECK(is_state(openat64(AT_FDCWD, STATE, rd)));
	CHECK(is_state(__open_2(STATE, O_RDONLY)));
	CHECK(is_state(__open64_2(STATE, O_RDONLY)));
	CHECK(is_state(__openat_2(AT_FDCWD, STATE, O_RDONLY)));
	CHECK(is_state(__openat64_2(AT_FDCWD, STATE, O_RDONLY)));
	/* a symlink to /dev/null in the tree: a character device, read-write (UCX) */
	int fd = open(UVERBS, O_RDWR);
	CHECK(fd >= 0);
	close(fd);
	/* sysfs makes no files: creat is refused, the tree unchanged */
	CHECK_ERR(creat("/sys/class/infiniband/softib0/made", m) < 0, EACCES);
	snprintf(p, sizeof(p), "%s/sys/class/infiniband/softib0/made", root);
	CHECK(raw_ino(p) == 0);
	CHECK_ERR(creat64("/sys/class/infiniband/softib0/made64", m) < 0, EACCES);
	snprintf(p, sizeof(p), "%s/sys/class/infiniband/softib0/made64", root);
	CHECK(raw_ino(p) == 0);
	CHECK_ERR(open("/sys/class/infiniband/nosuch", O_RDONLY) < 0, ENOENT);
	CHECK_ERR(open("/dev/infiniband/nosuch", rd) < 0, ENOENT);
	CHECK_ERR(__open_2("/sys/class/infiniband/softib0/nosuch", O_RDONLY) < 0, ENOENT);
	CHECK_ERR(openat(AT_FDCWD, "/sys/class/infiniband_mad/nosuch", O_RDONLY) < 0, ENOENT);
	/* a whole component only: infinibandfoo is not in the view */
	CHECK_ERR(open("/sys/class/infinibandfoo/x", O_RDONLY) < 0, ENOENT);
	fd = open("/proc/self/status", O_RDONLY);
	CHECK(strncmp(fd_text(fd), "Name:", 5) == 0);
	CHECK(strcmp(fd_text(open("/sys/class/infiniband_verbs/uverbs0/ibdev", O_RDONLY)), "softib0\n") == 0);
	CHECK(strcmp(fd_text(open("/sys/class/misc/rdma_cm/abi_version", O_RDONLY)), "4\n") == 0);
	CHECK(strcmp(fd_text(open("/sys/class/infiniband_ucma/abi_version", O_RDONLY)), "4\n") == 0);
	/* spellings */
	CHECK(is_state(open("//sys///class/./infiniband/softib0/ports/1/state", O_RDONLY)));
	CHECK(is_state(open("/sys/class/../class/infiniband/softib0/ports/1/state", O_RDONLY)));
	CHECK(is_state(open("/./dev/../sys/class/infiniband/softib0/ports/../ports/1/state", O_RDONLY)));
	/* a first component that is no step towards the view, then ".." */
	CHECK(is_state(open("/net/../sys/class/infiniband/softib0/ports/1/state", O_RDONLY)));
	CHECK(access("/usr/../dev/infiniband/uverbs0", R_OK | W_OK) == 0);
	/* too long once under ROOT: the kernel's answer for a path over PATH_MAX */
	memset(p, 'a', sizeof(p));
	memcpy(p, "/dev/infiniband/", 16);
	p[PATH_MAX - 8] = 0;
	CHECK_ERR(open(p, O_RDONLY) < 0, ENAMETOOLONG);
}

#define FREE_LIST(l, n) do { \
	for (int i_ = 0; i_ < (n); i_++) \
		free((l)[i_]); \
	if ((n) >= 0) \
		free(l); \
} while (0)

static void check_streams(void)
{
	char line[64];
	FILE *f = fopen(STATE, "r");
	CHECK(f != NULL && fgets(line, sizeof(line), f) != NULL && strcmp(line, "4: ACTIVE\n") == 0);
	if (f != NULL)
		fclose(f);
	f = fopen64("/sys/class/infiniband/softib0/node_type", "re");
	CHECK(f != NULL && fgets(line, sizeof(line), f) != NULL && strcmp(line, "1: CA\n") == 0);
	if (f != NULL)
		fclose(f);
	CHECK_ERR(fopen("/sys/class/infiniband/softib0/made", "w+") == NULL, EACCES);
	CHECK_ERR(fopen(STATE, "a") == NULL, EACCES);
	CHECK_ERR(fopen64(STATE, "r+") == NULL, EACCES);
	CHECK_ERR(fopen("/sys/class/infiniband/nosuch", "r") == NULL, ENOENT);
	CHECK_ERR(fopen(STATE, "z") == NULL, EINVAL);
	f = fopen("/proc/self/status", "r");
	CHECK(f != NULL);
	if (f != NULL)
		fclose(f);

	DIR *d = opendir("/sys/class/infiniband");
	int seen = 0;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL)
		seen += strcmp(e->d_name, "softib0") == 0;
	CHECK(d != NULL && seen == 1);
	if (d != NULL)
		closedir(d);
	CHECK_ERR(opendir("/sys/class/infiniband/nosuch") == NULL, ENOENT);
	CHECK_ERR(opendir(STATE) == NULL, ENOTDIR);

	struct dirent **list;
	int n = scandir("/sys/class/infiniband/softib0/ports/1", &list, NULL, alphasort);
	CHECK(n == 4 && strcmp(list[2]->d_name, "lid") == 0 && strcmp(list[3]->d_name, "state") == 0);
	FREE_LIST(list, n);
	struct dirent64 **list64;
	n = scandir64("/dev/infiniband", &list64, NULL, alphasort64);
	CHECK(n == 4 && strcmp(list64[2]->d_name, "rdma_cm") == 0 && strcmp(list64[3]->d_name, "uverbs0") == 0);
	FREE_LIST(list64, n);
	n = scandirat(AT_FDCWD, "/sys/class/infiniband", &list, NULL, NULL);
	CHECK(n == 3);
	FREE_LIST(list, n);
	n = scandirat64(AT_FDCWD, "/sys/class/misc/rdma_cm", &list64, NULL, alphasort64);
	CHECK(n == 3 && strcmp(list64[2]->d_name, "abi_version") == 0);
	FREE_LIST(list64, n);
	CHECK_ERR(scandir("/sys/class/infiniband/nosuch", &list, NULL, alphasort) < 0, ENOENT);
}

static void check_stat(void)
{
	struct stat st;
	struct stat64 st64;
	struct statx sx;

	CHECK(stat(UVERBS, &st) == 0 && S_ISCHR(st.st_mode));
	CHECK(stat64(UVERBS, &st64) == 0 && S_ISCHR(st64.st_mode));
	/* a device node of the view: lstat says so too (its link to /dev/null
	 * in the tree is not shown), as on a host */
	CHECK(lstat(UVERBS, &st) == 0 && S_ISCHR(st.st_mode) && st.st_ino == raw_ino("/dev/null"));
	CHECK(lstat64(UVERBS, &st64) == 0 && S_ISCHR(st64.st_mode));
	CHECK(fstatat(AT_FDCWD, UVERBS, &st, 0) == 0 && S_ISCHR(st.st_mode));
	CHECK(fstatat(AT_FDCWD, UVERBS, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode));
	CHECK(statx(AT_FDCWD, UVERBS, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) == 0 && S_ISCHR(sx.stx_mode));
	CHECK(lstat("/dev/infiniband/rdma_cm", &st) == 0 && S_ISCHR(st.st_mode));
	/* a link of the view that is no device node stays a link */
	CHECK(lstat("/sys/class/infiniband/softib0/device", &st) == 0 && S_ISLNK(st.st_mode));
	CHECK(fstatat64(AT_FDCWD, "/sys/class/infiniband/softib0", &st64, 0) == 0 && S_ISDIR(st64.st_mode));
	CHECK(statx(AT_FDCWD, UVERBS, 0, STATX_TYPE, &sx) == 0 && S_ISCHR(sx.stx_mode));
	CHECK(stat(STATE, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 10);
	CHECK_ERR(stat("/sys/class/infiniband/nosuch", &st) != 0, ENOENT);
	CHECK_ERR(lstat("/dev/infiniband/nosuch", &st) != 0, ENOENT);
	CHECK_ERR(statx(AT_FDCWD, "/sys/class/infiniband_verbs/nosuch", 0, STATX_TYPE, &sx) != 0, ENOENT);
	CHECK_ERR(stat("/sys/class/infinibandfoo", &st) != 0, ENOENT);
	/* outside the view: the system's own */
	CHECK(stat("/sys/class", &st) == 0 && st.st_ino == raw_ino("/sys/class"));
	CHECK(stat("/dev/null", &st) == 0 && st.st_ino == raw_ino("/dev/null"));
#ifdef HAVE_OLD_XSTAT
	/* the library built the statx way (SIB_PRELOAD_NO_XSTAT) defines none of them */
	if (getenv("SIB_PRELOAD_NO_XSTAT") == NULL) {
		CHECK(old_xstat(1, UVERBS, &st) == 0 && S_ISCHR(st.st_mode));
		CHECK(old_lxstat(1, UVERBS, &st) == 0 && S_ISCHR(st.st_mode));
		CHECK(old_xstat64(1, UVERBS, &st64) == 0 && S_ISCHR(st64.st_mode));
		CHECK(old_lxstat64(1, UVERBS, &st64) == 0 && S_ISCHR(st64.st_mode));
		CHECK(old_fxstatat(1, AT_FDCWD, UVERBS, &st, 0) == 0 && S_ISCHR(st.st_mode));
		CHECK(old_fxstatat64(1, AT_FDCWD, UVERBS, &st64, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st64.st_mode));
		CHECK_ERR(old_xstat(1, "/dev/infiniband/nosuch", &st) != 0, ENOENT);
	}
#endif

	CHECK(access(UVERBS, R_OK | W_OK) == 0);
	CHECK(access(STATE, R_OK) == 0);
	CHECK(faccessat(AT_FDCWD, UVERBS, R_OK | W_OK, AT_EACCESS) == 0);
	CHECK(faccessat(AT_FDCWD, STATE, F_OK, 0) == 0);
	CHECK(eaccess("/sys/class/infiniband", R_OK | X_OK) == 0);
	CHECK(euidaccess("/sys/class/infiniband_mad/abi_version", R_OK) == 0);
	CHECK_ERR(access("/sys/class/infiniband/nosuch", F_OK) != 0, ENOENT);
	CHECK_ERR(faccessat(AT_FDCWD, "/dev/infiniband/nosuch", F_OK, AT_EACCESS) != 0, ENOENT);
	CHECK_ERR(eaccess("/sys/class/misc/rdma_cm/nosuch", F_OK) != 0, ENOENT);
	CHECK_ERR(euidaccess("/sys/class/infiniband/nosuch", F_OK) != 0, ENOENT);
}

static void check_paths(void)
{
	char buf[PATH_MAX], small[4], exp[PATH_MAX + 64];
	ssize_t n;

	/* a device node is no link (EINVAL), as on a host */
	CHECK_ERR(readlink(UVERBS, buf, sizeof(buf)) < 0, EINVAL); /* __readlink_chk when fortified */
	CHECK_ERR(readlinkat(AT_FDCWD, UVERBS, buf, sizeof(buf)) < 0, EINVAL);
	CHECK_ERR(__readlink_chk(UVERBS, buf, sizeof(buf), sizeof(buf)) < 0, EINVAL);
	CHECK_ERR(__readlinkat_chk(AT_FDCWD, UVERBS, buf, sizeof(buf), sizeof(buf)) < 0, EINVAL);
	CHECK_ERR(readlink(UVERBS, small, sizeof(small)) < 0, EINVAL);
	n = readlink("/sys/class/infiniband/softib0/device", small, sizeof(small));
	CHECK(n == 4 && memcmp(small, "../.", 4) == 0);
	n = readlink("/sys/class/infiniband/softib0/device", buf, sizeof(buf));
	CHECK(n == 24 && memcmp(buf, "../../../devices/softib0", 24) == 0);
	CHECK_ERR(readlink("/dev/infiniband/nosuch", buf, sizeof(buf)) < 0, ENOENT);
	CHECK_ERR(readlink(STATE, buf, sizeof(buf)) < 0, EINVAL);

	CHECK(realpath("/sys/class/infiniband/softib0/ports/../ports/1/state", buf) != NULL
		&& strcmp(buf, STATE) == 0);
	CHECK(__realpath_chk("//sys/class/infiniband/./softib0", buf, sizeof(buf)) != NULL
		&& strcmp(buf, "/sys/class/infiniband/softib0") == 0);
	CHECK(realpath(UVERBS, buf) != NULL && strcmp(buf, UVERBS) == 0);
	char *r = canonicalize_file_name("/sys/class/infiniband/softib0/ports/1");
	CHECK(r != NULL && strcmp(r, "/sys/class/infiniband/softib0/ports/1") == 0);
	free(r);
	/* a link out of the mapped paths stays under ROOT, where it really is */
	char rootc[PATH_MAX];
	CHECK(realpath(root, rootc) != NULL);
	snprintf(exp, sizeof(exp), "%s/sys/devices/softib0", rootc);
	r = realpath("/sys/class/infiniband/softib0/device", NULL);
	CHECK(r != NULL && strcmp(r, exp) == 0);
	free(r);
	CHECK_ERR(realpath("/sys/class/infiniband/nosuch", buf) == NULL, ENOENT);
	CHECK_ERR(realpath(STATE "/", buf) == NULL, ENOTDIR);
	CHECK(realpath("/proc/self/..", buf) != NULL && strcmp(buf, "/proc") == 0);
	CHECK(realpath("/", buf) != NULL && strcmp(buf, "/") == 0);
}

static void check_cwd(void)
{
	char buf[PATH_MAX], tiny[8];
	struct stat st;

	CHECK(chdir("/sys/class/infiniband") == 0);
	CHECK(getcwd(buf, sizeof(buf)) != NULL && strcmp(buf, "/sys/class/infiniband") == 0);
	CHECK(__getcwd_chk(buf, sizeof(buf), sizeof(buf)) != NULL && strcmp(buf, "/sys/class/infiniband") == 0);
	char *c = getcwd(NULL, 0);
	CHECK(c != NULL && strcmp(c, "/sys/class/infiniband") == 0);
	free(c);
	setenv("PWD", "/sys/class/infiniband", 1);
	c = get_current_dir_name();
	CHECK(c != NULL && strcmp(c, "/sys/class/infiniband") == 0);
	free(c);
	CHECK_ERR(getcwd(tiny, sizeof(tiny)) == NULL, ERANGE);
	CHECK(is_state(open("softib0/ports/1/state", O_RDONLY)));
	CHECK(is_state(open("./softib0/ports/1/state", O_RDONLY)));
	CHECK(is_state(open("../infiniband/softib0/ports/1/state", O_RDONLY)));
	CHECK(stat("softib0", &st) == 0 && S_ISDIR(st.st_mode));
	CHECK(stat("../../../dev/infiniband/uverbs0", &st) == 0 && S_ISCHR(st.st_mode));
	/* out of the view through "..": the system's /sys/class */
	CHECK(stat("..", &st) == 0 && st.st_ino == raw_ino("/sys/class"));
	CHECK(stat("../../class", &st) == 0 && st.st_ino == raw_ino("/sys/class"));
	DIR *d = opendir(".");
	CHECK(d != NULL);
	if (d != NULL)
		closedir(d);
	CHECK(realpath("softib0/ports/1", buf) != NULL && strcmp(buf, "/sys/class/infiniband/softib0/ports/1") == 0);
	CHECK(chdir("softib0/ports") == 0);
	CHECK(getcwd(buf, sizeof(buf)) != NULL && strcmp(buf, "/sys/class/infiniband/softib0/ports") == 0);
	CHECK_ERR(chdir("/sys/class/infiniband/nosuch") != 0, ENOENT);

	/* from outside, into the view */
	CHECK(chdir("/sys") == 0);
	CHECK(getcwd(buf, sizeof(buf)) != NULL && strcmp(buf, "/sys") == 0);
	CHECK(is_state(open("class/infiniband/softib0/ports/1/state", O_RDONLY)));
	CHECK(access("class/misc/rdma_cm/abi_version", R_OK) == 0);
	CHECK(stat("class", &st) == 0 && st.st_ino == raw_ino("/sys/class"));
	CHECK(chdir("/") == 0);
	CHECK(is_state(open("sys/class/infiniband/softib0/ports/1/state", O_RDONLY)));
	CHECK(stat("./dev/infiniband/uverbs0", &st) == 0 && S_ISCHR(st.st_mode));
	CHECK(chdir("/dev") == 0);
	CHECK(stat("infiniband/uverbs0", &st) == 0 && S_ISCHR(st.st_mode));
	CHECK(stat("null", &st) == 0 && st.st_ino == raw_ino("/dev/null"));

	/* a directory fd outside the view, a path into it */
	int dfd = open("/sys/class", O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0);
	CHECK(is_state(openat(dfd, "infiniband/softib0/ports/1/state", O_RDONLY)));
	CHECK(fstatat(dfd, "infiniband", &st, 0) == 0 && S_ISDIR(st.st_mode) && st.st_ino != raw_ino("/sys/class/infiniband"));
	CHECK(faccessat(dfd, "misc/rdma_cm/abi_version", R_OK, 0) == 0);
	close(dfd);
	/* and one inside it, stepping out */
	dfd = open("/sys/class/infiniband", O_RDONLY | O_DIRECTORY);
	CHECK(fstatat(dfd, "..", &st, 0) == 0 && st.st_ino == raw_ino("/sys/class"));
	CHECK(is_state(openat(dfd, "softib0/ports/1/state", O_RDONLY)));
	close(dfd);
}

/* ".." out of a directory of the view: the system's parent, as on a host;
 * ".." after a name the view does not have: the kernel's ENOENT/ENOTDIR
 * (issue 17 review: "ls -la /dev/infiniband/" could not access "..") */
static void check_dotdot(void)
{
	struct stat st;
	char buf[PATH_MAX];

	CHECK(stat("/dev/infiniband/..", &st) == 0 && st.st_ino == raw_ino("/dev"));
	CHECK(stat("/dev/infiniband/../", &st) == 0 && st.st_ino == raw_ino("/dev"));
	CHECK(lstat("/sys/class/infiniband/..", &st) == 0 && st.st_ino == raw_ino("/sys/class"));
	CHECK(stat("/dev/infiniband/../null", &st) == 0 && st.st_ino == raw_ino("/dev/null"));
	CHECK(access("/sys/class/misc/rdma_cm/../..", F_OK) == 0);
	CHECK(is_state(open("/dev/infiniband/../../sys/class/infiniband/softib0/ports/1/state", O_RDONLY)));
	CHECK(is_state(open("/sys/class/infiniband/softib0/ports/../../../infiniband/softib0/ports/1/state", O_RDONLY)));
	CHECK_ERR(stat("/dev/infiniband/nosuch/..", &st) != 0, ENOENT);
	CHECK_ERR(stat("/dev/infiniband/nosuch/../uverbs0", &st) != 0, ENOENT);
	CHECK_ERR(stat("/dev/infiniband/x/../x/../uverbs0", &st) != 0, ENOENT);
	CHECK_ERR(open("/sys/class/infiniband/softib0/nosuch/../node_type", O_RDONLY) < 0, ENOENT);
	CHECK_ERR(stat(STATE "/..", &st) != 0, ENOTDIR);
	CHECK_ERR(access("/dev/infiniband/uverbs0/..", F_OK) != 0, ENOTDIR);
	DIR *d = opendir("/dev/infiniband/..");
	int seen = 0;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL)
		seen += strcmp(e->d_name, "null") == 0;
	CHECK(d != NULL && seen == 1);
	if (d != NULL)
		closedir(d);
	CHECK(realpath("/dev/infiniband/../null", buf) != NULL && strcmp(buf, "/dev/null") == 0);
	CHECK_ERR(realpath("/dev/infiniband/nosuch/..", buf) == NULL, ENOENT);
	/* relative, from inside the view */
	CHECK(chdir("/dev/infiniband") == 0);
	CHECK(stat("..", &st) == 0 && st.st_ino == raw_ino("/dev"));
	CHECK(stat("../null", &st) == 0 && st.st_ino == raw_ino("/dev/null"));
	CHECK_ERR(stat("nosuch/..", &st) != 0, ENOENT);
	CHECK_ERR(stat("uverbs0/../uverbs0", &st) != 0, ENOTDIR);
	CHECK(chdir("/") == 0);
}

/* A NULL path: EFAULT, as the kernel answers (view on or off). */
static void check_null(void)
{
#ifndef __SANITIZE_ADDRESS__ /* ASan's interceptors (readlink...) read the path first: the plain and fortified builds check */
	/* through pointers: the declarations' nonnull would have UBSan stop the
	 * call the test makes on purpose */
	int (*volatile op)(const char *, int, ...) = open;
	int (*volatile opat)(int, const char *, int, ...) = openat;
	int (*volatile st_)(const char *, struct stat *) = stat;
	int (*volatile lst)(const char *, struct stat *) = lstat;
	int (*volatile acc)(const char *, int) = access;
	ssize_t (*volatile rl)(const char *, char *, size_t) = readlink;
	int (*volatile cd)(const char *) = chdir;
	int (*volatile md)(const char *, mode_t) = mkdir;
	int (*volatile ul)(const char *) = unlink;
	struct stat st;
	char buf[16];
	CHECK_ERR(op(NULL, O_RDONLY) < 0, EFAULT);
	CHECK_ERR(opat(AT_FDCWD, NULL, O_RDONLY) < 0, EFAULT);
	CHECK_ERR(st_(NULL, &st) != 0, EFAULT);
	CHECK_ERR(lst(NULL, &st) != 0, EFAULT);
	CHECK_ERR(acc(NULL, F_OK) != 0, EFAULT);
	CHECK_ERR(rl(NULL, buf, sizeof(buf)) < 0, EFAULT);
	CHECK_ERR(cd(NULL) != 0, EFAULT);
	CHECK_ERR(md(NULL, 0755) != 0, EFAULT);
	CHECK_ERR(ul(NULL) != 0, EFAULT);
#endif
}

/* Nothing writes the view: opens for writing or creating, mkdir, unlink,
 * rmdir and rename fail as on sysfs, and the tree stays as it was. */
static void check_writes(void)
{
	int no = geteuid() == 0 ? EPERM : EACCES; /* sysfs: no such operation for root */
	char p[PATH_MAX];
	volatile int wr = O_WRONLY;

	CHECK_ERR(open(STATE, O_WRONLY) < 0, EACCES);
	CHECK_ERR(open(STATE, wr) < 0, EACCES); /* __open_2 when fortified */
	CHECK_ERR(open(STATE, O_RDWR) < 0, EACCES);
	CHECK_ERR(open(STATE, O_RDONLY | O_TRUNC) < 0, EACCES);
	CHECK_ERR(openat(AT_FDCWD, STATE, O_WRONLY | O_CREAT, 0644) < 0, EACCES);
	CHECK_ERR(open(STATE, O_WRONLY | O_CREAT | O_EXCL, 0644) < 0, EEXIST);
	CHECK_ERR(open("/sys/class/infiniband/softib0", O_WRONLY) < 0, EISDIR);
	CHECK_ERR(open("/sys/class/infiniband/new", O_WRONLY | O_CREAT, 0644) < 0, EACCES);
	CHECK_ERR(open("/sys/class/infiniband/nodir/new", O_WRONLY | O_CREAT, 0644) < 0, ENOENT);
	CHECK_ERR(open("/sys/class/infiniband", O_TMPFILE | O_WRONLY, 0600) < 0, EOPNOTSUPP);
	CHECK_ERR(creat("/dev/infiniband/new", 0644) < 0, EACCES);
	CHECK(is_state(open(STATE, O_RDONLY | O_CREAT, 0644))); /* what exists opens read-only */
	int fd = open(UVERBS, O_RDWR | O_TRUNC); /* the device opens read-write */
	CHECK(fd >= 0 && write(fd, "x", 1) == 1);
	if (fd >= 0)
		close(fd);
	CHECK_ERR(mkdir("/sys/class/infiniband/newdir", 0755) != 0, no);
	CHECK_ERR(mkdirat(AT_FDCWD, "/dev/infiniband/newdir", 0755) != 0, no);
	CHECK_ERR(mkdir("/sys/class/infiniband/softib0", 0755) != 0, EEXIST);
	CHECK_ERR(mkdir("/sys/class/infiniband/nodir/x", 0755) != 0, ENOENT);
	CHECK_ERR(unlink(STATE) != 0, no);
	CHECK_ERR(unlink(UVERBS) != 0, no);
	CHECK_ERR(unlinkat(AT_FDCWD, "/sys/class/infiniband/softib0/device", 0) != 0, no);
	CHECK_ERR(unlink("/sys/class/infiniband/nosuch") != 0, ENOENT);
	CHECK_ERR(unlink("/sys/class/infiniband/softib0") != 0, EISDIR);
	CHECK_ERR(rmdir("/sys/class/infiniband/softib0/ports/1") != 0, no);
	CHECK_ERR(unlinkat(AT_FDCWD, "/dev/infiniband", AT_REMOVEDIR) != 0, no);
	CHECK_ERR(rmdir(STATE) != 0, ENOTDIR);
	CHECK_ERR(rename(STATE, "/sys/class/infiniband/softib0/ports/1/x") != 0, no);
	CHECK_ERR(renameat(AT_FDCWD, UVERBS, AT_FDCWD, "/dev/infiniband/uverbs9") != 0, no);
	CHECK_ERR(rename("/sys/class/infiniband/nosuch", "/sys/class/infiniband/x") != 0, ENOENT);
	CHECK_ERR(rename(STATE, "/tmp/sib_preload_never") != 0, EXDEV);
	CHECK_ERR(rename("/proc/self/status", "/dev/infiniband/x") != 0, EXDEV);
	CHECK(chdir("/sys/class/infiniband/softib0") == 0);
	CHECK_ERR(unlink("node_type") != 0, no); /* relative, in the view */
	CHECK_ERR(mkdir("ports/2", 0755) != 0, no);
	CHECK(chdir("/") == 0);
	snprintf(p, sizeof(p), "%s/" STATE, root);
	CHECK(raw_ino(p) != 0);
	snprintf(p, sizeof(p), "%s/" UVERBS, root);
	char l[16];
	CHECK(syscall(SYS_readlinkat, AT_FDCWD, p, l, sizeof(l)) == 9);
	snprintf(p, sizeof(p), "%s/sys/class/infiniband/newdir", root);
	CHECK(raw_ino(p) == 0);
	/* the tree's writer (src/sysview: relative to ROOT's fd) is not refused */
	int rfd = open(root, O_RDONLY | O_DIRECTORY);
	CHECK(rfd >= 0 && mkdirat(rfd, "sys/class/infiniband/w", 0755) == 0);
	fd = openat(rfd, "sys/class/infiniband/w/.f", O_WRONLY | O_CREAT | O_EXCL, 0444);
	CHECK(fd >= 0 && write(fd, "1\n", 2) == 2);
	if (fd >= 0)
		close(fd);
	CHECK(renameat(rfd, "sys/class/infiniband/w/.f", rfd, "sys/class/infiniband/w/f") == 0);
	CHECK(strcmp(fd_text(open("/sys/class/infiniband/w/f", O_RDONLY)), "1\n") == 0);
	CHECK(unlinkat(rfd, "sys/class/infiniband/w/f", 0) == 0);
	CHECK(unlinkat(rfd, "sys/class/infiniband/w", AT_REMOVEDIR) == 0);
	close(rfd);
	/* outside the view they work */
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s.dir", root);
	CHECK(mkdir(tmp, 0755) == 0 && rmdir(tmp) == 0);
}

/* The device nodes from a directory fd or the cwd inside /dev/infiniband
 * (find's and ls's way): character devices, not links. */
static void check_devnode_rel(void)
{
	struct stat st;
	struct statx sx;
	char buf[64];
	int dfd = open("/dev/infiniband", O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0);
	CHECK(fstatat(dfd, "uverbs0", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode));
	CHECK(statx(dfd, "rdma_cm", AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) == 0 && S_ISCHR(sx.stx_mode));
	CHECK_ERR(readlinkat(dfd, "uverbs0", buf, sizeof(buf)) < 0, EINVAL);
	close(dfd);
	CHECK(chdir("/dev/infiniband") == 0);
	CHECK(lstat("uverbs0", &st) == 0 && S_ISCHR(st.st_mode));
	CHECK(lstat("./uverbs0", &st) == 0 && S_ISCHR(st.st_mode));
	CHECK_ERR(readlink("uverbs0", buf, sizeof(buf)) < 0, EINVAL);
	CHECK(chdir("/sys/class/infiniband/softib0") == 0);
	CHECK(lstat("device", &st) == 0 && S_ISLNK(st.st_mode));
	CHECK(readlink("device", buf, sizeof(buf)) == 24);
	CHECK(chdir("/") == 0);
}

/* Every wrapper from a thread with a 16 KiB stack (glibc's PTHREAD_STACK_MIN
 * on x86_64): one PATH_MAX buffer per call at most (issue 17 review: realpath
 * kept four and crashed such a thread, view on or off).  In a child, so that
 * a crash is a failure with a name. */
static void *small_main(void *arg)
{
	char buf[256], *r;
	struct stat st;
	struct stat64 st64;
	struct statx sx;
	struct dirent **list;
	long bad = 0;
	int fd;

	bad += (r = realpath("/usr/bin/../lib", NULL)) == NULL;
	free(r);
	bad += (r = realpath(STATE, NULL)) == NULL && arg != NULL;
	free(r);
	bad += (r = canonicalize_file_name("/dev/infiniband/../null")) == NULL && arg != NULL;
	free(r);
	fd = open(STATE, O_RDONLY);
	bad += fd < 0 && arg != NULL;
	if (fd >= 0)
		close(fd);
	fd = openat(AT_FDCWD, "/dev/infiniband/../null", O_RDONLY);
	bad += fd < 0 && arg != NULL;
	if (fd >= 0)
		close(fd);
	FILE *f = fopen("/proc/self/status", "r");
	bad += f == NULL;
	if (f != NULL)
		fclose(f);
	f = fopen64(STATE, "r");
	if (f != NULL)
		fclose(f);
	DIR *d = opendir("/sys/class/infiniband");
	if (d != NULL)
		closedir(d);
	int n = scandir("/dev/infiniband", &list, NULL, alphasort);
	while (n > 0)
		free(list[--n]);
	if (n == 0)
		free(list);
	bad += stat("/dev/infiniband/../null", &st) != 0 && arg != NULL;
	bad += lstat64(UVERBS, &st64) != 0 && arg != NULL;
	bad += fstatat(AT_FDCWD, "/sys/class/infiniband/..", &st, 0) != 0 && arg != NULL;
	bad += statx(AT_FDCWD, "/dev/infiniband/..", 0, STATX_TYPE, &sx) != 0 && arg != NULL;
	bad += access("/sys/class/infiniband/..", F_OK) != 0 && arg != NULL;
	bad += faccessat(AT_FDCWD, "/dev/infiniband/../null", R_OK, AT_EACCESS) != 0 && arg != NULL;
	bad += readlink(UVERBS, buf, sizeof(buf)) < -1;
	bad += readlinkat(AT_FDCWD, "/sys/class/infiniband/softib0/device", buf, sizeof(buf)) < -1;
	lgetxattr("/dev/infiniband/../null", "security.selinux", buf, sizeof(buf));
	mkdir("/sys/class/infiniband/x", 0755);
	unlink("/sys/class/infiniband/x");
	rmdir("/sys/class/infiniband/x");
	rename("/sys/class/infiniband/x", "/dev/infiniband/../../tmp/x");
	bad += chdir(arg != NULL ? "/dev/infiniband/.." : "/dev") != 0;
	bad += getcwd(buf, sizeof(buf)) == NULL;
	r = get_current_dir_name();
	bad += r == NULL;
	free(r);
	bad += chdir("/") != 0;
	return (void *)bad;
}

static void check_small_stack(int on)
{
	pid_t pid = fork();
	if (pid == 0) {
		pthread_attr_t at;
		pthread_t t;
		void *bad = (void *)1;
#ifdef __SANITIZE_ADDRESS__
		size_t sz = 65536; /* ASan's frames are larger; the plain builds check 16 KiB */
#else
		size_t sz = 16384;
#endif
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, sz);
		if (pthread_create(&t, &at, small_main, on ? (void *)1 : NULL) != 0)
			_exit(3);
		pthread_join(t, &bad);
		_exit(bad != NULL ? 4 : 0);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "FAIL small stack: status %#x (a signal: the stack overflowed)\n", st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A child made by fork and exec sees the view too (the environment). */
static void check_exec(void)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl("/bin/cat", "cat", STATE, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char buf[64];
	ssize_t n = 0, r;
	while ((r = read(p[0], buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	buf[n] = 0;
	close(p[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strcmp(buf, "4: ACTIVE\n") == 0);
}

static void *thread_main(void *arg)
{
	long bad = 0;
	struct stat st;
	for (int i = 0; i < 2000; i++) {
		bad += !is_state(open(STATE, O_RDONLY));
		bad += stat(UVERBS, &st) != 0 || !S_ISCHR(st.st_mode);
		bad += stat("/dev/null", &st) != 0;
	}
	return (void *)bad;
}

static void check_threads(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&t[i], NULL, thread_main, NULL) == 0);
	for (int i = 0; i < 4; i++) {
		void *bad = NULL;
		pthread_join(t[i], &bad);
		CHECK(bad == NULL);
	}
}

/* The mapped path PATH names or is below, as the library lists them. */
static int model_mapped(const char *norm)
{
	static const char *const mapped[] = { "/sys/class/infiniband", "/sys/class/infiniband_verbs",
		"/sys/class/infiniband_mad", "/sys/class/infiniband_ucma", "/sys/class/misc/rdma_cm",
		"/dev/infiniband" };
	for (size_t i = 0; i < sizeof(mapped) / sizeof(mapped[0]); i++) {
		size_t m = strlen(mapped[i]);
		if (strncmp(norm, mapped[i], m) == 0 && (norm[m] == 0 || norm[m] == '/'))
			return 1;
	}
	return 0;
}

/* The model of the rewrite of the absolute PATH: its components one by one;
 * a ".." applied inside the view needs ROOT/<position> to be a directory
 * (else that errno, returned); the lexical normal form under ROOT when it
 * names a mapped path; else, when a prefix of it was in the view, its normal
 * form (the system's path it leads to); else PATH itself.  Into OUT; 0 or
 * the errno the call must fail with. */
static int model(const char *path, char *out)
{
	char norm[PATH_MAX] = "/", chk[PATH_MAX + 64];
	size_t w = 0;
	int passed = 0;
	const char *p = path;
	while (*p) {
		size_t l = strcspn(p, "/");
		if (l == 2 && p[0] == '.' && p[1] == '.') {
			if (w > 0 && model_mapped(norm)) {
				passed = 1;
				struct stat st;
				snprintf(chk, sizeof(chk), "%s%s", root, norm);
				if (syscall(SYS_newfstatat, AT_FDCWD, chk, &st, 0) != 0)
					return errno;
				if (!S_ISDIR(st.st_mode))
					return ENOTDIR;
			}
			while (w > 0 && norm[--w] != '/')
				;
			norm[w] = 0;
		} else if (l > 0 && !(l == 1 && p[0] == '.')) {
			norm[w++] = '/';
			memcpy(norm + w, p, l);
			w += l;
			norm[w] = 0;
			passed |= model_mapped(norm);
		}
		p += l;
		p += *p == '/';
	}
	if (w == 0)
		strcpy(norm, "/");
	size_t len = strlen(path);
	int dir_end = w > 0 && len > 1 && (path[len - 1] == '/' || (path[len - 1] == '.' && path[len - 2] == '/')
		|| (len > 2 && strcmp(path + len - 3, "/..") == 0));
	if (model_mapped(norm))
		snprintf(out, PATH_MAX, "%s%s%s", root, norm, dir_end ? "/" : "");
	else if (passed)
		snprintf(out, PATH_MAX, "%s%s", norm, dir_end ? "/" : "");
	else
		snprintf(out, PATH_MAX, "%s", path);
	return 0;
}

/* Random spellings, absolute and relative to a random cwd (in the view,
 * towards it, away from it): stat through the interposer must answer what the
 * kernel answers for the model's path. */
static void check_random(void)
{
	static const char *const words[] = { "sys", "class", "infiniband", "softib0", "ports", "1",
		"state", "dev", "uverbs0", "misc", "rdma_cm", "infiniband_verbs", "infinibandfoo",
		".", "..", "", "net", "null", "devices", "device" };
	const char *env = getenv("SIB_PRELOAD_SEED");
	unsigned seed = env != NULL ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();
	printf("test_preload: random paths, SIB_PRELOAD_SEED=%u\n", seed);
	static const char *const cwds[] = { "/", "/sys", "/sys/class", "/sys/class/misc", "/dev",
		"/usr", "/sys/class/infiniband", "/sys/class/infiniband/softib0/ports", "/dev/infiniband",
		"/sys/class/misc/rdma_cm" };
	srand(seed);
	int bad = 0;
	for (int it = 0; it < 10000 && bad < 5; it++) {
		char path[512] = "", full[600], exp[PATH_MAX];
		const char *cwd = cwds[rand() % (sizeof(cwds) / sizeof(cwds[0]))];
		CHECK(chdir(cwd) == 0);
		int k = 1 + rand() % 8;
		for (int i = 0; i < k; i++) {
			strcat(path, "/");
			strcat(path, words[rand() % (sizeof(words) / sizeof(words[0]))]);
		}
		const char *q = rand() % 2 == 0 ? path + 1 : path; /* relative to cwd */
		if (*q == 0)
			continue;
		/* a relative q is cwd/q; whether cwd is in the view decides the rest */
		int rel = q[0] != '/';
		snprintf(full, sizeof(full), "%s/%s", cwd, q);
		int merr = model(rel ? full : q, exp);
		if (rel && strcmp(exp, full) == 0)
			snprintf(exp, sizeof(exp), "%s", q); /* left alone: relative to cwd */
		struct stat a, b;
		errno = 0;
		int ra = stat(q, &a), ea = errno;
		errno = merr;
		int rb = merr ? -1 : (int)syscall(SYS_newfstatat, AT_FDCWD, exp, &b, 0), eb = errno;
		/* the same from a directory fd of cwd (openat's way) */
		struct stat c;
		int dfd = open(cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
		errno = 0;
		int rc = fstatat(dfd, q, &c, 0), ec = errno;
		close(dfd);
		if (rc != ra || (rc == 0 && c.st_ino != a.st_ino) || (rc != 0 && ec != ea)) {
			fprintf(stderr, "FAIL random: in %s fstatat(fd, \"%s\") = %d/%d, stat = %d/%d (seed %u)\n",
				cwd, q, rc, ec, ra, ea, seed);
			bad++;
		}
		if (ra != rb || (ra == 0 && (a.st_ino != b.st_ino || a.st_dev != b.st_dev)) || (ra != 0 && ea != eb)) {
			fprintf(stderr, "FAIL random: in %s stat(\"%s\") = %d/%d, model %s = %d/%d (seed %u)\n",
				cwd, q, ra, ea, exp, rb, eb, seed);
			bad++;
		}
	}
	failures += bad;
}

/* With SOFTIB_VIEW unset, everything is the system's. */
static void check_off(void)
{
	struct stat st;
	CHECK(stat(UVERBS, &st) != 0 || st.st_ino == raw_ino(UVERBS));
	CHECK(stat(STATE, &st) != 0 || st.st_ino == raw_ino(STATE));
	CHECK(stat("/dev/null", &st) == 0 && st.st_ino == raw_ino("/dev/null"));
	CHECK(chdir("/sys") == 0);
	char buf[PATH_MAX];
	CHECK(getcwd(buf, sizeof(buf)) != NULL && strcmp(buf, "/sys") == 0);
	CHECK(realpath("/proc/self/..", buf) != NULL && strcmp(buf, "/proc") == 0);
	FILE *f = fopen("/proc/self/status", "r");
	CHECK(f != NULL);
	if (f != NULL)
		fclose(f);
	check_null();
	check_small_stack(0);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strncmp(argv[1], "--child", 7) == 0) {
		root = argv[2];
		setvbuf(stdout, NULL, _IONBF, 0);
		if (strcmp(argv[1], "--child-off") == 0) {
			check_off();
		} else {
			check_open();
			check_streams();
			check_stat();
			check_paths();
			check_cwd();
			check_exec();
			check_threads();
			check_dotdot();
			check_null();
			check_writes();
			check_devnode_rel();
			check_small_stack(1);
			check_random();
		}
		printf("test_preload %s: %d failure(s)\n", argv[1], failures);
		return failures != 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: test_preload LIBSOFTIB_VIEW.so\n");
		return 2;
	}
	const char *tmp = getenv("TMPDIR");
	char tree[PATH_MAX];
	snprintf(tree, sizeof(tree), "%s/sib_preload.XXXXXX", tmp != NULL ? tmp : "/tmp");
	if (mkdtemp(tree) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	root = tree;
	make_tree();
	set_preload(argv[1]);
	setenv("SOFTIB_VIEW", tree, 1);
	int rc = run_child(argv, "--child");
	/* ROOT through a symbolic link: getcwd and realpath answer the kernel's
	 * spelling of it, which must map back too */
	char link[PATH_MAX + 8];
	snprintf(link, sizeof(link), "%s.lnk", tree);
	if (symlink(tree, link) != 0) {
		perror(link);
		rc = 1;
	}
	setenv("SOFTIB_VIEW", link, 1);
	root = link;
	rc |= run_child(argv, "--child");
	unlink(link);
	root = tree;
	unsetenv("SOFTIB_VIEW");
	rc |= run_child(argv, "--child-off");
	setenv("SOFTIB_VIEW", "relative/not/a/view", 1);
	rc |= run_child(argv, "--child-off");
	unsetenv("LD_PRELOAD");
	nftw(tree, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	printf("test_preload: %s\n", rc ? "FAILED" : "ok");
	return rc;
}
