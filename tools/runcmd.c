// SPDX-License-Identifier: MIT
/*
 * `softib run [OPTIONS] -- CMD ARGS...` (docs/clients.md "softib run"):
 * runs CMD, and its children, with softib as the machine's RDMA stack:
 * softib's libraries first on LD_LIBRARY_PATH, the daemon started (the
 * verbs library autostarts it, before any namespace is entered, so that it
 * lives in the caller's), and a system view, /dev/infiniband and the RDMA
 * classes of /sys/class, written live by src/sysview under a directory of
 * softib's runtime dir.  The view reaches CMD one of two ways:
 *   namespace  a private mount namespace (runns.c): as root, or where an
 *              unprivileged user namespace can be made;
 *   preload    the interposer libsoftib_view.so (src/preload) in
 *              LD_PRELOAD, with SOFTIB_VIEW naming the view: anywhere, for
 *              dynamically linked programs.
 * `--check` says which one "auto" picks and why.  This process stays CMD's
 * parent: it keeps the view live (port events, once a second for the rest),
 * forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM and
 * SIGWINCH, removes the view when CMD
 * exits and exits with CMD's status.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "common/ctl.h"
#include "ipoib/ipoib.h"
#include "sysview/sysview.h"
#include "runcmd.h"

enum run_view { VIEW_AUTO, VIEW_NAMESPACE, VIEW_PRELOAD };

struct run_opts {
	enum run_view view;
	bool check;
	bool net;
	bool quiet;
	const char *ucx;	/* --ucx DEV:PORT */
	char **cmd;
};

#define RUN_MAX_NETDEVS 32

/* The signals softib run forwards to CMD (and SIGCHLD), blocked in every
 * thread from the start (the verbs library's threads inherit the mask, so
 * none of them takes one), read from a signalfd; run_oldmask is the
 * caller's mask, which every child gets back. */
static sigset_t run_signals, run_oldmask;

/* This run's view's name in the views' directory (view_root). */
static char run_view[64];

static void block_signals(void)
{
	static const int sigs[] = {
		SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH,
	};

	sigemptyset(&run_signals);
	for (unsigned int i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&run_signals, sigs[i]);
	sigprocmask(SIG_BLOCK, &run_signals, &run_oldmask);
}

/* One IPoIB interface of --net: its bridge runs in a child. */
struct run_netdev {
	char dev[IBV_SYSFS_NAME_MAX];
	uint8_t port;
	char ifname[IFNAMSIZ];
	char addr[INET_ADDRSTRLEN + 4];
	pid_t pid;
};

static int run_usage(FILE *f)
{
	fputs("Usage: softib run [--check] [--view auto|namespace|preload] [--net] [--ucx DEV:PORT]\n"
	      "                  [--quiet] [--] CMD [ARGS...]\n"
	      "Run CMD with softib as the machine's RDMA stack: softib's libibverbs, libibumad\n"
	      "and librdmacm first on LD_LIBRARY_PATH, softibd started if needed, and a live\n"
	      "system view: /dev/infiniband/{uverbsN,umadN,issmN,rdma_cm} that open as devices\n"
	      "and /sys/class/infiniband{,_verbs,_mad}, /sys/class/misc/rdma_cm as the kernel's.\n"
	      "\n"
	      "  --view namespace  a private mount namespace (root, or a user namespace)\n"
	      "  --view preload    an interposer (libsoftib_view.so in LD_PRELOAD): no privilege\n"
	      "                    needed; dynamically linked programs only\n"
	      "  --view auto       namespace where it can be made, else preload (the default)\n"
	      "  --check           say which view auto picks here and why, then exit\n"
	      "  --net             a private network namespace (with --view namespace) in which\n"
	      "                    each CA port has its IPoIB interface ibN with the address\n"
	      "                    rdma_cm knows it by (127.1.<dev>.<port>)\n"
	      "  --ucx DEV:PORT    UCX_NET_DEVICES=DEV:PORT\n"
	      "  --quiet           no line on stderr saying which view is used\n"
	      "Also sets, unless already set: OMPI_MCA_pml_ucx_devices=any (Open MPI's pml ucx\n"
	      "keys its default on mlx* drivers), OMPI_MCA_btl_openib_allow_ib=1 and btl\n"
	      "openib's two warnings off; SOFTIB_MEMLOCK=0 when RLIMIT_MEMLOCK is finite\n"
	      "(it says so). The /dev/infiniband nodes are links to /dev/null.\n"
	      "Exit status: CMD's (128+N if killed by signal N); 1 if softib run failed, 2 on\n"
	      "usage errors.\n", f);
	return f == stdout ? 0 : 2;
}

static int parse(int argc, char **argv, struct run_opts *o)
{
	int i;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "--check")) {
			o->check = true;
		} else if (!strcmp(a, "--net")) {
			o->net = true;
		} else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
			o->quiet = true;
		} else if (!strcmp(a, "--ucx") && i + 1 < argc) {
			o->ucx = argv[++i];
			if (!strchr(o->ucx, ':')) {
				fprintf(stderr, "softib run: --ucx %s: expected DEV:PORT, e.g. softib0:1\n",
					o->ucx);
				return -1;
			}
		} else if (!strcmp(a, "--view") && i + 1 < argc) {
			a = argv[++i];
			if (!strcmp(a, "auto"))
				o->view = VIEW_AUTO;
			else if (!strcmp(a, "namespace"))
				o->view = VIEW_NAMESPACE;
			else if (!strcmp(a, "preload"))
				o->view = VIEW_PRELOAD;
			else {
				fprintf(stderr, "softib run: --view %s: expected auto, namespace or "
					"preload\n", a);
				return -1;
			}
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			return 1;
		} else if (a[0] == '-') {
			fprintf(stderr, "softib run: unknown option %s%s\n", a,
				!strcmp(a, "--ucx") || !strcmp(a, "--view") ? " (it takes a value)" : "");
			return -1;
		} else {
			break;
		}
	}
	o->cmd = argv + i;
	if (o->check)
		return 0;
	if (i >= argc) {
		fprintf(stderr, "softib run: no command to run\n");
		return -1;
	}
	return 0;
}

/* softib's lib directory: ../lib beside this program (build/bin/softib ->
 * build/lib), where libibverbs.so.1 must be.  0 or -ENOENT. */
static int lib_dir(char *buf, size_t len)
{
	char exe[PATH_MAX], probe[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	if ((size_t)snprintf(buf, len, "%s/../lib", dirname(exe)) >= len)
		return -ENAMETOOLONG;
	snprintf(probe, sizeof(probe), "%s/libibverbs.so.1", buf);
	if (access(probe, R_OK))
		return -ENOENT;
	if (!realpath(buf, exe))
		return -errno;
	snprintf(buf, len, "%s", exe);
	return 0;
}

/* VAR=value:old, or old:value with append (value alone when VAR is
 * unset or empty). */
static int env_add(const char *var, const char *value, bool append)
{
	const char *old = getenv(var);
	char *s;
	int ret;

	if (!old || !*old)
		return setenv(var, value, 1);
	if (asprintf(&s, "%s:%s", append ? old : value, append ? value : old) < 0)
		return -1;
	ret = setenv(var, s, 1);
	free(s);
	return ret;
}

/* Remove name, a file or a directory tree, under the directory open as
 * dfd, never following a symbolic link (O_NOFOLLOW, unlinkat): a tree
 * someone changes meanwhile cannot send it elsewhere.  depth bounds it. */
static void rm_at(int dfd, const char *name, int depth)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *e;
	DIR *d;

	if (fd < 0) {
		unlinkat(dfd, name, 0);
		return;
	}
	if (depth > 0 && (d = fdopendir(fd))) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				rm_at(dirfd(d), e->d_name, depth - 1);
		closedir(d);
	} else {
		close(fd);
	}
	unlinkat(dfd, name, AT_REMOVEDIR);
}

/* The views' directory, open: softib-views in softib's runtime dir (the
 * socket's), both checked as softibd checks its socket directory
 * (softibd.c private_dir): a directory, not a symbolic link, ours, not
 * writable by group or others.  Made if missing.  fd, or -1 with a
 * message. */
static int open_views_dir(char *path, size_t len)
{
	char sock[PATH_MAX], *dir;
	const char *step[2];
	int fd = AT_FDCWD, nfd;

	if (sib_ctl_default_path(sock, sizeof(sock))) {
		fprintf(stderr, "softib run: the socket path is too long\n");
		return -1;
	}
	dir = dirname(sock);
	step[0] = dir;
	step[1] = "softib-views";
	for (int i = 0; i < 2; i++) {
		struct stat st;

		if (mkdirat(fd, step[i], i ? 0711 : 0700) && errno != EEXIST) {
			fprintf(stderr, "softib run: %s/%s: %s\n", dir, i ? step[1] : "",
				strerror(errno));
			goto bad;
		}
		nfd = openat(fd, step[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 || fstat(nfd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
			fprintf(stderr, "softib run: refusing %s%s%s: %s\n", dir, i ? "/" : "",
				i ? step[1] : "", nfd < 0 ? strerror(errno) :
				st.st_uid != geteuid() ? "not owned by us" :
				"writable by group or others");
			if (nfd >= 0)
				close(nfd);
			goto bad;
		}
		if (fd != AT_FDCWD)
			close(fd);
		fd = nfd;
	}
	snprintf(path, len, "%s/softib-views", dir);
	return fd;
bad:
	if (fd != AT_FDCWD)
		close(fd);
	return -1;
}

/* A view's name: view-<pid>, or view-<pid>-<k> when another run with the
 * same pid (in another pid namespace) holds view-<pid>; suffix ".lock"
 * for its lock. */
static void view_name(char *buf, size_t len, int pid, int k, const char *suffix)
{
	if (k)
		snprintf(buf, len, "view-%d-%d%s", pid, k, suffix);
	else
		snprintf(buf, len, "view-%d%s", pid, suffix);
}

/* The pid and k of a view's directory name exactly (nothing else
 * matches, a lock file neither): 0, or -1. */
static int view_name_parse(const char *name, int *pid, int *k)
{
	char canon[64];

	*k = 0;
	if (sscanf(name, "view-%d-%d", pid, k) < 1 || *pid <= 0 || *k < 0)
		return -1;
	view_name(canon, sizeof(canon), *pid, *k, ""); /* "view-+1", "view-1x": no */
	return strcmp(canon, name) ? -1 : 0;
}

/* Views left by a softib run that was killed, with every process it
 * started: view-<pid> whose view-<pid>.lock nobody holds (each run holds
 * it, and so do CMD and its children, who inherit it). */
static void remove_stale(int vfd)
{
	char lock[64];
	struct dirent *e;
	int pid, k, lfd, dfd = dup(vfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	while (d && (e = readdir(d))) {
		if (view_name_parse(e->d_name, &pid, &k))
			continue;
		view_name(lock, sizeof(lock), pid, k, ".lock");
		lfd = openat(vfd, lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB)) {
			close(lfd); /* held: a live run */
			continue;
		}
		rm_at(vfd, e->d_name, 16);
		unlinkat(vfd, lock, 0);
		if (lfd >= 0)
			close(lfd);
	}
	if (d)
		closedir(d);
	else if (dfd >= 0)
		close(dfd);
}

/* Start softibd (the verbs library autostarts it) from a child, so that
 * this process stays single-threaded until it has entered its
 * namespaces.  A daemon that cannot start shows later, when the view
 * opens the devices. */
static void start_daemon(void)
{
	pid_t pid;

	fflush(NULL);
	if ((pid = fork()) == 0) {
		struct ibv_device **l;

		sigprocmask(SIG_SETMASK, &run_oldmask, NULL); /* the daemon's own */
		l = ibv_get_device_list(NULL);

		if (l)
			ibv_free_device_list(l);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* The view's root: softib-views/view-<pid> in softib's runtime dir, made
 * empty with the directories the namespace binds, and its lock taken
 * (*lock_fd, inherited by CMD on purpose).  *views_fd: the views'
 * directory.  0 or -1 with a message. */
static int view_root(char *buf, size_t len, int *views_fd, int *lock_fd)
{
	static const char *const dirs[] = {
		"sys", "sys/class", "sys/class/infiniband", "sys/class/infiniband_verbs",
		"sys/class/infiniband_mad", "sys/class/infiniband_ucma", "sys/class/misc",
		"sys/class/misc/rdma_cm", "dev", "dev/infiniband",
	};
	char views[PATH_MAX], name[64], sub[128];
	int vfd;

	*lock_fd = -1;
	if ((vfd = open_views_dir(views, sizeof(views))) < 0)
		return -1;
	remove_stale(vfd);
	*lock_fd = -1;
	for (int k = 0; k < 16 && *lock_fd < 0; k++) {
		view_name(name, sizeof(name), (int)getpid(), k, "");
		view_name(sub, sizeof(sub), (int)getpid(), k, ".lock");
		*lock_fd = openat(vfd, sub, O_RDWR | O_CREAT | O_NOFOLLOW, 0600); /* no CLOEXEC */
		if (*lock_fd < 0)
			break;
		if (flock(*lock_fd, LOCK_EX | LOCK_NB)) { /* a run of the same pid elsewhere */
			close(*lock_fd);
			*lock_fd = -1;
			errno = EAGAIN;
		}
	}
	if (*lock_fd < 0) {
		fprintf(stderr, "softib run: %s/%s: %s\n", views, sub, strerror(errno));
		goto bad;
	}
	snprintf(run_view, sizeof(run_view), "%s", name);
	rm_at(vfd, name, 16);
	if ((size_t)snprintf(buf, len, "%s/%s", views, name) >= len || mkdirat(vfd, name, 0755))
		goto bad_dir;
	for (unsigned int i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(sub, sizeof(sub), "%s/%s", name, dirs[i]);
		if (mkdirat(vfd, sub, 0755) && errno != EEXIST)
			goto bad_dir;
	}
	*views_fd = vfd;
	return 0;
bad_dir:
	fprintf(stderr, "softib run: %s/%s: %s\n", views, name, strerror(errno));
bad:
	if (*lock_fd >= 0)
		close(*lock_fd);
	close(vfd);
	return -1;
}

/* Do processes CMD left behind still hold this run's lock (inherited)?
 * Closes ours.  *fd: the lock reopened and taken when nobody holds it
 * (for view_remove), else -1. */
static bool view_in_use(int vfd, int lock_fd, int *fd)
{
	char lock[80];

	snprintf(lock, sizeof(lock), "%s.lock", run_view);
	if (lock_fd >= 0)
		close(lock_fd);
	*fd = openat(vfd, lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd >= 0 && flock(*fd, LOCK_EX | LOCK_NB)) {
		close(*fd);
		*fd = -1;
		return true;
	}
	return false;
}

/* Remove this run's view and its lock unless keep (processes CMD left
 * behind hold the lock: the view stays, no longer kept live, until a
 * later run finds the lock free). */
static void view_remove(int vfd, bool keep, int fd)
{
	char lock[80];

	snprintf(lock, sizeof(lock), "%s.lock", run_view);
	if (!keep) {
		rm_at(vfd, run_view, 16);
		unlinkat(vfd, lock, 0);
	}
	if (fd >= 0)
		close(fd);
	close(vfd);
}

/* view_in_use, then view_remove: before CMD ran, or after the view's writer went. */
static void view_drop(int vfd, int lock_fd)
{
	int fd;
	bool keep = view_in_use(vfd, lock_fd, &fd);

	view_remove(vfd, keep, fd);
}

/* Every CA port and its rdma_cm address 127.1.<dev>.<port>, found by
 * binding it (the daemon's table decides; a port without one is left out). */
static int find_ports(struct run_netdev *nd, int max)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	int n = 0;

	if (!ch)
		return -errno;
	for (int d = 0; d < 64 && n < max; d++)
		for (int p = 1; p <= 2 && n < max; p++) {
			struct sockaddr_in a = { .sin_family = AF_INET };
			struct rdma_cm_id *id;
			char ip[INET_ADDRSTRLEN];

			snprintf(ip, sizeof(ip), "127.1.%d.%d", d, p);
			inet_pton(AF_INET, ip, &a.sin_addr);
			if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
				break;
			if (!rdma_bind_addr(id, (struct sockaddr *)&a) && id->verbs) {
				snprintf(nd[n].dev, sizeof(nd[n].dev), "%s",
					 ibv_get_device_name(id->verbs->device));
				nd[n].port = id->port_num ? id->port_num : (uint8_t)p;
				snprintf(nd[n].ifname, sizeof(nd[n].ifname), "ib%d", n);
				snprintf(nd[n].addr, sizeof(nd[n].addr), "%s/8", ip); /* as softibd lists it */
				n++;
			}
			rdma_destroy_id(id);
		}
	rdma_destroy_event_channel(ch);
	return n;
}

/* lo up in the new network namespace (127.0.0.1 for TCP side channels). */
static int lo_up(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = 0;

	if (s < 0)
		return -errno;
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr))
			ret = -errno;
	} else {
		ret = -errno;
	}
	close(s);
	return ret;
}

/* --net: a bridge per port, in a child that keeps this process's
 * capabilities in the namespace (no exec); waits until each interface is
 * up (its address set) or its bridge died, at most 20 s. */
static int net_up(struct sib_sysview *v, struct run_netdev *nd, int n, bool quiet)
{
	for (int i = 0; i < n; i++) {
		struct sib_ipoib_opts o = {
			.dev = nd[i].dev, .port = nd[i].port, .tun = nd[i].ifname,
			.addr = nd[i].addr, .wait_ms = 10000,
		};

		fflush(NULL);
		nd[i].pid = fork();
		if (nd[i].pid < 0)
			return -errno;
		if (nd[i].pid == 0) {
			int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

			if (fd >= 0) { /* its "up on" lines are not CMD's output */
				dup2(fd, STDOUT_FILENO);
				if (quiet)
					dup2(fd, STDERR_FILENO);
			}
			signal(SIGTERM, SIG_DFL);
			sigprocmask(SIG_SETMASK, &run_oldmask, NULL);
			_exit(sib_ipoib_up(&o));
		}
	}
	for (int t = 0; t < 200; t++) {
		int up = 0;

		for (int i = 0; i < n; i++) {
			unsigned int idx = if_nametoindex(nd[i].ifname);
			struct ifreq ifr = { 0 };
			int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

			snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", nd[i].ifname);
			if (idx && s >= 0 && !ioctl(s, SIOCGIFADDR, &ifr))
				up++;
			if (s >= 0)
				close(s);
			if (waitpid(nd[i].pid, NULL, WNOHANG) == nd[i].pid) {
				fprintf(stderr, "softib run: --net: the IPoIB bridge of %s port %u "
					"exited\n", nd[i].dev, nd[i].port);
				nd[i].pid = 0;
				return -EIO;
			}
		}
		if (up == n) { /* the view's device/net/<if> with its ifindex, mtu, ... */
			for (int i = 0; i < n; i++)
				sib_sysview_set_netdev(v, nd[i].dev, nd[i].port, nd[i].ifname);
			return 0;
		}
		usleep(100000);
	}
	fprintf(stderr, "softib run: --net: the IPoIB interfaces did not come up in 20 s\n");
	return -ETIMEDOUT;
}

static void net_down(struct run_netdev *nd, int n)
{
	for (int i = 0; i < n; i++)
		if (nd[i].pid > 0)
			kill(nd[i].pid, SIGTERM);
	for (int i = 0; i < n; i++) {
		for (int t = 0; nd[i].pid > 0 && t < 100; t++) {
			if (waitpid(nd[i].pid, NULL, WNOHANG) == nd[i].pid)
				nd[i].pid = 0;
			else
				usleep(50000);
		}
		if (nd[i].pid > 0) {
			kill(nd[i].pid, SIGKILL);
			waitpid(nd[i].pid, NULL, 0);
		}
	}
}

/* CMD's environment: the libraries, the interposer (preload), UCX/Open MPI. */
static int set_env(const struct run_opts *o, const char *libdir, const char *root, bool preload)
{
	char so[PATH_MAX + 32];

	if (env_add("LD_LIBRARY_PATH", libdir, false))
		return -errno;
	if (preload) {
		snprintf(so, sizeof(so), "%s/libsoftib_view.so", libdir);
		if (access(so, R_OK)) {
			fprintf(stderr, "softib run: %s: %s\n", so, strerror(errno));
			return -ENOENT;
		}
		/* after what is there: a sanitizer's runtime must stay first,
		 * and its interceptors then reach ours as the next definition */
		if (env_add("LD_PRELOAD", so, true) || setenv("SOFTIB_VIEW", root, 1))
			return -errno;
	} else {
		unsetenv("SOFTIB_VIEW");
	}
	if (o->ucx && setenv("UCX_NET_DEVICES", o->ucx, 1))
		return -errno;
	setenv("OMPI_MCA_pml_ucx_devices", "any", 0);
	setenv("OMPI_MCA_btl_openib_allow_ib", "1", 0);
	/* softib's vendor ID is in no device-parameter file, and every port
	 * has the default subnet prefix: two warnings per rank that say
	 * nothing about softib */
	setenv("OMPI_MCA_btl_openib_warn_no_device_params_found", "0", 0);
	setenv("OMPI_MCA_btl_openib_warn_default_gid_prefix", "0", 0);
	return 0;
}

/*
 * RLIMIT_MEMLOCK: the soft limit raised to the hard one; if that is still
 * finite (8 MiB in a default container) and SOFTIB_MEMLOCK is unset, the
 * registration accounting goes off for CMD (SOFTIB_MEMLOCK=0): UCX and
 * Open MPI pin tens of MiB per process, and would fail as on hardware
 * (README "Limits").  Said once on stderr unless quiet.
 */
static void memlock(bool quiet)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl))
		return;
	if (rl.rlim_cur != rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
	if (rl.rlim_max == RLIM_INFINITY || getenv("SOFTIB_MEMLOCK"))
		return;
	setenv("SOFTIB_MEMLOCK", "0", 1);
	if (!quiet)
		fprintf(stderr, "softib run: RLIMIT_MEMLOCK is %llu KiB: SOFTIB_MEMLOCK=0, registered "
			"memory is not counted against it (SOFTIB_MEMLOCK=1 keeps the limit; "
			"docker run --ulimit memlock=-1 lifts it)\n",
			(unsigned long long)rl.rlim_max / 1024);
}

/* Run CMD and keep the view live until it exits; returns its status. */
static int supervise(struct sib_sysview *v, char **cmd)
{
	struct pollfd pfd[2];
	struct signalfd_siginfo si;
	int status = 0, sfd;
	pid_t pid;

	if ((sfd = signalfd(-1, &run_signals, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		return 1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("softib run: fork");
		return 1;
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &run_oldmask, NULL);
		execvp(cmd[0], cmd);
		fprintf(stderr, "softib run: %s: %s\n", cmd[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	pfd[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = sib_sysview_fd(v), .events = POLLIN };
	for (;;) {
		int r = poll(pfd, 2, 1000);

		if (r < 0 && errno != EINTR)
			break;
		if (r == 0 || (r > 0 && (pfd[1].revents & POLLIN)))
			sib_sysview_refresh(v);
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			if (si.ssi_signo != SIGCHLD)
				kill(pid, (int)si.ssi_signo);
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
	}
	close(sfd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int sib_tool_run(const char *sock, int argc, char **argv)
{
	struct run_opts o = { .view = VIEW_AUTO };
	struct run_netdev nd[RUN_MAX_NETDEVS];
	char libdir[PATH_MAX], root[PATH_MAX], why[512] = "";
	struct sib_sysview *v = NULL;
	int ret, nnd = 0, status = 1, views_fd = -1, lock_fd = -1, fd = -1;
	bool ns, keep;

	if ((ret = parse(argc, argv, &o)))
		return run_usage(ret > 0 ? stdout : stderr);
	if (sock)
		setenv("SOFTIB_SOCKET", sock, 1);
	block_signals();
	if ((ret = lib_dir(libdir, sizeof(libdir)))) {
		fprintf(stderr, "softib run: no libibverbs.so.1 in ../lib beside this program\n");
		return 1;
	}
	if (view_root(root, sizeof(root), &views_fd, &lock_fd))
		return 1;
	/* softibd starts outside any namespace this process enters, and
	 * unshare(CLONE_NEWUSER) needs a single-threaded caller: so the
	 * daemon is started from a child, and the view (whose devices come
	 * with the library's threads) is made after the namespaces */
	start_daemon();
	ns = o.view == VIEW_NAMESPACE;
	if (o.view == VIEW_AUTO || o.check) {
		ret = sib_run_ns_probe(root, o.net, why, sizeof(why));
		ns = ret == 0;
	}
	if (o.check) {
		if (ns)
			printf("namespace: %s\n", geteuid() == 0 ?
			       "root: a private mount namespace" :
			       "an unprivileged user namespace with a private mount namespace");
		else
			printf("preload: no mount namespace here (%s); libsoftib_view.so in "
			       "LD_PRELOAD%s\n", why, o.net ? "; --net needs the namespace" : "");
		view_drop(views_fd, lock_fd);
		return 0;
	}
	if (o.net && !ns) {
		fprintf(stderr, "softib run: --net needs a network namespace: root, or user "
			"namespaces (%s)\n", why[0] ? why : "--view preload");
		view_drop(views_fd, lock_fd);
		return 1;
	}
	if (ns && (ret = sib_run_ns_setup(root, o.net, why, sizeof(why)))) {
		fprintf(stderr, "softib run: namespace: %s\n", why);
		view_drop(views_fd, lock_fd);
		return 1;
	}
	if (!(v = sib_sysview_create(root))) {
		fprintf(stderr, "softib run: the system view: %s (is softibd running or "
			"startable? `softib status`)\n", strerror(errno));
		view_drop(views_fd, lock_fd);
		return 1;
	}
	{ /* a view with no device helps nobody: say why instead */
		int n = 0;
		struct ibv_device **l = ibv_get_device_list(&n);

		if (l)
			ibv_free_device_list(l);
		if (n <= 0) {
			fprintf(stderr, "softib run: no softib device: softibd is not running and "
				"could not be started (`softib status`; SOFTIB_NO_AUTOSTART, "
				"SOFTIB_SOCKET)\n");
			goto out;
		}
	}
	if (o.net && (nnd = find_ports(nd, RUN_MAX_NETDEVS)) < 0) {
		fprintf(stderr, "softib run: --net: rdma_cm: %s\n", strerror(-nnd));
		nnd = 0;
		goto out;
	}
	if (o.net && (lo_up() || net_up(v, nd, nnd, o.quiet)))
		goto out;
	if (set_env(&o, libdir, root, !ns))
		goto out;
	memlock(o.quiet);
	if (!o.quiet)
		fprintf(stderr, "softib run: %s view%s\n", ns ? "namespace" : "preload",
			o.net ? ", network namespace with IPoIB interfaces" : "");
	sib_sysview_refresh(v);
	status = supervise(v, o.cmd);
out:
	net_down(nd, nnd);
	keep = view_in_use(views_fd, lock_fd, &fd);
	sib_sysview_destroy(v, !keep);
	view_remove(views_fd, keep, fd);
	return status;
}
