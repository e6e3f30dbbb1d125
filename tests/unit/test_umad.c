// SPDX-License-Identifier: MIT
/*
 * softib's libibumad.so.3 (src/umad/): the local functions against the
 * layouts of the system's <infiniband/umad.h>, and the CA/port queries
 * against a private softibd (MGMT_QUERY, also fed hostile requests).
 * Linked against the drop-in library itself, as a consumer would be.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/umad.h>
#include <infiniband/umad_str.h>

#include "common/ctl.h"
#include "dev_cmd.h"

#define WAIT_MS 5000

static char g_dir[64], g_sock[128];
static pid_t g_pid;

/* ---- local functions ------------------------------------------------------ */

static void test_layout(void **state)
{
	uint8_t buf[256 + 64];
	struct ib_user_mad *u = (struct ib_user_mad *)buf;

	assert_int_equal(umad_size(), 64);
	assert_ptr_equal(umad_get_mad(buf), buf + 64);
	assert_ptr_equal(umad_get_mad_addr(buf), &u->addr);
	memset(buf, 0, sizeof(buf));
	u->status = 110;
	assert_int_equal(umad_status(buf), 110);
	u->status = 0;
	assert_int_equal(umad_status(buf), 0);
}

static void test_addr(void **state)
{
	uint8_t buf[320];
	struct ib_user_mad *u = (struct ib_user_mad *)buf;
	ib_mad_addr_t a;

	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(umad_set_addr(buf, 0x1234, 1, 5, 0x80010000), 0);
	assert_int_equal(u->addr.lid, htons(0x1234));
	assert_int_equal(u->addr.qpn, htonl(1));
	assert_int_equal(u->addr.qkey, htonl(0x80010000));
	assert_int_equal(u->addr.sl, 5);

	assert_int_equal(umad_set_addr_net(buf, htons(7), htonl(0x10), 3, htonl(0x1111)), 0);
	assert_int_equal(u->addr.lid, htons(7));
	assert_int_equal(u->addr.qpn, htonl(0x10));
	assert_int_equal(u->addr.qkey, htonl(0x1111));
	assert_int_equal(u->addr.sl, 3);

	assert_int_equal(umad_set_pkey(buf, 5), 0);
	assert_int_equal(umad_get_pkey(buf), 5);
	assert_int_equal(u->addr.pkey_index, 5);

	memset(&a, 0, sizeof(a));
	for (int i = 0; i < 16; i++)
		a.gid[i] = (uint8_t)(0xf0 + i);
	a.flow_label = 0x12345;   /* host order in, network order out */
	a.hop_limit = 63;
	a.traffic_class = 9;
	assert_int_equal(umad_set_grh(buf, &a), 0);
	assert_int_equal(u->addr.grh_present, 1);
	assert_memory_equal(u->addr.gid, a.gid, 16);
	assert_int_equal(u->addr.flow_label, htonl(0x12345));
	assert_int_equal(u->addr.hop_limit, 63);
	assert_int_equal(u->addr.traffic_class, 9);
	assert_int_equal(umad_set_grh(buf, NULL), 0);
	assert_int_equal(u->addr.grh_present, 0);
}

static void test_strings(void **state)
{
	assert_string_equal(umad_class_str(0x81), "SubnDirectedRoute");
	assert_string_equal(umad_class_str(0x03), "SubnAdm");
	assert_string_equal(umad_class_str(0x33), "VendorRange2");
	assert_string_equal(umad_class_str(0x77), "<unknown>");
	assert_string_equal(umad_method_str(0x03, 0x92), "GetTableResp");
	assert_string_equal(umad_method_str(0x01, 0x81), "GetResp");
	assert_string_equal(umad_method_str(0x01, 0x12), "<unknown>");
	assert_string_equal(umad_attribute_str(0x81, htons(0x0015)), "PortInfo");
	assert_string_equal(umad_attribute_str(0x03, htons(0x0035)), "PathRecord");
	assert_string_equal(umad_attribute_str(0x04, htons(0x0012)), "PortCounters");
	assert_string_equal(umad_attribute_str(0x03, htons(0x0001)), "ClassPortInfo");
	assert_string_equal(umad_common_mad_status_str(htons(0)), "Success");
	assert_string_equal(umad_common_mad_status_str(htons(0x000C)),
			    "Method/Attribute combination not supported");
	assert_string_equal(umad_common_mad_status_str(htons(0x0001)), "Busy");
	assert_string_equal(umad_sa_mad_status_str(htons(0x0300)), "No Records");
}

/* The dumps print the fields on stderr. */
static void test_dump(void **state)
{
	uint8_t buf[320] = { 0 };
	char out[1024] = { 0 };
	int saved = dup(2), fd;
	FILE *f = tmpfile();

	assert_non_null(f);
	umad_set_addr(buf, 9, 1, 2, 0x80010000);
	((struct ib_user_mad *)buf)->agent_id = 3;
	fflush(stderr);
	dup2(fileno(f), 2);
	umad_dump(buf);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	fd = (int)fread(out, 1, sizeof(out) - 1, f);
	fclose(f);
	assert_true(fd > 0);
	assert_non_null(strstr(out, "agent id 3"));
	assert_non_null(strstr(out, "qpn 1 qkey 0x80010000 lid 9 sl 2"));
	assert_int_equal(umad_debug(-1), 0);
	assert_int_equal(umad_debug(2), 2);
	assert_int_equal(umad_debug(-1), 2);
	assert_int_equal(umad_debug(0), 0);
}

static void test_register_args(void **state)
{
	struct umad_reg_attr attr = { .mgmt_class = 0x30, .oui = 0 };
	uint8_t oui[3] = { 0, 0x14, 0x05 };
	uint32_t id;

	assert_int_equal(umad_register_oui(-1, 0x03, 0, oui, NULL), -EINVAL);
	assert_int_equal(umad_register2(-1, NULL, &id), EINVAL);
	assert_int_equal(umad_register2(-1, &attr, NULL), EINVAL);
	assert_int_equal(umad_register2(-1, &attr, &id), EINVAL); /* vendor class, OUI 0 */
	attr.oui = 0x01001405;
	assert_int_equal(umad_register2(-1, &attr, &id), EINVAL); /* OUI over 24 bits */
}

static void test_sort(void **state)
{
	const char *names[] = { "mlx5_1", "a0", "softib0", "b" };
	struct umad_device_node n[4], *head = NULL, *p;

	for (int i = 3; i >= 0; i--) {
		n[i].ca_name = names[i];
		n[i].next = head;
		head = &n[i];
	}
	assert_int_equal(umad_sort_ca_device_list(&head, 0), 0);
	assert_string_equal(head->ca_name, "a0");
	p = head->next;
	assert_string_equal(p->ca_name, "b");
	assert_string_equal(p->next->ca_name, "mlx5_1");
	assert_string_equal(p->next->next->ca_name, "softib0");
	assert_null(p->next->next->next);
	assert_int_not_equal(umad_sort_ca_device_list(&head, 7), 0);
}

/* No softibd: no CA, and resolution fails with ENODEV. */
static void test_no_daemon(void **state)
{
	char names[4][UMAD_CA_NAME_LEN];
	umad_ca_t ca;
	umad_port_t port;

	setenv("SOFTIB_SOCKET", "/nonexistent/softib.sock", 1);
	setenv("SOFTIB_NO_AUTOSTART", "1", 1);
	assert_int_equal(umad_get_cas_names(names, 4), 0);
	assert_null(umad_get_ca_device_list());
	assert_int_equal(umad_get_ca(NULL, &ca), -ENODEV);
	assert_int_equal(umad_get_port(NULL, 0, &port), -ENODEV);
	assert_int_equal(umad_open_port(NULL, 0), -ENODEV);
}

/* ---- against softibd ------------------------------------------------------ */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int daemon_up(void **state)
{
	long long end;
	int fd;

	snprintf(g_dir, sizeof(g_dir), "/tmp/test_umad.XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(g_sock, sizeof(g_sock), "%s/softib.sock", g_dir);
	g_pid = fork();
	if (g_pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execl(SOFTIBD_PATH, SOFTIBD_PATH, "--foreground", "--socket", g_sock, (char *)NULL);
		_exit(127);
	}
	end = now_ms() + WAIT_MS;
	while (now_ms() < end) {
		fd = sib_ctl_connect(g_sock);
		if (fd >= 0) {
			close(fd);
			setenv("SOFTIB_SOCKET", g_sock, 1);
			setenv("SOFTIB_NO_AUTOSTART", "1", 1);
			return 0;
		}
		usleep(10000);
	}
	return -1;
}

static int daemon_down(void **state)
{
	long long end = now_ms() + WAIT_MS;

	if (g_pid > 0) {
		kill(g_pid, SIGTERM);
		while (waitpid(g_pid, NULL, WNOHANG) != g_pid && now_ms() < end)
			usleep(10000);
		if (now_ms() >= end) {
			kill(g_pid, SIGKILL);
			waitpid(g_pid, NULL, 0);
		}
	}
	char lock[sizeof(g_sock) + 8];

	snprintf(lock, sizeof(lock), "%s.lock", g_sock); /* softibd leaves its lock file */
	unlink(lock);
	unlink(g_sock);
	rmdir(g_dir);
	return 0;
}

static void test_cas(void **state)
{
	char names[8][UMAD_CA_NAME_LEN];
	struct umad_device_node *l, *p;
	int i, n;

	n = umad_get_cas_names(names, 8);
	assert_int_equal(n, 4);
	for (i = 0; i < 4; i++) {
		char want[16];

		snprintf(want, sizeof(want), "softib%d", i);
		assert_string_equal(names[i], want);
	}
	assert_int_equal(umad_get_cas_names(names, 2), 2);
	l = umad_get_ca_device_list();
	assert_non_null(l);
	for (p = l, i = 0; p; p = p->next, i++)
		assert_string_equal(p->ca_name, names[i < 2 ? i : 0][0] ? p->ca_name : "");
	assert_int_equal(i, 4);
	umad_free_ca_device_list(l);
}

static void test_ca_port(void **state)
{
	umad_ca_t ca;
	umad_port_t port;
	__be64 guids[4];

	assert_int_equal(umad_get_ca("softib1", &ca), 0);
	assert_string_equal(ca.ca_name, "softib1");
	assert_int_equal(ca.node_type, 1);
	assert_int_equal(ca.numports, 1);
	assert_true(be64toh(ca.node_guid) == 0x5eed000000000020ull);
	assert_true(be64toh(ca.system_guid) == 0x5eed000000000020ull);
	assert_null(ca.ports[0]);
	assert_non_null(ca.ports[1]);
	assert_int_equal(ca.ports[1]->base_lid, 3);
	assert_int_equal(ca.ports[1]->sm_lid, 1);
	assert_int_equal(ca.ports[1]->state, 4);
	assert_int_equal(ca.ports[1]->phys_state, 5);
	assert_string_equal(ca.ports[1]->link_layer, "InfiniBand");
	assert_int_equal(umad_release_ca(&ca), 0);
	assert_null(ca.ports[1]);

	assert_int_equal(umad_get_port("softib2", 1, &port), 0);
	assert_int_equal(port.portnum, 1);
	assert_int_equal(port.base_lid, 4);
	assert_int_equal(port.lmc, 0);
	assert_int_equal(port.rate, 40);
	assert_true(be64toh(port.port_guid) == 0x5eed000000000031ull);
	assert_true(be64toh(port.gid_prefix) == 0xfe80000000000000ull);
	assert_true(port.pkeys_size >= 1);
	assert_int_equal(port.pkeys[0], 0xffff);
	assert_int_equal(umad_release_port(&port), 0);
	assert_null(port.pkeys);

	/* NULL and 0: the first CA with an ACTIVE port */
	assert_int_equal(umad_get_port(NULL, 0, &port), 0);
	assert_string_equal(port.ca_name, "softib0");
	assert_int_equal(port.portnum, 1);
	umad_release_port(&port);

	assert_int_equal(umad_get_ca_portguids("softib3", guids, 4), 2);
	assert_true(guids[0] == 0);
	assert_true(be64toh(guids[1]) == 0x5eed000000000041ull);
	assert_int_equal(umad_get_ca_portguids("softib3", guids, 1), -ENOMEM);
	assert_int_equal(umad_get_ca_portguids("softib3", NULL, 0), 2);

	/* libibumad's errors for what does not exist */
	assert_int_equal(umad_get_ca("nosuch0", &ca), -ENOENT);
	assert_int_equal(umad_get_port("nosuch0", 1, &port), -EIO);
	assert_int_equal(umad_get_port("nosuch0", 0, &port), -ENODEV);
	assert_int_equal(umad_get_port("softib0", 2, &port), -EIO);
	assert_int_equal(umad_get_port("softib0", 2, &port), -EIO);
	assert_int_equal(umad_get_ca_portguids("nosuch0", guids, 4), -1);
	assert_int_equal(umad_get_ca("a-name-much-longer-than-twenty", &ca), -ENOENT);
}

static void test_issm_path(void **state)
{
	char path[256];

	assert_int_equal(umad_get_issm_path("softib0", 1, path, sizeof(path)), 0);
	assert_ptr_equal(strstr(path, g_sock), path);
	assert_non_null(strstr(path, "softib0"));
	assert_int_equal(umad_get_issm_path("softib0", 3, path, sizeof(path)), -EINVAL);
	assert_int_equal(umad_get_issm_path("nosuch0", 0, path, sizeof(path)), -ENODEV);
}

/* PortInfo:CapabilityMask.IsSM of port 1 of ca, or -1. */
static int is_sm_of(const char *ca)
{
	umad_port_t port;
	int on;

	if (umad_get_port(ca, 1, &port))
		return -1;
	on = (ntohl(port.capmask) >> 1) & 1;
	umad_release_port(&port);
	return on;
}

static int is_sm(void)
{
	return is_sm_of("softib1");
}

static bool wait_is_sm_of(const char *ca, int want)
{
	long long end = now_ms() + WAIT_MS;

	while (is_sm_of(ca) != want) {
		if (now_ms() >= end)
			return false;
		usleep(5000);
	}
	return true;
}

static bool wait_is_sm(int want)
{
	long long end = now_ms() + WAIT_MS;

	while (is_sm() != want) {
		if (now_ms() >= end)
			return false;
		usleep(5000);
	}
	return true;
}

/* Holding the ISSM file open sets IsSM, as OpenSM does with open(2). */
static void test_issm(void **state)
{
	char path[256];
	struct stat st;
	int a, b;

	assert_int_equal(umad_get_issm_path("softib1", 1, path, sizeof(path)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(is_sm(), 0);
	a = open(path, O_RDONLY | O_NONBLOCK); /* osm_vendor_set_sm */
	assert_true(a >= 0);
	assert_true(wait_is_sm(1));
	b = open(path, O_RDONLY | O_NONBLOCK);
	assert_true(b >= 0);
	close(a);
	usleep(50000);
	assert_int_equal(is_sm(), 1); /* still one holder */
	close(b);
	assert_true(wait_is_sm(0));
	/* a holder that dies: the kernel closes its fd */
	pid_t pid = fork();
	if (pid == 0) {
		if (open(path, O_RDONLY | O_NONBLOCK) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_true(wait_is_sm(1));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_true(wait_is_sm(0));
}

static int dev_cmd(uint16_t op, const char *name)
{
	return dev_cmd_at(g_sock, op, name);
}

/* A device removed takes its ISSM FIFO along; added back, its new FIFO
 * works (the same inotify watch must not find the old entry). */
static void test_issm_readd(void **state)
{
	char path[256];
	struct stat st;
	int a;

	for (int round = 0; round < 2; round++) {
		assert_int_equal(dev_cmd(SIB_CTL_DEVICE_ADD, "issmdev"), 0);
		assert_int_equal(umad_get_issm_path("issmdev", 1, path, sizeof(path)), 0);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(is_sm_of("issmdev"), 0);
		a = open(path, O_RDONLY | O_NONBLOCK);
		assert_true(a >= 0);
		assert_true(wait_is_sm_of("issmdev", 1));
		close(a);
		assert_true(wait_is_sm_of("issmdev", 0));
		/* held while the device goes: nothing left behind */
		a = open(path, O_RDONLY | O_NONBLOCK);
		assert_true(a >= 0);
		assert_true(wait_is_sm_of("issmdev", 1));
		assert_int_equal(dev_cmd(SIB_CTL_DEVICE_REMOVE, "issmdev"), 0);
		assert_int_equal(stat(path, &st), -1);
		assert_int_equal(errno, ENOENT);
		close(a);
	}
}

/* A port taken down: resolution moves on, values are live. */
static void test_live_resolution(void **state)
{
	struct sib_ctl_msg m;
	umad_port_t port;
	int fd = sib_ctl_connect(g_sock);

	assert_true(fd >= 0);
	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_PORT_SET;
	strcpy(m.u.dev.name, "softib0");
	m.u.dev.port_num = 1;
	m.u.dev.action = SIB_PORT_DOWN;
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, 0);

	assert_int_equal(umad_get_port("softib0", 1, &port), 0);
	assert_int_equal(port.state, 1);
	umad_release_port(&port);
	assert_int_equal(umad_get_port(NULL, 0, &port), 0);
	assert_string_equal(port.ca_name, "softib1");
	umad_release_port(&port);
	assert_int_equal(umad_get_port("softib0", 0, &port), -ENODEV); /* Disabled */

	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_PORT_SET;
	strcpy(m.u.dev.name, "softib0");
	m.u.dev.port_num = 1;
	m.u.dev.action = SIB_PORT_UP;
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, 0);
	assert_int_equal(umad_get_port(NULL, 0, &port), 0);
	assert_string_equal(port.ca_name, "softib0");
	umad_release_port(&port);
	close(fd);
}

/* Hostile MGMT_QUERY requests get errors; softibd keeps answering. */
static void test_bad_queries(void **state)
{
	struct sib_ctl_msg m;
	int fd = sib_ctl_connect(g_sock);

	assert_true(fd >= 0);
	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_MGMT_QUERY;
	m.u.mgmt.abi_version = 1;
	m.u.mgmt.what = SIB_MGMT_CAS;
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, EPROTO);
	assert_int_equal(m.u.mgmt.abi_version, SIB_ABI_VERSION);

	uint32_t whats[] = { 0, SIB_MGMT_WHAT_MAX, 0xffffffffu };
	for (size_t i = 0; i < 3; i++) {
		memset(&m, 0, sizeof(m));
		m.hdr.op = SIB_CTL_MGMT_QUERY;
		m.u.mgmt.abi_version = SIB_ABI_VERSION;
		m.u.mgmt.what = whats[i];
		assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
		assert_int_equal(m.hdr.status, EINVAL);
	}
	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_MGMT_QUERY;
	m.u.mgmt.abi_version = SIB_ABI_VERSION;
	m.u.mgmt.what = SIB_MGMT_PORT;
	memset(m.u.mgmt.ca_name, 'x', sizeof(m.u.mgmt.ca_name)); /* no NUL */
	assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
	assert_int_equal(m.hdr.status, EINVAL);

	uint32_t ports[] = { 0, 2, 255, 0x80000000u };
	for (size_t i = 0; i < 4; i++) {
		memset(&m, 0, sizeof(m));
		m.hdr.op = SIB_CTL_MGMT_QUERY;
		m.u.mgmt.abi_version = SIB_ABI_VERSION;
		m.u.mgmt.what = i & 1 ? SIB_MGMT_ISSM : SIB_MGMT_PORT;
		strcpy(m.u.mgmt.ca_name, "softib0");
		m.u.mgmt.port_num = ports[i];
		assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
		assert_int_equal(m.hdr.status, ENODEV);
	}
	/* a short message is refused as every short command is */
	memset(&m, 0, sizeof(m));
	m.hdr.magic = SIB_CTL_MAGIC;
	m.hdr.op = SIB_CTL_MGMT_QUERY;
	assert_int_equal(send(fd, &m, sizeof(m.hdr) + 8, 0), (ssize_t)sizeof(m.hdr) + 8);
	assert_true(sib_ctl_recv(fd, &m, NULL) > 0);
	assert_int_equal(m.hdr.status, EINVAL);
	close(fd);

	/* random bodies, some with a valid header: every one answered */
	fd = sib_ctl_connect(g_sock);
	assert_true(fd >= 0);
	srandom(7);
	for (int i = 0; i < 3000; i++) {
		uint8_t *b = (uint8_t *)&m.u.mgmt;

		memset(&m, 0, sizeof(m));
		for (size_t k = 0; k < sizeof(m.u.mgmt); k++)
			b[k] = (uint8_t)random();
		m.hdr.op = SIB_CTL_MGMT_QUERY;
		if (i & 1)
			m.u.mgmt.abi_version = SIB_ABI_VERSION;
		if (i & 2)
			m.u.mgmt.what = 1 + (uint32_t)(i % (SIB_MGMT_WHAT_MAX - 1));
		if (i & 4)
			snprintf(m.u.mgmt.ca_name, sizeof(m.u.mgmt.ca_name), "softib%d", i % 5);
		assert_int_equal(sib_ctl_call(fd, &m, NULL), 0);
		assert_true(m.hdr.status == 0 || m.hdr.status == EINVAL || m.hdr.status == ENODEV ||
			    m.hdr.status == EPROTO || m.hdr.status == EIO);
	}
	close(fd);

	umad_port_t port;
	assert_int_equal(umad_get_port("softib3", 1, &port), 0);
	umad_release_port(&port);
}

/* ---- MADs through softibd: two umad ports on softib0 port 1 ----------------- */

#define VCLASS 0x32
static const uint8_t test_oui[3] = { 0x00, 0x14, 0x05 };

struct umbuf {
	struct ib_user_mad hdr;
	uint8_t mad[4096];
};

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void make_mad(struct umbuf *b, uint8_t cls, uint8_t ver, uint8_t method, uint64_t tid,
		     uint16_t attr)
{
	memset(b, 0, sizeof(*b));
	b->mad[0] = 1;
	b->mad[1] = cls;
	b->mad[2] = ver;
	b->mad[3] = method;
	put_be64(b->mad + 8, tid);
	b->mad[16] = (uint8_t)(attr >> 8);
	b->mad[17] = (uint8_t)attr;
	if (cls >= 0x30 && cls <= 0x4f)
		memcpy(b->mad + 37, test_oui, 3);
	for (int i = 40; i < 256; i++)
		b->mad[i] = (uint8_t)(i * 7);
}

static long mask_get[2] = { 1 << 1 }; /* Get */

static void test_transport(void **state)
{
	struct umbuf req, rsp, in;
	umad_port_t port;
	int srv, cli, sa, ca, len, lid;
	uint8_t oui[3];

	assert_int_equal(umad_get_port("softib0", 1, &port), 0);
	lid = (int)port.base_lid;
	umad_release_port(&port);

	srv = umad_open_port("softib0", 1);
	cli = umad_open_port("softib0", 1);
	assert_true(srv >= 0);
	assert_true(cli >= 0);
	assert_int_equal(umad_get_fd(srv), srv);
	memcpy(oui, test_oui, 3);
	sa = umad_register_oui(srv, VCLASS, 0, oui, mask_get);
	ca = umad_register_oui(cli, VCLASS, 0, oui, NULL);
	assert_true(sa >= 0);
	assert_true(ca >= 0);

	/* nothing yet */
	len = 256;
	assert_int_equal(umad_recv(srv, &in, &len, 0), -EWOULDBLOCK);
	assert_int_equal(umad_poll(srv, 50), -ETIMEDOUT);

	/* a request to our own LID reaches the server's agent */
	make_mad(&req, VCLASS, 1, 0x01, 0x00000000cafe1234ull, 0x10);
	umad_set_addr(&req, lid, 1, 0, 0x80010000);
	assert_int_equal(umad_send(cli, ca, &req, 256, 2000, 0), 0);
	assert_int_equal(umad_poll(srv, 2000), 0);
	len = 256;
	assert_int_equal(umad_recv(srv, &in, &len, 2000), sa);
	assert_int_equal(len, 256);
	assert_int_equal(umad_status(&in), 0);
	assert_int_equal(in.mad[3], 0x01);
	assert_int_equal(get_be64(in.mad + 8) & 0xffffffffull, 0xcafe1234);
	assert_int_equal((get_be64(in.mad + 8) >> 32) & 0xff, ca); /* agent id in 39..32 */
	assert_memory_equal(in.mad + 40, req.mad + 40, 216);
	assert_int_equal(ntohs(in.hdr.addr.lid), lid);
	assert_int_equal(ntohl(in.hdr.addr.qpn), 1);

	assert_int_equal(ntohl(in.hdr.addr.qkey), 0x80010000);

	/* the caller's Q_Key is not sent: the kernel's MAD layer sends with
	 * QP1's own (IB_QP_SET_QKEY), so a request with Q_Key 0 arrives with
	 * the GSI's and is not dropped as a Q_Key violation */
	make_mad(&req, VCLASS, 1, 0x01, 0x00000000cafe1235ull, 0x10);
	umad_set_addr(&req, lid, 1, 0, 0);
	assert_int_equal(umad_send(cli, ca, &req, 256, 0, 0), 0);
	len = 256;
	assert_int_equal(umad_recv(srv, &rsp, &len, 2000), sa);
	assert_int_equal(get_be64(rsp.mad + 8) & 0xffffffffull, 0xcafe1235);
	assert_int_equal(ntohl(rsp.hdr.addr.qkey), 0x80010000);

	/* the response goes back to the requesting agent by TID */
	rsp = in;
	rsp.mad[3] = 0x81;
	rsp.mad[100] = 0x5a;
	assert_int_equal(umad_send(srv, sa, &rsp, 256, 0, 0), 0);
	len = 256;
	assert_int_equal(umad_recv(cli, &in, &len, 2000), ca);
	assert_int_equal(in.mad[3], 0x81);
	assert_int_equal(in.mad[100], 0x5a);
	assert_int_equal(get_be64(in.mad + 8) & 0xffffffffull, 0xcafe1234);
	assert_int_equal(umad_status(&in), 0);

	/* no answer: the header comes back with status 110 (ETIMEDOUT) */
	make_mad(&req, VCLASS, 1, 0x01, 0x77, 0x10);
	umad_set_addr(&req, 0x7777, 1, 0, 0x80010000); /* nobody has this LID */
	assert_int_equal(umad_send(cli, ca, &req, 256, 100, 1), 0);
	len = 256;
	assert_int_equal(umad_recv(cli, &in, &len, 3000), ca);
	assert_int_equal(umad_status(&in), ETIMEDOUT);
	assert_int_equal(len, 24);
	assert_int_equal(get_be64(in.mad + 8) & 0xffffffffull, 0x77);
	/* with the address it was sent to, as the kernel returns the send */
	assert_int_equal(ntohs(in.hdr.addr.lid), 0x7777);
	assert_int_equal(ntohl(in.hdr.addr.qpn), 1);
	assert_int_equal(ntohl(in.hdr.addr.qkey), 0x80010000);

	/* a method the server did not register for: not delivered to it */
	make_mad(&req, VCLASS, 1, 0x02, 0x78, 0x10);
	umad_set_addr(&req, lid, 1, 0, 0x80010000);
	assert_int_equal(umad_send(cli, ca, &req, 256, 0, 0), 0);
	len = 256;
	assert_int_equal(umad_recv(srv, &in, &len, 200), -ETIMEDOUT);

	/* bad sends: -EIO with errno */
	errno = 0;
	assert_int_equal(umad_send(cli, 31, &req, 256, 0, 0), -EIO);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(umad_send(cli, ca, &req, 10, 0, 0), -EIO);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(umad_send(cli, ca, &req, 300, 0, 0), -EIO);
	assert_int_equal(errno, EMSGSIZE);
	assert_int_equal(umad_send(12345, ca, &req, 256, 0, 0), -EIO);
	assert_int_equal(errno, EBADF);

	/* garbage written straight to a port id is refused by the kernel */
	memset(&req, 0xa5, sizeof(req));
	assert_true(write(cli, &req, 320) < 0);

	assert_int_equal(umad_unregister(srv, sa), 0);
	assert_int_equal(umad_unregister(srv, sa), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(umad_close_port(srv), 0);
	assert_int_equal(umad_close_port(cli), 0);
}

/* 32 agents per port, then -EPERM; ids are 0..31. */
static void test_agent_limit(void **state)
{
	int fd = umad_open_port("softib1", 0), i, id;

	assert_true(fd >= 0);
	for (i = 0; i < 32; i++) {
		id = umad_register(fd, 0x04, 1, 0, NULL);
		assert_int_equal(id, i);
	}
	assert_int_equal(umad_register(fd, 0x04, 1, 0, NULL), -EPERM);
	assert_int_equal(umad_unregister(fd, 7), 0);
	assert_int_equal(umad_register(fd, 0x04, 1, 0, NULL), 7);
	assert_int_equal(umad_close_port(fd), 0);
	assert_int_equal(umad_register(fd, 0x04, 1, 0, NULL), -EPERM);
}

/* A class, version and method registered once per CA port (the kernel's
 * "method in use": the ioctl fails EINVAL, umad_register -EPERM); and a
 * PerfMgt agent does not take the node's own PMA's Gets. */
static void test_register_in_use(void **state)
{
	struct umad_reg_attr at = { .mgmt_class = 0x04, .mgmt_class_version = 1 };
	int p1 = umad_open_port("softib0", 1), p2 = umad_open_port("softib0", 1);
	int other = umad_open_port("softib1", 1);
	struct umbuf req, in;
	umad_port_t port;
	uint32_t id;
	int a, cl, len;

	assert_true(p1 >= 0 && p2 >= 0 && other >= 0);
	assert_int_equal(umad_get_port("softib0", 1, &port), 0);
	a = umad_register(p1, 0x04, 1, 0, mask_get);
	assert_true(a >= 0);
	errno = 0;
	assert_int_equal(umad_register(p2, 0x04, 1, 0, mask_get), -EPERM);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(umad_register(p1, 0x04, 1, 0, mask_get), -EPERM);
	at.method_mask[0] = 1 << 1;
	assert_int_equal(umad_register2(p2, &at, &id), EINVAL);
	assert_true(umad_register(other, 0x04, 1, 0, mask_get) >= 0); /* another CA */

	/* a PerfMgt Get PortCounters to our LID: the PMA answers, not agent a */
	cl = umad_register(p2, 0x04, 1, 0, NULL);
	assert_true(cl >= 0);
	make_mad(&req, 0x04, 1, 0x01, 0x5150, 0x0012);
	req.mad[41] = 1; /* PortSelect */
	umad_set_addr(&req, (int)port.base_lid, 1, 0, 0x80010000);
	assert_int_equal(umad_send(p2, cl, &req, 256, 2000, 0), 0);
	len = 256;
	assert_int_equal(umad_recv(p2, &in, &len, 3000), cl);
	assert_int_equal(umad_status(&in), 0);
	assert_int_equal(in.mad[3], 0x81);
	assert_int_equal(get_be64(in.mad + 8) & 0xffffffffull, 0x5150);
	len = 256;
	assert_int_equal(umad_recv(p1, &in, &len, 100), -ETIMEDOUT);

	/* free again once a goes */
	assert_int_equal(umad_unregister(p1, a), 0);
	assert_int_equal(umad_register2(p2, &at, &id), 0);
	umad_release_port(&port);
	umad_close_port(p1);
	umad_close_port(p2);
	umad_close_port(other);
}

/* Two ports on softib0 port 1: an SA agent (GetTable, RMPP) and a client;
 * and the port's LID. */
static void sa_pair(int *srv, int *cli, int *sa, int *ca, int *lid)
{
	long mask_gettable[2] = { 1L << 0x12 };
	umad_port_t port;

	assert_int_equal(umad_get_port("softib0", 1, &port), 0);
	*lid = (int)port.base_lid;
	umad_release_port(&port);
	*srv = umad_open_port("softib0", 1);
	*cli = umad_open_port("softib0", 1);
	assert_true(*srv >= 0 && *cli >= 0);
	*sa = umad_register(*srv, 0x03, 2, 1, mask_gettable);
	*ca = umad_register(*cli, 0x03, 2, 1, NULL);
	assert_true(*sa >= 0 && *ca >= 0);
}

/* An SA response of 2,000 bytes: segmented by the sender's library,
 * reassembled by the receiver's, delivered whole after -ENOSPC. */
static void test_rmpp(void **state)
{
	static struct umbuf req, big, in;
	int srv, cli, sa, ca, len, lid, total = 56 + 1944;

	sa_pair(&srv, &cli, &sa, &ca, &lid);

	make_mad(&req, 0x03, 2, 0x12, 0x4242, 0x11);
	umad_set_addr(&req, lid, 1, 0, 0x80010000);
	assert_int_equal(umad_send(cli, ca, &req, 256, 2000, 0), 0);
	len = 256;
	assert_int_equal(umad_recv(srv, &in, &len, 2000), sa);
	assert_int_equal(in.mad[3], 0x12);

	memset(&big, 0, sizeof(big));
	big.hdr = in.hdr;
	memcpy(big.mad, in.mad, 56);
	big.mad[3] = 0x92;
	big.mad[24] = 1;       /* RMPPVersion */
	big.mad[25] = 1;       /* DATA */
	big.mad[26] = 0x01;    /* Active */
	for (int i = 56; i < total; i++)
		big.mad[i] = (uint8_t)(i * 13 + 1);
	assert_int_equal(umad_send(srv, sa, &big, total, 0, 0), 0);

	len = 256;
	assert_int_equal(umad_recv(cli, &in, &len, 3000), -ENOSPC);
	assert_int_equal(len, total);
	assert_int_equal(in.hdr.length, 64 + total);
	len = (int)sizeof(in.mad);
	assert_int_equal(umad_recv(cli, &in, &len, 0), ca);
	assert_int_equal(len, total);
	assert_int_equal(in.mad[3], 0x92);
	assert_int_equal(get_be64(in.mad + 8) & 0xffffffffull, 0x4242);
	assert_memory_equal(in.mad + 56, big.mad + 56, (size_t)(total - 56));
	len = 256;
	assert_int_equal(umad_recv(cli, &in, &len, 0), -EWOULDBLOCK);
	umad_close_port(srv);
	umad_close_port(cli);
}

/* A table of 330 segments (66 KB of records, more than a channel's socket
 * holds): the receiver reads while the sender's library still cuts
 * segments; softibd holds the sender back while the receiver's channel is
 * full instead of dropping, so the message arrives whole. */
struct big_rx {
	int port, len, ret;
	uint8_t *buf;
};

static void *big_receiver(void *arg)
{
	struct big_rx *rx = arg;

	usleep(300000); /* late: the receiver's channel fills up meanwhile */
	rx->ret = umad_recv(rx->port, rx->buf, &rx->len, 10000);
	return NULL;
}

static void test_rmpp_big(void **state)
{
	int total = 56 + 330 * 200, srv, cli, sa, ca, len, lid;
	struct ib_user_mad *in, *big;
	struct big_rx rx;
	pthread_t th;

	sa_pair(&srv, &cli, &sa, &ca, &lid);
	in = calloc(1, 64 + (size_t)total);
	big = calloc(1, 64 + (size_t)total);
	assert_non_null(in);
	assert_non_null(big);

	make_mad((struct umbuf *)in, 0x03, 2, 0x12, 0x4343, 0x11);
	umad_set_addr(in, lid, 1, 0, 0x80010000);
	assert_int_equal(umad_send(cli, ca, in, 256, 2000, 0), 0);
	len = 256;
	assert_int_equal(umad_recv(srv, big, &len, 2000), sa);

	rx = (struct big_rx){ .port = cli, .len = total, .buf = (uint8_t *)in };
	assert_int_equal(pthread_create(&th, NULL, big_receiver, &rx), 0);
	big->data[3] = 0x92;
	big->data[24] = 1;
	big->data[25] = 1;
	big->data[26] = 0x01;
	for (int i = 56; i < total; i++)
		big->data[i] = (uint8_t)(i * 31 + 7);
	assert_int_equal(umad_send(srv, sa, big, total, 0, 0), 0);
	pthread_join(th, NULL);
	assert_int_equal(rx.ret, ca);
	assert_int_equal(rx.len, total);
	assert_memory_equal(in->data + 56, big->data + 56, (size_t)(total - 56));
	free(in);
	free(big);
	umad_close_port(srv);
	umad_close_port(cli);
}

/* The daemon's `softib status` "cm" line. */
static char *cm_line(void)
{
	int fd = sib_ctl_connect(g_sock);
	char *text = NULL, *l, *out;

	assert_true(fd >= 0);
	assert_int_equal(sib_ctl_status(fd, &text), 0);
	close(fd);
	l = strstr(text, "\ncm ");
	assert_non_null(l);
	out = strndup(l + 1, strcspn(l + 1, "\n"));
	free(text);
	return out;
}

/* A CM REQ (class 0x07, method Send) sent through the daemon to another
 * CA's QP1 reaches softibd's IB CM, which answers REJ 8 (no listener) once
 * the daemon dispatches it; the REJ comes back to this port's CM, which
 * knows no such comm ID and drops it.  Both show on the "cm" line. */
static void test_cm_reject_through_daemon(void **state)
{
	struct umbuf req;
	umad_port_t p0, p1;
	char *line = NULL;
	long long end;
	int fd, agent;

	(void)state;
	assert_int_equal(umad_get_port("softib0", 1, &p0), 0);
	assert_int_equal(umad_get_port("softib1", 1, &p1), 0);
	fd = umad_open_port("softib0", 1);
	assert_true(fd >= 0);
	agent = umad_register(fd, 0x07, 2, 0, NULL);
	assert_true(agent >= 0);
	memset(&req, 0, sizeof(req));
	req.mad[0] = 1;
	req.mad[1] = 0x07;
	req.mad[2] = 2;
	req.mad[3] = 0x03;			/* Send */
	put_be64(req.mad + 8, 0x1234);
	req.mad[17] = 0x10;			/* REQ */
	memcpy(req.mad + 24, "\x12\x34\x56\x78", 4);	/* LocalCommID */
	memcpy(req.mad + 24 + 8, "\x00\x00\x00\x00\x01\x06\x1c\x2f", 8); /* ServiceID */
	memcpy(req.mad + 24 + 32, "\x00\x00\x42\x00", 4);	/* LocalQPN 0x42 */
	req.mad[24 + 52] = (uint8_t)(p0.base_lid >> 8);	/* PrimaryLocalPortLID */
	req.mad[24 + 53] = (uint8_t)p0.base_lid;
	umad_set_addr(&req, (int)p1.base_lid, 1, 0, 0x80010000);
	assert_int_equal(umad_send(fd, agent, &req, 256, 0, 0), 0);
	end = now_ms() + WAIT_MS;
	do {
		free(line);
		line = cm_line();
		if (strstr(line, " REJ=1/1 "))
			break;
		usleep(10000);
	} while (now_ms() < end);
	assert_non_null(strstr(line, "cm ids=0 resent=0 timeouts=0 dropped=1 REQ=0/1 MRA=0/0 REJ=1/1 "));
	free(line);
	umad_release_port(&p0);
	umad_release_port(&p1);
	assert_int_equal(umad_close_port(fd), 0);
}

int main(void)
{
	const struct CMUnitTest local[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_addr),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_dump),
		cmocka_unit_test(test_register_args),
		cmocka_unit_test(test_sort),
		cmocka_unit_test(test_no_daemon),
	};
	const struct CMUnitTest live[] = {
		cmocka_unit_test(test_cas),
		cmocka_unit_test(test_ca_port),
		cmocka_unit_test(test_issm_path),
		cmocka_unit_test(test_issm),
		cmocka_unit_test(test_issm_readd),
		cmocka_unit_test(test_live_resolution),
		cmocka_unit_test(test_bad_queries),
		cmocka_unit_test(test_transport),
		cmocka_unit_test(test_agent_limit),
		cmocka_unit_test(test_register_in_use),
		cmocka_unit_test(test_rmpp),
		cmocka_unit_test(test_rmpp_big),
		cmocka_unit_test(test_cm_reject_through_daemon),
	};
	int fails = cmocka_run_group_tests_name("umad_local", local, NULL, NULL);

	return fails + cmocka_run_group_tests_name("umad_softibd", live, daemon_up, daemon_down);
}
