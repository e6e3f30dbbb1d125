// SPDX-License-Identifier: MIT
/*
 * softibd: the process that plays kernel, firmware and switches for softib.
 * This file owns the process: options, detaching with a readiness pipe, the
 * single-instance lock, the control socket and the single-threaded epoll
 * loop with idle exit.  Commands live in client.c, the fabric map in
 * fabmap.c.  Nothing here blocks on a client; signals arrive via signalfd.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/ctl.h"
#include "daemon/mai_chan.h"
#include "daemon/softibd.h"
#include "daemon/ucma.h"
#include "subnet/cm.h"

#ifndef SOFTIB_VERSION
#define SOFTIB_VERSION    "0.1.0" /* project() version in CMakeLists.txt */
#endif
#define AUTOSTART_IDLE_S  30
#define READY_TIMEOUT_MS  10000
#define SETUP_OK          0
#define SETUP_FAILED      1
#define SETUP_RUNNING     2 /* another daemon holds the lock */

static const char usage[] =
"Usage: softibd [OPTION]...\n"
"The softib fabric daemon: owns the simulated fabric, its ports, LIDs and QP\n"
"numbers, and serves the control socket of the verbs library and tools.\n"
"\n"
"  -f, --foreground      stay in the foreground, log to stderr (the default)\n"
"  -d, --daemon          detach; return once the socket listens (exit 0) or\n"
"                        startup failed (exit 1); log to $SOFTIB_LOG or nowhere\n"
"      --topology FILE   load the fabric from FILE (ibnetdiscover format)\n"
"                        instead of the embedded default (one switch, 4 CAs)\n"
"      --sm MODE         builtin (the default): softibd's own subnet manager\n"
"                        gives LIDs, forwarding tables and ACTIVE ports at\n"
"                        start and after every link change, with an SA\n"
"                        (records, multicast groups, InformInfo); external:\n"
"                        ports come up LinkUp/INIT with LID 0 and wait for\n"
"                        a subnet manager (OpenSM, which brings its own SA)\n"
"                        to configure them\n"
"      --socket PATH     control socket; default $SOFTIB_SOCKET, else\n"
"                        $XDG_RUNTIME_DIR/softib.sock, else\n"
"                        /tmp/softib-<uid>/softib.sock.  Its directory is\n"
"                        created (0700) if missing; one that is a symlink,\n"
"                        owned by another user or writable by group or\n"
"                        others is refused (exit 1)\n"
"      --ip DEV:PORT=ADDR[/PREFIX]  one more IPv4 or IPv6 address of CA port\n"
"                        PORT of verbs device DEV for the rdma_cm (repeatable,\n"
"                        at most 64); every port already has 127.1.<dev index>.\n"
"                        <port> and its GID as IPv6 (docs/rdmacm.md)\n"
"      --idle-exit SECS  exit after SECS without any client (0 = never)\n"
"      --client-share PCT  a client process may hold at most PCT percent\n"
"                        (1-100, default 25) of softibd's connections, MAI\n"
"                        channels, inboxes, XRC domains on files and direct\n"
"                        placement's memfds; one more\n"
"                        is EMFILE.  The last eighth of each is kept for\n"
"                        processes holding fewer than 4 (ENFILE for others),\n"
"                        so `softib status` and ibv_devinfo always get in.\n"
"                        The maxima follow RLIMIT_NOFILE; `softib status`\n"
"                        shows them, each client's use and the refusals\n"
"      --autostart       started on demand by a client: exit 0 quietly if a\n"
"                        daemon already runs; idle exit after $SOFTIB_IDLE_EXIT\n"
"                        or 30 seconds unless --idle-exit is given\n"
"      --dumpable        stay dumpable: core dumps, and /proc/<pid>/fd open to\n"
"                        processes of the uid (tests that count softibd's fds).\n"
"                        By default softibd is not dumpable, so that the\n"
"                        memfds it keeps for clients (inboxes, direct\n"
"                        placement's) cannot be opened through\n"
"                        /proc/<pid>/fd by other processes of the uid\n"
"      --status          print the status report of the running daemon\n"
"      --stop            stop the running daemon\n"
"  -h, --help            show this help\n"
"      --version         show the version and the control ABI version\n"
"\n"
"Exit status: 0 on a clean exit (SIGTERM, SIGINT, SHUTDOWN, idle), 1 on errors\n"
"or when another daemon already serves the socket (without --autostart).\n";

enum {
	OPT_TOPOLOGY = 256, OPT_SM, OPT_SOCKET, OPT_IDLE, OPT_AUTOSTART, OPT_STATUS, OPT_STOP,
	OPT_VERSION, OPT_SHARE, OPT_DUMPABLE, OPT_IP,
};

static const struct option long_opts[] = {
	{ "foreground", no_argument, NULL, 'f' },
	{ "daemon", no_argument, NULL, 'd' },
	{ "topology", required_argument, NULL, OPT_TOPOLOGY },
	{ "sm", required_argument, NULL, OPT_SM },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "idle-exit", required_argument, NULL, OPT_IDLE },
	{ "client-share", required_argument, NULL, OPT_SHARE },
	{ "ip", required_argument, NULL, OPT_IP },
	{ "autostart", no_argument, NULL, OPT_AUTOSTART },
	{ "dumpable", no_argument, NULL, OPT_DUMPABLE },
	{ "status", no_argument, NULL, OPT_STATUS },
	{ "stop", no_argument, NULL, OPT_STOP },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

struct options {
	bool daemon, foreground, autostart, status, stop;
	bool dumpable;           /* --dumpable: /proc/<pid>/fd left open to the uid */
	const char *socket;      /* NULL: sib_ctl_default_path() */
	const char *sm;          /* --sm MODE, NULL: builtin */
	long long idle_s;        /* -1: not given */
};

static bool log_timestamps;

void sibd_log(const char *fmt, ...)
{
	int saved = errno;
	char stamp[32] = "";
	struct tm tm;
	va_list ap;
	time_t t;

	if (log_timestamps) {
		t = time(NULL);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S ", localtime_r(&t, &tm));
	}
	va_start(ap, fmt);
	fprintf(stderr, "%ssoftibd[%d]: ", stamp, (int)getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	errno = saved;
}

/* CLOCK_MONOTONIC in ns: the IB CM's clock (sib_cm_tick). */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Fold a deadline (ns on now's clock, 0 = none) into a wait's timeout (ms,
 * -1 = none): the earlier of the two. */
static int fold_deadline(uint64_t now, uint64_t next, int timeout)
{
	uint64_t ms;

	if (!next)
		return timeout;
	ms = next > now ? (next - now + 999999) / 1000000 : 0;
	if (ms > INT_MAX)
		ms = INT_MAX;
	return timeout < 0 || (int)ms < timeout ? (int)ms : timeout;
}

/* The subnet's timers: the IB CM's (subnet/cm.h: run what is due, deliver
 * its queued events) and the SA's (subnet_api.h sib_sa_tick: ServiceRecord
 * leases, Report resends, the sweep after a trap). */
static int subnet_timeout(struct sibd *d, int timeout)
{
	uint64_t now = now_ns();

	timeout = fold_deadline(now, sib_cm_tick(d->sn, now), timeout);
	return fold_deadline(now, sib_sa_tick(d->sn, now), timeout);
}

long long sibd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* ---- options and paths -------------------------------------------------- */

static int parse_seconds(const char *s, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > INT_MAX / 1000)
		return -1;
	*out = v;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o, struct sibd *d)
{
	long long share;
	int c;

	while ((c = getopt_long(argc, argv, "fdh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'f': o->foreground = true; break;
		case 'd': o->daemon = true; break;
		case OPT_TOPOLOGY: d->topology = optarg; break;
		case OPT_SM: o->sm = optarg; break; /* checked below, after --help */
		case OPT_SOCKET: o->socket = optarg; break;
		case OPT_IDLE:
			if (parse_seconds(optarg, &o->idle_s)) {
				fprintf(stderr, "softibd: --idle-exit: not a number of seconds: %s\n",
					optarg);
				return -1;
			}
			break;
		case OPT_SHARE:
			if (parse_seconds(optarg, &share) || share < 1 || share > 100) {
				fprintf(stderr, "softibd: --client-share: a percentage 1-100, not %s\n",
					optarg);
				return -1;
			}
			d->budget.share = (unsigned int)share;
			break;
		case OPT_IP:
			if (d->ncm_ips >= SIBD_CM_IPS_MAX) {
				fprintf(stderr, "softibd: --ip: at most %d\n", SIBD_CM_IPS_MAX);
				return -1;
			}
			d->cm_ips[d->ncm_ips++] = optarg;
			break;
		case OPT_AUTOSTART: o->autostart = true; break;
		case OPT_DUMPABLE: o->dumpable = true; break;
		case OPT_STATUS: o->status = true; break;
		case OPT_STOP: o->stop = true; break;
		case 'h': fputs(usage, stdout); exit(0);
		case OPT_VERSION:
			printf("softibd %s (control ABI %u)\n", SOFTIB_VERSION, SIB_ABI_VERSION);
			exit(0);
		default:
			fputs("Try 'softibd --help'.\n", stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "softibd: unexpected argument: %s\n", argv[optind]);
		return -1;
	}
	if (o->daemon && o->foreground) {
		fputs("softibd: --daemon and --foreground exclude each other\n", stderr);
		return -1;
	}
	if (o->sm && strcmp(o->sm, "builtin") && strcmp(o->sm, "external")) {
		fprintf(stderr, "softibd: --sm: builtin or external, not %s\n", o->sm);
		return -1;
	}
	d->sm_external = o->sm && !strcmp(o->sm, "external");
	return 0;
}

/* Idle exit in ms, or -1: --idle-exit, else with --autostart $SOFTIB_IDLE_EXIT or 30 s. */
static long long idle_ms(const struct options *o)
{
	const char *env = getenv("SOFTIB_IDLE_EXIT");
	long long s = -1;

	if (o->idle_s >= 0)
		s = o->idle_s;
	else if (o->autostart && !(env && *env && !parse_seconds(env, &s)))
		s = AUTOSTART_IDLE_S;
	return s > 0 ? s * 1000 : -1;
}

/* The socket path, absolute (the daemon leaves its cwd).  0 or -1 with a message. */
static int socket_path(const struct options *o, char *buf, size_t len)
{
	char cwd[PATH_MAX], rel[PATH_MAX];
	int n;

	if (o->socket) {
		n = snprintf(rel, sizeof(rel), "%s", o->socket);
		if (n < 0 || (size_t)n >= sizeof(rel))
			goto too_long;
	} else if (sib_ctl_default_path(rel, sizeof(rel))) {
		goto too_long;
	}
	if (rel[0] == '/' || o->status || o->stop) {
		n = snprintf(buf, len, "%s", rel);
	} else {
		if (!getcwd(cwd, sizeof(cwd))) {
			fprintf(stderr, "softibd: getcwd: %s\n", strerror(errno));
			return -1;
		}
		n = snprintf(buf, len, "%s/%s", cwd, rel);
	}
	if (n > 0 && (size_t)n < len)
		return 0;
too_long:
	fprintf(stderr, "softibd: socket path too long (at most %zu bytes)\n", len - 1);
	return -1;
}

/*
 * The socket's directory, for any socket path: create it (0700) if it is
 * missing, and refuse one that others could use to hijack or replace our
 * socket or lock (/tmp is shared): a symlink or not a directory, owned by
 * another uid, or writable by group or others.  0, or -1 after one line on
 * stderr saying what is wrong (exit status 1).
 */
static int private_dir(const char *sock)
{
	char dir[PATH_MAX];
	uid_t uid = geteuid();
	struct stat st;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", sock);
	slash = strrchr(dir, '/');
	if (!slash)
		return 0; /* socket_path() made it absolute */
	slash[slash == dir] = '\0'; /* "/x.sock" lives in "/" */
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		sibd_log("cannot create the socket directory %s: %s", dir, strerror(errno));
		return -1;
	}
	if (lstat(dir, &st) < 0) {
		sibd_log("socket directory %s: %s", dir, strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
		sibd_log("refusing socket directory %s: %s", dir,
			 S_ISLNK(st.st_mode) ? "it is a symbolic link" : "not a directory");
		return -1;
	}
	if (st.st_uid != uid) {
		sibd_log("refusing socket directory %s: owned by uid %u, not by us (uid %u)", dir,
			 (unsigned int)st.st_uid, (unsigned int)uid);
		return -1;
	}
	if (st.st_mode & 022) {
		sibd_log("refusing socket directory %s: writable by group or others (mode %04o); "
			 "chmod go-w it or choose another --socket", dir,
			 (unsigned int)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

/* ---- detaching ---------------------------------------------------------- */

/*
 * Fork twice around setsid().  The first process waits (bounded) for one
 * byte on the readiness pipe, the daemon's verdict on startup, and exits
 * with it as its status.  Returns the pipe's write end in the daemon.
 * fds above stdio inherited from whoever started us (an application that
 * autostarted us) are closed first: a daemon must not keep their pipes open.
 */
static int detach(void)
{
	struct pollfd pfd;
	int p[2], st;
	pid_t pid;
	char b;

	close_range(3, ~0u, 0);
	if (pipe2(p, O_CLOEXEC) < 0) {
		fprintf(stderr, "softibd: pipe: %s\n", strerror(errno));
		exit(1);
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "softibd: fork: %s\n", strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		close(p[1]);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		pfd.fd = p[0];
		pfd.events = POLLIN;
		if (poll(&pfd, 1, READY_TIMEOUT_MS) != 1 || read(p[0], &b, 1) != 1) {
			fprintf(stderr, "softibd: the daemon did not become ready\n");
			exit(1);
		}
		exit(b);
	}
	close(p[0]);
	if (setsid() < 0)
		_exit(1);
	pid = fork();
	if (pid < 0)
		_exit(1);
	if (pid > 0)
		_exit(0);
	return p[1];
}

/* Tell the waiting first process how to exit: 0 ready (or already running), 1 failed. */
static void report_ready(int fd, int status)
{
	char b = (char)status;

	if (fd < 0)
		return;
	if (write(fd, &b, 1) != 1)
		sibd_log("readiness pipe: %s", strerror(errno));
	close(fd);
}

/* After readiness: stdio to /dev/null, stderr to $SOFTIB_LOG if set. */
static void daemon_stdio(void)
{
	const char *logf = getenv("SOFTIB_LOG");
	int nul, lfd = -1;

	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (logf && *logf)
		lfd = open(logf, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (nul >= 0) {
		dup2(nul, STDIN_FILENO);
		dup2(nul, STDOUT_FILENO);
		dup2(lfd >= 0 ? lfd : nul, STDERR_FILENO);
		close(nul);
	}
	if (lfd >= 0)
		close(lfd);
	log_timestamps = true;
	if (chdir("/") < 0)
		sibd_log("chdir /: %s", strerror(errno));
}

/* ---- setup -------------------------------------------------------------- */

#define FIXED_FDS 64 /* listen, lock, epoll, signalfd, map, reserve, inotify, captures, ... */

static uint32_t at_most(rlim_t n, uint32_t cap)
{
	return n < cap ? (uint32_t)n : cap;
}

/* Raise the fd limit and fit the budgets in it (budget.c): each inbox
 * holds a memfd (SIB_MAX_INBOXES of them) and FIXED_FDS stay for the
 * daemon; of the rest, direct placement's memfds (dx.c) may take a
 * quarter, pair rings waiting for their receiver (pair.c) a quarter of
 * what is left, XRC domains on files a quarter, MAI
 * channels a third of what is left, and each connection its socket and
 * a queued fd. */
static void fd_limits(struct sibd *d)
{
	uint32_t xrcd_files, chans, dx_fds, pair_fds, cm_chans;
	struct rlimit rl;
	rlim_t spare = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur > SIB_MAX_INBOXES + FIXED_FDS)
			spare = rl.rlim_cur - SIB_MAX_INBOXES - FIXED_FDS;
	}
	dx_fds = at_most(spare / 4, SIBD_DX_FDS_MAX);
	spare -= dx_fds;
	pair_fds = at_most(spare / 4, SIBD_PAIR_FDS_MAX);
	spare -= pair_fds;
	xrcd_files = at_most(spare / 4, SIBD_XRCD_FILES_MAX);
	spare -= xrcd_files;
	cm_chans = at_most(spare / 4, SIBD_UCMA_CHANS_MAX);
	spare -= cm_chans;
	chans = at_most(spare / 3, SIBD_MAI_CHANS_MAX);
	spare -= chans;
	sibd_mai_chans_max = chans;
	sibd_budget_set(d, SIBD_RES_DX_FD, dx_fds);
	sibd_budget_set(d, SIBD_RES_PAIR, pair_fds);
	sibd_budget_set(d, SIBD_RES_XRCD_FILE, xrcd_files);
	sibd_budget_set(d, SIBD_RES_CHAN, chans);
	sibd_budget_set(d, SIBD_RES_CM_CHAN, cm_chans);
	sibd_budget_set(d, SIBD_RES_CM_ID, SIBD_UCMA_IDS_MAX);
	sibd_budget_set(d, SIBD_RES_CONN, at_most(spare / 2, SIBD_MAX_CLIENTS));
	sibd_budget_set(d, SIBD_RES_INBOX, SIB_MAX_INBOXES);
}

static int setup_signals(struct sibd *d)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	d->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->sig_fd < 0) {
		sibd_log("signalfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* flock <socket>.lock: SETUP_OK, SETUP_RUNNING or SETUP_FAILED. */
static int take_lock(struct sibd *d)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s.lock", d->sock_path);
	d->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (d->lock_fd < 0) {
		sibd_log("lock %s: %s", path, strerror(errno));
		return SETUP_FAILED;
	}
	if (flock(d->lock_fd, LOCK_EX | LOCK_NB) == 0)
		return SETUP_OK;
	if (errno == EWOULDBLOCK)
		return SETUP_RUNNING;
	sibd_log("flock %s: %s", path, strerror(errno));
	return SETUP_FAILED;
}

/* Bind and listen, removing a stale socket first (we hold the lock).  The
 * socket is bound under "<path>.new" and renamed into place once it
 * listens, so that a client never finds the path before it can connect
 * (a bound socket that does not listen yet refuses, ECONNREFUSED). */
static int setup_socket(struct sibd *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char stage[sizeof(sa.sun_path)];
	bool staged;
	struct stat st;

	if (lstat(d->sock_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			sibd_log("%s exists and is not a socket", d->sock_path);
			return -1;
		}
		if (unlink(d->sock_path) < 0) {
			sibd_log("unlink stale %s: %s", d->sock_path, strerror(errno));
			return -1;
		}
	}
	staged = (size_t)snprintf(stage, sizeof(stage), "%s.new", d->sock_path) < sizeof(stage);
	if (staged)
		unlink(stage); /* a stale one of a daemon that died here */
	strcpy(sa.sun_path, staged ? stage : d->sock_path);
	d->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (d->listen_fd < 0) {
		sibd_log("socket: %s", strerror(errno));
		return -1;
	}
	if (bind(d->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		sibd_log("bind %s: %s", sa.sun_path, strerror(errno));
		return -1;
	}
	if (listen(d->listen_fd, 128) < 0 || (staged && rename(stage, d->sock_path) < 0)) {
		sibd_log("listen %s: %s", d->sock_path, strerror(errno));
		unlink(sa.sun_path);
		return -1;
	}
	return 0;
}

static int setup_epoll(struct sibd *d)
{
	struct epoll_event ev = { .events = EPOLLIN };

	d->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (d->ep_fd < 0) {
		sibd_log("epoll_create1: %s", strerror(errno));
		return -1;
	}
	ev.data.ptr = &d->listen_fd;
	if (epoll_ctl(d->ep_fd, EPOLL_CTL_ADD, d->listen_fd, &ev) < 0)
		goto fail;
	ev.data.ptr = &d->sig_fd;
	if (epoll_ctl(d->ep_fd, EPOLL_CTL_ADD, d->sig_fd, &ev) < 0)
		goto fail;
	ev.data.ptr = d->mai; /* every MAI channel, through mai_chan.c's epoll */
	if (epoll_ctl(d->ep_fd, EPOLL_CTL_ADD, sibd_mai_poll_fd(d), &ev) < 0)
		goto fail;
	ev.data.ptr = d->ucma; /* every rdma_cm event channel, through ucma.c's epoll */
	if (epoll_ctl(d->ep_fd, EPOLL_CTL_ADD, sibd_ucma_poll_fd(d), &ev) < 0)
		goto fail;
	ev.data.ptr = &d->issm; /* ISSM FIFO opens and closes (issm.c) */
	if (epoll_ctl(d->ep_fd, EPOLL_CTL_ADD, sibd_issm_fd(d), &ev) < 0)
		goto fail;
	return 0;
fail:
	sibd_log("epoll_ctl: %s", strerror(errno));
	return -1;
}

static int setup(struct sibd *d)
{
	int ret;

	umask(077);
	fd_limits(d);
	if (setup_signals(d))
		return SETUP_FAILED;
	if (private_dir(d->sock_path))
		return SETUP_FAILED;
	ret = take_lock(d);
	if (ret != SETUP_OK)
		return ret;
	if (sibd_subnet_attach(d) || sibd_fabric_load(d) || sibd_map_create(d) ||
	    sibd_pairs_init(d) || sibd_mai_init(d) || sibd_ucma_init(d) || sibd_issm_init(d) ||
	    setup_socket(d))
		return SETUP_FAILED;
	if (setup_epoll(d)) {
		unlink(d->sock_path);
		return SETUP_FAILED;
	}
	d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* accept_out_of_fds */
	return SETUP_OK;
}

/* Undo setup() from wherever it stopped.  The socket goes first, the lock next. */
static void teardown(struct sibd *d, bool listening)
{
	if (listening)
		unlink(d->sock_path);
	if (d->listen_fd >= 0)
		close(d->listen_fd);
	if (d->lock_fd >= 0)
		close(d->lock_fd); /* the lock file stays: unlinking it would race */
	while (d->clients)
		sibd_client_release(d, d->clients);
	sibd_pairs_fini(d);
	sibd_ucma_fini(d);
	sibd_mai_fini(d);
	sibd_issm_fini(d);
	sibd_mcast_fini(d);
	sibd_map_destroy(d);
	sib_subnet_unload(d->sn);
	sib_subnet_delete(d->sn);
	d->sn = NULL;
	if (d->ep_fd >= 0)
		close(d->ep_fd);
	if (d->sig_fd >= 0)
		close(d->sig_fd);
	if (d->reserve_fd >= 0)
		close(d->reserve_fd);
}

/* ---- event loop --------------------------------------------------------- */

#define ACCEPT_PAUSE_MS 100

/*
 * accept() ran out of descriptors: the listening socket stays readable
 * (level-triggered), so refuse the connection with the descriptor kept in
 * reserve; without one, stop listening for ACCEPT_PAUSE_MS (run() resumes).
 * Either way the loop does not spin.  Returns true if the caller may accept
 * again.
 */
static bool accept_out_of_fds(struct sibd *d, int err)
{
	int fd;

	if (d->reserve_fd >= 0) {
		close(d->reserve_fd);
		fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		err = fd < 0 ? errno : err;
		if (fd >= 0)
			close(fd);
		d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			d->ctr.refused++;
			if (!d->fd_warned)
				sibd_log("refused a connection: %s", strerror(err));
			d->fd_warned = true;
			return d->reserve_fd >= 0;
		}
		if (err == EAGAIN || err == ECONNABORTED)
			return false; /* nobody is waiting after all */
	}
	sibd_log("accept: %s: not accepting for %d ms", strerror(err), ACCEPT_PAUSE_MS);
	epoll_ctl(d->ep_fd, EPOLL_CTL_DEL, d->listen_fd, NULL);
	d->accept_resume_ms = sibd_now_ms() + ACCEPT_PAUSE_MS;
	return false;
}

/* A connection of p that its budget refuses (budget.c): one message saying
 * why (SIB_CTL_F_REFUSED, status EMFILE or ENFILE), which the client reads
 * even after we close, then closed and counted. */
static void refuse_connection(struct sibd *d, int fd, int err)
{
	struct sib_ctl_msg m = { .hdr.magic = SIB_CTL_MAGIC, .hdr.op = SIB_CTL_HELLO };

	m.hdr.flags = SIB_CTL_F_REFUSED;
	m.hdr.status = err;
	sib_ctl_send(fd, &m, -1);
	close(fd);
	d->ctr.refused++;
}

static void accept_clients(struct sibd *d)
{
	struct sibd_proc *p;
	struct ucred cred;
	socklen_t len;
	int fd, err;

	if (d->accept_resume_ms)
		return; /* paused: run() resumes */
	for (;;) {
		fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int err = errno;

			if (err == ECONNABORTED || err == EINTR)
				continue;
			if (err == EMFILE || err == ENFILE) {
				if (accept_out_of_fds(d, err))
					continue;
			} else if (err != EAGAIN) {
				sibd_log("accept: %s", strerror(err));
			}
			return;
		}
		d->fd_warned = false;
		len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			sibd_log("SO_PEERCRED: %s", strerror(errno));
			close(fd);
			continue;
		}
		if (cred.uid != geteuid() && cred.uid != 0) {
			sibd_log("refused pid %d: uid %u is not ours", (int)cred.pid,
				 (unsigned int)cred.uid);
			d->ctr.refused++;
			close(fd);
			continue;
		}
		p = sibd_proc_get(d, cred.pid);
		err = p ? -sibd_budget_take(d, p, SIBD_RES_CONN) : ENOMEM;
		if (err) {
			refuse_connection(d, fd, err);
			sibd_proc_put(d, p);
		} else if (!sibd_client_new(d, fd, p)) {
			close(fd);
			sibd_proc_put(d, p);
		}
	}
}

static void read_signal(struct sibd *d)
{
	struct signalfd_siginfo si;

	while (read(d->sig_fd, &si, sizeof(si)) == sizeof(si)) {
		sibd_log("%s, exiting", strsignal((int)si.ssi_signo));
		d->stop = true;
	}
}

static int run(struct sibd *d)
{
	struct epoll_event ev[64];
	long long left;
	int i, n, timeout;

	while (!d->stop) {
		timeout = -1;
		if (d->idle_ms >= 0 && d->nclients == 0) {
			left = d->idle_since_ms + d->idle_ms - sibd_now_ms();
			if (left <= 0) {
				accept_clients(d); /* one that came in just now keeps us */
				if (d->nclients)
					continue;
				sibd_log("no client for %lld s, exiting", d->idle_ms / 1000);
				return 0;
			}
			timeout = left > INT_MAX ? INT_MAX : (int)left;
		}
		timeout = sibd_mai_timeout(d, timeout);
		timeout = sibd_ucma_timeout(d, timeout);
		timeout = subnet_timeout(d, timeout);
		if (d->accept_resume_ms) {
			left = d->accept_resume_ms - sibd_now_ms();
			if (left <= 0) {
				struct epoll_event lev = { .events = EPOLLIN, .data.ptr = &d->listen_fd };

				d->accept_resume_ms = 0;
				if (epoll_ctl(d->ep_fd, EPOLL_CTL_ADD, d->listen_fd, &lev) < 0)
					sibd_log("epoll_ctl: %s", strerror(errno));
				continue;
			}
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		n = epoll_wait(d->ep_fd, ev, 64, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			sibd_log("epoll_wait: %s", strerror(errno));
			return 1;
		}
		for (i = 0; i < n; i++) {
			if (ev[i].data.ptr == &d->listen_fd)
				accept_clients(d);
			else if (ev[i].data.ptr == &d->sig_fd)
				read_signal(d);
			else if (ev[i].data.ptr == d->mai)
				sibd_mai_event(d);
			else if (ev[i].data.ptr == &d->issm)
				sibd_issm_event(d);
			else if (ev[i].data.ptr == d->ucma)
				sibd_ucma_event(d);
			else
				sibd_client_event(d, ev[i].data.ptr, ev[i].events);
			sib_cm_dispatch(d->sn); /* what the MAD or command queued */
		}
		sibd_mai_timers(d);
		sib_cm_dispatch(d->sn);
		sibd_ucma_timers(d); /* the rdma_cm's timers and events (after routed MADs) */
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { .idle_s = -1 };
	struct sibd d = {
		.lock_fd = -1, .listen_fd = -1, .ep_fd = -1, .sig_fd = -1, .shm_fd = -1,
		.reserve_fd = -1, .budget.share = SIBD_CLIENT_SHARE,
	};
	int ready_fd = -1, ret;
	char idle[32];

	if (parse_options(argc, argv, &o, &d))
		return 1;
	if (socket_path(&o, d.sock_path, sizeof(d.sock_path)))
		return 1;
	if (o.status || o.stop)
		return sib_ctl_tool(d.sock_path, o.stop, "softibd");
	d.idle_ms = idle_ms(&o);
	/* Not dumpable: /proc/<pid>/fd and /proc/<pid>/mem of softibd then
	 * need CAP_SYS_PTRACE, so the memfds it keeps for clients (inboxes,
	 * direct placement's, dx.c) are not open to every process of the uid
	 * (docs/threat-model.md).  Inherited by --daemon's fork. */
	if (!o.dumpable && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		sibd_log("prctl(PR_SET_DUMPABLE, 0): %s", strerror(errno));

	if (o.daemon)
		ready_fd = detach();
	d.start_ms = d.idle_since_ms = sibd_now_ms();
	ret = setup(&d);
	if (ret == SETUP_RUNNING && !o.autostart)
		sibd_log("another softibd already serves %s", d.sock_path);
	if (ret != SETUP_OK) {
		teardown(&d, false);
		ret = ret == SETUP_RUNNING && o.autostart ? 0 : 1;
		report_ready(ready_fd, ret);
		return ret;
	}
	if (o.daemon) {
		daemon_stdio(); /* from here on, the log is $SOFTIB_LOG or nothing */
		report_ready(ready_fd, SETUP_OK);
	}
	if (d.idle_ms < 0)
		snprintf(idle, sizeof(idle), "never");
	else
		snprintf(idle, sizeof(idle), "after %lld s", d.idle_ms / 1000);
	sibd_log("listening on %s: %u devices, topology %s, %s SM, idle exit %s", d.sock_path,
		 d.num_devices, d.topology ? d.topology : "default",
		 sib_subnet_sm_external(d.sn) ? "external" : "built-in", idle);
	ret = run(&d);
	teardown(&d, true);
	return ret;
}
