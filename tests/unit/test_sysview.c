/* SPDX-License-Identifier: MIT */
/*
 * The system view (src/sysview, docs/clients.md "The system view") against a
 * private softibd: every file of the tree checked against what softib's
 * libibverbs answers (ibv_query_device, _port, _gid, _pkey), not against
 * constants; modes as sysfs's; a LID change, a port down and up, and a
 * device added and removed through the daemon seen after POLLIN on the
 * view's fd and a refresh (every wait with a deadline); the IPoIB
 * interface's directory; the port counters move with traffic seen by the
 * PMA; destroy removes everything it made and nothing else.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "common/ctl.h"
#include "common/sib_ctl.h"
#include "sysview/sysview.h"

#include "daemon_fixture.h"

/* libibverbs' IBVERBS_1.0 export, declared in rdma-core's driver.h. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

#define WAIT_MS 10000

static char root[64];

/* ---- helpers ---- */

static int admin(uint16_t op, const char *name, uint32_t port, uint32_t action, uint32_t value)
{
	struct timeval tv = { .tv_sec = 5 };
	struct sib_ctl_msg m = { .hdr.op = op };
	int fd = sib_ctl_connect(daemon_socket());

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(m.u.dev.name, sizeof(m.u.dev.name), "%s", name);
	m.u.dev.port_num = port;
	m.u.dev.action = action;
	m.u.dev.value = value;
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	close(fd);
	return m.hdr.status;
}

/* The content of ROOT/path (NUL-terminated, into buf); -1: none. */
static int readf(char *buf, size_t size, const char *fmt, ...)
{
	char rel[512], path[600];
	va_list ap;
	ssize_t n;
	int fd;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return (int)n;
}

/* Assert ROOT/path holds exactly want. */
static void check_file(const char *want, const char *fmt, ...)
{
	char rel[512], got[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (readf(got, sizeof(got), "%s", rel) < 0)
		fail_msg("%s: missing", rel);
	if (strcmp(got, want))
		fail_msg("%s: '%s', want '%s'", rel, got, want);
}

static void check_fmt(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check_fmt(const char *path, const char *fmt, ...)
{
	char want[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	check_file(want, "%s", path);
}

static bool exists(const char *fmt, ...)
{
	char rel[512], path[600];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return lstat(path, &st) == 0;
}

/* Refresh on POLLIN (or every 200 ms) until ROOT/path holds want. */
static void wait_file(struct sib_sysview *v, const char *want, const char *path)
{
	uint64_t deadline = now_ms() + WAIT_MS;
	char got[256] = "";

	while (now_ms() < deadline) {
		struct pollfd p = { .fd = sib_sysview_fd(v), .events = POLLIN };

		poll(&p, 1, 200);
		assert_int_equal(sib_sysview_refresh(v), 0);
		if (want ? readf(got, sizeof(got), "%s", path) >= 0 && !strcmp(got, want)
			 : !exists("%s", path))
			return;
	}
	fail_msg("%s: '%s' after %d ms, want '%s'", path, got, WAIT_MS, want ? want : "(none)");
}

/* Every node under dir: files 0444, directories 0755, no temporaries. */
static void check_modes(const char *dir, int *files)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[1024];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_name[0] == '.')
			fail_msg("%s/%s: a temporary left behind", dir, e->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		assert_int_equal(lstat(path, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			if ((st.st_mode & 07777) != 0755)
				fail_msg("%s: mode %o", path, st.st_mode & 07777);
			check_modes(path, files);
		} else if (S_ISREG(st.st_mode)) {
			if ((st.st_mode & 07777) != 0444)
				fail_msg("%s: mode %o", path, st.st_mode & 07777);
			++*files;
		} else {
			assert_true(S_ISLNK(st.st_mode));
		}
	}
	closedir(d);
}

static const char *state_str(int s)
{
	switch (s) {
	case IBV_PORT_DOWN: return "1: DOWN";
	case IBV_PORT_INIT: return "2: INIT";
	case IBV_PORT_ARMED: return "3: ARMED";
	case IBV_PORT_ACTIVE: return "4: ACTIVE";
	default: return "?";
	}
}

static const char *phys_str(int s)
{
	switch (s) {
	case 2: return "2: Polling";
	case 3: return "3: Disabled";
	case 5: return "5: LinkUp";
	default: return "?";
	}
}

/* "40 Gb/sec (4X QDR)" from the port's width and speed enums (IBA 14.2.5.6). */
static void rate_of(const struct ibv_port_attr *pa, char *out, size_t size)
{
	static const struct { int speed; int deci; const char *n; } sp[] = {
		{ 1, 25, "SDR" }, { 2, 50, "DDR" }, { 4, 100, "QDR" }, { 8, 100, "FDR10" },
		{ 16, 140, "FDR" }, { 32, 250, "EDR" }, { 64, 500, "HDR" }, { 128, 1000, "NDR" },
	};
	int lanes = pa->active_width == 1 ? 1 : pa->active_width == 2 ? 4 :
		    pa->active_width == 4 ? 8 : pa->active_width == 8 ? 12 : 2;

	for (size_t i = 0; i < sizeof(sp) / sizeof(sp[0]); i++)
		if (sp[i].speed == pa->active_speed) {
			int r = sp[i].deci * lanes;

			snprintf(out, size, "%d%s Gb/sec (%dX %s)\n", r / 10, r % 10 ? ".5" : "", lanes, sp[i].n);
			return;
		}
	fail_msg("speed %d", pa->active_speed);
}

static void guid_of(__be64 be, char *out, size_t size)
{
	uint64_t g = be64toh(be);

	snprintf(out, size, "%04x:%04x:%04x:%04x\n", (unsigned)(g >> 48), (unsigned)(g >> 32) & 0xffff,
		 (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
}

/* One port's files against ibv_query_port, _gid and _pkey. */
static void check_port(struct ibv_context *ctx, const char *dev, uint8_t port)
{
	struct ibv_port_attr pa;
	char pd[128], path[256], want[128];

	assert_int_equal(ibv_query_port(ctx, port, &pa), 0);
	snprintf(pd, sizeof(pd), "sys/class/infiniband/%s/ports/%u", dev, port);
	snprintf(path, sizeof(path), "%s/state", pd);
	check_fmt(path, "%s\n", state_str(pa.state));
	snprintf(path, sizeof(path), "%s/phys_state", pd);
	check_fmt(path, "%s\n", phys_str(pa.phys_state));
	snprintf(path, sizeof(path), "%s/lid", pd);
	check_fmt(path, "0x%x\n", pa.lid);
	snprintf(path, sizeof(path), "%s/sm_lid", pd);
	check_fmt(path, "0x%x\n", pa.sm_lid);
	snprintf(path, sizeof(path), "%s/lid_mask_count", pd);
	check_fmt(path, "%u\n", pa.lmc);
	snprintf(path, sizeof(path), "%s/sm_sl", pd);
	check_fmt(path, "%u\n", pa.sm_sl);
	snprintf(path, sizeof(path), "%s/cap_mask", pd);
	check_fmt(path, "0x%08x\n", pa.port_cap_flags);
	snprintf(path, sizeof(path), "%s/link_layer", pd);
	check_fmt(path, "InfiniBand\n");
	rate_of(&pa, want, sizeof(want));
	snprintf(path, sizeof(path), "%s/rate", pd);
	check_file(want, "%s", path);
	assert_true(pa.gid_tbl_len > 0);
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;
		uint8_t *r = g.raw;

		assert_int_equal(ibv_query_gid(ctx, port, i, &g), 0);
		snprintf(path, sizeof(path), "%s/gids/%d", pd, i);
		check_fmt(path, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x\n",
			  r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
			  r[12], r[13], r[14], r[15]);
		/* Attributes only for entries that have them (the kernel: EINVAL). */
		struct ibv_gid_entry e;
		bool valid = ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0) == 0;

		assert_int_equal(exists("%s/gid_attrs/types/%d", pd, i), valid);
		if (valid) {
			snprintf(path, sizeof(path), "%s/gid_attrs/types/%d", pd, i);
			check_fmt(path, "IB/RoCE v1\n");
		}
	}
	assert_false(exists("%s/gids/%d", pd, pa.gid_tbl_len));
	assert_true(exists("%s/gid_attrs/ndevs", pd));
	for (int i = 0; i < pa.pkey_tbl_len; i++) {
		__be16 pk;

		assert_int_equal(ibv_query_pkey(ctx, port, i, &pk), 0);
		snprintf(path, sizeof(path), "%s/pkeys/%d", pd, i);
		check_fmt(path, "0x%04x\n", be16toh(pk));
	}
	assert_false(exists("%s/pkeys/%d", pd, pa.pkey_tbl_len));
}

/* One device's files against ibv_query_device. */
static void check_device(struct ibv_device *dev, int *umad)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	const char *name = ibv_get_device_name(dev);
	struct ibv_device_attr a;
	char dd[128], path[256], want[128], link[256];
	ssize_t n;
	struct stat st;

	assert_non_null(ctx);
	assert_int_equal(ibv_query_device(ctx, &a), 0);
	snprintf(dd, sizeof(dd), "sys/class/infiniband/%s", name);
	snprintf(path, sizeof(path), "%s/node_type", dd);
	check_fmt(path, "%d: CA\n", dev->node_type);
	guid_of(a.node_guid, want, sizeof(want));
	snprintf(path, sizeof(path), "%s/node_guid", dd);
	check_file(want, "%s", path);
	guid_of(a.sys_image_guid, want, sizeof(want));
	snprintf(path, sizeof(path), "%s/sys_image_guid", dd);
	check_file(want, "%s", path);
	snprintf(path, sizeof(path), "%s/fw_ver", dd);
	check_fmt(path, "%s\n", a.fw_ver);
	snprintf(path, sizeof(path), "%s/hw_rev", dd);
	check_fmt(path, "%u\n", a.hw_ver);
	/* What softib's library answers for the driver's own attributes. */
	static const char *const drv[] = { "board_id", "hca_type", "node_desc" };

	for (size_t i = 0; i < sizeof(drv) / sizeof(drv[0]); i++) {
		char buf[80];
		int len = ibv_read_sysfs_file(dev->ibdev_path, drv[i], buf, sizeof(buf) - 1);

		assert_true(len > 0);
		buf[len] = '\0';
		snprintf(path, sizeof(path), "%s/%s", dd, drv[i]);
		check_fmt(path, "%s\n", buf);
	}
	snprintf(path, sizeof(path), "%s/device/vendor", dd);
	check_fmt(path, "0x%04x\n", a.vendor_id);
	snprintf(path, sizeof(path), "%s/device/device", dd);
	check_fmt(path, "0x%04x\n", a.vendor_part_id);
	snprintf(path, sizeof(path), "%s/device/numa_node", dd);
	check_fmt(path, "-1\n");
	assert_true(readf(want, sizeof(want), "%s/device/local_cpus", dd) > 0);
	assert_non_null(strchr("0123456789abcdef", want[0]));
	/* Open MPI readlinks this and matches the basename against mlx*. */
	snprintf(path, sizeof(path), "%s/%s/device/driver", root, dd);
	n = readlink(path, link, sizeof(link) - 1);
	assert_true(n > 0);
	link[n] = '\0';
	assert_string_equal(strrchr(link, '/') + 1, "softib");
	assert_int_equal(stat(path, &st), 0); /* it leads somewhere in the tree */
	assert_true(S_ISDIR(st.st_mode));
	for (uint8_t p = 1; p <= a.phys_port_cnt; p++) {
		check_port(ctx, name, p);
		/* umad<N>: one per (device, port), in device order. */
		snprintf(path, sizeof(path), "sys/class/infiniband_mad/umad%d/ibdev", *umad);
		check_fmt(path, "%s\n", name);
		snprintf(path, sizeof(path), "sys/class/infiniband_mad/umad%d/port", *umad);
		check_fmt(path, "%u\n", p);
		snprintf(path, sizeof(path), "sys/class/infiniband_mad/issm%d/port", *umad);
		check_fmt(path, "%u\n", p);
		snprintf(path, sizeof(path), "%s/dev/infiniband/umad%d", root, *umad);
		assert_int_equal(stat(path, &st), 0);
		assert_true(S_ISCHR(st.st_mode));
		++*umad;
	}
	/* uverbs<N>: ibv_device.dev_name, its node a character device. */
	snprintf(path, sizeof(path), "sys/class/infiniband_verbs/%s/ibdev", dev->dev_name);
	check_fmt(path, "%s\n", name);
	snprintf(path, sizeof(path), "%s/dev/infiniband/%s", root, dev->dev_name);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(access(path, R_OK | W_OK), 0);
	snprintf(path, sizeof(path), "sys/class/infiniband_verbs/%s/dev", dev->dev_name);
	check_fmt(path, "%u:%u\n", major(st.st_rdev), minor(st.st_rdev));
	ibv_close_device(ctx);
}

/* ---- tests ---- */

static void test_tree(void **state)
{
	struct sib_sysview *v = sib_sysview_create(root);
	struct ibv_device **list;
	int n = 0, umad = 0, files = 0;
	char path[128];

	(void)state;
	assert_non_null(v);
	check_fmt("sys/class/infiniband_verbs/abi_version", "6\n");
	check_fmt("sys/class/infiniband_mad/abi_version", "5\n");
	check_fmt("sys/class/misc/rdma_cm/abi_version", "4\n");
	check_fmt("sys/class/infiniband_ucma/abi_version", "4\n");
	/* Every `dev` is the major:minor of what its node is. */
	struct stat null;

	snprintf(path, sizeof(path), "%s/dev/infiniband/rdma_cm", root);
	assert_int_equal(stat(path, &null), 0);
	assert_true(S_ISCHR(null.st_mode));
	check_fmt("sys/class/misc/rdma_cm/dev", "%u:%u\n", major(null.st_rdev), minor(null.st_rdev));
	list = ibv_get_device_list(&n);
	assert_non_null(list);
	assert_true(n >= 2);
	for (int i = 0; i < n; i++)
		check_device(list[i], &umad);
	assert_false(exists("sys/class/infiniband_mad/umad%d", umad));
	ibv_free_device_list(list);
	snprintf(path, sizeof(path), "%s/sys", root);
	check_modes(path, &files);
	assert_true(files > 100);
	/* A refresh with nothing changed rewrites nothing: same inode. */
	struct stat a, b;

	snprintf(path, sizeof(path), "%s/sys/class/infiniband/softib0/ports/1/lid", root);
	assert_int_equal(stat(path, &a), 0);
	assert_int_equal(sib_sysview_refresh(v), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	sib_sysview_destroy(v, true);
	/* Everything it made is gone, root stays. */
	DIR *d = opendir(root);
	struct dirent *e;
	int left = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		left += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	assert_int_equal(left, 0);
}

/* A LID change, a port down and up: POLLIN, refresh, the new values. */
static void test_live(void **state)
{
	struct sib_sysview *v = sib_sysview_create(root);
	const char *pd = "sys/class/infiniband/softib1/ports/1";
	char path[128], old_lid[32];

	(void)state;
	assert_non_null(v);
	snprintf(path, sizeof(path), "%s/lid", pd);
	assert_true(readf(old_lid, sizeof(old_lid), "%s", path) > 0);
	/* Nothing pending, then the LID_CHANGE makes the fd readable. */
	struct pollfd p = { .fd = sib_sysview_fd(v), .events = POLLIN };

	assert_int_equal(poll(&p, 1, 0), 0);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib1", 1, SIB_PORT_LID, 0x77), 0);
	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	assert_true(p.revents & POLLIN);
	assert_int_equal(sib_sysview_refresh(v), 0);
	check_file("0x77\n", "%s", path);
	/* The refresh consumed it. */
	assert_int_equal(poll(&p, 1, 0), 0);
	wait_file(v, "0x77\n", path);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib1", 1, SIB_PORT_SM_LID, 9), 0);
	snprintf(path, sizeof(path), "%s/sm_lid", pd);
	wait_file(v, "0x9\n", path);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib1", 1, SIB_PORT_DOWN, 0), 0);
	snprintf(path, sizeof(path), "%s/state", pd);
	wait_file(v, "1: DOWN\n", path);
	snprintf(path, sizeof(path), "%s/phys_state", pd);
	check_file("3: Disabled\n", "%s", path);
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib1", 1, SIB_PORT_UP, 0), 0);
	snprintf(path, sizeof(path), "%s/state", pd);
	wait_file(v, "4: ACTIVE\n", path);
	snprintf(path, sizeof(path), "%s/phys_state", pd);
	check_file("5: LinkUp\n", "%s", path);
	/* Put things back as the daemon had them (the SM LID: 1). */
	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib1", 1, SIB_PORT_SM_LID, 1), 0);
	unsigned lid = (unsigned)strtoul(old_lid, NULL, 16);

	assert_int_equal(admin(SIB_CTL_PORT_SET, "softib1", 1, SIB_PORT_LID, lid), 0);
	snprintf(path, sizeof(path), "%s/lid", pd);
	wait_file(v, old_lid, path);
	sib_sysview_destroy(v, true);
}

/* `softib device add` and `remove`: the device's directories and nodes
 * come and go; its umad number is the lowest free one. */
static void test_hotplug(void **state)
{
	struct sib_sysview *v = sib_sysview_create(root);
	struct ibv_device **list;
	char path[128], ibdev[64];
	int n = 0, umads = 0;

	(void)state;
	assert_non_null(v);
	list = ibv_get_device_list(&n);
	assert_non_null(list);
	ibv_free_device_list(list);
	while (exists("sys/class/infiniband_mad/umad%d", umads))
		umads++;
	assert_int_equal(admin(SIB_CTL_DEVICE_ADD, "sv0", 0, 0, 0), 0);
	wait_file(v, "1: CA\n", "sys/class/infiniband/sv0/node_type");
	wait_file(v, "4: ACTIVE\n", "sys/class/infiniband/sv0/ports/1/state");
	snprintf(path, sizeof(path), "sys/class/infiniband_mad/umad%d/ibdev", umads);
	check_file("sv0\n", "%s", path);
	assert_int_equal(admin(SIB_CTL_DEVICE_REMOVE, "sv0", 0, 0, 0), 0);
	wait_file(v, NULL, "sys/class/infiniband/sv0");
	snprintf(path, sizeof(path), "sys/class/infiniband_mad/umad%d", umads);
	assert_false(exists("%s", path));
	/* No uverbs entry names it any more. */
	for (int i = 0; i < 64; i++)
		if (readf(ibdev, sizeof(ibdev), "sys/class/infiniband_verbs/uverbs%d/ibdev", i) > 0)
			assert_string_not_equal(ibdev, "sv0\n");
	sib_sysview_destroy(v, true);
}

/* device/net/<ifname> for a port's IPoIB interface; hostile names refused. */
static void test_netdev(void **state)
{
	struct sib_sysview *v = sib_sysview_create(root);

	(void)state;
	assert_non_null(v);
	assert_int_equal(sib_sysview_set_netdev(v, "softib0", 1, "ib0"), 0);
	check_file("0\n", "sys/class/infiniband/softib0/device/net/ib0/dev_port");
	check_file("32\n", "sys/class/infiniband/softib0/device/net/ib0/type");
	check_file("20\n", "sys/class/infiniband/softib0/device/net/ib0/addr_len");
	/* lo exists in every namespace: its live values are copied. */
	assert_int_equal(sib_sysview_set_netdev(v, "softib0", 1, "lo"), 0);
	assert_false(exists("sys/class/infiniband/softib0/device/net/ib0"));
	check_file("1\n", "sys/class/infiniband/softib0/device/net/lo/ifindex");
	assert_int_equal(sib_sysview_set_netdev(v, "softib0", 1, ".."), -EINVAL);
	assert_int_equal(sib_sysview_set_netdev(v, "softib0", 1, "a/b"), -EINVAL);
	assert_int_equal(sib_sysview_set_netdev(v, "softib0", 1, "0123456789abcdefX"), -EINVAL);
	assert_int_equal(sib_sysview_set_netdev(v, "softib0", 9, "ib1"), -EINVAL);
	assert_int_equal(sib_sysview_set_netdev(v, "nosuch", 1, "ib1"), -ENODEV);
	assert_int_equal(sib_sysview_refresh(v), 0);
	assert_true(exists("sys/class/infiniband/softib0/device/net/lo/type"));
	assert_int_equal(sib_sysview_set_netdev(v, "softib0", 1, NULL), 0);
	assert_false(exists("sys/class/infiniband/softib0/device/net/lo"));
	assert_true(exists("sys/class/infiniband/softib0/device/net"));
	sib_sysview_destroy(v, true);
}

/* counters/ from the PMA: the kernel's extended set (softib's PMA has
 * PortCountersExtended), every value decimal.  That they follow traffic is
 * tests/integration/sysview.sh's business (ibv_rc_pingpong, perfquery). */
static void test_counters(void **state)
{
	static const char *const names[] = { "symbol_error", "link_error_recovery", "link_downed",
		"port_rcv_errors", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
		"port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
		"local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped",
		"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_xmit_wait",
		"port_rcv_packets", "unicast_rcv_packets", "unicast_xmit_packets",
		"multicast_rcv_packets", "multicast_xmit_packets" };
	struct sib_sysview *v = sib_sysview_create(root);
	const char *cd = "sys/class/infiniband/softib0/ports/1/counters";
	char a[64], path[600];
	int n = 0;
	DIR *d;

	(void)state;
	assert_non_null(v);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (readf(a, sizeof(a), "%s/%s", cd, names[i]) <= 0)
			fail_msg("%s/%s: missing", cd, names[i]);
		assert_true(strspn(a, "0123456789") == strlen(a) - 1 && a[strlen(a) - 1] == '\n');
	}
	snprintf(path, sizeof(path), "%s/%s", root, cd);
	d = opendir(path);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(n, sizeof(names) / sizeof(names[0]));
	sib_sysview_destroy(v, false);
	/* Without remove_tree the files stay; a new view takes them over. */
	assert_true(exists("%s/symbol_error", cd));
	v = sib_sysview_create(root);
	assert_non_null(v);
	sib_sysview_destroy(v, true);
	assert_false(exists("sys"));
}

static void test_errors(void **state)
{
	(void)state;
	errno = 0;
	assert_null(sib_sysview_create("/nonexistent/sysview"));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(sib_sysview_refresh(NULL), -EINVAL);
	assert_int_equal(sib_sysview_fd(NULL), -1);
	sib_sysview_destroy(NULL, true);
}

static int setup(void **state)
{
	/* On a tmpfs when there is one: a disk's renames cost a millisecond. */
	snprintf(root, sizeof(root), "/dev/shm/sysview-test.XXXXXX");
	if (!mkdtemp(root)) {
		snprintf(root, sizeof(root), "/tmp/sysview-test.XXXXXX");
		assert_non_null(mkdtemp(root));
	}
	return start_daemon(state);
}

static int teardown(void **state)
{
	rmdir(root);
	return stop_daemon(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_live),
		cmocka_unit_test(test_hotplug),
		cmocka_unit_test(test_netdev),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
