/* SPDX-License-Identifier: MIT */
/*
 * No softib memory through /proc (issue 15 item 3; docs/threat-model.md,
 * docs/transport.md "Direct placement"), against a private softibd:
 *  - test_proc_probe: this process is the victim, a verbs program with an
 *    RC pair (softib0 <-> softib1) whose RDMA WRITEs are placed directly
 *    into the registered pages of its other end; another process of the
 *    same uid (this binary exec'd again, --probe, so it inherits nothing)
 *    walks /proc/<victim>/fd, opens every fd it can read-write and writes
 *    and hole-punches every softib memfd it opened.  The registered pages
 *    must be untouched, the prober must have opened no softib memfd but
 *    the sealed, empty "softib-cmd", and placement goes on afterwards.
 *    softibd, which keeps those memfds now, is walked too: it is not
 *    dumpable, so its /proc/<pid>/fd is closed to the uid.
 *  - test_no_right: softibd hands a context's memfd (DX_GET) only to a
 *    connection that names one of its own RC or XRC QPs and a QPN of that
 *    context: EPERM otherwise (no QP, a UD QP, a QPN of someone else),
 *    counted in the status report; the fd once the right is there (a table
 *    read-only, whatever the owner gave); ESTALE
 *    once the owner's context is closed; an unsealed file is not taken.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "status_text.h"
#include "verbs_harness.h"

/* ---- the prober: another process of the uid, nothing inherited ---- */

/*
 * Walk /proc/<pid>/fd: every fd that opens read-write and is a softib
 * memfd other than softib-cmd is a hole (counted, and written at every
 * page and hole-punched at every other page, as a hostile process would).
 * Returns the holes found (0: none), capped at 100; prints what it did.
 */
static int probe(pid_t pid)
{
	char dir[64], path[PATH_MAX], link[256];
	struct dirent *de;
	int holes = 0, denied = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d) {
		printf("probe: %s: %s\n", dir, strerror(errno));
		return errno == EACCES ? 0 : 100; /* closed to us: nothing reached */
	}
	while ((de = readdir(d))) {
		struct stat st;
		ssize_t n;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0) {
			if (errno == EACCES && !denied++)
				printf("probe: %s/*: %s\n", dir, strerror(errno));
			continue;
		}
		link[n] = 0;
		if (strncmp(link, "/memfd:softib-", 14))
			continue; /* not softib memory */
		fd = open(path, O_RDWR | O_CLOEXEC);
		printf("probe: fd %s -> %s: %s\n", de->d_name, link, fd < 0 ? strerror(errno) : "opened read-write");
		if (fd < 0)
			continue;
		if (!strncmp(link, "/memfd:softib-cmd ", 18) && !fstat(fd, &st) && st.st_size == 0) {
			close(fd); /* sealed and empty: nothing to reach */
			continue;
		}
		holes++;
		if (!fstat(fd, &st))
			for (off_t o = 0; o + 4096 <= st.st_size && o < (64 << 20); o += 8192) {
				static const char junk[4096] = { [0 ... 4095] = 0x5a };

				if (pwrite(fd, junk, sizeof(junk), o) == (ssize_t)sizeof(junk) && !o)
					printf("probe:   wrote page 0\n");
				if (o + 8192 <= st.st_size &&
				    !fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, o + 4096, 4096) && !o)
					printf("probe:   punched page 1\n");
			}
		close(fd);
	}
	closedir(d);
	return holes > 100 ? 100 : holes;
}

/* Run the prober on this process and on softibd, which keeps the memfds
 * now: its exit status (holes found in both). */
static int run_prober(void)
{
	char pid[16], dpid[16];
	pid_t c;
	int st;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(dpid, sizeof(dpid), "%d", daemon_process());
	fflush(stdout);
	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		execl("/proc/self/exe", "test_dx_probe", "--probe", pid, dpid, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(c, &st, 0), c);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/*
 * Everyone here (this process, the softibd it starts, the prober) without
 * CAP_SYS_PTRACE, so that the prober is what the threat model means by
 * another process of the uid: run as root with every capability (a
 * container), it could otherwise read any process's fds, dumpable or not,
 * as it could ptrace them.  Dropped from the bounding set too (needs
 * CAP_SETPCAP: root), so that the execs do not get it back.  Without
 * capabilities to start with, nothing changes.
 */
static void drop_sys_ptrace(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	(void)prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0);
	if (syscall(SYS_capget, &h, d))
		return;
	d[0].effective &= ~(1u << CAP_SYS_PTRACE);
	d[0].permitted &= ~(1u << CAP_SYS_PTRACE);
	d[0].inheritable &= ~(1u << CAP_SYS_PTRACE);
	(void)syscall(SYS_capset, &h, d);
}

/* ---- helpers ---- */

/* One RDMA WRITE of len bytes from a's buf at off to b's buf at off. */
static void write_one(struct pair *p, uint32_t off, uint32_t len, uint8_t pat, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p->e[0].buf + off, .length = len,
			       .lkey = p->e[0].mr->lkey };
	struct ibv_wc wc;

	memset(p->e[0].buf + off, pat, len);
	assert_int_equal(post_send(&p->e[0], IBV_WR_RDMA_WRITE, id, &sge, 1, IBV_SEND_SIGNALED,
				   (uintptr_t)p->e[1].buf + off, p->e[1].mr->rkey, 0), 0);
	poll_one(p->e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, id);
	assert_memory_equal(p->e[1].buf + off, p->e[0].buf + off, len);
}

/* ---- the tests ---- */

static void test_proc_probe(void **state)
{
	struct pair p;
	uint8_t *snap;
	char *text;
	int holes;

	(void)state;
	pair_open(&p, 0, NULL, NULL);
	/* placement in use: WRITEs through the peer's mapping of b's pages */
	write_one(&p, 8192, 65536, 0x11, 1);
	write_one(&p, 1 << 20, 8192, 0x22, 2);
	snap = malloc(BUF_SIZE);
	assert_non_null(snap);
	memcpy(snap, p.e[1].buf, BUF_SIZE);

	holes = run_prober();
	printf("prober found %d softib memfd(s) it could open read-write\n", holes);
	/* the registered pages are as the WRITEs left them */
	assert_memory_equal(p.e[1].buf, snap, BUF_SIZE);
	assert_int_equal(holes, 0);

	/* direct placement was in use, its memfds from softibd */
	text = status_text();
	assert_true(field(text, "direct ", "dx_given") >= 3); /* table, counters, MR */
	assert_true(field(text, "direct ", "dx_fds") >= 4);  /* two contexts' tables, two MRs */
	free(text);
	/* and goes on after the probe */
	write_one(&p, 3 << 20, 12288, 0x33, 3);
	free(snap);
	pair_close(&p);
}

#ifndef DX_PROBE_ONLY /* defined to build the probe alone against a tree
			 without DX_PUT/DX_GET (how it was shown to fail on
			 the tree before them) */
/* Raw control connections (hello_conn), as a hostile or curious client
 * would speak. */
static int ctl(int fd, struct sib_ctl_msg *m, int pass_fd, int *out)
{
	int rc = sib_ctl_call_fd(fd, m, pass_fd, out);

	return rc ? rc : -(int)m->hdr.status;
}

static void ctl_open(int fd, uint32_t dev, uint32_t *handle, uint32_t *inbox, uint32_t *gen)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_OPEN_DEVICE };
	int ib = -1;

	m.u.open.dev_index = dev;
	m.u.open.dev_gen = 1;
	assert_int_equal(ctl(fd, &m, -1, &ib), 0);
	if (ib >= 0)
		close(ib);
	*handle = m.u.open.handle;
	if (inbox)
		*inbox = m.u.open.inbox;
	if (gen)
		*gen = m.u.open.inbox_gen;
}

static void ctl_qp(int fd, uint32_t dev_handle, uint32_t type, uint32_t *handle, uint32_t *qpn)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_CREATE_OBJ };

	m.u.obj.type = SIB_OBJ_QP;
	m.u.obj.dev_handle = dev_handle;
	m.u.obj.qp_type = type;
	assert_int_equal(ctl(fd, &m, -1, NULL), 0);
	*handle = m.u.obj.handle;
	*qpn = m.u.obj.qpn;
}

static int sealed_memfd(bool seal)
{
	int fd = memfd_create("softib-dx-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	if (seal)
		assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	return fd;
}

/* GET of the owner's table: 0 and *got, or -errno. */
static int dx_get(int fd, uint32_t qp_handle, uint32_t inbox, uint32_t gen, uint32_t qpn, int *got)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_DX_GET };

	m.u.dx.kind = SIB_DX_KIND_TAB;
	m.u.dx.qp_handle = qp_handle;
	m.u.dx.inbox = inbox;
	m.u.dx.inbox_gen = gen;
	m.u.dx.qpn = qpn;
	return ctl(fd, &m, -1, got);
}

static void test_no_right(void **state)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_DX_PUT };
	uint32_t odev, oinbox, ogen, oqp, oqpn, adev, ud, udqpn, rc_h, rcqpn;
	struct stat st_put, st_got;
	long before;
	char *text;
	int own, ask, mfd, got = -1;

	(void)state;
	text = status_text();
	before = field(text, "direct ", "dx_refused");
	free(text);
	assert_true(before >= 0);
	/* the owner: a context on softib0 that gave its table, and an RC QP */
	own = hello_conn();
	ctl_open(own, 0, &odev, &oinbox, &ogen);
	mfd = sealed_memfd(false);
	m.u.dx.kind = SIB_DX_KIND_TAB;
	m.u.dx.dev_handle = odev;
	assert_int_equal(ctl(own, &m, mfd, NULL), -EINVAL); /* not sealed: not taken */
	close(mfd);
	mfd = sealed_memfd(true);
	assert_int_equal(fstat(mfd, &st_put), 0);
	assert_int_equal(ctl(own, &m, mfd, NULL), 0);
	close(mfd);
	ctl_qp(own, odev, IBV_QPT_RC, &oqp, &oqpn);

	/* the asker: a context on softib1 */
	ask = hello_conn();
	ctl_open(ask, 1, &adev, NULL, NULL);
	/* no QP at all */
	assert_int_equal(dx_get(ask, 0, oinbox, ogen, oqpn, &got), -EPERM);
	assert_int_equal(dx_get(ask, adev, oinbox, ogen, oqpn, &got), -EPERM); /* a device handle */
	/* a UD QP: no connection to anyone */
	ctl_qp(ask, adev, IBV_QPT_UD, &ud, &udqpn);
	assert_int_equal(dx_get(ask, ud, oinbox, ogen, oqpn, &got), -EPERM);
	/* an RC QP, but a QPN that is not the owner's (its own) */
	ctl_qp(ask, adev, IBV_QPT_RC, &rc_h, &rcqpn);
	assert_int_equal(dx_get(ask, rc_h, oinbox, ogen, rcqpn, &got), -EPERM);
	/* the owner's QP handle is not the asker's */
	assert_int_equal(dx_get(ask, oqp, oinbox, ogen, oqpn, &got), -EPERM);
	assert_int_equal(got, -1);
	text = status_text();
	assert_int_equal(field(text, "direct ", "dx_refused"), before + 5);
	free(text);

	/* with the right: the owner's very file */
	assert_int_equal(dx_get(ask, rc_h, oinbox, ogen, oqpn, &got), 0);
	assert_true(got >= 0);
	assert_int_equal(fstat(got, &st_got), 0);
	assert_int_equal(st_got.st_ino, st_put.st_ino);
	assert_int_equal(fcntl(got, F_GETFL) & O_ACCMODE, O_RDONLY); /* a table: read-only */
	close(got);
	got = -1;
	/* a wrong generation of the owner's inbox */
	assert_int_equal(dx_get(ask, rc_h, oinbox, ogen + 2, oqpn, &got), -ESTALE);

	/* the owner's context closes: its fds go with it */
	m.hdr.op = SIB_CTL_CLOSE_DEVICE;
	m.u.handle = odev;
	assert_int_equal(ctl(own, &m, -1, NULL), 0);
	assert_int_equal(dx_get(ask, rc_h, oinbox, ogen, oqpn, &got), -ESTALE);
	close(own);
	close(ask);
}

#endif /* DX_PROBE_ONLY */

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_probe),
#ifndef DX_PROBE_ONLY
		cmocka_unit_test(test_no_right),
#endif
	};

	if (argc == 4 && !strcmp(argv[1], "--probe")) {
		int holes = probe((pid_t)atoi(argv[2])) + probe((pid_t)atoi(argv[3]));

		return holes > 100 ? 100 : holes;
	}
	setenv("SOFTIB_MEMLOCK", "0", 0); /* a 4 MiB MR on each end: not the subject here */
	drop_sys_ptrace();
	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
