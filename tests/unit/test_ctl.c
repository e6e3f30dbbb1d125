// SPDX-License-Identifier: MIT
/*
 * softibd and the control socket helpers (src/common/ctl.c), tested against
 * a real daemon: started in the foreground on a private socket in a mkdtemp
 * directory, stopped by PID at the end.  Every wait is bounded; every
 * process started here is stopped here.  SOFTIBD_PATH comes from CMake.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "common/ctl.h"
#include "common/sib_shm.h"

#ifndef SOFTIBD_PATH
#error "SOFTIBD_PATH must name the softibd binary"
#endif

#define WAIT_MS 5000

static struct {
	char dir[64];
	char sock[128];
	pid_t pid;                        /* the shared foreground daemon */
	const struct sib_fabric_shm *map; /* its fabric map, read-only */
	size_t map_size;
	pid_t extra[8];                   /* other daemons, stopped in teardown */
} g;

/* ---- processes ---------------------------------------------------------- */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Wait up to ms for our child pid; its wait status, or -1 if it still runs. */
static int wait_child(pid_t pid, int ms)
{
	long long end = now_ms() + ms;
	int st;

	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			return st;
		if (w < 0 && errno != EINTR)
			return -2;
		if (now_ms() >= end)
			return -1;
		sleep_ms(10);
	}
}

/* SIGTERM, then SIGKILL after WAIT_MS: the wait status. */
static int stop_child(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	st = wait_child(pid, WAIT_MS);
	if (st == -1) {
		kill(pid, SIGKILL);
		st = wait_child(pid, WAIT_MS);
	}
	return st;
}

/* True once pid (not our child) is gone or a zombie. */
static bool pid_gone(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	return !p || p[2] == 'Z' || p[2] == 'X';
}

static bool wait_pid_gone(pid_t pid, int ms)
{
	long long end = now_ms() + ms;

	while (!pid_gone(pid)) {
		if (now_ms() >= end)
			return false;
		sleep_ms(10);
	}
	return true;
}

/* Run softibd with args (NULL-terminated); returns its pid, not waiting. */
static pid_t spawn_softibd(const char *arg, ...)
{
	const char *argv[16] = { SOFTIBD_PATH };
	int n = 1;
	va_list ap;
	pid_t pid;

	va_start(ap, arg);
	for (; arg && n < 15; arg = va_arg(ap, const char *))
		argv[n++] = arg;
	va_end(ap);
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		execv(SOFTIBD_PATH, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static void track(pid_t pid)
{
	for (size_t i = 0; i < sizeof(g.extra) / sizeof(g.extra[0]); i++)
		if (!g.extra[i]) {
			g.extra[i] = pid;
			return;
		}
}

static void untrack(pid_t pid)
{
	for (size_t i = 0; i < sizeof(g.extra) / sizeof(g.extra[0]); i++)
		if (g.extra[i] == pid)
			g.extra[i] = 0;
}

/* Connect with a receive timeout, so that no test waits forever on a reply. */
static int tconnect(const char *sock)
{
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };
	int fd = sib_ctl_connect(sock);

	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Wait (bounded) until sock accepts connections while pid runs. */
static bool wait_listening(const char *sock, pid_t pid)
{
	long long end = now_ms() + WAIT_MS;
	int fd;

	while (now_ms() < end) {
		fd = sib_ctl_connect(sock);
		if (fd >= 0) {
			close(fd);
			return true;
		}
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return false;
		sleep_ms(10);
	}
	return false;
}

/* ---- protocol helpers --------------------------------------------------- */

static int call(int fd, struct sib_ctl_msg *m, uint16_t op, int *rfd)
{
	m->hdr.op = op;
	assert_int_equal(sib_ctl_call(fd, m, rfd), 0);
	return m->hdr.status;
}

static int hello(int fd, int *mapfd)
{
	struct sib_ctl_msg m = { .u.hello = { .abi_version = SIB_ABI_VERSION, .pid = getpid() } };
	int rfd, st = call(fd, &m, SIB_CTL_HELLO, &rfd);

	if (mapfd)
		*mapfd = rfd;
	else if (rfd >= 0)
		close(rfd);
	return st;
}

/* A connection that has said HELLO. */
static int client(void)
{
	int fd = tconnect(g.sock);

	assert_true(fd >= 0);
	assert_int_equal(hello(fd, NULL), 0);
	return fd;
}

static int open_dev(int fd, uint32_t idx, struct sib_ctl_open_device *od, int *inbox_fd)
{
	struct sib_ctl_msg m = { .u.open.dev_index = idx };
	int rfd, st;

	if (idx < SIB_MAX_DEVICES) /* the registration the client saw in the map */
		m.u.open.dev_gen = atomic_load(&g.map->devs[idx].gen);
	st = call(fd, &m, SIB_CTL_OPEN_DEVICE, &rfd);

	*od = m.u.open;
	if (inbox_fd)
		*inbox_fd = rfd;
	else if (rfd >= 0)
		close(rfd);
	return st;
}

static int create_obj(int fd, uint32_t type, uint32_t dev, uint32_t qp_type, struct sib_ctl_obj *o)
{
	struct sib_ctl_msg m = { .u.obj = { .type = type, .dev_handle = dev, .qp_type = qp_type } };
	int st = call(fd, &m, SIB_CTL_CREATE_OBJ, NULL);

	*o = m.u.obj;
	return st;
}

static int destroy_obj(int fd, uint32_t handle, uint32_t type)
{
	struct sib_ctl_msg m = { .u.obj = { .handle = handle, .type = type } };

	return call(fd, &m, SIB_CTL_DESTROY_OBJ, NULL);
}

static int close_dev(int fd, uint32_t handle)
{
	struct sib_ctl_msg m = { .u.handle = handle };

	return call(fd, &m, SIB_CTL_CLOSE_DEVICE, NULL);
}

static int get_inbox(int fd, uint32_t dev_handle, uint32_t inbox, uint32_t gen, int *rfd)
{
	struct sib_ctl_msg m = { .u.get_inbox = { .inbox = inbox, .inbox_gen = gen,
						  .dev_handle = dev_handle } };

	return call(fd, &m, SIB_CTL_GET_INBOX, rfd);
}

/* PAIR_OPEN (op SIB_CTL_PAIR_OPEN) or PAIR_ACCEPT: *pr in and out. */
static int pair_call(int fd, uint32_t op, struct sib_ctl_pair *pr, int *rfd)
{
	struct sib_ctl_msg m = { .u.pair = *pr };
	int st = call(fd, &m, op, rfd);

	*pr = m.u.pair;
	return st;
}

static uint64_t qp_owner(uint32_t qpn)
{
	return atomic_load_explicit(&g.map->qp_owner[qpn], memory_order_acquire);
}

static uint32_t inbox_gen(uint32_t inbox)
{
	return atomic_load_explicit(&g.map->inboxes[inbox].gen, memory_order_acquire);
}

/* The STATUS report, over a connection of its own. */
static char *status_text(void)
{
	int fd = tconnect(g.sock);
	char *text = NULL;

	assert_true(fd >= 0);
	assert_int_equal(sib_ctl_status(fd, &text), 0);
	close(fd);
	return text;
}

/* The line of text that starts with prefix, or NULL. */
static const char *find_line(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, prefix, n))
			return l;
	return NULL;
}

/* key=<number> on the line starting with prefix, or -1. */
static long long status_num(const char *text, const char *prefix, const char *key)
{
	const char *l = find_line(text, prefix), *eol, *k;
	char pat[64];

	if (!l)
		return -1;
	eol = strchr(l, '\n');
	snprintf(pat, sizeof(pat), " %s=", key);
	k = strstr(l, pat);
	if (!k || (eol && k > eol))
		return -1;
	return strtoll(k + strlen(pat), NULL, 10);
}

/* ---- setup -------------------------------------------------------------- */

static int group_setup(void **state)
{
	int fd, mapfd = -1;
	struct sib_ctl_msg m = { .u.hello.abi_version = SIB_ABI_VERSION };

	snprintf(g.dir, sizeof(g.dir), "/tmp/softib-test-XXXXXX");
	if (!mkdtemp(g.dir))
		return -1;
	snprintf(g.sock, sizeof(g.sock), "%s/ctl.sock", g.dir);
	setenv("SOFTIB_IDLE_EXIT", "10", 1); /* autostarted leftovers go away */
	unsetenv("SOFTIBD");
	unsetenv("SOFTIB_NO_AUTOSTART");
	g.pid = spawn_softibd("--foreground", "--socket", g.sock, NULL);
	if (g.pid < 0 || !wait_listening(g.sock, g.pid))
		return -1;
	fd = tconnect(g.sock);
	m.hdr.op = SIB_CTL_HELLO;
	if (fd < 0 || sib_ctl_call(fd, &m, &mapfd) || m.hdr.status || mapfd < 0)
		return -1;
	g.map_size = m.u.hello.fabric_size;
	g.map = mmap(NULL, g.map_size, PROT_READ, MAP_SHARED, mapfd, 0);
	close(mapfd);
	close(fd);
	return g.map == MAP_FAILED ? -1 : 0;
}

static void rm_dir(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static int group_teardown(void **state)
{
	for (size_t i = 0; i < sizeof(g.extra) / sizeof(g.extra[0]); i++)
		if (g.extra[i] > 0) {
			kill(g.extra[i], SIGTERM);
			if (!wait_pid_gone(g.extra[i], WAIT_MS))
				kill(g.extra[i], SIGKILL);
			waitpid(g.extra[i], NULL, WNOHANG);
		}
	if (g.map && g.map != MAP_FAILED)
		munmap((void *)g.map, g.map_size);
	if (g.pid > 0)
		stop_child(g.pid);
	rm_dir(g.dir);
	return 0;
}

/* ---- tests -------------------------------------------------------------- */

static void test_default_path(void **state)
{
	char buf[128], small[8];

	setenv("SOFTIB_SOCKET", "/x/y.sock", 1);
	assert_int_equal(sib_ctl_default_path(buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/x/y.sock");
	assert_int_equal(sib_ctl_default_path(small, sizeof(small)), -ENAMETOOLONG);
	unsetenv("SOFTIB_SOCKET");
	setenv("XDG_RUNTIME_DIR", "/run/user/1", 1);
	assert_int_equal(sib_ctl_default_path(buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/run/user/1/softib.sock");
	unsetenv("XDG_RUNTIME_DIR");
	assert_int_equal(sib_ctl_default_path(buf, sizeof(buf)), 0);
	assert_true(!strncmp(buf, "/tmp/softib-", 12));
	assert_non_null(strstr(buf, "/softib.sock"));
}

static void test_hello_fabric_map(void **state)
{
	const struct sib_fabric_shm *m = g.map;
	char name[16];
	uint32_t i;
	int fd, mapfd;

	fd = tconnect(g.sock);
	assert_true(fd >= 0);
	assert_int_equal(hello(fd, &mapfd), 0);
	assert_true(mapfd >= 0);
	assert_true(fcntl(mapfd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(ftruncate(mapfd, 0), -1); /* sealed: nobody can pull it away */
	close(mapfd);
	close(fd);

	assert_int_equal(m->magic, SIB_SHM_MAGIC);
	assert_int_equal(m->abi_version, SIB_ABI_VERSION);
	assert_int_equal(m->size, sizeof(struct sib_fabric_shm));
	assert_int_equal(m->daemon_pid, (uint64_t)g.pid);
	assert_int_equal(m->num_devices, 4);
	for (i = 0; i < 4; i++) {
		const struct sib_shm_port *p = &m->devs[i].ports[0];

		snprintf(name, sizeof(name), "softib%u", i);
		assert_string_equal(m->devs[i].name, name);
		assert_int_equal(m->devs[i].num_ports, 1);
		assert_int_not_equal(m->devs[i].node_guid, 0);
		assert_int_equal(p->lid, 2 + i);
		assert_int_equal(p->state, IBV_PORT_ACTIVE);
		assert_int_equal(p->phys_state, 5);
		assert_int_equal(p->sm_lid, 1);
		assert_int_equal(p->active_mtu, IBV_MTU_4096);
		assert_int_equal(p->active_width, 2);
		assert_int_equal(p->active_speed, 4);
		assert_int_equal(p->pkey[0], 0xffff);
		assert_int_equal(p->gid_prefix, 0xfe80000000000000ull);
		assert_int_equal(p->cap_flags & IBV_PORT_SM, 0);
		assert_int_equal(atomic_load(&m->lid_map[2 + i]), SIB_LIDM_MAKE(i, 1));
	}
	assert_int_equal(atomic_load(&m->lid_map[1]), 0); /* the switch */
}

static void test_wrong_abi(void **state)
{
	struct sib_ctl_msg m = { .u.hello.abi_version = SIB_ABI_VERSION + 7 };
	struct sib_ctl_open_device od;
	int fd = tconnect(g.sock), rfd;

	assert_true(fd >= 0);
	assert_int_equal(call(fd, &m, SIB_CTL_HELLO, &rfd), EPROTO);
	assert_int_equal(m.u.hello.abi_version, SIB_ABI_VERSION);
	assert_int_equal(rfd, -1);
	/* nothing but HELLO, STATUS and SHUTDOWN before a good HELLO */
	assert_int_equal(open_dev(fd, 0, &od, NULL), EPROTO);
	assert_int_equal(hello(fd, NULL), 0);
	assert_int_equal(open_dev(fd, 0, &od, NULL), 0);
	close(fd);
}

static void test_open_device_and_inbox(void **state)
{
	struct sib_ctl_open_device od;
	int fd = client(), ifd, gfd;
	uint32_t old_inbox;
	struct stat st;

	assert_int_equal(open_dev(fd, 4, &od, NULL), ENODEV);
	assert_int_equal(open_dev(fd, UINT32_MAX, &od, NULL), ENODEV);

	assert_int_equal(open_dev(fd, 2, &od, &ifd), 0);
	assert_true(ifd >= 0);
	assert_int_not_equal(od.handle, 0);
	assert_int_equal(od.inbox_size, SIB_INBOX_BYTES);
	assert_int_equal(fstat(ifd, &st), 0);
	assert_int_equal(st.st_size, SIB_INBOX_BYTES);
	assert_int_equal(od.inbox_gen & 1, 1);
	assert_int_equal(inbox_gen(od.inbox), od.inbox_gen);
	assert_int_equal(g.map->inboxes[od.inbox].pid, getpid());
	assert_int_equal(g.map->inboxes[od.inbox].dev_index, 2);
	close(ifd);

	/* Nobody maps a context's page without a pair ring to it, not even
	 * its own connection (issue 15: inboxes were anyone's to read). */
	assert_int_equal(get_inbox(fd, od.handle, od.inbox, od.inbox_gen, &gfd), EPERM);
	assert_int_equal(gfd, -1);
	assert_int_equal(get_inbox(fd, od.handle + 77, od.inbox, od.inbox_gen, &gfd), EBADF);
	assert_int_equal(get_inbox(fd, od.handle, od.inbox, od.inbox_gen + 2, &gfd), ESTALE);
	assert_int_equal(get_inbox(fd, od.handle, od.inbox, od.inbox_gen - 1, &gfd), ESTALE);
	assert_int_equal(gfd, -1);
	assert_int_equal(get_inbox(fd, od.handle, SIB_MAX_INBOXES, 1, &gfd), EINVAL);
	/* With one (here to itself, as a QP sending to a QP of its own
	 * context), with the right gen only. */
	{
		struct sib_ctl_pair pr = { .dev_handle = od.handle, .inbox = od.inbox,
					   .inbox_gen = od.inbox_gen };
		int rfd;

		assert_int_equal(pair_call(fd, SIB_CTL_PAIR_OPEN, &pr, &rfd), 0);
		assert_int_equal(pr.ring_size, SIB_PAIR_BYTES);
		assert_int_equal(fstat(rfd, &st), 0);
		assert_int_equal(st.st_size, SIB_PAIR_BYTES);
		close(rfd);
		assert_int_equal(get_inbox(fd, od.handle, od.inbox, od.inbox_gen, &gfd), 0);
		assert_true(gfd >= 0);
		close(gfd);
		pr = (struct sib_ctl_pair){ .dev_handle = od.handle };
		assert_int_equal(pair_call(fd, SIB_CTL_PAIR_ACCEPT, &pr, &rfd), 0);
		assert_int_equal(pr.inbox, od.inbox); /* the sender, as softibd knows it */
		assert_int_equal(pr.inbox_gen, od.inbox_gen);
		assert_true(rfd >= 0);
		close(rfd);
		assert_int_equal(pair_call(fd, SIB_CTL_PAIR_ACCEPT, &pr, &rfd), ENOENT);
		pr = (struct sib_ctl_pair){ .dev_handle = od.handle, .inbox = od.inbox,
					    .inbox_gen = od.inbox_gen + 2 };
		assert_int_equal(pair_call(fd, SIB_CTL_PAIR_OPEN, &pr, &rfd), ESTALE);
		pr.dev_handle = od.handle + 77;
		pr.inbox_gen = od.inbox_gen;
		assert_int_equal(pair_call(fd, SIB_CTL_PAIR_OPEN, &pr, &rfd), EBADF);
	}

	assert_int_equal(close_dev(fd, od.handle), 0);
	assert_int_equal(inbox_gen(od.inbox), od.inbox_gen + 1); /* even: retired */
	assert_int_equal(get_inbox(fd, od.handle, od.inbox, od.inbox_gen, &gfd), ESTALE);
	assert_int_equal(close_dev(fd, od.handle), EBADF);

	/* a freed inbox index is not handed out again at once */
	old_inbox = od.inbox;
	assert_int_equal(open_dev(fd, 2, &od, NULL), 0);
	assert_int_not_equal(od.inbox, old_inbox);
	close(fd);
}

static void test_qpns_two_connections(void **state)
{
	struct sib_ctl_open_device da, db;
	struct sib_ctl_obj qa[2], qb, pd, o;
	int a = client(), b = client();
	uint64_t w;

	assert_int_equal(open_dev(a, 0, &da, NULL), 0);
	assert_int_equal(open_dev(b, 1, &db, NULL), 0);
	assert_int_equal(create_obj(a, SIB_OBJ_QP, da.handle, IBV_QPT_RC, &qa[0]), 0);
	assert_int_equal(create_obj(a, SIB_OBJ_QP, da.handle, IBV_QPT_UD, &qa[1]), 0);
	assert_int_equal(create_obj(b, SIB_OBJ_QP, db.handle, IBV_QPT_RC, &qb), 0);
	assert_true(qa[0].qpn >= 2 && qa[1].qpn >= 2 && qb.qpn >= 2);
	assert_true(qa[0].qpn < SIB_MAX_QPN && qb.qpn < SIB_MAX_QPN);
	assert_int_not_equal(qa[0].qpn, qa[1].qpn);
	assert_int_not_equal(qa[0].qpn, qb.qpn);
	assert_int_not_equal(qa[1].qpn, qb.qpn);

	w = qp_owner(qa[0].qpn);
	assert_true(w & SIB_QPO_VALID);
	assert_int_equal(SIB_QPO_INBOX(w), da.inbox);
	assert_int_equal(SIB_QPO_GEN(w), da.inbox_gen);
	assert_int_equal(SIB_QPO_DEV(w), 0);
	w = qp_owner(qb.qpn);
	assert_int_equal(SIB_QPO_INBOX(w), db.inbox);
	assert_int_equal(SIB_QPO_DEV(w), 1);

	/* handles are per connection: b cannot touch a's QP */
	assert_int_equal(destroy_obj(b, qa[0].handle, 0), qa[0].handle == qb.handle ? 0 : EBADF);
	if (qa[0].handle == qb.handle) /* same number in two tables: b destroyed its own */
		assert_int_equal(qp_owner(qb.qpn), 0);
	assert_int_not_equal(qp_owner(qa[0].qpn), 0);

	/* destroy frees the QPN; the next one is not the same (next-fit) */
	assert_int_equal(destroy_obj(a, qa[0].handle, SIB_OBJ_QP), 0);
	assert_int_equal(qp_owner(qa[0].qpn), 0);
	assert_int_equal(destroy_obj(a, qa[0].handle, SIB_OBJ_QP), EBADF); /* stale */
	assert_int_equal(create_obj(a, SIB_OBJ_QP, da.handle, IBV_QPT_RC, &o), 0);
	assert_int_not_equal(o.qpn, qa[0].qpn);
	assert_int_not_equal(o.handle, qa[0].handle); /* same slot, new generation */

	/* bad requests */
	assert_int_equal(create_obj(a, 0, da.handle, 0, &o), EINVAL);
	assert_int_equal(create_obj(a, SIB_OBJ_TYPE_MAX, da.handle, 0, &o), EINVAL);
	assert_int_equal(create_obj(a, SIB_OBJ_QP, da.handle, 77, &o), EINVAL);
	assert_int_equal(create_obj(a, SIB_OBJ_PD, da.handle + 1, 0, &o), EBADF);
	assert_int_equal(create_obj(a, SIB_OBJ_PD, qa[1].handle, 0, &o), EBADF); /* not a device */
	assert_int_equal(create_obj(a, SIB_OBJ_PD, da.handle, 0, &pd), 0);
	assert_int_equal(pd.qpn, 0);
	assert_int_equal(destroy_obj(a, pd.handle, SIB_OBJ_CQ), EBADF); /* wrong type */
	assert_int_equal(destroy_obj(a, da.handle, 0), EBADF);          /* a device */
	assert_int_equal(destroy_obj(a, pd.handle, SIB_OBJ_PD), 0);

	/* closing the device takes its QPs along */
	assert_int_equal(close_dev(a, da.handle), 0);
	assert_int_equal(qp_owner(qa[1].qpn), 0);
	assert_int_equal(qp_owner(o.qpn), 0);
	close(a);
	close(b);
}

/* XRCD_OPEN on device handle dev: of file fd (-1: a new private domain). */
static int xrcd_open(int fd, uint32_t dev, int file, uint32_t oflags, struct sib_ctl_xrcd *x)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_XRCD_OPEN,
				 .u.xrcd = { .dev_handle = dev, .oflags = oflags, .has_fd = file >= 0 } };

	assert_int_equal(sib_ctl_call_fd(fd, &m, file, NULL), 0);
	*x = m.u.xrcd;
	return m.hdr.status;
}

static int create_xrc_recv(int fd, uint32_t dev, uint32_t qp_type, uint32_t xrcd_handle, struct sib_ctl_obj *o)
{
	struct sib_ctl_msg m = { .u.obj = { .type = SIB_OBJ_QP, .dev_handle = dev, .qp_type = qp_type,
					    .xrcd_handle = xrcd_handle } };
	int st = call(fd, &m, SIB_CTL_CREATE_OBJ, NULL);

	*o = m.u.obj;
	return st;
}

/* An XRC_RECV QP names an XRCD handle of its connection and device handle;
 * its domain is published in qp_xrcd[] (the proof xrc_fwd.c trusts), held
 * by the QP, and cleared with the QPN.  Nothing else gets a domain. */
static void test_xrc_recv_domain(void **state)
{
	struct sib_ctl_open_device da, da2, db, bd;
	struct sib_ctl_xrcd xa, xa2, xb, xp;
	struct sib_ctl_obj q, rc, pd, o;
	char path[] = "/tmp/test_ctl_xrcd.XXXXXX";
	int a = client(), b = client(), file = mkstemp(path);

	(void)state;
	assert_true(file >= 0);
	unlink(path);
	assert_int_equal(open_dev(a, 0, &da, NULL), 0);
	assert_int_equal(open_dev(a, 0, &da2, NULL), 0);
	assert_int_equal(open_dev(a, 1, &db, NULL), 0);
	assert_int_equal(xrcd_open(a, da.handle, file, O_CREAT, &xa), 0);
	assert_int_equal(xrcd_open(a, da2.handle, file, 0, &xa2), 0);
	assert_int_equal(xa2.num, xa.num); /* one domain per device and file */
	assert_int_equal(xrcd_open(a, db.handle, -1, 0, &xb), 0);
	assert_int_equal(create_obj(a, SIB_OBJ_PD, da.handle, 0, &pd), 0);

	assert_int_equal(create_xrc_recv(a, da.handle, IBV_QPT_XRC_RECV, xa.handle, &q), 0);
	assert_int_equal(atomic_load(&g.map->qp_xrcd[q.qpn]), xa.num);
	assert_int_not_equal(qp_owner(q.qpn), 0);
	assert_int_equal(create_obj(a, SIB_OBJ_QP, da.handle, IBV_QPT_RC, &rc), 0);
	assert_int_equal(atomic_load(&g.map->qp_xrcd[rc.qpn]), 0);

	/* Not an XRCD of this connection under this device handle. */
	assert_int_equal(create_xrc_recv(a, da.handle, IBV_QPT_XRC_RECV, 0, &o), EBADF);
	assert_int_equal(create_xrc_recv(a, da.handle, IBV_QPT_XRC_RECV, pd.handle, &o), EBADF);
	assert_int_equal(create_xrc_recv(a, da.handle, IBV_QPT_XRC_RECV, da.handle, &o), EBADF);
	assert_int_equal(create_xrc_recv(a, da.handle, IBV_QPT_XRC_RECV, xa2.handle, &o), EBADF);
	assert_int_equal(create_xrc_recv(a, da.handle, IBV_QPT_XRC_RECV, xb.handle, &o), EBADF);
	assert_int_equal(create_xrc_recv(a, da.handle, IBV_QPT_RC, xa.handle, &o), EINVAL);
	assert_int_equal(open_dev(b, 0, &bd, NULL), 0); /* another connection: a's handles are not its */
	assert_int_equal(create_xrc_recv(b, bd.handle, IBV_QPT_XRC_RECV, xa.handle, &o), EBADF);

	/* The QP holds the domain: its handles closed, the file still has it
	 * (O_EXCL refused) until the QP goes, and the QPN's entry with it. */
	assert_int_equal(destroy_obj(a, xa.handle, SIB_OBJ_XRCD), 0);
	assert_int_equal(destroy_obj(a, xa2.handle, SIB_OBJ_XRCD), 0);
	assert_int_equal(xrcd_open(a, da.handle, file, O_CREAT | O_EXCL, &xp), EINVAL);
	assert_int_equal(atomic_load(&g.map->qp_xrcd[q.qpn]), xa.num);
	assert_int_equal(destroy_obj(a, q.handle, SIB_OBJ_QP), 0);
	assert_int_equal(atomic_load(&g.map->qp_xrcd[q.qpn]), 0);
	assert_int_equal(qp_owner(q.qpn), 0);
	assert_int_equal(xrcd_open(a, da.handle, file, O_CREAT | O_EXCL, &xp), 0);

	/* Closing the device drops the QP's hold and its map entry too. */
	assert_int_equal(create_xrc_recv(a, da.handle, IBV_QPT_XRC_RECV, xp.handle, &q), 0);
	assert_int_equal(atomic_load(&g.map->qp_xrcd[q.qpn]), xp.num);
	assert_int_equal(close_dev(a, da.handle), 0);
	assert_int_equal(atomic_load(&g.map->qp_xrcd[q.qpn]), 0);
	assert_int_equal(xrcd_open(a, da2.handle, file, O_CREAT | O_EXCL, &xp), 0);
	close(file);
	close(a);
	close(b);
}

/* Send raw bytes; the reply's status (the test expects an error). */
static int raw_command(int fd, const void *buf, size_t len)
{
	struct sib_ctl_msg r;
	int n;

	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
	n = sib_ctl_recv(fd, &r, NULL);
	assert_true(n >= (int)sizeof(r.hdr));
	assert_int_equal(r.hdr.magic, SIB_CTL_MAGIC);
	return r.hdr.status;
}

static void test_garbage(void **state)
{
	struct sib_ctl_msg m;
	unsigned char big[sizeof(m) + 100], rnd[sizeof(m)];
	long long bad0, bad1;
	char *text;
	int fd, p[2], i;
	struct pollfd pfd;
	size_t len;

	text = status_text();
	bad0 = status_num(text, "counters", "bad_commands");
	free(text);
	assert_true(bad0 >= 0);

	fd = client();
	assert_int_equal(raw_command(fd, "abc", 3), EINVAL);       /* short */
	memset(&m, 0, sizeof(m));
	m.hdr.magic = 0x12345678;
	m.hdr.op = SIB_CTL_HELLO;
	assert_int_equal(raw_command(fd, &m, sizeof(m)), EPROTO);  /* bad magic */
	m.hdr.magic = SIB_CTL_MAGIC;
	m.hdr.op = 200;
	assert_int_equal(raw_command(fd, &m, sizeof(m.hdr)), EINVAL); /* unknown op */
	m.hdr.op = 0;
	assert_int_equal(raw_command(fd, &m, sizeof(m)), EINVAL);
	m.hdr.op = SIB_CTL_OPEN_DEVICE;                                /* body cut short */
	assert_int_equal(raw_command(fd, &m, sizeof(m.hdr) + 2), EINVAL);
	memset(big, 0x5a, sizeof(big));
	memcpy(big, &m, sizeof(m.hdr));
	assert_int_equal(raw_command(fd, big, sizeof(big)), EINVAL); /* too long */

	/* an fd sent to the daemon is closed, not kept: the pipe sees EOF */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	m.hdr.op = SIB_CTL_CLOSE_DEVICE;
	m.u.handle = 12345;
	assert_int_equal(sib_ctl_send(fd, &m, p[1]), 0);
	assert_true(sib_ctl_recv(fd, &m, NULL) > 0);
	assert_int_equal(m.hdr.status, EBADF);
	close(p[1]);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
	assert_int_equal(read(p[0], big, 1), 0);
	close(p[0]);

	/* random bytes: each gets an answer, the daemon lives on */
	srand(12345);
	for (i = 0; i < 200; i++) {
		len = 1 + (size_t)rand() % sizeof(rnd);
		for (size_t j = 0; j < len; j++)
			rnd[j] = (unsigned char)rand();
		if (i % 2 && len >= 4)
			memcpy(rnd, &(uint32_t){ SIB_CTL_MAGIC }, 4);
		if (len >= 6) { /* not the two ops that stop us or answer in chunks */
			uint16_t op;

			memcpy(&op, rnd + offsetof(struct sib_ctl_hdr, op), sizeof(op));
			if (op == SIB_CTL_SHUTDOWN || op == SIB_CTL_STATUS)
				memset(rnd + offsetof(struct sib_ctl_hdr, op), 0xff, sizeof(op));
		}
		raw_command(fd, rnd, len); /* asserts that a reply came */
	}
	close(fd);

	fd = client(); /* still answers HELLO */
	close(fd);
	text = status_text();
	bad1 = status_num(text, "counters", "bad_commands");
	free(text);
	assert_true(bad1 >= bad0 + 7);
}

static void test_status_report(void **state)
{
	enum { NCONN = 50 };
	int conn[NCONN], fd, i, chunks = 0, open_fd;
	struct sib_ctl_open_device od;
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_STATUS };
	char *text, *joined = NULL, pfx[64];
	size_t len = 0, n;
	uint32_t seq;

	for (i = 0; i < NCONN; i++)
		conn[i] = client();
	open_fd = client();
	assert_int_equal(open_dev(open_fd, 3, &od, NULL), 0);

	/* chunks: all but the last flagged MORE, same op and seq, <= TEXT_MAX */
	fd = tconnect(g.sock);
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	seq = m.hdr.seq;
	for (;;) {
		assert_int_equal(m.hdr.status, 0);
		assert_int_equal(m.hdr.op, SIB_CTL_STATUS);
		assert_int_equal(m.hdr.seq, seq);
		assert_true(m.u.text.len > 0 && m.u.text.len <= SIB_CTL_TEXT_MAX);
		n = m.u.text.len;
		joined = realloc(joined, len + n + 1);
		memcpy(joined + len, m.u.text.text, n);
		len += n;
		joined[len] = '\0';
		chunks++;
		if (!(m.hdr.flags & SIB_CTL_F_MORE))
			break;
		assert_true(sib_ctl_recv(fd, &m, NULL) > 0);
	}
	assert_true(chunks >= 2);
	assert_int_equal(joined[len - 1], '\n');

	/* the fixed line shapes */
	snprintf(pfx, sizeof(pfx), "softibd pid=%d abi=%u socket=", (int)g.pid, SIB_ABI_VERSION);
	assert_non_null(find_line(joined, pfx));
	assert_non_null(strstr(joined, g.sock));
	assert_non_null(strstr(joined, " topology=default clients="));
	assert_true(status_num(joined, "softibd ", "clients") >= NCONN + 2);
	assert_true(status_num(joined, "softibd ", "uptime") >= 0);
	assert_non_null(find_line(joined, "device name=softib0 node_guid="));
	assert_non_null(find_line(joined, "  port num=1 state=ACTIVE phys=LinkUp lid=2 sm_lid=1 "
				  "lmc=0 mtu=4096 width=4X speed=QDR guid="));
	assert_non_null(find_line(joined, "  port num=1 state=ACTIVE phys=LinkUp lid=5 "));
	snprintf(pfx, sizeof(pfx), "client pid=%d devices=", (int)getpid());
	assert_non_null(find_line(joined, pfx));
	assert_true(status_num(joined, "totals ", "devices") >= 1);
	assert_non_null(find_line(joined, "totals devices="));
	assert_non_null(strstr(joined, " pd=0 mr=0 cq=0 qp=0 srq=0 ah=0 channel=0 xrcd=0\n"));
	assert_true(status_num(joined, "counters ", "bad_commands") >= 0);
	close(fd);

	/* sib_ctl_status() reassembles the same report */
	fd = tconnect(g.sock);
	assert_int_equal(sib_ctl_status(fd, &text), 0);
	assert_int_equal(status_num(text, "softibd ", "clients"), NCONN + 2);
	assert_true(strlen(text) > SIB_CTL_TEXT_MAX);
	free(text);
	close(fd);

	for (i = 0; i < NCONN; i++)
		close(conn[i]);
	close(open_fd);
	free(joined);
}

/* Poll (bounded) until cond holds. */
#define EVENTUALLY(cond) \
	do { \
		long long end_ = now_ms() + WAIT_MS; \
		while (!(cond) && now_ms() < end_) \
			sleep_ms(10); \
		assert_true(cond); \
	} while (0)

static bool status_has(const char *prefix)
{
	char *text = status_text();
	bool has = find_line(text, prefix) != NULL;

	free(text);
	return has;
}

static bool all_free(const uint32_t *qpn, int n)
{
	for (int i = 0; i < n; i++)
		if (qp_owner(qpn[i]))
			return false;
	return true;
}

static void test_cleanup_on_exit(void **state)
{
	struct sib_ctl_open_device od;
	struct sib_ctl_obj o;
	uint32_t qpn[4], child_inbox;
	int fd, p[2], i;
	char line[96];
	pid_t pid;

	/* a connection that closes: its QPs and inbox go */
	fd = client();
	assert_int_equal(open_dev(fd, 0, &od, NULL), 0);
	assert_int_equal(create_obj(fd, SIB_OBJ_QP, od.handle, IBV_QPT_RC, &o), 0);
	assert_int_equal(create_obj(fd, SIB_OBJ_CQ, od.handle, 0, &o), 0);
	assert_int_equal(create_obj(fd, SIB_OBJ_QP, od.handle, IBV_QPT_RC, &o), 0);
	qpn[0] = o.qpn;
	assert_int_not_equal(qp_owner(qpn[0]), 0);
	close(fd);
	EVENTUALLY(qp_owner(qpn[0]) == 0 && inbox_gen(od.inbox) == od.inbox_gen + 1);

	/* a process killed while it holds QPs */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sib_ctl_msg m = { .hdr.op = SIB_CTL_HELLO,
					 .u.hello.abi_version = SIB_ABI_VERSION };
		uint32_t out[5], h;

		close(p[0]);
		fd = sib_ctl_connect(g.sock);
		if (fd < 0 || sib_ctl_call(fd, &m, NULL) || m.hdr.status)
			_exit(1);
		for (i = 0; i < 2; i++) {
			m = (struct sib_ctl_msg){ .hdr.op = SIB_CTL_OPEN_DEVICE, .u.open.dev_index = 1,
						  .u.open.dev_gen = 1 };
			if (sib_ctl_call(fd, &m, NULL) || m.hdr.status)
				_exit(1);
		}
		h = m.u.open.handle;
		out[4] = m.u.open.inbox;
		for (i = 0; i < 4; i++) { /* three QPs and a PD */
			m = (struct sib_ctl_msg){ .hdr.op = SIB_CTL_CREATE_OBJ,
				.u.obj = { .type = i == 3 ? SIB_OBJ_PD : SIB_OBJ_QP,
					   .dev_handle = h, .qp_type = IBV_QPT_RC } };
			if (sib_ctl_call(fd, &m, NULL) || m.hdr.status)
				_exit(1);
			out[i] = m.u.obj.qpn;
		}
		if (write(p[1], out, sizeof(out)) != sizeof(out))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	{
		uint32_t in[5];
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };

		assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
		assert_int_equal(read(p[0], in, sizeof(in)), sizeof(in));
		memcpy(qpn, in, 3 * sizeof(uint32_t));
		child_inbox = in[4];
	}
	close(p[0]);
	for (i = 0; i < 3; i++)
		assert_int_not_equal(qp_owner(qpn[i]), 0);
	snprintf(line, sizeof(line), "client pid=%d devices=2 pd=1 mr=0 cq=0 qp=3 ", (int)pid);
	assert_true(status_has(line));

	kill(pid, SIGKILL);
	assert_true(wait_child(pid, WAIT_MS) >= 0);
	snprintf(line, sizeof(line), "client pid=%d ", (int)pid);
	EVENTUALLY(all_free(qpn, 3) && !status_has(line));
	assert_int_equal(inbox_gen(child_inbox) & 1, 0);
	assert_int_equal(g.map->inboxes[child_inbox].pid, 0);
}

/*
 * DESIGN principle 6: the map is read-only to clients.  The fd refuses a
 * writable shared mapping, write(2) and mprotect to writable; a client that
 * stores into its mapping dies of SIGSEGV alone, and softibd, which never
 * reads the map back, keeps serving with its state intact.
 */
static void test_map_read_only(void **state)
{
	struct sib_ctl_open_device od;
	struct sib_fabric_shm *w;
	struct sib_ctl_obj o;
	int fd = client(), mapfd, st, i;
	char *text;
	void *p;
	pid_t pid;

	assert_int_equal(hello(fd, &mapfd), 0);
	assert_int_equal(fcntl(mapfd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE, F_SEAL_FUTURE_WRITE);
	errno = 0;
	assert_true(mmap(NULL, g.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, mapfd, 0) ==
		    MAP_FAILED);
	assert_int_equal(errno, EPERM);
	assert_int_equal(pwrite(mapfd, "x", 1, 0), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(fcntl(mapfd, F_ADD_SEALS, F_SEAL_WRITE), -1); /* sealed for good */
	p = mmap(NULL, g.map_size, PROT_READ, MAP_SHARED, mapfd, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(mprotect(p, 4096, PROT_READ | PROT_WRITE), -1);
	assert_int_equal(errno, EACCES);

	/* a private copy-on-write mapping may be scribbled on: nobody else sees it */
	w = mmap(NULL, g.map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, mapfd, 0);
	assert_true(w != MAP_FAILED);
	w->num_devices = 0xffffffff;
	atomic_store(&w->port_seq, 1);
	for (i = 0; i < SIB_MAX_QPN; i++)
		atomic_store_explicit(&w->qp_owner[i], ~0ull, memory_order_relaxed);
	munmap(w, g.map_size);
	close(mapfd);

	/* the three stores of issue 5, through the shared mapping: the writer faults */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		w = p;
		signal(SIGSEGV, SIG_DFL); /* not cmocka's handler */
		w->num_devices = 0xffffffff;
		atomic_store(&w->port_seq, 1);
		for (i = 0; i < SIB_MAX_QPN; i++)
			atomic_store_explicit(&w->qp_owner[i], ~0ull, memory_order_relaxed);
		_exit(0);
	}
	st = wait_child(pid, WAIT_MS);
	assert_true(st >= 0);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSEGV);
	munmap(p, g.map_size);

	/* softibd serves on, from its own state */
	assert_int_equal(g.map->num_devices, 4);
	assert_int_equal(atomic_load(&g.map->port_seq) & 1, 0);
	text = status_text();
	assert_non_null(find_line(text, "device name=softib3 "));
	assert_null(find_line(text, "device name=softib4 "));
	free(text);
	assert_int_equal(open_dev(fd, 0, &od, NULL), 0);
	assert_int_equal(create_obj(fd, SIB_OBJ_QP, od.handle, IBV_QPT_RC, &o), 0);
	assert_true(o.qpn >= 2 && o.qpn < SIB_MAX_QPN);
	assert_int_not_equal(qp_owner(o.qpn), 0);
	close(fd);
}

/*
 * Inbox pages and pair rings are the shared memory clients write.  softibd
 * maps a page only to bump its pairs_seq, never reads it back: garbage over
 * a client's own page, over its receiver's (GET_INBOX after PAIR_OPEN) and
 * over the ring leaves the daemon serving, and all are released as usual.
 * Another connection gets nothing of a context it is not paired with.
 */
static void test_inbox_garbage(void **state)
{
	struct sib_ctl_open_device a, b;
	int fa = client(), fb = client(), ifd, gfd;
	char *text;
	void *p;

	struct sib_ctl_pair pr;
	int rfd;

	assert_int_equal(open_dev(fa, 0, &a, &ifd), 0);
	assert_int_equal(open_dev(fb, 1, &b, NULL), 0);
	assert_int_equal(get_inbox(fa, a.handle, b.inbox, b.inbox_gen, &gfd), EPERM);
	pr = (struct sib_ctl_pair){ .dev_handle = a.handle, .inbox = b.inbox, .inbox_gen = b.inbox_gen };
	assert_int_equal(pair_call(fa, SIB_CTL_PAIR_OPEN, &pr, &rfd), 0);
	p = mmap(NULL, SIB_PAIR_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
	assert_true(p != MAP_FAILED);
	memset(p, 0x5c, SIB_PAIR_BYTES);
	munmap(p, SIB_PAIR_BYTES);
	assert_int_equal(ftruncate(rfd, 0), -1);
	close(rfd);
	pr = (struct sib_ctl_pair){ .dev_handle = a.handle };
	assert_int_equal(pair_call(fa, SIB_CTL_PAIR_ACCEPT, &pr, &rfd), ENOENT); /* a's, none */
	assert_int_equal(get_inbox(fa, a.handle, b.inbox, b.inbox_gen, &gfd), 0);
	assert_true(gfd >= 0);
	p = mmap(NULL, SIB_INBOX_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, ifd, 0);
	assert_true(p != MAP_FAILED);
	memset(p, 0xff, SIB_INBOX_BYTES);
	munmap(p, SIB_INBOX_BYTES);
	p = mmap(NULL, SIB_INBOX_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, gfd, 0);
	assert_true(p != MAP_FAILED);
	memset(p, 0xa5, SIB_INBOX_BYTES);
	munmap(p, SIB_INBOX_BYTES);
	assert_int_equal(ftruncate(ifd, 0), -1); /* nor can it pull an inbox away */
	close(ifd);
	close(gfd);

	text = status_text();
	assert_non_null(find_line(text, "device name=softib0 "));
	free(text);
	assert_int_equal(close_dev(fb, b.handle), 0);
	assert_int_equal(inbox_gen(b.inbox), b.inbox_gen + 1);
	close(fb);
	close(fa);
	EVENTUALLY(inbox_gen(a.inbox) == a.inbox_gen + 1);
}

/*
 * The QPN allocator is bounded: when every QPN is given out, CREATE fails
 * with ENOSPC at once, and all come back when the connection goes.
 */
static long long qpns_used(void)
{
	char *text = status_text();
	long long n = status_num(text, "resources ", "qpns");

	free(text);
	return n;
}

static void test_qpn_exhaustion(void **state)
{
	struct sib_ctl_open_device od;
	struct sib_ctl_obj o;
	long long t0, used0 = qpns_used();
	int fd = client(), st = 0;
	uint32_t n = 0;

	assert_true(used0 >= 0);
	assert_int_equal(open_dev(fd, 1, &od, NULL), 0);
	while (n < SIB_MAX_QPN && (st = create_obj(fd, SIB_OBJ_QP, od.handle, IBV_QPT_RC, &o)) == 0)
		n++;
	assert_int_equal(st, ENOSPC);
	assert_int_equal(n, SIB_MAX_QPN - 2 - used0);
	t0 = now_ms();
	assert_int_equal(create_obj(fd, SIB_OBJ_QP, od.handle, IBV_QPT_RC, &o), ENOSPC);
	assert_true(now_ms() - t0 < 1000);
	assert_int_equal(qpns_used(), SIB_MAX_QPN - 2);
	close(fd);
	EVENTUALLY(qpns_used() == used0);
}

/*
 * Other uids are refused at the socket (SO_PEERCRED), even when the file
 * system would let them connect.  Needs root to act as another uid.
 */
static void test_other_uid_refused(void **state)
{
	char dir[160], sock[200], *text;
	uid_t uid = 3999000123u;
	pid_t pid, child;
	int fd, st;

	if (geteuid() != 0)
		skip();
	snprintf(dir, sizeof(dir), "%s/peercred", g.dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(sock, sizeof(sock), "%s/p.sock", dir);
	pid = spawn_softibd("-f", "--socket", sock, NULL);
	track(pid);
	assert_true(wait_listening(sock, pid));
	/* open the way in the file system: only the daemon's check is left */
	assert_int_equal(chmod(g.dir, 0711), 0);
	assert_int_equal(chmod(dir, 0711), 0);
	assert_int_equal(chmod(sock, 0777), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct sib_ctl_msg m = { .hdr.op = SIB_CTL_HELLO,
					 .u.hello.abi_version = SIB_ABI_VERSION };
		struct timeval tv = { .tv_sec = WAIT_MS / 1000 };

		if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(2);
		fd = sib_ctl_connect(sock);
		if (fd < 0)
			_exit(3);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		/* refused: the daemon closes without an answer, before or
		 * after our HELLO went out (EPIPE or ECONNRESET) */
		st = sib_ctl_call(fd, &m, NULL);
		_exit(st == -ECONNRESET || st == -EPIPE ? 0 : 4);
	}
	st = wait_child(child, WAIT_MS * 2);
	chmod(g.dir, 0700);
	assert_int_equal(st, 0);
	fd = tconnect(sock);
	assert_true(fd >= 0);
	assert_int_equal(sib_ctl_status(fd, &text), 0);
	assert_int_equal(status_num(text, "counters ", "refused"), 1);
	free(text);
	close(fd);
	assert_int_equal(stop_child(pid), 0);
	untrack(pid);
}

/* softibd -f --socket DIR/s.sock, expected to refuse DIR: exits 1 at once. */
static void refuses_dir(const char *dir)
{
	char sock[200];
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/s.sock", dir);
	pid = spawn_softibd("-f", "--socket", sock, NULL);
	assert_int_equal(wait_child(pid, WAIT_MS), 1 << 8);
	assert_int_equal(access(sock, F_OK), -1);
}

/* The socket's directory, for any --socket: made 0700 if missing, refused if unsafe. */
static void test_socket_dir(void **state)
{
	char dir[160], sock[200], other[160];
	struct stat st;
	pid_t pid;
	int fd;

	snprintf(dir, sizeof(dir), "%s/fresh", g.dir);
	snprintf(sock, sizeof(sock), "%s/s.sock", dir);
	pid = spawn_softibd("-f", "--socket", sock, NULL);
	assert_true(wait_listening(sock, pid));
	assert_int_equal(lstat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(stop_child(pid), 0);

	snprintf(dir, sizeof(dir), "%s/wide", g.dir);           /* group/other writable */
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chmod(dir, 0770), 0);
	refuses_dir(dir);
	assert_int_equal(chmod(dir, 0707), 0);
	refuses_dir(dir);
	assert_int_equal(chmod(dir, 0755), 0);                   /* readable is fine */
	snprintf(sock, sizeof(sock), "%s/s.sock", dir);
	pid = spawn_softibd("-f", "--socket", sock, NULL);
	assert_true(wait_listening(sock, pid));
	assert_int_equal(stop_child(pid), 0);

	snprintf(other, sizeof(other), "%s/link", g.dir);       /* a symlink to a good one */
	assert_int_equal(symlink(dir, other), 0);
	assert_int_equal(chmod(dir, 0700), 0);
	refuses_dir(other);

	snprintf(other, sizeof(other), "%s/file", g.dir);       /* not a directory */
	fd = open(other, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	refuses_dir(other);

	snprintf(other, sizeof(other), "%s/no/such", g.dir);    /* no parent */
	refuses_dir(other);

	if (geteuid() == 0) {                                    /* another owner */
		snprintf(other, sizeof(other), "%s/theirs", g.dir);
		assert_int_equal(mkdir(other, 0700), 0);
		assert_int_equal(chown(other, 3999000124u, 3999000124u), 0);
		refuses_dir(other);
	}
}

static void test_second_daemon_refuses(void **state)
{
	pid_t pid;
	int fd;

	pid = spawn_softibd("--socket", g.sock, NULL);
	assert_int_equal(wait_child(pid, WAIT_MS), 1 << 8); /* exit 1 */
	pid = spawn_softibd("--autostart", "--socket", g.sock, NULL);
	assert_int_equal(wait_child(pid, WAIT_MS), 0);      /* quietly */
	pid = spawn_softibd("--daemon", "--socket", g.sock, NULL);
	assert_int_equal(wait_child(pid, WAIT_MS), 1 << 8);
	fd = client(); /* the first one still serves, its socket untouched */
	close(fd);
}

static void test_idle_exit(void **state)
{
	char sock[160];
	struct stat st;
	pid_t pid;
	int fd;

	snprintf(sock, sizeof(sock), "%s/idle.sock", g.dir);
	pid = spawn_softibd("-f", "--idle-exit", "1", "--socket", sock, NULL);
	assert_true(wait_listening(sock, pid));
	fd = tconnect(sock);
	assert_true(fd >= 0);
	sleep_ms(1500); /* a client is connected: no idle exit */
	assert_int_equal(wait_child(pid, 0), -1);
	close(fd);
	if (wait_child(pid, WAIT_MS) != 0) {
		stop_child(pid);
		fail_msg("softibd --idle-exit 1 did not exit cleanly in time");
	}
	assert_int_equal(lstat(sock, &st), -1); /* socket removed */
}

static void test_sigterm_removes_socket(void **state)
{
	char sock[160];
	struct stat st;
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/term.sock", g.dir);
	pid = spawn_softibd("-f", "--socket", sock, NULL);
	assert_true(wait_listening(sock, pid));
	assert_int_equal(stop_child(pid), 0);
	assert_int_equal(lstat(sock, &st), -1);
}

/* Read daemon_pid from the map of the daemon behind fd. */
static pid_t daemon_pid_of(int fd)
{
	struct sib_ctl_msg m = { .u.hello.abi_version = SIB_ABI_VERSION };
	const struct sib_fabric_shm *map;
	int mapfd;
	pid_t pid;

	assert_int_equal(call(fd, &m, SIB_CTL_HELLO, &mapfd), 0);
	map = mmap(NULL, m.u.hello.fabric_size, PROT_READ, MAP_SHARED, mapfd, 0);
	close(mapfd);
	assert_true(map != MAP_FAILED);
	pid = (pid_t)map->daemon_pid;
	munmap((void *)map, m.u.hello.fabric_size);
	return pid;
}

static void test_daemon_mode(void **state)
{
	char sock[160];
	pid_t pid, dpid;
	int fd;

	snprintf(sock, sizeof(sock), "%s/detached.sock", g.dir);
	pid = spawn_softibd("--daemon", "--socket", sock, NULL);
	assert_int_equal(wait_child(pid, WAIT_MS), 0); /* returns once listening */
	fd = tconnect(sock);
	assert_true(fd >= 0);
	dpid = daemon_pid_of(fd);
	track(dpid);
	assert_int_not_equal(dpid, pid);
	assert_int_equal(sib_ctl_stop(fd), 0);
	close(fd);
	assert_true(wait_pid_gone(dpid, WAIT_MS));
	untrack(dpid);
	assert_int_equal(sib_ctl_connect(sock), -ENOENT);
}

static void test_autostart(void **state)
{
	char sock[160], c;
	struct pollfd pfd;
	int fd, leak[2];
	long long t0;
	pid_t dpid;

	snprintf(sock, sizeof(sock), "%s/auto.sock", g.dir);
	setenv("SOFTIB_SOCKET", sock, 1);

	assert_true(sib_ctl_open(false) == -ENOENT);
	setenv("SOFTIB_NO_AUTOSTART", "1", 1);
	assert_true(sib_ctl_open(true) == -ENOENT);
	unsetenv("SOFTIB_NO_AUTOSTART");

	setenv("SOFTIBD", "/nonexistent/softibd", 1);
	t0 = now_ms();
	assert_int_equal(sib_ctl_open(true), -ENOENT);
	assert_true(now_ms() - t0 < SIB_CTL_AUTOSTART_MS);
	unsetenv("SOFTIBD");

	/* found next to this executable (build/bin), via dladdr() */
	assert_int_equal(pipe(leak), 0); /* not CLOEXEC: the daemon must close it */
	fd = sib_ctl_open(true);
	assert_true(fd >= 0);
	close(leak[1]);
	pfd = (struct pollfd){ .fd = leak[0], .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
	assert_int_equal(read(leak[0], &c, 1), 0); /* EOF: nobody else holds it */
	close(leak[0]);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	dpid = daemon_pid_of(fd);
	track(dpid);
	/* no zombie left behind (the shared daemon is our only child, still running) */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), 0);

	/* a second open finds it running */
	{
		int fd2 = sib_ctl_open(true);

		assert_true(fd2 >= 0);
		assert_int_equal(daemon_pid_of(fd2), dpid);
		close(fd2);
	}
	assert_int_equal(sib_ctl_stop(fd), 0);
	close(fd);
	assert_true(wait_pid_gone(dpid, WAIT_MS));
	untrack(dpid);
	unsetenv("SOFTIB_SOCKET");
}

static void test_shutdown(void **state)
{
	int fd = tconnect(g.sock);

	assert_true(fd >= 0);
	assert_int_equal(sib_ctl_stop(fd), 0);
	close(fd);
	assert_int_equal(wait_child(g.pid, WAIT_MS), 0);
	g.pid = 0;
	assert_int_equal(sib_ctl_connect(g.sock), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_path),
		cmocka_unit_test(test_hello_fabric_map),
		cmocka_unit_test(test_wrong_abi),
		cmocka_unit_test(test_open_device_and_inbox),
		cmocka_unit_test(test_qpns_two_connections),
		cmocka_unit_test(test_xrc_recv_domain),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_status_report),
		cmocka_unit_test(test_cleanup_on_exit),
		cmocka_unit_test(test_map_read_only),
		cmocka_unit_test(test_inbox_garbage),
		cmocka_unit_test(test_qpn_exhaustion),
		cmocka_unit_test(test_other_uid_refused),
		cmocka_unit_test(test_socket_dir),
		cmocka_unit_test(test_second_daemon_refuses),
		cmocka_unit_test(test_idle_exit),
		cmocka_unit_test(test_sigterm_removes_socket),
		cmocka_unit_test(test_daemon_mode),
		cmocka_unit_test(test_autostart),
		cmocka_unit_test(test_shutdown), /* last: stops the shared daemon */
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
