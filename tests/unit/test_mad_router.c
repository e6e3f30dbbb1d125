// SPDX-License-Identifier: MIT
/*
 * Unit tests of softibd's MAD router (src/subnet/mad_router.c) and MAI
 * channels (mai_chan.c) on tests/data/subnet-2sw.topo: directed route to
 * every node and back along the return path, hop count 0, 63 hops, > 63
 * rejected, every DR drop, LID-routed first and last parts; LID routed SMPs
 * to a switch (its ingress port) and GMPs to CA ports, an unprogrammed LFT
 * dropped; TID routing, unasked responses dropped, unmatched answers, the
 * SMA's filters beating an SM's, traps through sn.mad_out, and the PMA
 * counters of every port crossed, QP1's Q_Key check.  The SMA and PMA here are test doubles
 * that record where the router handed them the MAD (the real ones are
 * tested with sma.c); the daemon's helpers the channels use are stubbed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "subnet/mad_router.h"
#include "daemon/mai_chan.h"
#include "daemon/softibd.h"
#include "subnet/subnet.h"
#include "subnet/subnet_int.h" /* the context's layout: the test reads its counters */
#include "iba/iba.h"
#include "iba/mad.h"
#include "mad_build.h"
#include "../data/mad_vectors.h"

#define DATA(name) SIB_TEST_DATA "/" name

enum { LID_A = 1, LID_B, LID_A1, LID_A2, LID_B1, LID_B2 = 7 };

/* ---- stubs of softibd.c / client.c / registry.c, and the agents ---- */

static int passed_fd = -1;

void sibd_log(const char *fmt, ...)
{
}

long long sibd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

bool sibd_dev_present(const struct sibd *d, uint32_t dev_index)
{
	return dev_index < d->num_devices;
}

void sibd_client_send(struct sibd *d, struct sibd_client *c, const struct sib_ctl_msg *m,
		      int pass_fd)
{
	assert_int_equal(m->hdr.status, 0);
	passed_fd = dup(pass_fd);
}

/* What the host table (subnet_host.c) would pass on to the map: nothing here. */
void sibd_sma_publish(struct sibd *d, struct sib_fab_node *n, uint8_t pn, unsigned int what,
		      uint16_t old_lid, uint8_t old_lmc)
{
}

int sibd_sma_dev_index(const struct sibd *d, const struct sib_fab_node *n)
{
	return -1;
}

void sibd_route_changed(struct sibd *d)
{
}

void sibd_data_counters(struct sibd *d, uint32_t dev_index, uint8_t port_num,
			struct sib_pma_counters *sum)
{
}

void sibd_link_mad_trace(struct sibd *d, uint32_t dev, uint8_t port, const mai_mad_t *m, bool out)
{
}

/* A NodeInfo payload (MAD bytes 64..127) the agents answer with instead, or NULL. */
static const uint8_t *agent_payload;

/* What the agents saw last. */
static struct {
	struct sib_fab_node *n;
	uint8_t in_port;
	uint8_t req[MAD_SIZE];
	unsigned calls;
} sma_seen, pma_seen;

/* Answers NodeInfo with the node's GUID (data byte 12) and the port it
 * came in on (LocalPortNum, data byte 39); anything else 0x000C. */
static int agent(struct sib_fab_node *n, uint8_t in_port, const uint8_t *req, uint8_t *resp)
{
	memcpy(resp, req, MAD_SIZE);
	if (agent_payload) {
		memcpy(resp + 64, agent_payload, 64);
		return mad_make_reply(resp, 0) == 0;
	}
	if (resp[16] == 0 && resp[17] == 0x11) {
		for (int i = 0; i < 8; i++)
			resp[64 + 12 + i] = (uint8_t)(n->node_guid >> (56 - 8 * i));
		resp[64 + 39] = in_port;
		return mad_make_reply(resp, 0) == 0;
	}
	return mad_make_reply(resp, MAD_STATUS_UNSUP_METHOD_ATTR) == 0;
}

int sib_sma_process(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t in_port, const uint8_t *req,
		     uint8_t *resp)
{
	sma_seen.n = n;
	sma_seen.in_port = in_port;
	memcpy(sma_seen.req, req, MAD_SIZE);
	sma_seen.calls++;
	return agent(n, in_port, req, resp);
}

int sib_pma_process(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t in_port, const uint8_t *req,
		     uint8_t *resp)
{
	pma_seen.n = n;
	pma_seen.in_port = in_port;
	pma_seen.calls++;
	return agent(n, in_port, req, resp);
}

/* ---- the fabric ---- */

struct topo {
	struct sibd d;
	struct sibd_client c;
	int cfd[2];
	struct sib_fab_node *a, *b, *a1, *a2, *b1, *b2;
};

static struct sib_fab_node *node(const struct sib_fabric *f, const char *id)
{
	for (unsigned int i = 0; i < f->n_nodes; i++)
		if (!strcmp(f->nodes[i]->id, id))
			return f->nodes[i];
	fail_msg("no node %s", id);
	return NULL;
}

static struct mad_port_info *pi(struct sib_fab_node *n, unsigned int p)
{
	return &n->mgmt->port[p].pi;
}

static void set_lid(struct sib_fab_node *n, unsigned int p, uint16_t lid)
{
	pi(n, p)->lid = lid;
	n->ports[p].lid = lid;
}

static void lft_set(struct sib_fab_node *sw, uint16_t lid, uint8_t port)
{
	assert_int_equal(sib_subnet_lft_entry_set(sw->mgmt->sw, lid, port), 0);
}

static void add_dev(struct topo *t, struct sib_fab_node *n, const char *name)
{
	uint32_t i = t->d.num_devices++;

	snprintf(t->d.devs[i].name, sizeof(t->d.devs[i].name), "%s", name);
	t->d.dev_node[i] = n;
}

static int setup(void **state)
{
	struct topo *t = calloc(1, sizeof(*t));
	struct sib_fabric *f;
	char err[256];

	assert_non_null(t);
	assert_int_equal(sibd_subnet_attach(&t->d), 0);
	f = &t->d.sn->fab;
	if (sib_fabric_load_file(f, DATA("subnet-2sw.topo"), err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(sib_subnet_init(f), 0);
	t->a = node(f, "S-5eed000000000a00");
	t->b = node(f, "S-5eed000000000b00");
	t->a1 = node(f, "H-5eed000000000a10");
	t->a2 = node(f, "H-5eed000000000a20");
	t->b1 = node(f, "H-5eed000000000b10");
	t->b2 = node(f, "H-5eed000000000b20");
	for (unsigned int i = 0; i < f->n_nodes; i++)
		for (unsigned int p = 0; p <= f->nodes[i]->num_ports; p++)
			if (pi(f->nodes[i], p)->port_state == MAD_PORT_STATE_INIT)
				pi(f->nodes[i], p)->port_state = MAD_PORT_STATE_ACTIVE;
	set_lid(t->a, 0, LID_A);
	set_lid(t->b, 0, LID_B);
	set_lid(t->a1, 1, LID_A1);
	set_lid(t->a2, 1, LID_A2);
	set_lid(t->b1, 1, LID_B1);
	set_lid(t->b2, 1, LID_B2);
	static const struct { uint16_t lid; uint8_t a, b; } lft[] = {
		{ LID_A, 0, 3 }, { LID_B, 3, 0 }, { LID_A1, 1, 3 }, { LID_A2, 2, 3 },
		{ LID_B1, 3, 1 }, { LID_B2, 3, 2 },
	};
	for (size_t i = 0; i < sizeof(lft) / sizeof(lft[0]); i++) {
		lft_set(t->a, lft[i].lid, lft[i].a);
		lft_set(t->b, lft[i].lid, lft[i].b);
	}
	add_dev(t, t->a1, "a1");
	add_dev(t, t->a2, "a2");
	add_dev(t, t->b1, "b1");
	add_dev(t, t->b2, "b2");
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, t->cfd), 0);
	t->c.fd = t->cfd[0]; /* SO_PEERCRED: us, root in CI, else unprivileged */
	t->c.pid = getpid();
	assert_int_equal(sibd_mai_init(&t->d), 0);
	assert_non_null(t->d.sn->mad_out);
	memset(&sma_seen, 0, sizeof(sma_seen));
	memset(&pma_seen, 0, sizeof(pma_seen));
	*state = t;
	return 0;
}

static const struct mad_vector *vec(const char *name)
{
	for (size_t i = 0; i < sizeof(mad_vectors) / sizeof(mad_vectors[0]); i++)
		if (!strcmp(mad_vectors[i].name, name))
			return &mad_vectors[i];
	fail_msg("no vector %s", name);
	return NULL;
}

/* mad-walk.topo: S1 with H1 (the SM's CA) on port 1 and H2 on port 4. */
static int setup_walk(void **state)
{
	struct topo *t = calloc(1, sizeof(*t));
	struct sib_fabric *f;
	char err[256];

	assert_non_null(t);
	assert_int_equal(sibd_subnet_attach(&t->d), 0);
	f = &t->d.sn->fab;
	if (sib_fabric_load_file(f, DATA("mad-walk.topo"), err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(sib_subnet_init(f), 0);
	t->a = node(f, "S-5eed000000000c00");
	t->a1 = node(f, "H-5eed000000000c10");
	t->a2 = node(f, "H-5eed000000000c20");
	add_dev(t, t->a1, "h1");
	add_dev(t, t->a2, "h2");
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, t->cfd), 0);
	t->c.fd = t->cfd[0];
	t->c.pid = getpid();
	assert_int_equal(sibd_mai_init(&t->d), 0);
	memset(&sma_seen, 0, sizeof(sma_seen));
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct topo *t = *state;

	sibd_mai_client_gone(&t->d, &t->c);
	sibd_mai_fini(&t->d);
	close(t->cfd[0]);
	close(t->cfd[1]);
	sib_subnet_free(&t->d.sn->fab);
	sib_fabric_free(&t->d.sn->fab);
	sib_subnet_delete(t->d.sn);
	free(t);
	return 0;
}

/* ---- channels as a client sees them ---- */

static int chan_open(struct topo *t, const char *dev, uint8_t qp, uint32_t *num)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_MAI_OPEN };
	int pass = -1;

	m.u.mai_open.abi_version = SIB_ABI_VERSION;
	snprintf(m.u.mai_open.dev, sizeof(m.u.mai_open.dev), "%s", dev);
	m.u.mai_open.port = 1;
	m.u.mai_open.qp = qp;
	passed_fd = -1;
	int ret = sibd_cmd_mai_open(&t->d, &t->c, &m, &pass);

	if (ret == -EACCES)
		skip(); /* QP0 needs root or CAP_NET_ADMIN (docs/mai.md) */
	assert_int_equal(ret, SIBD_REPLIED);
	assert_true(passed_fd >= 0);
	if (num)
		*num = m.u.mai_open.chan;
	return passed_fd;
}

static void filter(struct topo *t, uint32_t chan, uint32_t flags, uint32_t match, uint8_t cls,
		   uint8_t method, uint16_t attr)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_MAI_FILTER };
	mai_filter_t f;
	int pass = -1;

	memset(&f, 0, sizeof(f));
	f.flags = flags;
	f.match = match;
	f.port = 1;
	f.mgmt_class = cls;
	f.class_version = cls == 0x03 ? 2 : 1;
	f.method = method;
	f.attr_id = attr;
	m.u.mai_filter.chan = chan;
	m.u.mai_filter.op = SIB_MAI_FILTER_CREATE;
	m.u.mai_filter.len = (uint32_t)mai_mfstream(&f, m.u.mai_filter.fstream,
						    sizeof(m.u.mai_filter.fstream));
	assert_int_equal(sibd_cmd_mai_filter(&t->d, &t->c, &m, &pass), 0);
}

/* The client writes m on its channel; softibd runs its event. */
static void csend(struct topo *t, int fd, const mai_mad_t *m)
{
	uint8_t buf[MAI_MSTREAM_SIZE];

	assert_int_equal(mai_mmstream(m, buf, sizeof(buf)), MAI_MSTREAM_SIZE);
	assert_int_equal(send(fd, buf, sizeof(buf), 0), MAI_MSTREAM_SIZE);
	sibd_mai_event(&t->d);
}

/* 1 and *m: a message waits on the client's end; 0: none. */
static int crecv(int fd, mai_mad_t *m)
{
	uint8_t buf[MAI_MSTREAM_SIZE];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0)
		return 0;
	assert_int_equal(n, MAI_MSTREAM_SIZE);
	assert_int_equal(mai_rmstream(buf, (size_t)n, m), MAI_MSTREAM_SIZE);
	return 1;
}

static uint64_t guid_of(const mai_mad_t *m)
{
	uint64_t g = 0;

	for (int i = 0; i < 8; i++)
		g = g << 8 | m->data[40 + 12 + i];
	return g;
}

static uint64_t drops(struct topo *t, enum sib_mad_drop why)
{
	return t->d.sn->mad.drop[why];
}

/* ---- directed route ---- */

/* From a1: NodeInfo of every node by DR, answered by that node's SMA for
 * the port it came in on, back along the return path with HopPointer 0. */
static void test_dr_every_node(void **state)
{
	struct topo *t = *state;
	static const struct {
		uint8_t hops, path[4];
		int who;	/* index into nodes[] */
		uint8_t in_port;
	} walk[] = {
		{ 0, { 0 }, 0, 1 },		/* hop count 0: a1's own SMA */
		{ 1, { 0, 1 }, 1, 1 },		/* switch A, came in on port 1 */
		{ 2, { 0, 1, 2 }, 2, 1 },	/* a2 */
		{ 2, { 0, 1, 3 }, 3, 3 },	/* switch B, in on port 3 */
		{ 3, { 0, 1, 3, 1 }, 4, 1 },	/* b1 */
		{ 3, { 0, 1, 3, 2 }, 5, 1 },	/* b2 */
	};
	struct sib_fab_node *nodes[] = { t->a1, t->a, t->a2, t->b, t->b1, t->b2 };
	int sm = chan_open(t, "a1", 0, NULL);
	mai_mad_t m, r;

	for (size_t i = 0; i < sizeof(walk) / sizeof(walk[0]); i++) {
		unsigned calls = sma_seen.calls;

		mad_dr(&m, MAD_GET, MAD_NODEINFO, walk[i].path, walk[i].hops);
		m.tid = 0x100 + i;
		csend(t, sm, &m);
		assert_int_equal(sma_seen.calls, calls + 1);
		assert_ptr_equal(sma_seen.n, nodes[walk[i].who]);
		assert_int_equal(sma_seen.in_port, walk[i].in_port);
		/* what the SMA got: HopPointer hop_cnt + 1, the return path of the arrivals */
		assert_int_equal(sma_seen.req[6], walk[i].hops + 1);
		if (walk[i].hops == 3) {
			assert_int_equal(sma_seen.req[192 + 1], 1);	/* into A on 1 */
			assert_int_equal(sma_seen.req[192 + 2], 3);	/* into B on 3 */
			assert_int_equal(sma_seen.req[192 + 3], 1);	/* into the CA on 1 */
		}
		assert_true(crecv(sm, &r));
		assert_int_equal(r.method, MAD_GET_RESP);
		assert_int_equal(r.status, 0x8000);		/* D bit, status 0 */
		assert_int_equal(r.class_specific, walk[i].hops); /* HopPointer 0 */
		assert_int_equal(r.tid & 0xFFFFFFFFFFull, 0x100 + i);
		assert_int_equal(guid_of(&r), nodes[walk[i].who]->node_guid);
		assert_int_equal(r.data[40 + 39], walk[i].in_port);
		assert_int_equal(r.port, 1);
		assert_false(crecv(sm, &r));
	}
	/* counted on both ends of every link crossed: a1 sent 5 SMPs over its
	 * link (hop count 0 never leaves), B's port 3 received 3 and sent 3 */
	assert_int_equal(t->a1->mgmt->port[1].pma.xmit_pkts, 5);
	assert_int_equal(t->a1->mgmt->port[1].pma.rcv_pkts, 5);
	assert_int_equal(t->a1->mgmt->port[1].pma.xmit_data, 5 * 72);
	assert_int_equal(t->b->mgmt->port[3].pma.rcv_pkts, 3);
	assert_int_equal(t->b->mgmt->port[3].pma.xmit_pkts, 3);
	assert_int_equal(t->b2->mgmt->port[1].pma.rcv_pkts, 1);
	assert_int_equal(t->d.sn->mad.forwarded, 2 * (1 + 1 + 2 + 2));
	close(sm);
}

/* 63 hops (the most C14-6 allows) bouncing between the switches, and
 * back; 64 is dropped at the sender. */
static void test_dr_63_hops(void **state)
{
	struct topo *t = *state;
	uint8_t path[64];
	int sm = chan_open(t, "a1", 0, NULL);
	mai_mad_t m, r;

	path[0] = 0;
	path[1] = 1;
	for (int i = 2; i < 64; i++)
		path[i] = 3;
	mad_dr(&m, MAD_GET, MAD_NODEINFO, path, 63);
	csend(t, sm, &m);
	assert_ptr_equal(sma_seen.n, t->a); /* hop 63 is odd: switch A */
	assert_int_equal(sma_seen.in_port, 3);
	assert_true(crecv(sm, &r));
	assert_int_equal(r.class_specific, 63);
	assert_int_equal(guid_of(&r), t->a->node_guid);

	uint64_t before = drops(t, SIB_MAD_DROP_DR_HOP_CNT);

	mad_dr(&m, MAD_GET, MAD_NODEINFO, path, 63);
	m.class_specific = 64;
	csend(t, sm, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_DR_HOP_CNT), before + 1);
	assert_int_equal(t->a1->mgmt->port[1].pma.vl15_dropped, 1);
	m.class_specific = 255;
	csend(t, sm, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_DR_HOP_CNT), before + 2);
	assert_false(crecv(sm, &r));
	close(sm);
}

/* Every way a DR walk ends short, counted by cause where it happened. */
static void test_dr_drops(void **state)
{
	struct topo *t = *state;
	int sm = chan_open(t, "a1", 0, NULL);
	unsigned calls = sma_seen.calls;
	mai_mad_t m, r;

	/* out of switch A's port 4: no cable */
	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 1, 4 }, 2);
	csend(t, sm, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_LINK_DOWN), 1);
	assert_int_equal(t->a->mgmt->port[4].pma.vl15_dropped, 1);
	/* b1's link physically down (Polling) */
	pi(t->b1, 1)->port_phys_state = MAD_PORT_PHYS_STATE_POLLING;
	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 1, 3, 1 }, 3);
	csend(t, sm, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_LINK_DOWN), 2);
	pi(t->b1, 1)->port_phys_state = MAD_PORT_PHYS_STATE_LINKUP;
	/* a CA asked to forward (a1 -> A -> back to a1 -> ...) */
	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 1, 1, 1 }, 3);
	csend(t, sm, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_DR_NOT_SWITCH), 1);
	/* the first path entry is not the port the SMP leaves by */
	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 2 }, 1);
	csend(t, sm, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_DR_PORT), 1);
	/* a switch told to forward out of a port past NumPorts */
	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 1, 9 }, 2);
	csend(t, sm, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_DR_PORT), 2);
	/* HopPointer already past the path at the sender */
	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 1 }, 1);
	m.class_specific = 3 << 8 | 1;
	csend(t, sm, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_DR_HOP_PTR), 1);
	/* a CA end with a non-permissive DrDLID and no LID-routed part to take */
	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 1, 2 }, 2);
	m.data[MAD_DR_DLID] = 0;
	m.data[MAD_DR_DLID + 1] = LID_B2;
	csend(t, sm, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_DR_PERMISSIVE), 1);
	/* a bad base version never leaves */
	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 1 }, 1);
	m.base_version = 2;
	csend(t, sm, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_BAD_BASE_VERSION), 1);
	assert_int_equal(sma_seen.calls, calls);
	assert_false(crecv(sm, &r));
	close(sm);
}

/* A DR SMP whose DR part ends at switch B, then LID routed to DrDLID b2. */
static void test_dr_lid_part(void **state)
{
	struct topo *t = *state;
	int sm = chan_open(t, "a1", 0, NULL);
	mai_mad_t m;

	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 1, 3 }, 2);
	m.data[MAD_DR_DLID] = 0;
	m.data[MAD_DR_DLID + 1] = LID_B2;
	csend(t, sm, &m);
	assert_ptr_equal(sma_seen.n, t->b2);
	close(sm);
}

/* A DR SMP whose first part is LID routed (DrSLID a1, LRH.DLID switch B,
 * HopPointer 0), as `ibportstate <B's LID> 2 query` sends: B takes the
 * originator step out of InitialPath[1] = 2 and b2's SMA answers; the
 * answer's DR part ends at B, which LID routes it to DrSLID (C14-13:3). */
static void test_dr_lid_first(void **state)
{
	struct topo *t = *state;
	int sm = chan_open(t, "a1", 0, NULL);
	mai_mad_t m, r;

	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 2 }, 1);
	m.data[MAD_DR_SLID] = 0;
	m.data[MAD_DR_SLID + 1] = LID_A1;
	m.lrh.slid = LID_A1;
	m.lrh.dlid = LID_B;
	m.tid = 0x33;
	csend(t, sm, &m);
	assert_int_equal(sma_seen.calls, 1);
	assert_ptr_equal(sma_seen.n, t->b2);
	assert_int_equal(sma_seen.in_port, 1);
	assert_int_equal(sma_seen.req[6], 2);		/* HopPointer hop_cnt + 1 */
	assert_int_equal(sma_seen.req[192 + 1], 1);	/* into b2 on its port 1 */
	assert_true(crecv(sm, &r));
	assert_int_equal(r.method, MAD_GET_RESP);
	assert_int_equal(r.status, 0x8000);
	assert_int_equal(r.class_specific, 1);		/* HopPointer 0 after C14-13:3 */
	assert_int_equal(r.tid & 0xFFFFFFFFFFull, 0x33);
	assert_int_equal(guid_of(&r), t->b2->node_guid);
	/* a bad first hop out of B is dropped at B, not at a1 */
	m.data[MAD_IPATH + 1] = 4;
	csend(t, sm, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_LINK_DOWN), 1);
	assert_int_equal(t->b->mgmt->port[4].pma.vl15_dropped, 1);
	assert_false(crecv(sm, &r));
	close(sm);
}

/* ---- LID routed ---- */

static void test_lid_routed(void **state)
{
	struct topo *t = *state;
	uint32_t num;
	int gsi = chan_open(t, "a1", 1, &num), sm = chan_open(t, "a1", 0, NULL);
	mai_mad_t m, r;

	/* PerfMgt Get to b2's port: its PMA, the answer back by TID */
	mad_gmp(&m, MAD_MGMT_CLASS_PERF_MGMT, MAD_GET, MAD_NODEINFO, LID_B2);
	m.tid = 0x55;
	csend(t, gsi, &m);
	assert_ptr_equal(pma_seen.n, t->b2);
	assert_int_equal(pma_seen.in_port, 1);
	assert_int_equal(t->d.sn->mad.pma, 1);
	assert_true(crecv(gsi, &r));
	assert_int_equal(r.method, MAD_GET_RESP);
	assert_int_equal(r.tid, (uint64_t)num << 40 | 0x55);
	assert_int_equal(r.lrh.slid, LID_B2);
	assert_int_equal(r.lrh.dlid, LID_A1);
	assert_int_equal(r.remote_qpn, 1);
	assert_int_equal(guid_of(&r), t->b2->node_guid);
	/* through A port 3 and B port 3 both ways */
	assert_int_equal(t->a->mgmt->port[3].pma.xmit_pkts, 1);
	assert_int_equal(t->a->mgmt->port[3].pma.rcv_pkts, 1);
	assert_int_equal(t->b->mgmt->port[2].pma.xmit_pkts, 1);

	/* a LID-routed SMP to switch B's LID: answered for the port it came
	 * in on (LocalPortNum 3, as hardware), the answer LID routed back */
	mad_gmp(&m, MAD_MGMT_CLASS_SUBN_LID_ROUTED, MAD_GET, MAD_NODEINFO, LID_B);
	m.qp = 0;
	m.remote_qpn = 0;
	csend(t, sm, &m);
	assert_ptr_equal(sma_seen.n, t->b);
	assert_int_equal(sma_seen.in_port, 3);
	assert_true(crecv(sm, &r));
	assert_int_equal(guid_of(&r), t->b->node_guid);
	assert_int_equal(r.data[40 + 39], 3);
	assert_int_equal(r.lrh.slid, LID_B);
	/* switch A's LID from a1: in on A's port 1 */
	m.lrh.dlid = LID_A;
	csend(t, sm, &m);
	assert_ptr_equal(sma_seen.n, t->a);
	assert_int_equal(sma_seen.in_port, 1);
	assert_true(crecv(sm, &r));
	assert_int_equal(r.data[40 + 39], 1);
	assert_int_equal(r.lrh.slid, LID_A);
	/* and to our own LID: hops 0 */
	m.lrh.dlid = LID_A1;
	csend(t, sm, &m);
	assert_ptr_equal(sma_seen.n, t->a1);
	assert_true(crecv(sm, &r));

	/* an unprogrammed LFT entry drops (at A, counted there) */
	t->a->mgmt->sw->lft[LID_B2] = MAD_LFT_NO_PATH;
	mad_gmp(&m, MAD_MGMT_CLASS_PERF_MGMT, MAD_GET, MAD_NODEINFO, LID_B2);
	csend(t, gsi, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_ROUTE), 1);
	assert_false(crecv(gsi, &r));
	t->a->mgmt->sw->lft[LID_B2] = 3;
	/* a GMP for a redirected QP: nobody */
	mad_gmp(&m, 0x03, MAD_GET, 0x0011, LID_B2);
	m.remote_qpn = 5;
	csend(t, gsi, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_NO_QP), 1);
	/* an SMP on QP1 */
	mad_gmp(&m, MAD_MGMT_CLASS_SUBN_LID_ROUTED, MAD_GET, MAD_NODEINFO, LID_B);
	csend(t, gsi, &m);
	assert_int_equal(drops(t, SIB_MAD_DROP_BAD_QP_CLASS), 1);
	close(gsi);
	close(sm);
}

/* What leaves a switch's port 0 crosses links too: B's SMA answer, a trap
 * from B, and a DR walk's LID-routed part from B to b2 count on every port
 * they cross (PortXmit/RcvPkts, 72 words each). */
static void test_switch_counters(void **state)
{
	struct topo *t = *state;
	uint32_t num;
	int sm = chan_open(t, "a1", 0, &num);
	mai_mad_t m, r;

	mad_gmp(&m, MAD_MGMT_CLASS_SUBN_LID_ROUTED, MAD_GET, MAD_NODEINFO, LID_B);
	m.qp = 0;
	m.remote_qpn = 0;
	csend(t, sm, &m);
	assert_true(crecv(sm, &r));
	assert_int_equal(t->b->mgmt->port[3].pma.rcv_pkts, 1);
	assert_int_equal(t->b->mgmt->port[3].pma.xmit_pkts, 1);	/* the answer */
	assert_int_equal(t->b->mgmt->port[3].pma.xmit_data, 72);
	assert_int_equal(t->a->mgmt->port[3].pma.rcv_pkts, 1);
	assert_int_equal(t->a->mgmt->port[1].pma.xmit_pkts, 1);
	assert_int_equal(t->a1->mgmt->port[1].pma.rcv_pkts, 1);

	filter(t, num, MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD, 0x01, MAD_METHOD_TRAP, 0);
	mad_gmp(&m, MAD_MGMT_CLASS_SUBN_LID_ROUTED, MAD_METHOD_TRAP, MAD_ATTR_NOTICE, LID_A1);
	m.qp = 0;
	m.remote_qpn = 0;
	t->d.sn->mad_out(t->d.sn, t->b, 0, &m);
	assert_true(crecv(sm, &r));
	assert_int_equal(t->b->mgmt->port[3].pma.xmit_pkts, 2);
	assert_int_equal(t->a1->mgmt->port[1].pma.rcv_pkts, 2);

	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 1, 3 }, 2);
	m.data[MAD_DR_DLID] = 0;
	m.data[MAD_DR_DLID + 1] = LID_B2;
	csend(t, sm, &m);
	assert_ptr_equal(sma_seen.n, t->b2);
	assert_int_equal(t->b->mgmt->port[2].pma.xmit_pkts, 1);
	assert_int_equal(t->b2->mgmt->port[1].pma.rcv_pkts, 1);
	close(sm);
}

/* GMPs between channels; Get/Set nobody takes get 0x000C; others drop. */
static void test_gmp_channels(void **state)
{
	struct topo *t = *state;
	uint32_t sa_num;
	int cl = chan_open(t, "a1", 1, NULL), sa = chan_open(t, "b2", 1, &sa_num);
	mai_mad_t m, r;

	/* nobody takes SA Gets yet: GetResp 0x000C, as generate_unmatched_resp */
	mad_gmp(&m, 0x03, MAD_GET, 0x0011, LID_B2);
	csend(t, cl, &m);
	assert_true(crecv(cl, &r));
	assert_int_equal(r.method, MAD_GET_RESP);
	assert_int_equal(r.status, MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(t->d.sn->mad.unsupported, 1);
	/* a Send nobody takes is dropped */
	m.method = 0x03;
	csend(t, cl, &m);
	assert_false(crecv(cl, &r));
	assert_int_equal(drops(t, SIB_MAD_DROP_UNMATCHED), 1);

	filter(t, sa_num, MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD, 0x03, MAD_GET, 0);
	mad_gmp(&m, 0x03, MAD_GET, 0x0011, LID_B2);
	m.tid = 0x99;
	csend(t, cl, &m);
	assert_true(crecv(sa, &r));
	assert_int_equal(r.lrh.slid, LID_A1);
	assert_int_equal(r.remote_qpn, 1);
	assert_int_equal(r.remote_qkey, 0x80010000u);
	assert_int_equal(r.port, 1);
	/* the SA answers by sending to the requester's LID */
	r.method = MAD_GET_RESP;
	r.lrh.dlid = LID_A1;
	r.remote_qpn = 1;
	csend(t, sa, &r);
	assert_true(crecv(cl, &m));
	assert_int_equal(m.tid, r.tid);
	/* a response whose TID names no channel: dropped */
	r.tid = 0x7777ull << 40;
	csend(t, sa, &r);
	assert_int_equal(drops(t, SIB_MAD_DROP_NO_AGENT), 1);
	assert_false(crecv(cl, &m));
	close(cl);
	close(sa);
}

/* IBA 10.2.5 / 13.5.3: QP1 takes only the GSI Q_Key.  A GMP whose DETH
 * carries another is dropped unanswered (bad_qkey, QP1Dropped and PortInfo
 * Q_KeyViolations of the port); a send whose Q_Key has the controlled bit
 * carries the GSI's own, as the kernel's MAD layer always sends. */
static void test_gsi_qkey(void **state)
{
	struct topo *t = *state;
	uint32_t sa_num;
	int cl = chan_open(t, "a1", 1, NULL), sa = chan_open(t, "b2", 1, &sa_num);
	mai_mad_t m, r;

	/* to b2's PMA with Q_Key 0: not answered */
	mad_gmp(&m, MAD_MGMT_CLASS_PERF_MGMT, MAD_GET, MAD_NODEINFO, LID_B2);
	m.remote_qkey = 0;
	csend(t, cl, &m);
	assert_int_equal(pma_seen.calls, 0);
	assert_false(crecv(cl, &r));
	assert_int_equal(drops(t, SIB_MAD_DROP_BAD_QKEY), 1);
	assert_int_equal(t->b2->mgmt->port[1].pi.q_key_violations, 1);
	assert_int_equal(t->b2->mgmt->port[1].pma.qp1_dropped, 1);
	/* a Get nobody takes is not answered 0x000C either */
	mad_gmp(&m, 0x03, MAD_GET, 0x0011, LID_B2);
	m.remote_qkey = 0x1234;
	csend(t, cl, &m);
	assert_false(crecv(cl, &r));
	assert_int_equal(t->d.sn->mad.unsupported, 0);
	assert_int_equal(drops(t, SIB_MAD_DROP_BAD_QKEY), 2);
	/* nor reaches an agent's filter */
	filter(t, sa_num, MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD, 0x03, MAD_GET, 0);
	csend(t, cl, &m);
	assert_false(crecv(sa, &r));
	assert_int_equal(drops(t, SIB_MAD_DROP_BAD_QKEY), 3);
	assert_int_equal(t->b2->mgmt->port[1].pi.q_key_violations, 3);
	/* to a switch's own LID: counted on its port 0 */
	mad_gmp(&m, MAD_MGMT_CLASS_PERF_MGMT, MAD_GET, MAD_NODEINFO, LID_B);
	m.remote_qkey = 0;
	csend(t, cl, &m);
	assert_int_equal(pma_seen.calls, 0);
	assert_int_equal(t->b->mgmt->port[0].pi.q_key_violations, 1);

	/* the controlled bit: the GSI's own Q_Key goes out, and is taken */
	mad_gmp(&m, 0x03, MAD_GET, 0x0011, LID_B2);
	m.remote_qkey = 0x80000000u;
	csend(t, cl, &m);
	assert_true(crecv(sa, &r));
	assert_int_equal(r.remote_qkey, 0x80010000u);
	/* the SA's answer with a wrong Q_Key does not reach the client */
	r.method = MAD_GET_RESP;
	r.lrh.dlid = LID_A1;
	r.remote_qpn = 1;
	r.remote_qkey = 7;
	csend(t, sa, &r);
	assert_false(crecv(cl, &m));
	assert_int_equal(drops(t, SIB_MAD_DROP_BAD_QKEY), 5);
	assert_int_equal(t->a1->mgmt->port[1].pi.q_key_violations, 1);
	/* the PMA's answer carries the GSI Q_Key */
	mad_gmp(&m, MAD_MGMT_CLASS_PERF_MGMT, MAD_GET, MAD_NODEINFO, LID_B2);
	csend(t, cl, &m);
	assert_int_equal(pma_seen.calls, 1);
	assert_true(crecv(cl, &r));
	assert_int_equal(r.remote_qkey, 0x80010000u);
	/* 16 bits, saturating */
	t->b2->mgmt->port[1].pi.q_key_violations = 0xFFFF;
	m.remote_qkey = 0;
	csend(t, cl, &m);
	assert_int_equal(t->b2->mgmt->port[1].pi.q_key_violations, 0xFFFF);
	close(cl);
	close(sa);
}

/* Channels in all are capped (sibd_mai_chans_max, what softibd's fd budget
 * allows): one more is ENOSPC, whichever connection asks. */
static void test_chan_cap(void **state)
{
	struct topo *t = *state;
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_MAI_OPEN };
	int a, b, pass = -1;

	sibd_mai_chans_max = 2;
	a = chan_open(t, "a1", 1, NULL);
	b = chan_open(t, "b2", 1, NULL);
	m.u.mai_open.abi_version = SIB_ABI_VERSION;
	snprintf(m.u.mai_open.dev, sizeof(m.u.mai_open.dev), "a1");
	m.u.mai_open.port = 1;
	m.u.mai_open.qp = 1;
	assert_int_equal(sibd_cmd_mai_open(&t->d, &t->c, &m, &pass), -ENOSPC);
	sibd_mai_chans_max = SIBD_MAI_CHANS_MAX;
	close(a);
	close(b);
}

/* Responses reach a channel only as answers to what it sent (the kernel's
 * ib_find_send_mad): one with its channel number but a TID it never sent is
 * dropped (no_request), so is a second answer to a plain send; the RMPP
 * segments after the first of an answer all arrive. */
static void test_unasked_responses(void **state)
{
	struct topo *t = *state;
	uint32_t cl_num, sa_num;
	int cl = chan_open(t, "a1", 1, &cl_num), sa = chan_open(t, "b2", 1, &sa_num);
	mai_mad_t m, q, r;

	filter(t, sa_num, MAI_F_CONSUME, MAI_M_CLASS, 0x03, 0, 0);
	/* never asked */
	mad_gmp(&r, 0x03, MAD_GET_RESP, 0x0011, LID_A1);
	r.tid = (uint64_t)cl_num << 40 | 0x1234;
	csend(t, sa, &r);
	assert_false(crecv(cl, &m));
	assert_int_equal(drops(t, SIB_MAD_DROP_NO_REQUEST), 1);

	/* asked once with mai_send: one answer, not two */
	mad_gmp(&m, 0x03, MAD_GET, 0x0011, LID_B2);
	m.tid = 0x99;
	csend(t, cl, &m);
	assert_true(crecv(sa, &q));
	r = q;
	r.method = MAD_GET_RESP;
	r.lrh.dlid = LID_A1;
	csend(t, sa, &r);
	assert_true(crecv(cl, &m));
	assert_int_equal(m.tid, q.tid);
	csend(t, sa, &r);
	assert_false(crecv(cl, &m));
	assert_int_equal(drops(t, SIB_MAD_DROP_NO_REQUEST), 2);

	/* a GetTable answered in three RMPP DATA segments, one TID */
	mad_gmp(&m, 0x03, 0x12, 0x0011, LID_B2);
	m.tid = 0xA0;
	csend(t, cl, &m);
	assert_true(crecv(sa, &q));
	for (int seg = 1; seg <= 3; seg++) {
		r = q;
		r.method = 0x92;
		r.lrh.dlid = LID_A1;
		r.data[0] = 1;					/* RMPPVersion */
		r.data[1] = 1;					/* DATA */
		r.data[2] = 1 | (seg == 1 ? 2 : 0) | (seg == 3 ? 4 : 0); /* Active, First, Last */
		r.data[7] = (uint8_t)seg;			/* SegmentNumber */
		csend(t, sa, &r);
		assert_true(crecv(cl, &m));
		assert_int_equal(m.data[7], seg);
	}
	/* but not a response without RMPP after the answer */
	r.data[2] = 0;
	csend(t, sa, &r);
	assert_false(crecv(cl, &m));
	assert_int_equal(drops(t, SIB_MAD_DROP_NO_REQUEST), 3);
	close(cl);
	close(sa);
}

/* The SMA's per-attribute filters beat an SM's class + method filter;
 * SMInfo, which the SMA does not claim, reaches the SM. */
static void test_sma_precedence(void **state)
{
	struct topo *t = *state;
	uint32_t num;
	int sm = chan_open(t, "a1", 0, NULL), sm2 = chan_open(t, "a2", 0, &num);
	unsigned calls = sma_seen.calls;
	mai_mad_t m, r;

	/* as libibumad registers an SM: port, class, class version, method */
	filter(t, num, MAI_F_CONSUME, MAI_M_PORT | MAI_M_CLASS | MAI_M_CLASS_VER | MAI_M_METHOD, 0x81,
	       MAD_GET, 0);
	filter(t, num, MAI_F_CONSUME, MAI_M_PORT | MAI_M_CLASS | MAI_M_CLASS_VER | MAI_M_METHOD, 0x81,
	       MAD_SET, 0);
	mad_dr(&m, MAD_GET, MAD_NODEINFO, (const uint8_t[]){ 0, 1, 2 }, 2);
	csend(t, sm, &m);
	assert_int_equal(sma_seen.calls, calls + 1);
	assert_false(crecv(sm2, &r));
	assert_true(crecv(sm, &r));
	/* a vendor attribute (MlnxExtPortInfo) and PortInfoExtended: the SMA
	 * answers them too (0x000C here), not the SM's broad filter */
	mad_dr(&m, MAD_GET, 0xFF90, (const uint8_t[]){ 0, 1, 2 }, 2);
	csend(t, sm, &m);
	assert_int_equal(sma_seen.calls, calls + 2);
	assert_true(crecv(sm, &r));
	assert_int_equal(r.status, 0x8000 | MAD_STATUS_UNSUP_METHOD_ATTR);
	mad_dr(&m, MAD_SET, 0x0033, (const uint8_t[]){ 0, 1, 2 }, 2);
	csend(t, sm, &m);
	assert_int_equal(sma_seen.calls, calls + 3);
	assert_true(crecv(sm, &r));
	assert_false(crecv(sm2, &r));
	/* SMInfo, which the SMA does not claim, reaches the SM */
	mad_dr(&m, MAD_GET, MAD_SMINFO, (const uint8_t[]){ 0, 1, 2 }, 2);
	csend(t, sm, &m);
	assert_int_equal(sma_seen.calls, calls + 3);
	assert_true(crecv(sm2, &r));
	assert_int_equal(r.attr_id, MAD_SMINFO);
	close(sm);
	close(sm2);
}

/* A trap from b2's SMA through sn.mad_out reaches the SM's Trap filter;
 * the SM's TrapRepress to the SMA's TID is taken without a drop. */
static void test_trap_out(void **state)
{
	struct topo *t = *state;
	uint32_t num;
	int sm = chan_open(t, "a1", 0, &num);
	mai_mad_t m, r;

	filter(t, num, MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD, 0x01, MAD_METHOD_TRAP, 0);
	mad_gmp(&m, MAD_MGMT_CLASS_SUBN_LID_ROUTED, MAD_METHOD_TRAP, MAD_ATTR_NOTICE, LID_A1);
	m.qp = 0;
	m.remote_qpn = 0;
	m.tid = (uint64_t)SIB_MAD_CHAN_SMA << 40 | 1;
	t->d.sn->mad_out(t->d.sn, t->b2, 1, &m);
	assert_true(crecv(sm, &r));
	assert_int_equal(r.method, MAD_METHOD_TRAP);
	assert_int_equal(r.lrh.slid, LID_B2);
	r.method = MAD_METHOD_TRAP_REPRESS;
	r.lrh.dlid = LID_B2;
	csend(t, sm, &r);
	assert_int_equal(drops(t, SIB_MAD_DROP_NO_AGENT), 0);
	close(sm);
}

/* A trap whose TID the SMA left without channel bits (as sma.c numbers
 * them) gets the SMA's, so the SM's TrapRepress reaches the SMA and is not
 * dropped (no no_agent, no VL15Dropped at b2). */
static void test_trap_tid_stamped(void **state)
{
	struct topo *t = *state;
	uint32_t num;
	int sm = chan_open(t, "a1", 0, &num);
	unsigned calls = sma_seen.calls;
	mai_mad_t m, r;

	filter(t, num, MAI_F_CONSUME, MAI_M_CLASS | MAI_M_METHOD, 0x01, MAD_METHOD_TRAP, 0);
	mad_gmp(&m, MAD_MGMT_CLASS_SUBN_LID_ROUTED, MAD_METHOD_TRAP, MAD_ATTR_NOTICE, LID_A1);
	m.qp = 0;
	m.remote_qpn = 0;
	m.tid = 7;
	t->d.sn->mad_out(t->d.sn, t->b2, 1, &m);
	assert_true(crecv(sm, &r));
	assert_int_equal(r.tid, (uint64_t)SIB_MAD_CHAN_SMA << 40 | 7);
	r.method = MAD_METHOD_TRAP_REPRESS;
	r.lrh.dlid = LID_B2;
	csend(t, sm, &r);
	assert_int_equal(sma_seen.calls, calls + 1);
	assert_ptr_equal(sma_seen.n, t->b2);
	assert_int_equal(sma_seen.req[3], MAD_METHOD_TRAP_REPRESS);
	assert_int_equal(drops(t, SIB_MAD_DROP_NO_AGENT), 0);
	assert_int_equal(t->b2->mgmt->port[1].pma.vl15_dropped, 0);
	close(sm);
}

/* Equal but for the bytes in skip[] (offsets). */
static void assert_mad_equal(const uint8_t *got, const uint8_t *want, const int *skip, size_t nskip)
{
	for (int i = 0; i < MAD_SIZE; i++) {
		bool s = false;

		for (size_t k = 0; k < nskip; k++)
			s |= skip[k] == i;
		if (!s && got[i] != want[i])
			fail_msg("MAD byte %d: %#x, vector %#x", i, got[i], want[i]);
	}
}

/*
 * The verified DR vectors (mad-vectors smi_walk.txt) through the router:
 * the SM's Get of vector 1 (written with HopPointer 0) reaches H2's SMA as
 * vector 2 after H2's step (HopPointer 3, ReturnPath 0,1,1); H2's answer
 * reaches the SM as vector 3 after H1's step (HopPointer 0).  Only the TID
 * bits 63..40 (softibd's channel number) and those steps differ.
 */
static void test_dr_vectors(void **state)
{
	struct topo *t = *state;
	const struct mad_vector *v1 = vec("dr_get_nodeinfo_link1");
	const struct mad_vector *v2 = vec("dr_get_nodeinfo_link2");
	const struct mad_vector *v3 = vec("dr_getresp_nodeinfo_link1");
	uint8_t want[MAD_SIZE], got[MAD_SIZE];
	int sm = chan_open(t, "h1", 0, NULL);
	mai_mad_t m, r;

	memset(&m, 0, sizeof(m));
	m.qp = 0;
	assert_int_equal(mai_fromwire(v1->mad, MAD_SIZE, &m), MAD_SIZE);
	m.class_specific &= 0x00FF; /* as the SM writes it: HopPointer 0 */
	m.lrh.dlid = m.lrh.slid = 0xFFFF;
	agent_payload = v3->mad + 64;
	csend(t, sm, &m);
	agent_payload = NULL;

	assert_ptr_equal(sma_seen.n, t->a2);
	assert_int_equal(sma_seen.in_port, 1);
	memcpy(want, v2->mad, MAD_SIZE);
	want[6] = 3;		/* C14-9:3 at H2: HopPointer hop_cnt + 1 */
	want[192 + 2] = 1;	/* ReturnPath[2]: H2's port */
	static const int tid_hi[] = { 8, 9, 10 };
	assert_mad_equal(sma_seen.req, want, tid_hi, 3);

	assert_true(crecv(sm, &r));
	assert_int_equal(mai_towire(&r, got, sizeof(got)), MAD_SIZE);
	memcpy(want, v3->mad, MAD_SIZE);
	want[6] = 0;		/* C14-13:3 at H1: HopPointer 0, to the SM */
	assert_mad_equal(got, want, tid_hi, 3);
	assert_int_equal(r.tid & 0xFFFFFFFFFFull, 0xa100000042ull);
	close(sm);
}

/* sib_mad_wire: the packet a MAD is on a CA port's link, as capture shows
 * it: it decodes as UD SEND_ONLY with valid ICRC and VCRC, VL15 and Q_Key 0
 * on QP0, VL0 and the GSI Q_Key on QP1, the QPs by direction, the MAD as
 * its payload; OOB and TIMEOUT give nothing. */
static void test_mad_wire(void **state)
{
	uint8_t buf[SIB_MAD_WIRE_MAX], mad[MAD_SIZE];
	struct iba_pkt p;
	mai_mad_t m;
	size_t len;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.type = MAI_TYPE_MAD;
	m.qp = 1;
	m.remote_qpn = 1;
	m.remote_qkey = 0x80010000u;
	m.lrh.sl = 3;
	m.lrh.dlid = 1;
	m.lrh.slid = 7;
	m.base_version = 1;
	m.mgmt_class = MAD_MGMT_CLASS_SUBN_ADM;
	m.class_version = 2;
	m.method = MAD_METHOD_GETTABLE;
	m.tid = 0x1122334455667788ull;
	m.attr_id = 0x11;
	m.data_len = MAI_MAD_DATA_SIZE;
	for (unsigned int i = 0; i < MAI_MAD_DATA_SIZE; i++)
		m.data[i] = (uint8_t)i;
	len = sib_mad_wire(&m, true, buf, sizeof(buf));
	assert_int_equal(len, 8 + 12 + 8 + 256 + 4 + 2);
	assert_int_equal(iba_decode(buf, len, IBA_CHECK_ICRC | IBA_CHECK_VCRC, &p), IBA_OK);
	assert_int_equal(p.bth.opcode, IBA_TRANSPORT_UD | IBA_OPC_SEND_ONLY);
	assert_int_equal(p.lrh.vl, 0);
	assert_int_equal(p.lrh.sl, 3);
	assert_int_equal(p.lrh.dlid, 1);
	assert_int_equal(p.lrh.slid, 7);
	assert_int_equal(p.bth.pkey, 0xFFFF);
	assert_int_equal(p.bth.dqpn, 1);
	assert_int_equal(p.deth.qkey, 0x80010000u);
	assert_int_equal(p.deth.src_qp, 1);
	assert_int_equal(p.paylen, MAD_SIZE);
	assert_int_equal(mai_towire(&m, mad, sizeof(mad)), MAD_SIZE);
	assert_memory_equal(p.payload, mad, MAD_SIZE);
	/* an SMP arriving at QP0 from QP0: VL15, Q_Key 0 */
	m.qp = 0;
	m.remote_qpn = 0;
	m.remote_qkey = 0;
	m.mgmt_class = MAD_MGMT_CLASS_SUBN_LID_ROUTED;
	m.class_version = 1;
	len = sib_mad_wire(&m, false, buf, sizeof(buf));
	assert_int_equal(iba_decode(buf, len, IBA_CHECK_ICRC | IBA_CHECK_VCRC, &p), IBA_OK);
	assert_int_equal(p.lrh.vl, 15);
	assert_int_equal(p.deth.qkey, 0);
	assert_int_equal(p.bth.dqpn, 0);
	/* a receive at QP1 from QP 0x123 with a GRH */
	m.qp = 1;
	m.remote_qpn = 0x123;
	m.remote_qkey = 0x80010000u;
	m.has_grh = 1;
	m.grh.hoplmt = 255;
	m.grh.sgid[0] = 0xfe;
	m.grh.dgid[0] = 0xfe;
	len = sib_mad_wire(&m, false, buf, sizeof(buf));
	assert_int_equal(len, 8 + 40 + 12 + 8 + 256 + 4 + 2);
	assert_int_equal(iba_decode(buf, len, IBA_CHECK_ICRC | IBA_CHECK_VCRC, &p), IBA_OK);
	assert_int_equal(p.lrh.lnh, IBA_LNH_GLOBAL);
	assert_int_equal(p.bth.dqpn, 1);
	assert_int_equal(p.deth.src_qp, 0x123);
	/* no MAD, or no room: nothing */
	m.type = MAI_TYPE_OOB;
	assert_int_equal(sib_mad_wire(&m, true, buf, sizeof(buf)), 0);
	m.type = MAI_TYPE_MAD;
	assert_int_equal(sib_mad_wire(&m, true, buf, SIB_MAD_WIRE_MAX - 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dr_every_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dr_63_hops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dr_drops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dr_lid_part, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dr_lid_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lid_routed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_switch_counters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gmp_channels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gsi_qkey, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unasked_responses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sma_precedence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chan_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trap_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trap_tid_stamped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dr_vectors, setup_walk, teardown),
		cmocka_unit_test(test_mad_wire),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
