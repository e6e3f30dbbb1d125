/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the SMA, PMA and built-in SM (src/subnet/sma.c, pma.c,
 * sm_builtin.c, sma_publish.c) without a daemon: the verified vectors of
 * ../shared/research/mad-vectors (tests/data/mad_vectors.h) where they
 * apply (NodeInfo over DR, PortInfo, LFT Set, PortCounters, trap 128,
 * TrapRepress), the port state machine, M_Key, every status, the PMA's
 * clearing, and the built-in SM's sweep.  The map writers and events are
 * recorded by the stubs below.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

#include "daemon/softibd.h"
#include "subnet/subnet_int.h" /* the context's layout: the test reads its counters */
#include "mad_vectors.h"
#include "softib/mai.h"

#define DATA(name) SIB_TEST_DATA "/" name

/* ---- stubs of softibd's other files, recording what they were asked ---- */

#define MAX_REC 64
static struct { int type; uint32_t dev; uint8_t port; uint8_t state; uint16_t lid; } events[MAX_REC];
static unsigned int n_events, n_route_changed, n_traps;
static mai_mad_t traps[MAX_REC];
static uint16_t lid_map[SIB_UNICAST_LIDS];

bool sibd_dev_present(const struct sibd *d, uint32_t i)
{
	return i < d->num_devices && (d->devs[i].gen & 1);
}
void sibd_map_write_begin(struct sibd *d) { (void)d; }
void sibd_map_write_end(struct sibd *d) { (void)d; }
void sibd_map_put_device(struct sibd *d, uint32_t idx) { (void)d; (void)idx; }
void sibd_map_put_lids(struct sibd *d, uint32_t lid, uint32_t n, uint16_t entry)
{
	(void)d;
	for (uint32_t l = lid; l && l < lid + n && l < SIB_UNICAST_LIDS; l++)
		lid_map[l] = entry;
}
void sibd_event_port(struct sibd *d, enum sib_event_type type, uint32_t dev_index,
		     uint8_t port_num)
{
	if (n_events < MAX_REC) {
		events[n_events].type = type;
		events[n_events].dev = dev_index;
		events[n_events].port = port_num;
		events[n_events].state = d->devs[dev_index].ports[port_num - 1].state;
		events[n_events].lid = d->devs[dev_index].ports[port_num - 1].lid;
	}
	n_events++;
}
static uint64_t data_pkts; /* what the "contexts" counted */

/* The test's host table (subnet_api.h): port changes go to softibd's
 * publishing (sma_publish.c, over the map writers above), the rest is
 * recorded. */
static void host_port_changed(void *ctx, struct sib_fab_node *n, uint8_t pn, unsigned int what,
			      uint16_t old_lid, uint8_t old_lmc)
{
	sibd_sma_publish(ctx, n, pn, what, old_lid, old_lmc);
}
static void host_route_changed(void *ctx)
{
	(void)ctx;
	n_route_changed++;
}
static void host_data_counters(void *ctx, const struct sib_fab_node *n, uint8_t pn,
			       struct sib_pma_counters *sum)
{
	(void)ctx;
	(void)n;
	(void)pn;
	sum->xmit_pkts += data_pkts;
}
static void host_log(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "%s\n", line);
}
static unsigned int n_filter_asks; /* requests the router matched */
static size_t host_mad_filters(void *ctx, const struct sib_fab_node *n, uint8_t port, uint8_t qp,
			       const struct mai_filter_ent *tail, size_t ntail,
			       const struct mai_filter_ent **ents)
{
	n_filter_asks++;
	*ents = tail;
	return ntail;
}
static int host_mad_push(void *ctx, uint32_t chan, const mai_mad_t *m)
{
	return -ENOENT;
}
static int host_mad_response(void *ctx, uint32_t chan, const struct sib_fab_node *n, uint8_t port,
			     uint8_t qp, const mai_mad_t *m)
{
	return -ENOENT;
}
static const struct sib_subnet_host test_host = {
	.port_changed = host_port_changed,
	.route_changed = host_route_changed,
	.data_counters = host_data_counters,
	.log = host_log,
	.mad_filters = host_mad_filters,
	.mad_push = host_mad_push,
	.mad_response = host_mad_response,
};
static void mad_out(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, struct mai_mad *m)
{
	(void)sn;
	(void)n;
	(void)port;
	if (n_traps < MAX_REC)
		traps[n_traps] = *m;
	n_traps++;
}

/* ---- fixtures ------------------------------------------------------------ */

/* The fabric of the vectors: H1 -- S1[1], S1[4] -- H2 (2 ports, mlx4-like). */
static const char vec_topo[] =
	"switchguid=0x0008f10400000100\n"
	"Switch\t8 \"S1\"\t# \"S1\"\n"
	"[1]\t\"H1\"[1]\n"
	"[4]\t\"H2\"[1]\n"
	"\n"
	"caguid=0x0008f10400000200\n"
	"Ca\t1 \"H1\"\t# \"H1\"\n"
	"[1](8f10400000201)\t\"S1\"[1]\n"
	"\n"
	"vendid=0x0002c9\n"
	"devid=0x1017\n"
	"sysimgguid=0x0008f10400000300\n"
	"caguid=0x0008f10400000300\n"
	"Ca\t2 \"H2\"\t# \"H2\"\n"
	"[1](8f10400000301)\t\"S1\"[4]\n";

struct fx {
	struct sibd *d;
};

static struct sib_fab_node *node(struct sibd *d, const char *id)
{
	for (unsigned int i = 0; i < d->sn->fab.n_nodes; i++)
		if (!strcmp(d->sn->fab.nodes[i]->id, id))
			return d->sn->fab.nodes[i];
	fail_msg("no node %s", id);
	return NULL;
}

/* A daemon's state over a topology: every CA a verbs device, map present. */
static struct sibd *make(const char *text, const char *file, bool external)
{
	struct sibd *d = calloc(1, sizeof(*d));
	char err[256];
	uint32_t nd = 0;

	assert_non_null(d);
	d->sn = sib_subnet_new(&test_host, d);
	assert_non_null(d->sn);
	if (file)
		assert_int_equal(sib_fabric_load_file(&d->sn->fab, file, err, sizeof(err)), 0);
	else
		assert_int_equal(sib_fabric_parse(&d->sn->fab, text, "t", err, sizeof(err)), 0);
	assert_int_equal(sib_subnet_init(&d->sn->fab), 0);
	d->sn->sm_external = external;
	d->sn->mad_out = mad_out;
	for (unsigned int i = 0; i < d->sn->fab.n_nodes; i++) {
		struct sib_fab_node *n = d->sn->fab.nodes[i];

		if (n->type != SIB_NODE_CA)
			continue;
		d->dev_node[nd] = n;
		d->devs[nd].num_ports = n->num_ports;
		d->devs[nd].gen = 1;
		for (unsigned int pn = 1; pn <= n->num_ports; pn++)
			sibd_sma_port_to_shm(&d->devs[nd].ports[pn - 1], &n->ports[pn]);
		nd++;
	}
	d->num_devices = nd;
	d->shm = (struct sib_fabric_shm *)(void *)lid_map; /* non-NULL: "the map exists" */
	n_events = n_route_changed = n_traps = 0;
	data_pkts = 0;
	memset(lid_map, 0, sizeof(lid_map));
	return d;
}

static void destroy(struct sibd *d)
{
	sib_subnet_free(&d->sn->fab);
	sib_fabric_free(&d->sn->fab);
	sib_subnet_delete(d->sn);
	free(d);
}

static int setup_vec(void **state)
{
	*state = make(vec_topo, NULL, true);
	return 0;
}

static int setup_2sw(void **state)
{
	*state = make(NULL, DATA("subnet-2sw.topo"), true);
	return 0;
}

static int teardown(void **state)
{
	destroy(*state);
	return 0;
}

static const uint8_t *vector(const char *name)
{
	for (size_t i = 0; i < sizeof(mad_vectors) / sizeof(mad_vectors[0]); i++)
		if (!strcmp(mad_vectors[i].name, name))
			return mad_vectors[i].mad;
	fail_msg("no vector %s", name);
	return NULL;
}

/* A LID-routed SMP (or, with cls 4, a PMA GMP) with data. */
static void build(uint8_t *mad, uint8_t cls, uint8_t method, uint16_t attr, uint32_t mod,
		  const uint8_t *data, size_t len)
{
	struct mad_hdr h = {
		.base_version = 1, .mgmt_class = cls, .class_version = 1, .method = method,
		.tid = 0x1234, .attr_id = attr, .attr_mod = mod,
	};

	memset(mad, 0, MAD_SIZE);
	mad_hdr_encode(&h, mad);
	if (data)
		memcpy(mad + 64, data, len);
}

/* Send an SMP; the reply's status, or -1 for no reply. */
static int sma(struct sibd *d, struct sib_fab_node *n, uint8_t in_port, uint8_t method,
	       uint16_t attr, uint32_t mod, uint8_t *data)
{
	uint8_t mad[MAD_SIZE];
	struct mad_hdr h;

	build(mad, MAD_MGMT_CLASS_SUBN_LID_ROUTED, method, attr, mod, data, 64);
	if (!sib_sma_process(d->sn, n, in_port, mad, mad))
		return -1;
	mad_hdr_decode(&h, mad);
	assert_int_equal(h.r, 1); /* GetResp for Get and Set, else R set */
	assert_int_equal(h.method, method == MAD_METHOD_SET ? MAD_METHOD_GET : method);
	assert_int_equal(h.tid, 0x1234);
	memcpy(data, mad + 64, 64);
	return h.status;
}

static struct mad_port_info get_pi(struct sibd *d, struct sib_fab_node *n, uint8_t pn)
{
	struct mad_port_info pi;

	assert_int_equal(sib_sm_get_port_info(d->sn, n, pn, &pi), 0);
	return pi;
}

/* Set PortInfo from pi with the given state actions. */
static int set_pi(struct sibd *d, struct sib_fab_node *n, uint8_t pn, struct mad_port_info pi,
		  uint8_t state, uint8_t phys)
{
	pi.port_state = state;
	pi.port_phys_state = phys;
	return sib_sm_set_port_info(d->sn, n, pn, &pi);
}

static const struct mad_port_info *pi_of(struct sib_fab_node *n, uint8_t pn)
{
	return &n->mgmt->port[pn].pi;
}

/* ---- the vectors --------------------------------------------------------- */

/* Vector 2 arrives at H2; our reply, sent back through S1, is vector 3
 * (but for PartitionCap: H2 was an mlx4 with 128, a softib CA has 16). */
static void test_vector_nodeinfo_dr(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *h2 = node(d, "H2");
	struct mad_dr_node ca = { false, 2 }, sw = { true, 8 };
	uint8_t mad[MAD_SIZE], want[MAD_SIZE];
	struct mad_dr_result r;
	struct mad_node_info ni;

	memcpy(mad, vector("dr_get_nodeinfo_link2"), MAD_SIZE);
	r = mad_dr_recv(mad, &ca, 1);
	assert_int_equal(r.verdict, MAD_DR_LOCAL);
	assert_int_equal(sib_sma_process(d->sn, h2, 1, mad, mad), 1);
	assert_int_equal(mad_dr_send(mad, &ca, 1).verdict, MAD_DR_SEND);
	r = mad_dr_recv(mad, &sw, 4);
	assert_int_equal(r.verdict, MAD_DR_FORWARD);
	assert_int_equal(r.port, 1);
	memcpy(want, vector("dr_getresp_nodeinfo_link1"), MAD_SIZE);
	mad_node_info_decode(&ni, mad + 64);
	assert_int_equal(ni.partition_cap, SIB_PKEY_TBL_LEN);
	want[64 + 28] = 0;
	want[64 + 29] = SIB_PKEY_TBL_LEN;
	assert_memory_equal(mad, want, MAD_SIZE);
}

/* A Get of a port holding vector 4's PortInfo answers vector 4. */
static void test_vector_portinfo(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *h2 = node(d, "H2");
	const uint8_t *v = vector("lid_getresp_portinfo");
	uint8_t mad[MAD_SIZE];

	mad_port_info_decode(&h2->mgmt->port[1].pi, v + 64);
	memcpy(mad, v, MAD_SIZE);
	mad[3] = MAD_METHOD_GET;
	memset(mad + 64, 0, 64);
	assert_int_equal(sib_sma_process(d->sn, h2, 1, mad, mad), 1);
	assert_memory_equal(mad, v, MAD_SIZE);
	/* a CA answers for its other port too, and mod 0 means "this one" */
	memcpy(mad, v, MAD_SIZE);
	mad[3] = MAD_METHOD_GET;
	mad[23] = 0;
	assert_int_equal(sib_sma_process(d->sn, h2, 1, mad, mad), 1);
	assert_memory_equal(mad + 64, v + 64, 64);
}

/* Vector 5 (LFT block 0 Set, DR to S1) programs exactly its entries. */
static void test_vector_lft(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *s1 = node(d, "S1");
	struct mad_dr_node sw = { true, 8 };
	const uint8_t *v = vector("dr_set_lft_block0");
	uint8_t mad[MAD_SIZE], data[64];
	struct mad_hdr h;

	memcpy(mad, v, MAD_SIZE);
	assert_int_equal(mad_dr_recv(mad, &sw, 1).verdict, MAD_DR_LOCAL);
	assert_null(s1->mgmt->sw->lft);
	assert_int_equal(sib_sma_process(d->sn, s1, 1, mad, mad), 1);
	mad_hdr_decode(&h, mad);
	assert_int_equal(h.status, MAD_SMP_DIRECTION); /* D=1, status 0 */
	assert_memory_equal(mad + 64, v + 64, 64);
	assert_int_equal(s1->mgmt->sw->lft[1], 1);
	assert_int_equal(s1->mgmt->sw->lft[2], 0);
	assert_int_equal(s1->mgmt->sw->lft[3], 4);
	assert_int_equal(s1->mgmt->sw->lft[0], 0xFF);
	assert_int_equal(s1->mgmt->sw->lft[4], 0xFF);
	assert_int_equal(s1->mgmt->sw->lft[64], 0xFF);
	assert_int_equal(n_route_changed, 1);
	/* the same block again changes nothing */
	memcpy(mad, v, MAD_SIZE);
	assert_int_equal(mad_dr_recv(mad, &sw, 1).verdict, MAD_DR_LOCAL);
	assert_int_equal(sib_sma_process(d->sn, s1, 1, mad, mad), 1);
	assert_int_equal(n_route_changed, 1);
	/* block 1 reads unprogrammed */
	memset(data, 0, sizeof(data));
	assert_int_equal(sma(d, s1, 1, MAD_METHOD_GET, MAD_ATTR_LIN_FWD_TBL, 1, data), 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(data[i], 0xFF);
}

/* H2 port 1 with vector 11's counts answers vector 11 (SymbolErrorCounter
 * saturated from a larger count). */
static void test_vector_pma(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *h2 = node(d, "H2");
	const uint8_t *v = vector("pma_getresp_portcounters");
	struct sib_pma_counters *c = &h2->mgmt->port[1].pma;
	uint8_t mad[MAD_SIZE];

	c->symbol_errors = 0x12345;
	c->link_downed = 1;
	c->xmit_discards = 2;
	c->xmit_data = 0x12345;
	c->rcv_data = 0x11111;
	c->xmit_pkts = 0x40d - 5;
	data_pkts = 5; /* the data path's share */
	c->rcv_pkts = 0x3fe;
	memcpy(mad, v, MAD_SIZE);
	mad[3] = MAD_METHOD_GET;
	memset(mad + 64, 0, 192);
	mad[65] = 1; /* PortSelect */
	assert_int_equal(sib_pma_process(d->sn, h2, 1, mad, mad), 1);
	assert_memory_equal(mad, v, MAD_SIZE);
}

static void to_wire(const mai_mad_t *m, uint8_t *wire)
{
	struct mad_hdr h = {
		.base_version = m->base_version, .mgmt_class = m->mgmt_class,
		.class_version = m->class_version, .r = m->method >> 7, .method = m->method & 0x7f,
		.status = m->status, .class_specific = m->class_specific, .tid = m->tid,
		.attr_id = m->attr_id, .attr_mod = m->attr_mod,
	};

	mad_hdr_encode(&h, wire);
	memcpy(wire + 24, m->data, MAI_MAD_DATA_SIZE);
}

/* A link of S1 going down sends vector 12; vector 13 (the repress) is taken
 * quietly. */
static void test_vector_trap128(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *s1 = node(d, "S1"), *h1 = node(d, "H1");
	uint8_t wire[MAD_SIZE], mad[MAD_SIZE];

	s1->mgmt->port[0].pi.lid = 2;
	s1->mgmt->port[0].pi.master_sm_lid = 1;
	d->sn->trap_tid = 2;
	sib_sma_link_down(d->sn, h1, 1, SIB_LINK_LOST);
	assert_int_equal(n_traps, 1);
	assert_int_equal(traps[0].lrh.dlid, 1);
	assert_int_equal(traps[0].lrh.slid, 2);
	assert_int_equal(traps[0].lrh.vl, 15);
	assert_int_equal(traps[0].qp, 0);
	to_wire(&traps[0], wire);
	assert_memory_equal(wire, vector("lid_trap128_notice"), MAD_SIZE);
	assert_int_equal(s1->mgmt->sw->si.port_state_change, 1);
	assert_int_equal(d->sn->sma.traps_sent, 1);

	memcpy(mad, vector("lid_trap_repress"), MAD_SIZE);
	assert_int_equal(sib_sma_process(d->sn, s1, 1, mad, mad), 0);
	assert_int_equal(d->sn->sma.trap_represses, 1);

	/* without an SM LID, or without the router, a trap is counted unsent */
	s1->mgmt->port[0].pi.master_sm_lid = 0;
	sib_sma_link_up(d->sn, h1, 1);
	assert_int_equal(n_traps, 1);
	assert_int_equal(d->sn->sma.traps_unsent, 1);
	s1->mgmt->port[0].pi.master_sm_lid = 1;
	d->sn->mad_out = NULL;
	sib_sma_link_down(d->sn, h1, 1, SIB_LINK_LOST);
	assert_int_equal(d->sn->sma.traps_unsent, 2);
}

/* ---- statuses -------------------------------------------------------------- */

static void test_statuses(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *h2 = node(d, "H2"), *s1 = node(d, "S1");
	uint8_t mad[MAD_SIZE], data[64] = { 0 };
	struct mad_hdr h;

	/* bad base / class version */
	build(mad, 1, MAD_METHOD_GET, MAD_ATTR_NODE_INFO, 0, NULL, 0);
	mad[0] = 2;
	assert_int_equal(sib_sma_process(d->sn, h2, 1, mad, mad), 1);
	mad_hdr_decode(&h, mad);
	assert_int_equal(h.status, MAD_STATUS_BAD_VERSION);
	build(mad, 1, MAD_METHOD_GET, MAD_ATTR_NODE_INFO, 0, NULL, 0);
	mad[2] = 2;
	assert_int_equal(sib_sma_process(d->sn, h2, 1, mad, mad), 1);
	mad_hdr_decode(&h, mad);
	assert_int_equal(h.status, MAD_STATUS_BAD_VERSION);
	assert_int_equal(d->sn->sma.bad_version, 2);
	/* methods and attributes */
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_GETTABLE, MAD_ATTR_NODE_INFO, 0, data),
			 MAD_STATUS_UNSUP_METHOD);
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_GET, MAD_ATTR_SM_INFO, 0, data),
			 MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_GET, 0xFF90, 0, data),
			 MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_SET, MAD_ATTR_NODE_INFO, 0, data),
			 MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_SET, MAD_ATTR_GUID_INFO, 0, data),
			 MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_GET, MAD_ATTR_SWITCH_INFO, 0, data),
			 MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_GET, MAD_ATTR_LIN_FWD_TBL, 0, data),
			 MAD_STATUS_UNSUP_METHOD_ATTR);
	/* modifiers */
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_GET, MAD_ATTR_PORT_INFO, 3, data),
			 MAD_STATUS_INVALID_FIELD);
	assert_int_equal(sma(d, s1, 1, MAD_METHOD_GET, MAD_ATTR_PORT_INFO, 9, data),
			 MAD_STATUS_INVALID_FIELD);
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_GET, MAD_ATTR_NODE_INFO, 1, data),
			 MAD_STATUS_INVALID_FIELD);
	assert_int_equal(sma(d, s1, 1, MAD_METHOD_GET, MAD_ATTR_LIN_FWD_TBL, 768, data),
			 MAD_STATUS_INVALID_FIELD);
	assert_int_equal(sma(d, s1, 1, MAD_METHOD_GET, MAD_ATTR_LIN_FWD_TBL, 767, data), 0);
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_GET, MAD_ATTR_P_KEY_TABLE, 1, data),
			 MAD_STATUS_INVALID_FIELD);
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_GET, MAD_ATTR_GUID_INFO, 1, data),
			 MAD_STATUS_INVALID_FIELD);
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_GET, MAD_ATTR_VL_ARBITRATION, 0, data),
			 MAD_STATUS_INVALID_FIELD);
	assert_int_equal(sma(d, h2, 1, MAD_METHOD_GET, MAD_ATTR_VL_ARBITRATION, 5 << 16, data),
			 MAD_STATUS_INVALID_FIELD);
	assert_int_equal(sma(d, s1, 1, MAD_METHOD_GET, MAD_ATTR_SLVL_TABLE, 9 << 8, data),
			 MAD_STATUS_INVALID_FIELD);
	assert_int_equal(sma(d, s1, 1, MAD_METHOD_GET, MAD_ATTR_MCAST_FWD_TBL, 1u << 28, data),
			 MAD_STATUS_INVALID_FIELD); /* 8 ports: one position */
	assert_int_equal(sma(d, s1, 1, MAD_METHOD_GET, MAD_ATTR_MCAST_FWD_TBL, 512, data),
			 MAD_STATUS_INVALID_FIELD);
	assert_int_equal(sma(d, s1, 1, MAD_METHOD_GET, MAD_ATTR_MCAST_FWD_TBL, 511, data), 0);
	assert_int_equal(d->sn->sma.invalid_field, 11);
	/* no reply: responses, other classes, a port the node lacks */
	build(mad, 1, MAD_METHOD_GET_RESP & 0x7f, MAD_ATTR_NODE_INFO, 0, NULL, 0);
	mad[3] = MAD_METHOD_GET_RESP;
	assert_int_equal(sib_sma_process(d->sn, h2, 1, mad, mad), 0);
	build(mad, MAD_MGMT_CLASS_SUBN_ADM, MAD_METHOD_GET, MAD_ATTR_NODE_INFO, 0, NULL, 0);
	assert_int_equal(sib_sma_process(d->sn, h2, 1, mad, mad), 0);
	build(mad, 1, MAD_METHOD_GET, MAD_ATTR_NODE_INFO, 0, NULL, 0);
	assert_int_equal(sib_sma_process(d->sn, h2, 3, mad, mad), 0);
	assert_int_equal(sib_sma_process(d->sn, h2, 0, mad, mad), 0);
	assert_int_equal(sib_sma_process(d->sn, s1, 9, mad, mad), 0);
	assert_int_equal(d->sn->sma.dropped, 5);
}

/* NodeInfo/NodeDescription/GUIDInfo of a switch: LocalPortNum = arrival. */
static void test_switch_identity(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *s1 = node(d, "S1");
	struct mad_node_info ni;
	struct mad_guid_info gi;
	uint8_t data[64] = { 0 };

	assert_int_equal(sma(d, s1, 4, MAD_METHOD_GET, MAD_ATTR_NODE_INFO, 0, data), 0);
	mad_node_info_decode(&ni, data);
	assert_int_equal(ni.node_type, MAD_NODE_TYPE_SWITCH);
	assert_int_equal(ni.num_ports, 8);
	assert_int_equal(ni.local_port_num, 4);
	assert_int_equal(ni.node_guid, 0x0008f10400000100ull);
	assert_int_equal(ni.port_guid, 0x0008f10400000100ull);
	assert_int_equal(ni.partition_cap, 32);
	assert_int_equal(sma(d, s1, 0, MAD_METHOD_GET, MAD_ATTR_NODE_DESC, 0, data), 0);
	assert_string_equal((char *)data, "S1");
	assert_int_equal(sma(d, s1, 2, MAD_METHOD_GET, MAD_ATTR_GUID_INFO, 0, data), 0);
	mad_guid_info_decode(&gi, data);
	assert_int_equal(gi.guid[0], 0x0008f10400000100ull);
	assert_int_equal(gi.guid[1], 0);
	assert_int_equal(sma(d, s1, 2, MAD_METHOD_GET, MAD_ATTR_PORT_INFO, 0, data), 0);
	{
		struct mad_port_info pi;

		mad_port_info_decode(&pi, data);
		assert_int_equal(pi.local_port_num, 2); /* port 0's, asked on port 2 */
		assert_int_equal(pi.capability_mask & MAD_PORT_CAP_IS_TRAP_SUP,
				 MAD_PORT_CAP_IS_TRAP_SUP);
	}
}

/* ---- the port state machine ---------------------------------------------- */

/* A CA port INIT -> ARMED -> ACTIVE, and the refused transitions; returns its PortInfo. */
static struct mad_port_info state_walk_to_active(struct sibd *d, struct sib_fab_node *a1)
{
	struct mad_port_info pi = get_pi(d, a1, 1);

	assert_int_equal(pi.port_state, MAD_PORT_STATE_INIT);
	assert_int_equal(d->devs[0].ports[0].state, IBV_PORT_INIT);
	/* INIT -> ACTIVE skips ARMED: refused, nothing changes */
	pi.lid = 40;
	assert_int_equal(set_pi(d, a1, 1, pi, MAD_PORT_STATE_ACTIVE, 0), MAD_STATUS_INVALID_FIELD);
	assert_int_equal(pi_of(a1, 1)->lid, 0);
	assert_int_equal(n_events, 0);
	/* ARMED, then ACTIVE: each published */
	assert_int_equal(set_pi(d, a1, 1, pi, MAD_PORT_STATE_ARMED, 0), 0);
	assert_int_equal(pi_of(a1, 1)->lid, 40);
	assert_int_equal(a1->ports[1].lid, 40);
	assert_int_equal(lid_map[40], SIB_LIDM_MAKE(0, 1));
	assert_int_equal(pi_of(a1, 1)->port_state, MAD_PORT_STATE_ARMED);
	assert_int_equal(set_pi(d, a1, 1, pi, MAD_PORT_STATE_ACTIVE, 0), 0);
	assert_int_equal(d->devs[0].ports[0].state, IBV_PORT_ACTIVE);
	assert_int_equal(events[n_events - 1].type, SIB_EV_PORT_CHANGE);
	assert_int_equal(events[n_events - 1].state, IBV_PORT_ACTIVE);
	/* back to INIT or ARMED from ACTIVE: refused; ACTIVE again: no change */
	assert_int_equal(set_pi(d, a1, 1, pi, MAD_PORT_STATE_INIT, 0), MAD_STATUS_INVALID_FIELD);
	assert_int_equal(set_pi(d, a1, 1, pi, MAD_PORT_STATE_ARMED, 0), MAD_STATUS_INVALID_FIELD);
	assert_int_equal(set_pi(d, a1, 1, pi, 7, 0), MAD_STATUS_INVALID_FIELD);
	n_events = 0;
	assert_int_equal(set_pi(d, a1, 1, pi, MAD_PORT_STATE_ACTIVE, 0), 0);
	assert_int_equal(n_events, 0);
	return pi;
}

/* Set Down on a CA port: both ends retrain to INIT, switch A notes it, the LID stays. */
static void state_set_down(struct sibd *d, struct sib_fab_node *a, struct sib_fab_node *a1,
			   struct mad_port_info pi)
{
	/* Set Down: both ends go down, retrain, come back INIT; switch A notes it */
	a->mgmt->port[0].pi.lid = 1;
	a->mgmt->port[0].pi.master_sm_lid = 1;
	assert_int_equal(set_pi(d, a1, 1, pi, MAD_PORT_STATE_DOWN, 0), 0);
	assert_int_equal(pi_of(a1, 1)->port_state, MAD_PORT_STATE_INIT);
	assert_int_equal(pi_of(a1, 1)->port_phys_state, MAD_PORT_PHYS_STATE_LINKUP);
	assert_int_equal(pi_of(a, 1)->port_state, MAD_PORT_STATE_INIT);
	assert_int_equal(a->mgmt->sw->si.port_state_change, 1);
	assert_int_equal(n_traps, 2); /* down, and up again */
	/* an ordered retrain (OpenSM's op-VL change does this on a fresh
	 * fabric) is no failed link: LinkDownedCounter stays 0 at both ends */
	assert_int_equal(a1->mgmt->port[1].pma.link_downed, 0);
	assert_int_equal(a->mgmt->port[1].pma.link_downed, 0);
	assert_int_equal(events[0].state, IBV_PORT_DOWN);
	assert_int_equal(events[n_events - 1].state, IBV_PORT_INIT);
	assert_int_equal(pi_of(a1, 1)->lid, 40); /* the LID stays */
}

/* SwitchInfo PortStateChange on switch A. */
static void state_port_state_change(struct sibd *d, struct sib_fab_node *a)
{
	uint8_t data[64] = { 0 };
	struct mad_switch_info si;

	/* PortStateChange: written 0 stays, written 1 clears */
	assert_int_equal(sma(d, a, 0, MAD_METHOD_GET, MAD_ATTR_SWITCH_INFO, 0, data), 0);
	mad_switch_info_decode(&si, data);
	assert_int_equal(si.port_state_change, 1);
	si.port_state_change = 0;
	mad_switch_info_encode(&si, data);
	assert_int_equal(sma(d, a, 0, MAD_METHOD_SET, MAD_ATTR_SWITCH_INFO, 0, data), 0);
	assert_int_equal(a->mgmt->sw->si.port_state_change, 1);
	si.port_state_change = 1;
	mad_switch_info_encode(&si, data);
	assert_int_equal(sma(d, a, 0, MAD_METHOD_SET, MAD_ATTR_SWITCH_INFO, 0, data), 0);
	assert_int_equal(a->mgmt->sw->si.port_state_change, 0);
	si.linear_fdb_top = 0xC000;
	mad_switch_info_encode(&si, data);
	assert_int_equal(sma(d, a, 0, MAD_METHOD_SET, MAD_ATTR_SWITCH_INFO, 0, data),
			 MAD_STATUS_INVALID_FIELD);
}

/* PortPhysicalState Disabled/Polling on the A-B switch link, a pulled cable, an unlinked port. */
static void state_phys_disable_poll(struct sibd *d, struct sib_fab_node *a, struct sib_fab_node *b)
{
	struct mad_port_info pi;

	/* PortPhysicalState Disabled on the switch side (A-B link): DOWN both
	 * ends, this one Disabled, the far one Polling; both switches note it */
	b->mgmt->sw->si.port_state_change = 0;
	pi = get_pi(d, a, 3);
	assert_int_equal(set_pi(d, a, 3, pi, 0, MAD_PORT_PHYS_STATE_DISABLED), 0);
	assert_int_equal(pi_of(a, 3)->port_state, MAD_PORT_STATE_DOWN);
	assert_int_equal(pi_of(a, 3)->port_phys_state, MAD_PORT_PHYS_STATE_DISABLED);
	assert_int_equal(pi_of(b, 3)->port_state, MAD_PORT_STATE_DOWN);
	assert_int_equal(pi_of(b, 3)->port_phys_state, MAD_PORT_PHYS_STATE_POLLING);
	assert_int_equal(b->mgmt->sw->si.port_state_change, 1);
	/* the disabled end was told to; the far end lost its link */
	assert_int_equal(a->mgmt->port[3].pma.link_downed, 0);
	assert_int_equal(b->mgmt->port[3].pma.link_downed, 1);
	/* ARMED on a DOWN port: refused */
	pi = get_pi(d, a, 3);
	assert_int_equal(set_pi(d, a, 3, pi, MAD_PORT_STATE_ARMED, 0), MAD_STATUS_INVALID_FIELD);
	/* PortPhysicalState values other than 0, 2, 3: refused */
	assert_int_equal(set_pi(d, a, 3, pi, 0, MAD_PORT_PHYS_STATE_LINKUP),
			 MAD_STATUS_INVALID_FIELD);
	/* Polling: the link trains again */
	assert_int_equal(set_pi(d, a, 3, pi, 0, MAD_PORT_PHYS_STATE_POLLING), 0);
	assert_int_equal(pi_of(a, 3)->port_state, MAD_PORT_STATE_INIT);
	assert_int_equal(pi_of(b, 3)->port_phys_state, MAD_PORT_PHYS_STATE_LINKUP);
	/* a pulled cable (`softib port down`): both ends lost the link */
	sib_sma_link_down(d->sn, a, 3, SIB_LINK_LOST);
	assert_int_equal(a->mgmt->port[3].pma.link_downed, 1);
	assert_int_equal(b->mgmt->port[3].pma.link_downed, 2);
	sib_sma_link_up(d->sn, a, 3);
	assert_int_equal(pi_of(a, 3)->port_phys_state, MAD_PORT_PHYS_STATE_LINKUP);
	/* an unlinked port stays Polling */
	sib_sma_link_up(d->sn, a, 4);
	assert_int_equal(pi_of(a, 4)->port_phys_state, MAD_PORT_PHYS_STATE_POLLING);
}

static void test_state_machine(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *a = node(d, "S-5eed000000000a00"), *b = node(d, "S-5eed000000000b00");
	struct sib_fab_node *a1 = node(d, "H-5eed000000000a10");
	struct mad_port_info pi = state_walk_to_active(d, a1);

	state_set_down(d, a, a1, pi);
	state_port_state_change(d, a);
	state_phys_disable_poll(d, a, b);
}

/* A good PortInfo Set on CA port b1/1: LID, LMC, SM and MTU reach the LID map and verbs. */
static struct mad_port_info pi_set_good(struct sibd *d, struct sib_fab_node *b1)
{
	struct mad_port_info pi = get_pi(d, b1, 1);

	pi.lid = 0x20;
	pi.lmc = 2;
	pi.master_sm_lid = 7;
	pi.master_sm_sl = 3;
	pi.neighbor_mtu = MAD_MTU_2048;
	pi.operational_vls = 4;
	pi.link_width_enabled = 0xFF;
	pi.link_speed_enabled = 1;
	assert_int_equal(set_pi(d, b1, 1, pi, 0, 0), 0);
	assert_int_equal(pi_of(b1, 1)->lid, 0x20);
	assert_int_equal(pi_of(b1, 1)->lmc, 2);
	assert_int_equal(pi_of(b1, 1)->link_width_enabled, pi_of(b1, 1)->link_width_supported);
	assert_int_equal(pi_of(b1, 1)->link_speed_enabled, 1);
	for (int l = 0x20; l < 0x24; l++)
		assert_int_equal(lid_map[l], SIB_LIDM_MAKE(2, 1));
	assert_int_equal(d->devs[2].ports[0].lid, 0x20);
	assert_int_equal(d->devs[2].ports[0].sm_lid, 7);
	assert_int_equal(d->devs[2].ports[0].sm_sl, 3);
	assert_int_equal(d->devs[2].ports[0].active_mtu, IBV_MTU_2048);
	assert_int_equal(events[n_events - 2].type, SIB_EV_LID_CHANGE);
	assert_int_equal(events[n_events - 1].type, SIB_EV_SM_CHANGE);
	/* the LID moves: the old range unroutes */
	pi.lmc = 0;
	pi.lid = 0x30;
	assert_int_equal(set_pi(d, b1, 1, pi, 0, 0), 0);
	assert_int_equal(lid_map[0x20], 0);
	assert_int_equal(lid_map[0x23], 0);
	assert_int_equal(lid_map[0x30], SIB_LIDM_MAKE(2, 1));
	return pi;
}

/* Each bad field of a PortInfo Set on b1/1 is refused and changes nothing. */
static void pi_set_bad_fields(struct sibd *d, struct sib_fab_node *b1, struct mad_port_info pi)
{
	struct mad_port_info bad;
	unsigned int ev;

	ev = n_events;
	bad = pi;
	bad.lid = 0xC000;
	assert_int_equal(set_pi(d, b1, 1, bad, 0, 0), MAD_STATUS_INVALID_FIELD);
	bad = pi;
	bad.lid = 0xBFFE;
	bad.lmc = 2; /* range past the last unicast LID */
	assert_int_equal(set_pi(d, b1, 1, bad, 0, 0), MAD_STATUS_INVALID_FIELD);
	bad = pi;
	bad.master_sm_lid = 0xFFFF;
	assert_int_equal(set_pi(d, b1, 1, bad, 0, 0), MAD_STATUS_INVALID_FIELD);
	bad = pi;
	bad.neighbor_mtu = 6;
	assert_int_equal(set_pi(d, b1, 1, bad, 0, 0), MAD_STATUS_INVALID_FIELD);
	bad = pi;
	bad.neighbor_mtu = 0;
	assert_int_equal(set_pi(d, b1, 1, bad, 0, 0), MAD_STATUS_INVALID_FIELD);
	bad = pi;
	bad.operational_vls = 5; /* VLCap is VL0-7 */
	assert_int_equal(set_pi(d, b1, 1, bad, 0, 0), MAD_STATUS_INVALID_FIELD);
	bad = pi;
	bad.link_width_enabled = 8; /* 12X: not supported */
	assert_int_equal(set_pi(d, b1, 1, bad, 0, 0), MAD_STATUS_INVALID_FIELD);
	bad = pi;
	bad.link_speed_enabled = 8;
	assert_int_equal(set_pi(d, b1, 1, bad, 0, 0), MAD_STATUS_INVALID_FIELD);
	bad = pi;
	bad.link_down_default_state = 3;
	bad.lid = 0x31;
	assert_int_equal(set_pi(d, b1, 1, bad, 0, 0), MAD_STATUS_INVALID_FIELD);
	assert_int_equal(pi_of(b1, 1)->lid, 0x30);
	assert_int_equal(n_events, ev);
}

/* A switch takes a LID on port 0 only. */
static void pi_switch_lid(struct sibd *d, struct sib_fab_node *a)
{
	struct mad_port_info pi;

	/* a switch's external port has no LID: it is not taken */
	pi = get_pi(d, a, 1);
	pi.lid = 0x55;
	assert_int_equal(set_pi(d, a, 1, pi, 0, 0), 0);
	assert_int_equal(pi_of(a, 1)->lid, 0);
	/* its port 0 does */
	pi = get_pi(d, a, 0);
	pi.lid = 0x56;
	assert_int_equal(set_pi(d, a, 0, pi, 0, 0), 0);
	assert_int_equal(pi_of(a, 0)->lid, 0x56);
	assert_int_equal(a->ports[0].lid, 0x56);
}

/* Enabled widths and speeds take effect at the next link training on b1/1. */
static void pi_link_training(struct sibd *d, struct sib_fab_node *b1)
{
	struct sib_fab_port *peer = b1->ports[1].peer;
	const struct mad_port_info *far = pi_of(peer->node, peer->num);
	struct mad_port_info pi;

	/* LinkSpeedEnabled SDR (set above) takes effect at the next training:
	 * the highest width and speed both ends enable, in the verbs map too */
	assert_int_equal(pi_of(b1, 1)->link_speed_active, 4);
	sib_sma_link_down(d->sn, b1, 1, SIB_LINK_LOST);
	sib_sma_link_up(d->sn, b1, 1);
	assert_int_equal(pi_of(b1, 1)->port_phys_state, MAD_PORT_PHYS_STATE_LINKUP);
	assert_int_equal(pi_of(b1, 1)->link_speed_active, 1);
	assert_int_equal(pi_of(b1, 1)->link_width_active, 2);
	assert_int_equal(far->link_speed_active, 1);
	assert_int_equal(d->devs[2].ports[0].active_speed, 1);
	assert_int_equal(d->devs[2].ports[0].active_width, 2);
	/* 1X only, speed back to all (0xF): 1X QDR */
	pi = get_pi(d, b1, 1);
	pi.link_width_enabled = 1;
	pi.link_speed_enabled = 0xF;
	assert_int_equal(set_pi(d, b1, 1, pi, 0, 0), 0);
	assert_int_equal(pi_of(b1, 1)->link_width_active, 2); /* not before training */
	/* Polling on a live port (ibportstate reset): it retrains at once */
	assert_int_equal(set_pi(d, b1, 1, pi, 0, MAD_PORT_PHYS_STATE_POLLING), 0);
	assert_int_equal(pi_of(b1, 1)->port_phys_state, MAD_PORT_PHYS_STATE_LINKUP);
	assert_int_equal(pi_of(b1, 1)->link_width_active, 1);
	assert_int_equal(pi_of(b1, 1)->link_speed_active, 4);
	assert_int_equal(d->devs[2].ports[0].active_width, 1);
	assert_int_equal(d->devs[2].ports[0].active_speed, 4);
	/* the far end enables 4X only: nothing in common, the link stays down */
	pi = get_pi(d, peer->node, peer->num);
	pi.link_width_enabled = 2;
	assert_int_equal(set_pi(d, peer->node, peer->num, pi, 0, 0), 0);
	sib_sma_link_down(d->sn, b1, 1, SIB_LINK_RETRAIN);
	assert_int_equal(pi_of(b1, 1)->port_phys_state, MAD_PORT_PHYS_STATE_POLLING);
	assert_int_equal(d->sn->sma.train_failed, 1);
}

/* Field checks of a PortInfo Set: a bad one changes nothing. */
static void test_portinfo_fields(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *a = node(d, "S-5eed000000000a00");
	struct sib_fab_node *b1 = node(d, "H-5eed000000000b10");
	struct mad_port_info pi = pi_set_good(d, b1);

	pi_set_bad_fields(d, b1, pi);
	pi_switch_lid(d, a);
	pi_link_training(d, b1);
}

/* M_Key (14.2.4): protect bits decide what a wrong key may do. */
static void test_m_key(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *a2 = node(d, "H-5eed000000000a20");
	struct mad_port_info pi = get_pi(d, a2, 1);
	uint8_t mad[MAD_SIZE];
	struct mad_hdr h;

	pi.m_key = 0x1122334455667788ull;
	pi.m_key_protect_bits = 1;
	assert_int_equal(set_pi(d, a2, 1, pi, 0, 0), 0);
	/* Get without the key: answered, the key hidden */
	build(mad, 1, MAD_METHOD_GET, MAD_ATTR_PORT_INFO, 1, NULL, 0);
	assert_int_equal(sib_sma_process(d->sn, a2, 1, mad, mad), 1);
	assert_int_equal(mad[64], 0);
	/* with it: shown */
	build(mad, 1, MAD_METHOD_GET, MAD_ATTR_PORT_INFO, 1, NULL, 0);
	for (int i = 0; i < 8; i++)
		mad[24 + i] = (uint8_t)(pi.m_key >> (56 - 8 * i));
	assert_int_equal(sib_sma_process(d->sn, a2, 1, mad, mad), 1);
	mad_hdr_decode(&h, mad);
	assert_int_equal(h.status, 0);
	assert_int_equal(mad[64], 0x11);
	/* Set without it: dropped and counted */
	build(mad, 1, MAD_METHOD_SET, MAD_ATTR_PORT_INFO, 1, NULL, 0);
	assert_int_equal(sib_sma_process(d->sn, a2, 1, mad, mad), 0);
	assert_int_equal(pi_of(a2, 1)->m_key_violations, 1);
	assert_int_equal(d->sn->sma.m_key_violations, 1);
	/* protect bits 2: a Get without it is dropped too */
	a2->mgmt->port[1].pi.m_key_protect_bits = 2;
	build(mad, 1, MAD_METHOD_GET, MAD_ATTR_NODE_INFO, 0, NULL, 0);
	assert_int_equal(sib_sma_process(d->sn, a2, 1, mad, mad), 0);
	assert_int_equal(d->sn->sma.m_key_violations, 2);
	/* protect bits 0: a Get shows the key to anyone */
	a2->mgmt->port[1].pi.m_key_protect_bits = 0;
	build(mad, 1, MAD_METHOD_GET, MAD_ATTR_PORT_INFO, 1, NULL, 0);
	assert_int_equal(sib_sma_process(d->sn, a2, 1, mad, mad), 1);
	assert_int_equal(mad[64], 0x11);
}

/* P_KeyTable, SLtoVL, VLArb, MFT: what is set is read back, bounds hold. */
static void test_tables(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *a = node(d, "S-5eed000000000a00");
	struct sib_fab_node *a1 = node(d, "H-5eed000000000a10");
	struct mad_pkey_table pk = { { 0 } };
	struct mad_sl2vl sv;
	struct mad_vl_arb va;
	struct mad_mft mft;
	uint8_t data[64];

	/* P_Keys: a CA keeps 16 (its PartitionCap), published to verbs */
	for (int i = 0; i < 32; i++)
		pk.pkey[i] = (uint16_t)(0x8000 | i);
	mad_pkey_table_encode(&pk, data);
	assert_int_equal(sma(d, a1, 1, MAD_METHOD_SET, MAD_ATTR_P_KEY_TABLE, 0, data), 0);
	mad_pkey_table_decode(&pk, data);
	assert_int_equal(pk.pkey[15], 0x800f);
	assert_int_equal(pk.pkey[16], 0);
	assert_int_equal(d->devs[0].ports[0].pkey[3], 0x8003);
	/* a switch: port in bits 31-16, 32 entries */
	for (int i = 0; i < 32; i++)
		pk.pkey[i] = (uint16_t)(0x8000 | i);
	mad_pkey_table_encode(&pk, data);
	assert_int_equal(sma(d, a, 1, MAD_METHOD_SET, MAD_ATTR_P_KEY_TABLE, 2u << 16, data), 0);
	assert_int_equal(a->mgmt->port[2].pkey[31], 0x801f);
	assert_int_equal(a->mgmt->port[1].pkey[0], 0xFFFF);

	/* SL2VL: default SL mod 8; a switch table per (in, out) */
	memset(data, 0, sizeof(data));
	assert_int_equal(sma(d, a, 1, MAD_METHOD_GET, MAD_ATTR_SLVL_TABLE, 1 << 8 | 2, data), 0);
	mad_sl2vl_decode(&sv, data);
	assert_int_equal(sv.vl[9], 1);
	assert_null(a->mgmt->sw->sl2vl);
	for (int i = 0; i < 16; i++)
		sv.vl[i] = (uint8_t)(15 - i);
	mad_sl2vl_encode(&sv, data);
	assert_int_equal(sma(d, a, 1, MAD_METHOD_SET, MAD_ATTR_SLVL_TABLE, 1 << 8 | 2, data), 0);
	memset(data, 0, sizeof(data));
	assert_int_equal(sma(d, a, 1, MAD_METHOD_GET, MAD_ATTR_SLVL_TABLE, 2 << 8 | 1, data), 0);
	mad_sl2vl_decode(&sv, data);
	assert_int_equal(sv.vl[0], 0); /* another pair: still the default */
	assert_int_equal(sma(d, a, 1, MAD_METHOD_GET, MAD_ATTR_SLVL_TABLE, 1 << 8 | 2, data), 0);
	mad_sl2vl_decode(&sv, data);
	assert_int_equal(sv.vl[0], 15);
	/* a CA: its own port's */
	assert_int_equal(sma(d, a1, 1, MAD_METHOD_SET, MAD_ATTR_SLVL_TABLE, 0, data), 0);
	assert_int_equal(a1->mgmt->port[1].sl2vl[1], 14);

	/* VLArb block 3 (high 0-31) of switch port 4 */
	memset(&va, 0, sizeof(va));
	va.vl[0] = 2;
	va.weight[0] = 64;
	mad_vl_arb_encode(&va, data);
	assert_int_equal(sma(d, a, 1, MAD_METHOD_SET, MAD_ATTR_VL_ARBITRATION, 3u << 16 | 4, data),
			 0);
	assert_int_equal(a->mgmt->port[4].vlarb[2].weight[0], 64);

	/* MFT: MLID 0xC000 + 32 * 3 + 5, position 0 */
	n_route_changed = 0;
	memset(&mft, 0, sizeof(mft));
	mft.port_mask[5] = 0x000E;
	mad_mft_encode(&mft, data);
	assert_int_equal(sma(d, a, 1, MAD_METHOD_SET, MAD_ATTR_MCAST_FWD_TBL, 3, data), 0);
	assert_int_equal(a->mgmt->sw->mft[(32 * 3 + 5) * sib_subnet_mft_positions(a)], 0x000E);
	assert_int_equal(n_route_changed, 1);
	memset(data, 0, sizeof(data));
	assert_int_equal(sma(d, a, 1, MAD_METHOD_GET, MAD_ATTR_MCAST_FWD_TBL, 3, data), 0);
	mad_mft_decode(&mft, data);
	assert_int_equal(mft.port_mask[5], 0x000E);
	assert_int_equal(mft.port_mask[4], 0);
}

/* IsSM on and off: published, trap 144 each time it changes. */
static void test_capability(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *a1 = node(d, "H-5eed000000000a10");
	struct mad_port_info pi = get_pi(d, a1, 1);
	uint8_t wire[MAD_SIZE];
	struct mad_notice nt;
	struct mad_trap144 t;

	pi.lid = 3;
	pi.master_sm_lid = 3;
	assert_int_equal(set_pi(d, a1, 1, pi, 0, 0), 0);
	sib_sma_set_capability(d->sn, a1, 1, MAD_PORT_CAP_IS_SM, true);
	assert_true(d->devs[0].ports[0].cap_flags & MAD_PORT_CAP_IS_SM);
	assert_int_equal(n_traps, 1);
	to_wire(&traps[0], wire);
	mad_notice_decode(&nt, wire + 64);
	assert_int_equal(nt.trap_num, 144);
	assert_int_equal(nt.issuer_lid, 3);
	mad_trap144_decode(&t, &nt);
	assert_true(t.capability_mask & MAD_PORT_CAP_IS_SM);
	sib_sma_set_capability(d->sn, a1, 1, MAD_PORT_CAP_IS_SM, true); /* no change */
	assert_int_equal(n_traps, 1);
	sib_sma_set_capability(d->sn, a1, 1, MAD_PORT_CAP_IS_SM, false);
	assert_int_equal(n_traps, 2);
	assert_false(d->devs[0].ports[0].cap_flags & MAD_PORT_CAP_IS_SM);
	sib_sma_set_capability(d->sn, a1, 0, MAD_PORT_CAP_IS_SM, true); /* no port 0 */
	sib_sma_set_capability(d->sn, a1, 5, MAD_PORT_CAP_IS_SM, true);
	assert_int_equal(n_traps, 2);
}

/* ---- PMA -------------------------------------------------------------------- */

static int pma(struct sibd *d, struct sib_fab_node *n, uint8_t method, uint16_t attr,
	       uint32_t mod, uint8_t *data)
{
	uint8_t mad[MAD_SIZE];
	struct mad_hdr h;

	build(mad, MAD_MGMT_CLASS_PERF_MGMT, method, attr, mod, data, 192);
	if (!sib_pma_process(d->sn, n, 1, mad, mad))
		return -1;
	mad_hdr_decode(&h, mad);
	memcpy(data, mad + 64, 192);
	return h.status;
}

#define PMA_DATA_BYTES 192 /* the PMA attribute data the tests exchange */

/* ClassPortInfo and a CA port's counters: Get, Set (clear) by CounterSelect(2), extended. */
static void pma_ca_counters(struct sibd *d, struct sib_fab_node *a1, uint8_t *data)
{
	struct mad_class_port_info cpi;
	struct mad_port_counters pc;
	struct mad_port_counters_ext x;

	assert_int_equal(pma(d, a1, MAD_METHOD_GET, MAD_ATTR_CLASS_PORT_INFO, 0, data), 0);
	mad_class_port_info_decode(&cpi, data);
	assert_true(cpi.capability_mask & (1u << 8)); /* AllPortSelect */
	assert_true(cpi.capability_mask & (1u << 9)); /* PortCountersExtended */

	a1->mgmt->port[1].pma.rcv_pkts = 10;
	data_pkts = 7;
	memset(data, 0, PMA_DATA_BYTES);
	data[1] = 1;
	assert_int_equal(pma(d, a1, MAD_METHOD_GET, MAD_ATTR_PORT_CNTRS, 0, data), 0);
	mad_port_counters_decode(&pc, data);
	assert_int_equal(pc.port_rcv_pkts, 10);
	assert_int_equal(pc.port_xmit_pkts, 7);
	/* Set clears what CounterSelect names: PortXmitPkts (bit 14) only */
	memset(data, 0, PMA_DATA_BYTES);
	pc.port_select = 1;
	pc.counter_select = 1u << 14;
	mad_port_counters_encode(&pc, data);
	assert_int_equal(pma(d, a1, MAD_METHOD_SET, MAD_ATTR_PORT_CNTRS, 0, data), 0);
	mad_port_counters_decode(&pc, data);
	assert_int_equal(pc.port_xmit_pkts, 0);
	assert_int_equal(pc.port_rcv_pkts, 10);
	data_pkts = 9; /* the data path moves on: 2 since the clear */
	memset(data, 0, PMA_DATA_BYTES);
	data[1] = 1;
	assert_int_equal(pma(d, a1, MAD_METHOD_GET, MAD_ATTR_PORT_CNTRS_EXT, 0, data), 0);
	mad_port_counters_ext_decode(&x, data);
	assert_int_equal(x.port_xmit_pkts, 2);
	assert_int_equal(x.port_rcv_pkts, 10);
	/* a context that went away: never below 0 */
	data_pkts = 0;
	assert_int_equal(pma(d, a1, MAD_METHOD_GET, MAD_ATTR_PORT_CNTRS_EXT, 0, data), 0);
	mad_port_counters_ext_decode(&x, data);
	assert_int_equal(x.port_xmit_pkts, 0);
	/* extended Set: RcvPkts (bit 3) */
	memset(&x, 0, sizeof(x));
	x.port_select = 1;
	x.counter_select = 1u << 3;
	mad_port_counters_ext_encode(&x, data);
	assert_int_equal(pma(d, a1, MAD_METHOD_SET, MAD_ATTR_PORT_CNTRS_EXT, 0, data), 0);
	mad_port_counters_ext_decode(&x, data);
	assert_int_equal(x.port_rcv_pkts, 0);
	/* CounterSelect2 bit 1 clears QP1Dropped (perfquery -R), bit 0 PortXmitWait */
	a1->mgmt->port[1].pma.qp1_dropped = 5;
	a1->mgmt->port[1].pma.xmit_wait = 6;
	memset(&pc, 0, sizeof(pc));
	pc.port_select = 1;
	pc.counter_select2 = 1u << 1;
	mad_port_counters_encode(&pc, data);
	assert_int_equal(pma(d, a1, MAD_METHOD_SET, MAD_ATTR_PORT_CNTRS, 0, data), 0);
	mad_port_counters_decode(&pc, data);
	assert_int_equal(pc.qp1_dropped, 0);
	assert_int_equal(pc.port_xmit_wait, 6);
}

/* A switch's counters: PortSelect 0xFF sums and clears all ports; 8-bit saturation. */
static void pma_switch_counters(struct sibd *d, struct sib_fab_node *a, uint8_t *data)
{
	struct mad_port_counters pc;

	/* PortSelect 0xFF: the sum of a switch's ports */
	a->mgmt->port[1].pma.xmit_discards = 3;
	a->mgmt->port[3].pma.xmit_discards = 4;
	memset(data, 0, PMA_DATA_BYTES);
	data[1] = 0xFF;
	assert_int_equal(pma(d, a, MAD_METHOD_GET, MAD_ATTR_PORT_CNTRS, 0, data), 0);
	mad_port_counters_decode(&pc, data);
	assert_int_equal(pc.port_xmit_discards, 7);
	/* and a clear of all of them */
	pc.counter_select = 1u << 6;
	mad_port_counters_encode(&pc, data);
	assert_int_equal(pma(d, a, MAD_METHOD_SET, MAD_ATTR_PORT_CNTRS, 0, data), 0);
	mad_port_counters_decode(&pc, data);
	assert_int_equal(pc.port_xmit_discards, 0);
	/* saturation: 8-bit LinkDowned */
	a->mgmt->port[2].pma.link_downed = 300;
	memset(data, 0, PMA_DATA_BYTES);
	data[1] = 2;
	assert_int_equal(pma(d, a, MAD_METHOD_GET, MAD_ATTR_PORT_CNTRS, 0, data), 0);
	mad_port_counters_decode(&pc, data);
	assert_int_equal(pc.link_downed_counter, 255);
}

/* Bad ports, attributes, methods, versions and classes are refused or dropped. */
static void pma_bad_input(struct sibd *d, struct sib_fab_node *a, struct sib_fab_node *a1,
			  uint8_t *data)
{
	uint8_t mad[MAD_SIZE];

	/* bad input */
	memset(data, 0, PMA_DATA_BYTES);
	data[1] = 5;
	assert_int_equal(pma(d, a, MAD_METHOD_GET, MAD_ATTR_PORT_CNTRS, 0, data),
			 MAD_STATUS_INVALID_FIELD);
	data[1] = 0; /* a CA has no port 0 */
	assert_int_equal(pma(d, a1, MAD_METHOD_GET, MAD_ATTR_PORT_CNTRS, 0, data),
			 MAD_STATUS_INVALID_FIELD);
	data[1] = 1;
	assert_int_equal(pma(d, a1, MAD_METHOD_GET, MAD_ATTR_PORT_CNTRS, 1, data),
			 MAD_STATUS_INVALID_FIELD);
	assert_int_equal(pma(d, a1, MAD_METHOD_GET, 0x0015, 0, data),
			 MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(pma(d, a1, MAD_METHOD_SET, MAD_ATTR_CLASS_PORT_INFO, 0, data),
			 MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(pma(d, a1, MAD_METHOD_GETTABLE, MAD_ATTR_PORT_CNTRS, 0, data),
			 MAD_STATUS_UNSUP_METHOD);
	build(mad, MAD_MGMT_CLASS_PERF_MGMT, MAD_METHOD_GET, MAD_ATTR_PORT_CNTRS, 0, NULL, 0);
	mad[2] = 2;
	assert_int_equal(sib_pma_process(d->sn, a1, 1, mad, mad), 1);
	assert_int_equal(mad[4] << 8 | mad[5], MAD_STATUS_BAD_VERSION);
	build(mad, MAD_MGMT_CLASS_SUBN_LID_ROUTED, MAD_METHOD_GET, MAD_ATTR_PORT_CNTRS, 0, NULL, 0);
	assert_int_equal(sib_pma_process(d->sn, a1, 1, mad, mad), 0);
}

static void test_pma(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *a = node(d, "S-5eed000000000a00");
	struct sib_fab_node *a1 = node(d, "H-5eed000000000a10");
	uint8_t data[PMA_DATA_BYTES] = { 0 };

	/* one data buffer, shared by the checks in this order */
	pma_ca_counters(d, a1, data);
	pma_switch_counters(d, a, data);
	pma_bad_input(d, a, a1, data);
}

/* ---- the built-in SM ------------------------------------------------------- */

static void test_builtin_sweep(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *a = node(d, "S-5eed000000000a00"), *b = node(d, "S-5eed000000000b00");
	struct sib_fab_node *cas[4] = {
		node(d, "H-5eed000000000a10"), node(d, "H-5eed000000000a20"),
		node(d, "H-5eed000000000b10"), node(d, "H-5eed000000000b20"),
	};
	unsigned int i, j, npos = sib_subnet_mft_positions(a);

	d->sn->sm_external = false;
	assert_int_equal(sib_sm_sweep(d->sn), 0);
	/* LIDs in file order: switch port 0s, then the linked CA ports */
	assert_int_equal(pi_of(a, 0)->lid, 1);
	assert_int_equal(pi_of(b, 0)->lid, 2);
	for (i = 0; i < 4; i++) {
		assert_int_equal(pi_of(cas[i], 1)->lid, 3 + i);
		assert_int_equal(pi_of(cas[i], 1)->port_state, MAD_PORT_STATE_ACTIVE);
		assert_int_equal(pi_of(cas[i], 1)->master_sm_lid, SIB_SM_LID);
		assert_int_equal(pi_of(cas[i], 1)->subnet_timeout, 18);
		assert_int_equal(pi_of(cas[i], 1)->operational_vls, 4);
		assert_int_equal(d->devs[i].ports[0].state, IBV_PORT_ACTIVE);
		assert_int_equal(lid_map[3 + i], SIB_LIDM_MAKE(i, 1));
	}
	assert_int_equal(pi_of(cas[2], 2)->port_state, MAD_PORT_STATE_DOWN); /* no link */
	assert_int_equal(pi_of(cas[2], 2)->lid, 0);
	assert_int_equal(pi_of(a, 0)->port_state, MAD_PORT_STATE_ACTIVE);
	assert_int_equal(pi_of(a, 3)->port_state, MAD_PORT_STATE_ACTIVE);
	assert_int_equal(pi_of(a, 4)->port_state, MAD_PORT_STATE_DOWN);
	assert_int_equal(a->mgmt->sw->si.linear_fdb_top, 6);
	assert_int_equal(a->mgmt->sw->si.port_state_change, 0);
	/* every CA reaches every CA and both switches, for data */
	for (i = 0; i < 4; i++) {
		for (j = 0; j < 4; j++) {
			struct sib_route r = sib_subnet_route(&d->sn->fab, cas[i], 1,
							      (uint16_t)(3 + j), false);

			if (r.verdict != SIB_ROUTE_OK)
				fail_msg("%u -> %u: %s at %s port %u", i, j,
					 sib_route_verdict_str(r.verdict), r.at->id, r.at_port);
			assert_ptr_equal(r.node, cas[j]);
			assert_int_equal(r.hops, i == j ? 0 : (i / 2 == j / 2 ? 2 : 3));
		}
		assert_int_equal(sib_subnet_route(&d->sn->fab, cas[i], 1, 2, false).verdict,
				 SIB_ROUTE_OK);
	}
	/* multicast: A sends to its CAs and B, B to its CAs and A, every MLID
	 * but the IPoIB broadcast group's (0xC000), which has no members yet */
	assert_int_equal(a->mgmt->sw->mft[0], 0);
	assert_int_equal(a->mgmt->sw->mft[npos], 1 << 1 | 1 << 2 | 1 << 3);
	assert_int_equal(b->mgmt->sw->mft[(0x3FFE) * npos], 1 << 1 | 1 << 2 | 1 << 3);

	/* a second sweep changes nothing */
	n_events = n_route_changed = 0;
	assert_int_equal(sib_sm_sweep(d->sn), 0);
	assert_int_equal(n_events, 0);
	assert_int_equal(n_route_changed, 0);

	/* a link retrains after Set Down: the SM makes it ACTIVE again */
	sib_sma_link_down(d->sn, a, 3, SIB_LINK_RETRAIN);
	assert_int_equal(pi_of(a, 3)->port_state, MAD_PORT_STATE_ACTIVE);
	assert_int_equal(pi_of(b, 3)->port_state, MAD_PORT_STATE_ACTIVE);
	assert_int_equal(sib_subnet_route(&d->sn->fab, cas[0], 1, 6, false).verdict, SIB_ROUTE_OK);
	/* a disabled CA link stays down until it is enabled */
	n_events = 0;
	sib_sma_link_down(d->sn, cas[3], 1, SIB_LINK_LOST);
	assert_int_equal(n_events, 1);
	assert_int_equal(d->devs[3].ports[0].state, IBV_PORT_DOWN);
	assert_int_equal(d->devs[3].ports[0].phys_state, MAD_PORT_PHYS_STATE_DISABLED);
	assert_int_equal(sib_subnet_route(&d->sn->fab, cas[0], 1, 6, false).verdict,
			 SIB_ROUTE_LINK_DOWN);
	sib_sma_link_up(d->sn, cas[3], 1);
	assert_int_equal(d->devs[3].ports[0].state, IBV_PORT_ACTIVE);
	assert_int_equal(events[n_events - 1].state, IBV_PORT_ACTIVE);
	assert_int_equal(pi_of(cas[3], 1)->lid, 6);
	assert_int_equal(sib_subnet_route(&d->sn->fab, cas[0], 1, 6, false).verdict, SIB_ROUTE_OK);
}

/* A Trap to node n's SMA: 1 and the TrapRepress in out, or 0 (dropped). */
static int send_trap(struct sibd *d, struct sib_fab_node *n, uint8_t in_port, uint8_t *out)
{
	build(out, MAD_MGMT_CLASS_SUBN_LID_ROUTED, MAD_METHOD_TRAP, MAD_ATTR_NOTICE, 0, NULL, 0);
	out[64] = 0x81; /* a generic urgent notice */
	return sib_sma_process(d->sn, n, in_port, out, out);
}

/* The built-in SM on switch sw's port 0 (LID 1) is visible: IsSM, SMInfo
 * (14.2.5.13) MASTER with the port's GUID, a counting ActCount; it
 * represses traps while a CA's SMA (ca) drops them and has no SMInfo. */
static void sm_is_visible(struct sibd *d, struct sib_fab_node *sw, struct sib_fab_node *ca)
{
	uint8_t data[64] = { 0 }, mad[MAD_SIZE];
	struct mad_sm_info si;
	struct mad_hdr h;
	uint32_t act;

	assert_int_equal(pi_of(sw, 0)->lid, SIB_SM_LID);
	assert_true(pi_of(sw, 0)->capability_mask & MAD_PORT_CAP_IS_SM);
	assert_int_equal(sma(d, sw, 1, MAD_METHOD_GET, MAD_ATTR_SM_INFO, 0, data), 0);
	mad_sm_info_decode(&si, data);
	assert_int_equal(si.guid, sw->ports[0].guid ? sw->ports[0].guid : sw->node_guid);
	assert_int_equal(si.sm_key, 0);
	assert_int_equal(si.priority, SIB_SM_PRIORITY);
	assert_int_equal(si.sm_state, MAD_SMINFO_STATE_MASTER);
	assert_true(si.act_count > 0);
	act = si.act_count;
	assert_int_equal(sma(d, sw, 1, MAD_METHOD_SET, MAD_ATTR_SM_INFO, 0, data),
			 MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(sma(d, ca, 1, MAD_METHOD_GET, MAD_ATTR_SM_INFO, 0, data),
			 MAD_STATUS_UNSUP_METHOD_ATTR);
	/* a trap: the SM represses it, the CA's SMA drops it */
	assert_int_equal(send_trap(d, sw, 1, mad), 1);
	mad_hdr_decode(&h, mad);
	assert_int_equal(h.method, MAD_METHOD_TRAP_REPRESS);
	assert_int_equal(h.r, 0);
	assert_int_equal(h.status, 0);
	assert_int_equal(mad[64], 0x81); /* the notice, returned */
	assert_int_equal(d->sn->sma.sm_traps, 1);
	assert_int_equal(send_trap(d, ca, 1, mad), 0);
	assert_int_equal(d->sn->sma.sm_traps, 1);
	/* ActCount counts */
	assert_int_equal(sma(d, sw, 1, MAD_METHOD_GET, MAD_ATTR_SM_INFO, 0, data), 0);
	mad_sm_info_decode(&si, data);
	assert_true(si.act_count > act);
	/* --sm external: the same port is no SM's; SMInfo and traps are OpenSM's */
	d->sn->sm_external = true;
	assert_int_equal(sma(d, sw, 1, MAD_METHOD_GET, MAD_ATTR_SM_INFO, 0, data),
			 MAD_STATUS_UNSUP_METHOD_ATTR);
	assert_int_equal(send_trap(d, sw, 1, mad), 0);
	assert_int_equal(d->sn->sma.sm_traps, 1);
	d->sn->sm_external = false;
}

/* The built-in SM is a MAI agent: its sweep discovers the fabric by
 * directed route from its own port and every SMP (NodeInfo, PortInfo, LFT,
 * MFT, SwitchInfo) goes through the MAD router and its filter engine, its
 * answers coming back by TID; a part of the fabric it cannot reach is left
 * alone until a link brings it back. */
static void test_builtin_over_mai(void **state)
{
	struct sibd *d = *state;
	struct sib_fab_node *a = node(d, "S-5eed000000000a00"), *b = node(d, "S-5eed000000000b00");
	struct sib_fab_node *b1 = node(d, "H-5eed000000000b10");
	uint64_t act;

	d->sn->sm_external = false;
	n_filter_asks = 0;
	assert_int_equal(d->sn->mad.sent, 0);
	assert_int_equal(sib_sm_sweep(d->sn), 0);
	/* its port: LID 1, switch A's port 0; everyone found, by the shortest route */
	assert_ptr_equal(d->sn->sm.node, a);
	assert_int_equal(d->sn->sm.port, 0);
	for (unsigned int i = 0; i < d->sn->fab.n_nodes; i++)
		if (d->sn->fab.nodes[i]->ports[1].peer)
			assert_int_equal(d->sn->fab.nodes[i]->mgmt->sm_seen, d->sn->sm.sweeps);
	assert_int_equal(a->mgmt->sm_hops, 0);
	assert_int_equal(b->mgmt->sm_hops, 1);
	assert_int_equal(b->mgmt->sm_path[1], 3);
	assert_int_equal(b1->mgmt->sm_hops, 2);
	assert_int_equal(b1->mgmt->sm_path[2], 1);
	/* through the router: sent, matched by the filters, forwarded by the
	 * switches, answered (no drop) */
	assert_true(d->sn->mad.sent > 100);
	assert_true(n_filter_asks > 100);
	assert_true(d->sn->mad.forwarded > 0);
	/* every SMP the SMA answered came by the router */
	assert_int_equal(d->sn->mad.sma, d->sn->sma.smps);
	for (int i = 0; i < SIB_MAD_DROP_MAX; i++)
		assert_int_equal(d->sn->mad.drop[i], 0);
	assert_true(d->sn->sma.smps >= d->sn->mad.sent / 2);

	/* cut A-B: B's side is out of reach and stays as it was */
	sib_sma_link_down(d->sn, a, 3, SIB_LINK_LOST);
	act = d->sn->sm_act_count;
	assert_int_equal(sib_sm_sweep(d->sn), 0);
	assert_true(d->sn->sm_act_count > act);
	assert_int_not_equal(b->mgmt->sm_seen, d->sn->sm.sweeps);
	assert_int_not_equal(b1->mgmt->sm_seen, d->sn->sm.sweeps);
	assert_int_equal(pi_of(b1, 1)->port_state, MAD_PORT_STATE_ACTIVE);
	/* back: the link trains, the SM sweeps and reaches B again */
	sib_sma_link_up(d->sn, a, 3);
	assert_int_equal(b1->mgmt->sm_seen, d->sn->sm.sweeps);
	assert_int_equal(pi_of(a, 3)->port_state, MAD_PORT_STATE_ACTIVE);
	assert_int_equal(sib_subnet_route(&d->sn->fab, node(d, "H-5eed000000000a10"), 1, 5,
					  false).verdict, SIB_ROUTE_OK);
}

/* The default fabric: switch port 0 LID 1, softib0..3 LIDs 2..5, as before. */
static void test_builtin_default(void **state)
{
	struct sibd *d = make(sib_fabric_default_topology(), NULL, false);

	(void)state;
	assert_int_equal(sib_sm_sweep(d->sn), 0);
	assert_int_equal(node(d, "S-5eed000000000100")->mgmt->port[0].pi.lid, 1);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(d->devs[i].ports[0].lid, 2 + i);
		assert_int_equal(d->devs[i].ports[0].sm_lid, 1);
		assert_int_equal(d->devs[i].ports[0].state, IBV_PORT_ACTIVE);
		assert_int_equal(d->devs[i].ports[0].phys_state, 5);
		assert_int_equal(d->devs[i].ports[0].active_mtu, IBV_MTU_4096);
		assert_int_equal(d->devs[i].ports[0].active_width, 2);
		assert_int_equal(d->devs[i].ports[0].active_speed, 4);
		assert_int_equal(d->devs[i].ports[0].subnet_timeout, 18);
		assert_int_equal(d->devs[i].ports[0].max_vl_num, 4);
		assert_int_equal(d->devs[i].ports[0].pkey[0], 0xFFFF);
		assert_false(d->devs[i].ports[0].cap_flags & MAD_PORT_CAP_IS_SM);
	}
	sm_is_visible(d, node(d, "S-5eed000000000100"), node(d, "H-5eed000000000010"));
	destroy(d);
}


/* Three switches in a ring, a CA on each: min-hop LFTs, and MFTs along a
 * tree, so that a multicast flood reaches every CA exactly once. */
static const char ring_topo[] =
	"switchguid=0x10\nSwitch\t4 \"S1\"\n[1]\t\"H1\"[1]\n[2]\t\"S2\"[3]\n[3]\t\"S3\"[2]\n\n"
	"switchguid=0x20\nSwitch\t4 \"S2\"\n[1]\t\"H2\"[1]\n[2]\t\"S3\"[3]\n[3]\t\"S1\"[2]\n\n"
	"switchguid=0x30\nSwitch\t4 \"S3\"\n[1]\t\"H3\"[1]\n[2]\t\"S1\"[3]\n[3]\t\"S2\"[2]\n\n"
	"caguid=0x100\nCa\t1 \"H1\"\n[1](101)\t\"S1\"[1]\n\n"
	"caguid=0x200\nCa\t1 \"H2\"\n[1](201)\t\"S2\"[1]\n\n"
	"caguid=0x300\nCa\t1 \"H3\"\n[1](301)\t\"S3\"[1]\n";

/* Flood MLID m from CA port `from` through the MFTs; count arrivals per CA. */
static void flood(struct sib_fab_port *from, uint16_t m, unsigned int *got, unsigned int depth)
{
	struct sib_fab_port *in = from->peer;
	struct sib_fab_node *sw = in->node;
	unsigned int npos = sib_subnet_mft_positions(sw);

	assert_true(depth < 16);
	if (sw->type != SIB_NODE_SWITCH) {
		got[sw->node_guid >> 8]++;
		return;
	}
	for (unsigned int pn = 1; pn <= sw->num_ports; pn++) {
		uint16_t mask = sw->mgmt->sw->mft[(m - 0xC000u) * npos + pn / 16];

		if (pn != in->num && (mask >> (pn % 16) & 1))
			flood(&sw->ports[pn], m, got, depth + 1);
	}
}

static void test_builtin_ring(void **state)
{
	struct sibd *d = make(ring_topo, NULL, false);
	struct sib_fab_node *h[3] = { node(d, "H1"), node(d, "H2"), node(d, "H3") };

	(void)state;
	assert_int_equal(sib_sm_sweep(d->sn), 0);
	for (unsigned int i = 0; i < 3; i++) {
		for (unsigned int j = 0; j < 3; j++) {
			struct sib_route r = sib_subnet_route(&d->sn->fab, h[i], 1,
							      pi_of(h[j], 1)->lid, false);

			assert_int_equal(r.verdict, SIB_ROUTE_OK);
			assert_ptr_equal(r.node, h[j]);
			assert_int_equal(r.hops, i == j ? 0 : 3); /* min hop: one switch link */
		}
		for (uint32_t m = 0xC000; m <= 0xFFFE; m += 0x1FFF) {
			unsigned int got[4] = { 0 };

			/* (0xC000 is the broadcast group: 0xC001 instead) */
			flood(&h[i]->ports[1], (uint16_t)(m == 0xC000 ? m + 1 : m), got, 0);
			for (unsigned int j = 1; j <= 3; j++)
				assert_int_equal(got[j], j == i + 1 ? 0 : 1);
		}
		{ /* the IPoIB broadcast group, without members, reaches nobody */
			unsigned int got[4] = { 0 };

			flood(&h[i]->ports[1], 0xC000, got, 0);
			assert_int_equal(got[1] + got[2] + got[3], 0);
		}
	}
	destroy(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_vector_nodeinfo_dr, setup_vec, teardown),
		cmocka_unit_test_setup_teardown(test_vector_portinfo, setup_vec, teardown),
		cmocka_unit_test_setup_teardown(test_vector_lft, setup_vec, teardown),
		cmocka_unit_test_setup_teardown(test_vector_pma, setup_vec, teardown),
		cmocka_unit_test_setup_teardown(test_vector_trap128, setup_vec, teardown),
		cmocka_unit_test_setup_teardown(test_statuses, setup_vec, teardown),
		cmocka_unit_test_setup_teardown(test_switch_identity, setup_vec, teardown),
		cmocka_unit_test_setup_teardown(test_state_machine, setup_2sw, teardown),
		cmocka_unit_test_setup_teardown(test_portinfo_fields, setup_2sw, teardown),
		cmocka_unit_test_setup_teardown(test_m_key, setup_2sw, teardown),
		cmocka_unit_test_setup_teardown(test_tables, setup_2sw, teardown),
		cmocka_unit_test_setup_teardown(test_capability, setup_2sw, teardown),
		cmocka_unit_test_setup_teardown(test_pma, setup_2sw, teardown),
		cmocka_unit_test_setup_teardown(test_builtin_sweep, setup_2sw, teardown),
		cmocka_unit_test_setup_teardown(test_builtin_over_mai, setup_2sw, teardown),
		cmocka_unit_test(test_builtin_default),
		cmocka_unit_test(test_builtin_ring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
