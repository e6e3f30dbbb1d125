// SPDX-License-Identifier: MIT
/*
 * `softib run`'s namespace path (docs/clients.md "softib run"): a private
 * mount namespace (and a user namespace when not root, and a network
 * namespace with --net) in which /dev and /sys/class are tmpfs copies of
 * the originals, every original entry bound or linked back, and the
 * system view's subtrees (src/sysview) bound over /dev/infiniband,
 * /sys/class/infiniband, infiniband_verbs, infiniband_mad,
 * infiniband_ucma and misc/rdma_cm.  The technique (tmpfs over /sys/class
 * and /dev, bind mounts of /dev/null as character devices) is the one
 * ../shared/research/clients.md measured; mount(2), unshare(2) and
 * user_namespaces(7) give the rules.  Nothing outside the namespace
 * changes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runcmd.h"

/* Write s to path (a /proc/self file): 0 or -errno. */
static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	err = n < 0 ? -errno : (size_t)n != strlen(s) ? -EIO : 0;
	close(fd);
	return err;
}

/*
 * Enter new namespaces: a mount namespace, a user namespace first when
 * not root (the caller's uid and gid mapped to themselves, so that programs
 * that refuse root, as mpirun does, see the same ids; setgroups denied as
 * user_namespaces(7) requires of an unprivileged writer of gid_map), and a
 * network namespace with net.  Fills why on failure.  0 or -errno.
 */
static int enter_ns(bool net, char *why, size_t len)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int flags = CLONE_NEWNS | (net ? CLONE_NEWNET : 0);
	char map[64];
	int err;

	if (uid != 0)
		flags |= CLONE_NEWUSER;
	if (unshare(flags)) {
		err = -errno;
		snprintf(why, len, "unshare(%s): %s",
			 uid ? "CLONE_NEWUSER|CLONE_NEWNS" : "CLONE_NEWNS", strerror(-err));
		return err;
	}
	if (uid != 0) {
		if ((err = write_file("/proc/self/setgroups", "deny")) && err != -ENOENT) {
			snprintf(why, len, "/proc/self/setgroups: %s", strerror(-err));
			return err;
		}
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		if ((err = write_file("/proc/self/uid_map", map))) {
			snprintf(why, len, "/proc/self/uid_map: %s", strerror(-err));
			return err;
		}
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		if ((err = write_file("/proc/self/gid_map", map))) {
			snprintf(why, len, "/proc/self/gid_map: %s", strerror(-err));
			return err;
		}
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		err = -errno;
		snprintf(why, len, "mount --make-rprivate /: %s", strerror(-err));
		return err;
	}
	return 0;
}

/* One original entry name of the directory open as fd, put back at
 * dst/name: a symlink as the same symlink, a directory bound (recursive),
 * anything else (device nodes, files) bound onto an empty file. */
static int put_back(int fd, const char *name, const char *dst)
{
	char from[64 + NAME_MAX], to[PATH_MAX], target[PATH_MAX];
	struct stat st;
	ssize_t n;
	int tfd;

	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if ((size_t)snprintf(to, sizeof(to), "%s/%s", dst, name) >= sizeof(to))
		return -ENAMETOOLONG;
	snprintf(from, sizeof(from), "/proc/self/fd/%d/%s", fd, name);
	if (S_ISLNK(st.st_mode)) {
		if ((n = readlinkat(fd, name, target, sizeof(target) - 1)) < 0)
			return -errno;
		target[n] = '\0';
		return symlink(target, to) ? -errno : 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(to, st.st_mode & 07777) && errno != EEXIST)
			return -errno;
		return mount(from, to, NULL, MS_BIND | MS_REC, NULL) ? -errno : 0;
	}
	if ((tfd = open(to, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return -errno;
	close(tfd);
	return mount(from, to, NULL, MS_BIND, NULL) ? -errno : 0;
}

/* Is name replaced by the view in directory dir ("/dev", "/sys/class",
 * "/sys/class/misc")? */
static bool net_ns; /* sib_run_ns_setup's net: /sys/class/net comes from a fresh sysfs */

static bool replaced(const char *dir, const char *name)
{
	static const char *const sys_class[] = {
		"infiniband", "infiniband_verbs", "infiniband_mad", "infiniband_ucma", NULL,
	};

	if (!strcmp(dir, "/dev"))
		return !strcmp(name, "infiniband");
	if (!strcmp(dir, "/sys/class/misc"))
		return !strcmp(name, "rdma_cm");
	if (net_ns && !strcmp(name, "net"))
		return true;
	for (unsigned int i = 0; sys_class[i]; i++)
		if (!strcmp(name, sys_class[i]))
			return true;
	return !strcmp(name, "misc"); /* rebuilt entry by entry */
}

/* Every entry of the original directory open as fd, except those the
 * view replaces in dir, put back at dir (put_back).  0 or -errno, why
 * filled. */
static int put_all(int fd, const char *dir, char *why, size_t len)
{
	int dfd, err = 0;
	struct dirent *e;
	DIR *d;

	if ((dfd = dup(fd)) < 0 || !(d = fdopendir(dfd))) {
		err = -errno;
		snprintf(why, len, "%s: %s", dir, strerror(-err));
		if (dfd >= 0)
			close(dfd);
		return err;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || replaced(dir, e->d_name))
			continue;
		if ((err = put_back(fd, e->d_name, dir))) {
			snprintf(why, len, "%s/%s: %s", dir, e->d_name, strerror(-err));
			break;
		}
	}
	closedir(d);
	return err;
}

/*
 * Cover dir with a tmpfs holding the original's entries (read through an
 * fd opened before the tmpfs hides them), except those the view
 * replaces.  0 or -errno, why filled.
 */
static int cover(const char *dir, char *why, size_t len)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

	if (fd < 0) {
		err = -errno;
		snprintf(why, len, "%s: %s", dir, strerror(-err));
		return err;
	}
	if (mount("softib-view", dir, "tmpfs", MS_NOSUID, "mode=755")) {
		err = -errno;
		snprintf(why, len, "mount -t tmpfs over %s: %s", dir, strerror(-err));
	} else {
		err = put_all(fd, dir, why, len);
	}
	close(fd);
	return err;
}

/* Bind root+path (the view's subtree) onto path, a directory made first. */
static int bind_view(const char *root, const char *path, char *why, size_t len)
{
	char from[PATH_MAX];
	int err;

	if ((size_t)snprintf(from, sizeof(from), "%s%s", root, path) >= sizeof(from))
		return -ENAMETOOLONG;
	if (mkdir(path, 0755) && errno != EEXIST) {
		err = -errno;
		snprintf(why, len, "mkdir %s: %s", path, strerror(-err));
		return err;
	}
	if (mount(from, path, NULL, MS_BIND | MS_REC, NULL)) {
		err = -errno;
		snprintf(why, len, "mount --bind %s %s: %s", from, path, strerror(-err));
		return err;
	}
	/* read-only, as sysfs is to a user (the writer, src/sysview, works
	 * on the original tree, not through this mount) */
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL)) {
		err = -errno;
		snprintf(why, len, "mount -o remount,bind,ro %s: %s", path, strerror(-err));
		return err;
	}
	return 0;
}

/* /sys/class/misc, which cover("/sys/class") skipped: a directory of the
 * tmpfs with rdma_cm bound from the view (the caller links the original
 * entries back: symlinks into /sys/devices). */
static int rebuild_misc(const char *root, char *why, size_t len)
{
	int err;

	if (mkdir("/sys/class/misc", 0755) && errno != EEXIST) {
		err = -errno;
		snprintf(why, len, "mkdir /sys/class/misc: %s", strerror(-err));
		return err;
	}
	return bind_view(root, "/sys/class/misc/rdma_cm", why, len);
}

/*
 * The network namespace's own interfaces in sysfs: a sysfs mounted in it
 * shows them (sysfs tags the net class by the mounter's namespace), so
 * one is mounted on a scratch directory of the /dev tmpfs and its
 * class/net and devices/virtual/net (where class/net's links point) are
 * bound over the originals, then the scratch mount goes.  The rest of
 * /sys stays the original, its submounts (cgroup, ...) included.
 */
static int net_sysfs(char *why, size_t len)
{
	static const char scratch[] = "/dev/.softib-sysfs";
	static const char *const sub[][2] = {
		{ "/dev/.softib-sysfs/class/net", "/sys/class/net" },
		{ "/dev/.softib-sysfs/devices/virtual/net", "/sys/devices/virtual/net" },
	};
	int err = 0;

	if (mkdir(scratch, 0700) ||
	    mount("sysfs", scratch, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) {
		err = -errno;
		snprintf(why, len, "mount -t sysfs in the network namespace: %s", strerror(-err));
		rmdir(scratch);
		return err;
	}
	for (unsigned int i = 0; i < 2 && !err; i++) {
		if (mkdir(sub[i][1], 0755) && errno != EEXIST) {
			err = -errno;
			snprintf(why, len, "mkdir %s: %s", sub[i][1], strerror(-err));
		} else if (mount(sub[i][0], sub[i][1], NULL, MS_BIND, NULL)) {
			err = -errno;
			snprintf(why, len, "mount --bind %s %s: %s", sub[i][0], sub[i][1],
				 strerror(-err));
		}
	}
	umount2(scratch, MNT_DETACH);
	rmdir(scratch);
	return err;
}

int sib_run_ns_setup(const char *root, bool net, char *why, size_t len)
{
	static const char *const views[] = {
		"/sys/class/infiniband", "/sys/class/infiniband_verbs", "/sys/class/infiniband_mad",
		"/sys/class/infiniband_ucma", "/dev/infiniband", NULL,
	};
	int misc = open("/sys/class/misc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err;

	net_ns = net;
	if ((err = enter_ns(net, why, len)) || (err = cover("/dev", why, len)) ||
	    (err = cover("/sys/class", why, len)) || (err = rebuild_misc(root, why, len)) ||
	    (net && (err = net_sysfs(why, len))))
		goto out;
	/* the original misc entries, linked back (rdma_cm is the view's) */
	if (misc >= 0 && (err = put_all(misc, "/sys/class/misc", why, len)))
		goto out;
	for (unsigned int i = 0; views[i]; i++)
		if ((err = bind_view(root, views[i], why, len)))
			goto out;
out:
	if (misc >= 0)
		close(misc);
	return err;
}

int sib_run_ns_probe(const char *root, bool net, char *why, size_t len)
{
	int pfd[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) { /* the whole setup, in a child that then exits */
		char msg[256] = "";
		int err;

		close(pfd[0]);
		err = sib_run_ns_setup(root, net, msg, sizeof(msg));
		if (err && write(pfd[1], msg, strlen(msg)) < 0)
			_exit(1);
		_exit(err ? 1 : 0);
	}
	close(pfd[1]);
	n = read(pfd[0], why, len - 1);
	why[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EPERM;
}
