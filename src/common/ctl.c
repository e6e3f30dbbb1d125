// SPDX-License-Identifier: MIT
/*
 * Control-socket helpers (see ctl.h): path rules, connect and autostart,
 * framed send/recv with SCM_RIGHTS, the client round trip.
 * Linked statically into the verbs library: no signal handlers, CLOEXEC on
 * every fd, every child reaped, every wait bounded.  No locks; the sequence
 * counter is atomic and callers serialize per fd.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/ctl.h"

#define SUN_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)
#define RX_FDS_MAX   8 /* fds accepted per message; the rest are closed */

extern char **environ;

static _Atomic uint32_t ctl_seq = 1;

/* Body bytes per op; STATUS adds text.len on top of this. */
static const uint16_t ctl_body_len[SIB_CTL_OP_MAX] = {
	[SIB_CTL_HELLO] = sizeof(struct sib_ctl_hello),
	[SIB_CTL_OPEN_DEVICE] = sizeof(struct sib_ctl_open_device),
	[SIB_CTL_CLOSE_DEVICE] = sizeof(uint32_t),
	[SIB_CTL_GET_INBOX] = sizeof(struct sib_ctl_get_inbox),
	[SIB_CTL_CREATE_OBJ] = sizeof(struct sib_ctl_obj),
	[SIB_CTL_DESTROY_OBJ] = sizeof(struct sib_ctl_obj),
	[SIB_CTL_STATUS] = offsetof(struct sib_ctl_text, text),
	[SIB_CTL_SHUTDOWN] = 0,
	[SIB_CTL_SUBSCRIBE] = sizeof(struct sib_ctl_subscribe),
	[SIB_CTL_EVENT] = sizeof(struct sib_ctl_event),
	[SIB_CTL_DEVICE_ADD] = sizeof(struct sib_ctl_dev_cmd),
	[SIB_CTL_DEVICE_REMOVE] = sizeof(struct sib_ctl_dev_cmd),
	[SIB_CTL_PORT_SET] = sizeof(struct sib_ctl_dev_cmd),
	[SIB_CTL_LINK_CAPTURE] = offsetof(struct sib_ctl_link, spec),
	[SIB_CTL_GET_CAPTURE] = offsetof(struct sib_ctl_link, spec),
	[SIB_CTL_LINK_FAULTS] = sizeof(struct sib_ctl_link),
	[SIB_CTL_MCAST] = sizeof(struct sib_ctl_mcast),
	[SIB_CTL_XRCD_OPEN] = sizeof(struct sib_ctl_xrcd),
	[SIB_CTL_MAI_OPEN] = sizeof(struct sib_ctl_mai_open),
	[SIB_CTL_MAI_FILTER] = sizeof(struct sib_ctl_mai_filter),
	[SIB_CTL_MGMT_QUERY] = sizeof(struct sib_ctl_mgmt_query),
	[SIB_CTL_ROUTE] = sizeof(struct sib_ctl_route),
	[SIB_CTL_PAIR_OPEN] = sizeof(struct sib_ctl_pair),
	[SIB_CTL_PAIR_ACCEPT] = sizeof(struct sib_ctl_pair),
	[SIB_CTL_CAPABLE] = sizeof(struct sib_ctl_capable),
	[SIB_CTL_DX_PUT] = sizeof(struct sib_ctl_dx),
	[SIB_CTL_DX_GET] = sizeof(struct sib_ctl_dx),
	[SIB_CTL_CM] = sizeof(struct sib_ctl_cm),
	[SIB_CTL_CM_EVENT] = sizeof(struct sib_ctl_cm_event),
	[SIB_CTL_IPADDR] = sizeof(struct sib_ctl_ipaddr),
};

/* What connect() says when no daemon serves the path. */
static bool nobody_listens(int err)
{
	return err == -ENOENT || err == -ECONNREFUSED;
}

/* The caller's uid as the parent user namespace sees it: inside `unshare
 * -r` getuid() is 0, but softibd and its /tmp/softib-UID directory are
 * the user's outside (/proc/self/uid_map: "inside outside count" lines).
 * getuid() when there is no map or it says nothing of us. */
static unsigned int outside_uid(void)
{
	unsigned long in, out, cnt;
	unsigned int uid = (unsigned int)getuid();
	FILE *f = fopen("/proc/self/uid_map", "re");

	if (!f)
		return uid;
	while (fscanf(f, "%lu %lu %lu", &in, &out, &cnt) == 3)
		if (uid >= in && uid - in < cnt) {
			uid = (unsigned int)(out + (uid - in));
			break;
		}
	fclose(f);
	return uid;
}

int sib_ctl_default_path(char *buf, size_t len)
{
	const char *env = getenv("SOFTIB_SOCKET");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if ((env = getenv("XDG_RUNTIME_DIR")) && *env)
		n = snprintf(buf, len, "%s/softib.sock", env);
	else
		n = snprintf(buf, len, "/tmp/softib-%u/softib.sock", outside_uid());
	if (n < 0 || (size_t)n >= len || (size_t)n >= SUN_PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int sib_ctl_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

size_t sib_ctl_msg_len(const struct sib_ctl_msg *msg)
{
	size_t len = sizeof(msg->hdr);
	uint32_t tlen;

	if (msg->hdr.op >= SIB_CTL_OP_MAX)
		return len;
	len += ctl_body_len[msg->hdr.op];
	if (msg->hdr.op == SIB_CTL_STATUS) {
		tlen = msg->u.text.len;
		len += tlen < SIB_CTL_TEXT_MAX ? tlen : SIB_CTL_TEXT_MAX;
	}
	return len;
}

int sib_ctl_send(int fd, const struct sib_ctl_msg *msg, int pass_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = sib_ctl_msg_len(msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	if (pass_fd >= 0) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == iov.iov_len ? 0 : -EMSGSIZE;
}

int sib_ctl_recv(int fd, struct sib_ctl_msg *msg, int *recv_fd)
{
	union {
		char buf[CMSG_SPACE(RX_FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(*msg) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cm.buf, .msg_controllen = sizeof(cm.buf),
	};
	struct cmsghdr *c;
	int keep = -1, f;
	size_t i, nfds;
	ssize_t n;

	memset(msg, 0, sizeof(*msg));
	if (recv_fd)
		*recv_fd = -1;
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;

	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfds; i++) {
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (recv_fd && keep < 0)
				keep = f;
			else
				close(f);
		}
	}
	if (mh.msg_flags & MSG_TRUNC) {
		if (keep >= 0)
			close(keep);
		return -EMSGSIZE;
	}
	if (recv_fd)
		*recv_fd = keep;
	return (int)n;
}

/* Receive the reply to (op, seq): 0 or -errno; closes a passed fd on error. */
static int ctl_recv_reply(int fd, struct sib_ctl_msg *msg, uint16_t op, uint32_t seq,
			  int *recv_fd)
{
	int n = sib_ctl_recv(fd, msg, recv_fd);

	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return n;
	if ((size_t)n >= sizeof(msg->hdr) && msg->hdr.magic == SIB_CTL_MAGIC &&
	    (msg->hdr.flags & SIB_CTL_F_REFUSED)) /* softibd refused this connection */
		n = msg->hdr.status > 0 ? -msg->hdr.status : -ECONNREFUSED;
	else if ((size_t)n < sizeof(msg->hdr) || msg->hdr.magic != SIB_CTL_MAGIC ||
		 msg->hdr.op != op || msg->hdr.seq != seq)
		n = -EPROTO;
	if (n < 0) {
		if (recv_fd && *recv_fd >= 0) {
			close(*recv_fd);
			*recv_fd = -1;
		}
		return n;
	}
	return 0;
}

/* Did softibd refuse this connection (docs/daemon.md "Budgets")?  Its
 * notice waits in the closed socket; a closing peer that had not read our
 * request also leaves ECONNRESET, which the first recv reports instead
 * (and clears).  True, with the notice in msg (hdr.status: why). */
static bool ctl_refused(int fd, struct sib_ctl_msg *msg)
{
	ssize_t n = -1;

	for (int i = 0; i < 2 && n < 0; i++)
		n = recv(fd, msg, sizeof(*msg), MSG_DONTWAIT);
	return n >= (ssize_t)sizeof(msg->hdr) && msg->hdr.magic == SIB_CTL_MAGIC &&
	       (msg->hdr.flags & SIB_CTL_F_REFUSED) && msg->hdr.status > 0;
}

int sib_ctl_call(int fd, struct sib_ctl_msg *msg, int *recv_fd)
{
	return sib_ctl_call_fd(fd, msg, -1, recv_fd);
}

int sib_ctl_call_fd(int fd, struct sib_ctl_msg *msg, int pass_fd, int *recv_fd)
{
	uint16_t op = msg->hdr.op;
	uint32_t seq = atomic_fetch_add_explicit(&ctl_seq, 1, memory_order_relaxed);
	int ret;

	if (recv_fd)
		*recv_fd = -1;
	msg->hdr.magic = SIB_CTL_MAGIC;
	msg->hdr.seq = seq;
	msg->hdr.flags = 0;
	msg->hdr.status = 0;
	ret = sib_ctl_send(fd, msg, pass_fd);
	if (!ret)
		ret = ctl_recv_reply(fd, msg, op, seq, recv_fd);
	if ((ret == -EPIPE || ret == -ECONNRESET) && ctl_refused(fd, msg))
		return -msg->hdr.status;
	return ret;
}

int sib_ctl_status(int fd, char **text)
{
	struct sib_ctl_msg msg = { .hdr.op = SIB_CTL_STATUS };
	char *buf = NULL, *nbuf;
	size_t len = 0, n;
	uint32_t seq;
	int ret;

	*text = NULL;
	ret = sib_ctl_call(fd, &msg, NULL);
	seq = msg.hdr.seq;
	while (!ret) {
		if (msg.hdr.status) {
			ret = -msg.hdr.status;
			break;
		}
		n = msg.u.text.len < SIB_CTL_TEXT_MAX ? msg.u.text.len : SIB_CTL_TEXT_MAX;
		nbuf = realloc(buf, len + n + 1);
		if (!nbuf) {
			ret = -ENOMEM;
			break;
		}
		buf = nbuf;
		memcpy(buf + len, msg.u.text.text, n);
		len += n;
		buf[len] = '\0';
		if (!(msg.hdr.flags & SIB_CTL_F_MORE)) {
			*text = buf;
			return 0;
		}
		ret = ctl_recv_reply(fd, &msg, SIB_CTL_STATUS, seq, NULL);
	}
	free(buf);
	return ret;
}

int sib_ctl_stop(int fd)
{
	struct sib_ctl_msg msg = { .hdr.op = SIB_CTL_SHUTDOWN };
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ret;

	ret = sib_ctl_call(fd, &msg, NULL);
	if (ret)
		return ret;
	if (msg.hdr.status)
		return -msg.hdr.status;
	for (;;) {
		ret = poll(&pfd, 1, SIB_CTL_AUTOSTART_MS);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			return ret < 0 ? -errno : -ETIMEDOUT;
		ret = sib_ctl_recv(fd, &msg, NULL);
		if (ret <= 0)
			return ret == 0 || ret == -ECONNRESET ? 0 : ret;
	}
}

int sib_ctl_tool_connect(const char *path, const char *prog)
{
	char def[SUN_PATH_MAX];
	int fd;

	if (!path) {
		int ret = sib_ctl_default_path(def, sizeof(def));

		if (ret) {
			fprintf(stderr, "%s: socket path: %s\n", prog, strerror(-ret));
			return -1;
		}
		path = def;
	}
	fd = sib_ctl_connect(path);
	if (fd < 0) {
		if (nobody_listens(fd))
			fprintf(stderr, "softibd is not running (no daemon on %s)\n", path);
		else
			fprintf(stderr, "%s: connect %s: %s\n", prog, path, strerror(-fd));
		return -1;
	}
	return fd;
}

int sib_ctl_tool(const char *path, bool stop, const char *prog)
{
	char *text;
	int fd, ret;

	fd = sib_ctl_tool_connect(path, prog);
	if (fd < 0)
		return 1;
	if (stop) {
		ret = sib_ctl_stop(fd);
	} else {
		ret = sib_ctl_status(fd, &text);
		if (!ret) {
			fputs(text, stdout);
			free(text);
		}
	}
	close(fd);
	if (ret) {
		fprintf(stderr, "%s: %s: %s\n", prog, stop ? "stop" : "status", strerror(-ret));
		return 1;
	}
	return 0;
}

/* ---- autostart ---------------------------------------------------------- */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* buf = dir + rel if that fits and is executable. */
static bool exec_ok(char *buf, size_t len, const char *dir, const char *rel)
{
	int n = snprintf(buf, len, "%s%s", dir, rel);

	return n > 0 && (size_t)n < len && access(buf, X_OK) == 0;
}

/*
 * Where softibd is: $SOFTIBD; else next to the object that holds this code
 * (the verbs library in build/lib or an executable in build/bin):
 * <dir>/../bin/softibd, then <dir>/softibd; else "softibd" from $PATH.
 */
static void find_softibd(char *buf, size_t len)
{
	const char *env = getenv("SOFTIBD");
	char obj[PATH_MAX], *slash;
	Dl_info info;
	ssize_t n;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return;
	}
	/* dladdr() names the main program by argv[0], which may lack a directory */
	if (!dladdr((void *)(uintptr_t)sib_ctl_open, &info) || !info.dli_fname ||
	    !strchr(info.dli_fname, '/') || !realpath(info.dli_fname, obj)) {
		n = readlink("/proc/self/exe", obj, sizeof(obj) - 1);
		obj[n > 0 ? n : 0] = '\0';
	}
	slash = strrchr(obj, '/');
	if (slash) {
		*slash = '\0';
		if (exec_ok(buf, len, obj, "/../bin/softibd") || exec_ok(buf, len, obj, "/softibd"))
			return;
	}
	snprintf(buf, len, "softibd");
}

/*
 * Run `exe --daemon --autostart --socket path` and reap it.  Its first
 * process exits once the daemon listens (0), finds another daemon holding
 * the lock (0), or fails (non-zero; its wait status goes to *status).
 * Returns 0, -EIO (it failed), -ETIMEDOUT or -errno of posix_spawn.
 */
static int spawn_softibd(const char *exe, const char *path, long long deadline, int *status)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT };
	char *argv[] = { (char *)exe, "--daemon", "--autostart", "--socket", (char *)path, NULL };
	posix_spawnattr_t attr;
	sigset_t none, defs;
	pid_t pid, w;
	int ret, st;
	size_t i;

	sigemptyset(&none);
	sigemptyset(&defs);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&defs, sigs[i]);
	ret = posix_spawnattr_init(&attr);
	if (ret)
		return -ret;
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &defs);
	ret = posix_spawnp(&pid, exe, NULL, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	if (ret)
		return -ret;

	for (;;) {
		w = waitpid(pid, &st, WNOHANG);
		if (w == pid) {
			*status = st;
			return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
		}
		if (w < 0 && errno == ECHILD)
			return 0; /* reaped by the application (SIGCHLD ignored) */
		if (w < 0 && errno != EINTR)
			return -errno;
		if (now_ms() >= deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			return -ETIMEDOUT;
		}
		sleep_ms(5);
	}
}

/* Format the reason of a failed open into why (if any); returns err. */
__attribute__((format(printf, 4, 5)))
static int say_why(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

int sib_ctl_open(bool allow_autostart)
{
	return sib_ctl_open_why(allow_autostart, NULL, 0);
}

int sib_ctl_open_why(bool allow_autostart, char *why, size_t len)
{
	const char *no = getenv("SOFTIB_NO_AUTOSTART");
	long long deadline, next_spawn;
	char path[SUN_PATH_MAX], exe[PATH_MAX];
	int fd, ret, st = 0;

	ret = sib_ctl_default_path(path, sizeof(path));
	if (ret)
		return say_why(why, len, ret, "control socket path: %s", strerror(-ret));
	fd = sib_ctl_connect(path);
	if (fd >= 0)
		return fd;
	if (!nobody_listens(fd))
		return say_why(why, len, fd, "connect %s: %s", path, strerror(-fd));
	if (!allow_autostart)
		return say_why(why, len, fd, "no softibd listens on %s", path);
	if (no && !strcmp(no, "1"))
		return say_why(why, len, fd, "no softibd listens on %s and autostart is off "
			       "(SOFTIB_NO_AUTOSTART=1)", path);
	find_softibd(exe, sizeof(exe));

	/*
	 * A daemon that is idling out may still hold the lock when ours starts;
	 * ours then exits quietly, so spawn again (at most every 250 ms) until
	 * the socket answers or the deadline passes.
	 */
	deadline = now_ms() + SIB_CTL_AUTOSTART_MS;
	next_spawn = 0;
	for (;;) {
		if (now_ms() >= next_spawn) {
			ret = spawn_softibd(exe, path, deadline, &st);
			if (ret == -EIO)
				return say_why(why, len, ret, "%s failed to start for %s (exit "
					       "status %d); its message is above or in $SOFTIB_LOG",
					       exe, path, WIFEXITED(st) ? WEXITSTATUS(st) : 128 +
					       WTERMSIG(st));
			if (ret == -ETIMEDOUT)
				return say_why(why, len, ret, "%s did not become ready for %s "
					       "within %d ms", exe, path, SIB_CTL_AUTOSTART_MS);
			if (ret)
				return say_why(why, len, ret, "could not start softibd (%s): %s",
					       exe, strerror(-ret));
			next_spawn = now_ms() + 250;
		}
		fd = sib_ctl_connect(path);
		if (fd >= 0)
			return fd;
		if (!nobody_listens(fd))
			return say_why(why, len, fd, "connect %s: %s", path, strerror(-fd));
		if (now_ms() >= deadline)
			return say_why(why, len, -ETIMEDOUT, "softibd (%s) started but %s did "
				       "not answer within %d ms", exe, path, SIB_CTL_AUTOSTART_MS);
		sleep_ms(10);
	}
}

int sib_ctl_ipaddr_parse(const char *s, bool del, struct sib_ctl_ipaddr *ia)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	unsigned long prefix;
	int fam;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	if ((slash = strchr(buf, '/')))
		*slash++ = '\0';
	fam = strchr(buf, ':') ? AF_INET6 : AF_INET;
	memset(ia->addr, 0, sizeof(ia->addr));
	if (inet_pton(fam, buf, ia->addr) != 1)
		return -EINVAL;
	ia->family = (uint16_t)fam;
	ia->prefix = del ? SIB_IPADDR_PREFIX_ANY : (fam == AF_INET ? 32 : 128);
	if (slash) {
		errno = 0;
		prefix = strtoul(slash, &end, 10);
		if (errno || end == slash || *end || *slash == '-' || *slash == '+' ||
		    prefix > (fam == AF_INET ? 32u : 128u))
			return -EINVAL;
		ia->prefix = (uint8_t)prefix;
	}
	return 0;
}

int sib_ctl_ipaddr_call(const char *path, struct sib_ctl_ipaddr *ia, const char *prog)
{
	struct timeval tv = { .tv_sec = 10 };
	struct sib_ctl_msg m;
	int fd, ret;

	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_IPADDR;
	m.u.ipaddr = *ia;
	fd = sib_ctl_tool_connect(path, prog);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ret = sib_ctl_call(fd, &m, NULL);
	close(fd);
	if (ret) {
		fprintf(stderr, "%s: %s\n", prog, strerror(-ret));
		return -1;
	}
	if (!m.hdr.status)
		*ia = m.u.ipaddr;
	return m.hdr.status;
}
