/* SPDX-License-Identifier: MIT */
/*
 * softibd's per-client budgets (docs/daemon.md "Budgets"), each against a
 * private softibd under RLIMIT_NOFILE 1024: a hostile client process opens
 * connections, MAI channels, device contexts (inboxes) or XRC domains on
 * files until refused, and holds them.  It is refused at its quota
 * (EMFILE), or with --client-share 100 where the reserve begins (ENFILE);
 * either way a newcomer process still gets the status report, opens and
 * queries a device through libibverbs (what ibv_devinfo does), asks the
 * PMA for PortCounters through libibumad (what perfquery does), opens an
 * XRC domain on a file, and the report shows the hostile process's use and
 * its refusal.  Direct placement's memfds given to softibd (DX_PUT) are
 * one more such resource.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/ctl.h"
#include "daemon_fixture.h"
#include "status_text.h"

#define NOFILE    1024
#define HOLD_MAX  4096   /* a bound on what a hostile client tries */
#define WAIT_MS   20000

/* ---- the control protocol, raw ---------------------------------------------- */

static int connect_hello(void)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_HELLO };
	int fd = sib_ctl_connect(daemon_socket()), mfd = -1, rc;

	if (fd < 0)
		return fd;
	m.u.hello.abi_version = SIB_ABI_VERSION;
	m.u.hello.pid = getpid();
	rc = sib_ctl_call(fd, &m, &mfd);
	if (mfd >= 0)
		close(mfd);
	if (!rc && m.hdr.status)
		rc = -m.hdr.status;
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

/* One more of op on connection fd: 0 or -errno; *out: a received fd or -1. */
static int call(int fd, struct sib_ctl_msg *m, int pass_fd, int *out)
{
	int rc = sib_ctl_call_fd(fd, m, pass_fd, out);

	return rc ? rc : -m->hdr.status;
}

static int mai_open(int fd, int *chan_fd)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_MAI_OPEN };

	m.u.mai_open.abi_version = SIB_ABI_VERSION;
	snprintf(m.u.mai_open.dev, sizeof(m.u.mai_open.dev), "softib0");
	m.u.mai_open.port = 1;
	m.u.mai_open.qp = 1;
	return call(fd, &m, -1, chan_fd);
}

static int open_device(int fd, uint32_t *handle, int *inbox_fd)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_OPEN_DEVICE };
	int rc;

	m.u.open.dev_index = 0;
	m.u.open.dev_gen = 1; /* softib0, registered at start */
	rc = call(fd, &m, -1, inbox_fd);
	*handle = m.u.open.handle;
	return rc;
}

/* An XRC domain on a new file (O_CREAT), the file unlinked at once. */
static int xrcd_open_file(int fd, uint32_t dev_handle)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_XRCD_OPEN };
	char path[] = "/tmp/softib-xrcd.XXXXXX";
	int file = mkstemp(path), rc;

	if (file < 0)
		return -errno;
	unlink(path);
	m.u.xrcd.dev_handle = dev_handle;
	m.u.xrcd.oflags = O_CREAT;
	m.u.xrcd.has_fd = 1;
	rc = call(fd, &m, file, NULL);
	close(file);
	return rc;
}

/* ---- what a hostile client grabs: each returns the errno that stopped it ---- */

static int grab_connections(int *n)
{
	int fd;

	for (*n = 0; *n < HOLD_MAX; ++*n)
		if ((fd = connect_hello()) < 0)
			return -fd;
	return 0;
}

static int grab_channels(int *n)
{
	int fd = connect_hello(), ch, rc;

	for (*n = 0; fd >= 0 && *n < HOLD_MAX; ++*n) {
		rc = mai_open(fd, &ch);
		if (rc == -ENOSPC) { /* a connection's 64: another connection */
			fd = connect_hello();
			rc = fd < 0 ? fd : mai_open(fd, &ch);
		}
		if (rc)
			return -rc;
	}
	return fd < 0 ? -fd : 0;
}

static int grab_inboxes(int *n)
{
	int fd = connect_hello(), ib, rc;
	uint32_t h;

	for (*n = 0; fd >= 0 && *n < HOLD_MAX; ++*n)
		if ((rc = open_device(fd, &h, &ib)))
			return -rc;
	return fd < 0 ? -fd : 0;
}

/* A connection with softib0 open: its fd, or -errno. */
static int connect_device(uint32_t *dev)
{
	int fd = connect_hello(), ib = -1, rc;

	if (fd < 0)
		return fd;
	rc = open_device(fd, dev, &ib);
	return rc ? rc : fd;
}

static int grab_xrcd_files(int *n)
{
	uint32_t dev;
	int fd = connect_device(&dev), rc;

	for (*n = 0; fd >= 0 && *n < HOLD_MAX; ++*n) {
		rc = xrcd_open_file(fd, dev);
		if (rc == -ENOSPC) { /* a connection's 256 domains: another connection */
			fd = connect_device(&dev);
			rc = fd < 0 ? fd : xrcd_open_file(fd, dev);
		}
		if (rc)
			return -rc;
	}
	return fd < 0 ? -fd : 0;
}

/* Direct placement's memfds (DX_PUT): one sealed memfd after another as
 * MR regions, each closed here once softibd holds it. */
static int grab_dx_fds(int *n)
{
	uint32_t dev;
	int fd = connect_device(&dev), rc = 0;

	for (*n = 0; fd >= 0 && *n < HOLD_MAX && !rc; ++*n) {
		struct sib_ctl_msg m = { .hdr.op = SIB_CTL_DX_PUT };
		int mfd = memfd_create("softib-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);

		if (mfd < 0 || ftruncate(mfd, 4096) || fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK))
			return errno;
		m.u.dx.kind = SIB_DX_KIND_MR;
		m.u.dx.id = (uint32_t)*n + 1;
		rc = call(fd, &m, mfd, NULL);
		close(mfd);
		if (rc)
			return -rc;
	}
	return fd < 0 ? -fd : 0;
}

/* Pair rings their receivers never take (PAIR_OPEN): softibd holds each
 * one's fd for the receiver.  The receivers are the hostile's own contexts
 * (a receiver keeps at most 64 waiting): each new context is paired with
 * every one opened before, both ways, and with itself. */
#define PAIR_CTXS 32
static int grab_pair_rings(int *n)
{
	uint32_t h[PAIR_CTXS], ib[PAIR_CTXS], gen[PAIR_CTXS];
	int fd = connect_hello(), rc;

	*n = 0;
	for (int k = 0; fd >= 0 && k < PAIR_CTXS; k++) {
		struct sib_ctl_msg m = { .hdr.op = SIB_CTL_OPEN_DEVICE };
		int ifd = -1;

		m.u.open.dev_index = 0;
		m.u.open.dev_gen = 1;
		if ((rc = call(fd, &m, -1, &ifd)))
			return -rc;
		if (ifd >= 0)
			close(ifd);
		h[k] = m.u.open.handle;
		ib[k] = m.u.open.inbox;
		gen[k] = m.u.open.inbox_gen;
		for (int j = 0; j <= k; j++) {
			for (int dir = 0; dir < (j == k ? 1 : 2); dir++) {
				struct sib_ctl_msg pm = { .hdr.op = SIB_CTL_PAIR_OPEN };
				int s = dir ? k : j, r = dir ? j : k, rfd = -1;

				pm.u.pair.dev_handle = h[s];
				pm.u.pair.inbox = ib[r];
				pm.u.pair.inbox_gen = gen[r];
				rc = call(fd, &pm, -1, &rfd);
				if (rfd >= 0)
					close(rfd);
				if (rc)
					return -rc;
				if (*n < HOLD_MAX)
					++*n;
			}
		}
	}
	return fd < 0 ? -fd : 0;
}

/* ---- processes ------------------------------------------------------------ */

struct hostile {
	pid_t pid;
	int go;         /* closed: the hostile client lets go and exits */
	int n, err;     /* what it got, and why it stopped */
};

/* Fork a hostile client that grabs until refused, says how far it got and
 * holds everything until h->go closes (at most WAIT_MS). */
static void hostile_start(struct hostile *h, int (*grab)(int *n))
{
	int res[2], go[2], r[2];
	struct pollfd p;

	assert_int_equal(pipe(res), 0);
	assert_int_equal(pipe(go), 0);
	h->pid = fork();
	assert_true(h->pid >= 0);
	if (h->pid == 0) {
		close(res[0]);
		close(go[1]);
		r[1] = grab(&r[0]);
		if (write(res[1], r, sizeof(r)) != sizeof(r))
			_exit(1);
		p = (struct pollfd){ .fd = go[0], .events = POLLIN };
		poll(&p, 1, WAIT_MS);
		_exit(0);
	}
	close(res[1]);
	close(go[0]);
	h->go = go[1];
	p = (struct pollfd){ .fd = res[0], .events = POLLIN };
	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	assert_int_equal(read(res[0], r, sizeof(r)), sizeof(r));
	close(res[0]);
	h->n = r[0];
	h->err = r[1];
}

static void hostile_end(struct hostile *h)
{
	int st;

	close(h->go);
	assert_int_equal(waitpid(h->pid, &st, 0), h->pid);
}

/* What perfquery does: PerfMgt Get(PortCounters) of softib0 port 1 to its
 * PMA through libibumad (a MAI channel in softibd).  0 if answered. */
static int perf_query(void)
{
	struct {
		struct ib_user_mad hdr;
		uint8_t mad[256];
	} req = { 0 }, rsp;
	umad_port_t port;
	int fd, agent, len = 256, rc = -1;

	if (umad_init() || umad_get_port("softib0", 1, &port))
		return -1;
	fd = umad_open_port("softib0", 1);
	agent = fd >= 0 ? umad_register(fd, 0x04, 1, 0, NULL) : -1; /* PerfMgt */
	if (agent >= 0) {
		req.mad[0] = 1;         /* BaseVersion */
		req.mad[1] = 0x04;      /* MgmtClass: PerfMgt */
		req.mad[2] = 1;         /* ClassVersion */
		req.mad[3] = 0x01;      /* Get */
		req.mad[15] = 0x42;     /* TID */
		req.mad[17] = 0x12;     /* AttributeID: PortCounters */
		req.mad[41] = 1;        /* PortSelect */
		umad_set_addr(&req, port.base_lid, 1, 0, 0x80010000);
		if (umad_send(fd, agent, &req, 256, 2000, 0) == 0 &&
		    umad_recv(fd, &rsp, &len, 2000) == agent && umad_status(&rsp) == 0 &&
		    rsp.mad[3] == 0x81)
			rc = 0;
	}
	if (fd >= 0)
		umad_close_port(fd);
	umad_release_port(&port);
	return rc;
}

/* A newcomer process: the report, a device through libibverbs, the PMA
 * through libibumad, a MAI channel and an XRC domain on a file.  Exit
 * status: the failed step. */
static int newcomer(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_port_attr pa;
	int fd, ch = -1, ib = -1;
	uint32_t dev;
	char *text;

	fd = sib_ctl_connect(daemon_socket());
	if (fd < 0 || sib_ctl_status(fd, &text))
		return 1;
	free(text);
	close(fd);
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		return 2;
	ctx = ibv_open_device(list[0]);
	if (!ctx || ibv_query_port(ctx, 1, &pa))
		return 3;
	if (perf_query())
		return 6;
	fd = connect_hello();
	if (fd < 0 || mai_open(fd, &ch))
		return 4;
	if (open_device(fd, &dev, &ib) || xrcd_open_file(fd, dev))
		return 5;
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}

static void newcomer_gets_in(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(newcomer());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- the tests ------------------------------------------------------------- */

/* Under share (percent, 0: the default), a hostile client grabs resource
 * res until refused: at its quota with EMFILE, or where the reserve begins
 * with ENFILE (ENOSPC for inboxes) when its share reaches into the
 * reserve; a newcomer still gets in; the report shows it all. */
static void run_case(int (*grab)(int *n), const char *res, const char *share, int full_err)
{
	const char *args[] = { "--client-share", share, NULL };
	char key[64], line[64], *text;
	long quota, max, reserve;
	struct hostile h;

	daemon_options(share ? args : NULL, NOFILE);
	assert_int_equal(start_daemon(NULL), 0);
	text = status_text();
	snprintf(key, sizeof(key), "max_%s", res);
	max = field(text, "budgets ", key);
	snprintf(key, sizeof(key), "quota_%s", res);
	quota = field(text, "budgets ", key);
	snprintf(key, sizeof(key), "reserve_%s", res);
	reserve = field(text, "budgets ", key);
	free(text);
	assert_true(quota > 4 && reserve >= 4 && quota <= max - reserve);

	hostile_start(&h, grab);
	if (share) {
		assert_int_equal(h.err, full_err);
		assert_int_equal(h.n, max - reserve);
	} else {
		assert_int_equal(h.err, EMFILE);
		assert_int_equal(h.n, quota);
	}
	newcomer_gets_in();
	text = status_text();
	snprintf(line, sizeof(line), "budget pid=%d ", (int)h.pid);
	assert_int_equal(field(text, line, res), h.n);
	assert_int_equal(field(text, line, "refused"), 1);
	snprintf(key, sizeof(key), "refused_%s", res);
	assert_true(field(text, "budgets ", key) >= 1);
	free(text);
	hostile_end(&h);
	stop_daemon(NULL);
	daemon_options(NULL, 0);
}

/* One resource: how a hostile client grabs it, its status key, and the
 * errno where the reserve begins. */
struct budget_case {
	int (*grab)(int *n);
	const char *res;
	int full_err;
};

static const struct budget_case connections = { grab_connections, "connections", ENFILE };
static const struct budget_case channels = { grab_channels, "channels", ENFILE };
static const struct budget_case inboxes = { grab_inboxes, "inboxes", ENOSPC };
static const struct budget_case xrcd_files = { grab_xrcd_files, "xrcd_files", ENFILE };
static const struct budget_case dx_fds = { grab_dx_fds, "dx_fds", ENFILE };
static const struct budget_case pair_rings = { grab_pair_rings, "pair_rings", ENFILE };

/* The default share, then --client-share 100. */
static void test_budget(void **state)
{
	const struct budget_case *c = *state;

	run_case(c->grab, c->res, NULL, 0);
	run_case(c->grab, c->res, "100", c->full_err);
}

#define BUDGET_TEST(c) { "test_" #c, test_budget, NULL, NULL, (void *)&(c) }

int main(void)
{
	const struct CMUnitTest tests[] = {
		BUDGET_TEST(connections),
		BUDGET_TEST(channels),
		BUDGET_TEST(inboxes),
		BUDGET_TEST(xrcd_files),
		BUDGET_TEST(dx_fds),
		BUDGET_TEST(pair_rings),
	};

	setenv("SOFTIB_MEMLOCK", "0", 0); /* not the subject here (test_memlock) */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
