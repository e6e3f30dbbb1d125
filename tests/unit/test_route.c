/* SPDX-License-Identifier: MIT */
/*
 * softibd's data-path routes (src/daemon/route.c, SIB_CTL_ROUTE) over
 * tests/data/route-2sw.topo without a daemon: unicast through the LFTs
 * (IBA 18.2.4.3.2) to a CA port, each drop verdict, a switch's LID, bad
 * requests; multicast through the MFTs (18.2.4.3.3) with a loop between
 * the switches, the ingress port excluded, a down port; and route_gen.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/softibd.h"
#include "subnet/subnet.h"
#include "subnet/subnet_int.h" /* the context's layout: the test builds its fabric */

#define DATA(name) SIB_TEST_DATA "/" name

/* Devices in file order: a1 0, a2 1, b1 2, b2 3, c 4 (two ports). */
enum { A1, A2, B1, B2, CC, NDEVS };
/* LIDs: switch A 1, B 2, a1 3, a2 4, b1 5, b2 6, c port 1 7, port 2 8. */
enum { LID_SA = 1, LID_SB, LID_A1, LID_A2, LID_B1, LID_B2, LID_C1, LID_C2 };
#define MLID 0xC005

static struct sibd *d;
static struct sib_fab_node *sa, *sb;

static struct sib_fab_node *node(const char *id)
{
	for (unsigned int i = 0; i < d->sn->fab.n_nodes; i++)
		if (!strcmp(d->sn->fab.nodes[i]->id, id))
			return d->sn->fab.nodes[i];
	fail_msg("no node %s", id);
	return NULL;
}

static struct mad_port_info *pi(struct sib_fab_node *n, unsigned int p)
{
	return &n->mgmt->port[p].pi;
}

static void lft(struct sib_fab_node *sw, uint16_t lid, uint8_t port)
{
	assert_int_equal(sib_subnet_lft_entry_set(sw->mgmt->sw, lid, port), 0);
}

/* Switch sw forwards MLID to these ports (0-terminated list). */
static void mft(struct sib_fab_node *sw, const uint8_t *ports)
{
	struct sib_switch_mgmt *s = sw->mgmt->sw;
	unsigned int npos = sib_subnet_mft_positions(sw);
	uint16_t *e;

	if (!s->mft) {
		s->mft = calloc((size_t)s->si.multicast_fdb_cap * npos, sizeof(*s->mft));
		assert_non_null(s->mft);
	}
	e = &s->mft[(size_t)(MLID - 0xC000) * npos];
	memset(e, 0, npos * sizeof(*e));
	for (; *ports; ports++)
		e[*ports / 16] |= (uint16_t)(1u << (*ports % 16));
}

static void set_state(struct sib_fab_node *n, unsigned int p, uint8_t state, uint8_t phys)
{
	pi(n, p)->port_state = state;
	pi(n, p)->port_phys_state = phys;
}

/* Every linked port ACTIVE with its LID, min-hop LFTs (c's port 1 by A,
 * port 2 by B; between the switches by port 3), the CAs as devices. */
static int setup(void **state)
{
	static const char *const cas[NDEVS] = { "H-5eed000000000a10", "H-5eed000000000a20",
						"H-5eed000000000b10", "H-5eed000000000b20",
						"H-5eed000000000c10" };
	char err[256];

	(void)state;
	d = calloc(1, sizeof(*d));
	assert_non_null(d);
	d->shm = calloc(1, sizeof(*d->shm));
	assert_non_null(d->shm);
	d->sn = sib_subnet_new(NULL, NULL); /* routes only: no host is called */
	assert_non_null(d->sn);
	if (sib_fabric_load_file(&d->sn->fab, DATA("route-2sw.topo"), err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(sib_subnet_init(&d->sn->fab), 0);
	sa = node("S-5eed000000000a00");
	sb = node("S-5eed000000000b00");
	for (unsigned int i = 0; i < NDEVS; i++) {
		d->dev_node[i] = node(cas[i]);
		d->devs[i].gen = 1;
		d->devs[i].num_ports = d->dev_node[i]->num_ports;
	}
	d->num_devices = NDEVS;
	for (unsigned int i = 0; i < d->sn->fab.n_nodes; i++) {
		struct sib_fab_node *n = d->sn->fab.nodes[i];

		for (unsigned int p = 0; p <= n->num_ports; p++)
			if (p ? n->ports[p].peer != NULL : n->type == SIB_NODE_SWITCH)
				set_state(n, p, MAD_PORT_STATE_ACTIVE, MAD_PORT_PHYS_STATE_LINKUP);
	}
	pi(sa, 0)->lid = LID_SA;
	pi(sb, 0)->lid = LID_SB;
	pi(d->dev_node[A1], 1)->lid = LID_A1;
	pi(d->dev_node[A2], 1)->lid = LID_A2;
	pi(d->dev_node[B1], 1)->lid = LID_B1;
	pi(d->dev_node[B2], 1)->lid = LID_B2;
	pi(d->dev_node[CC], 1)->lid = LID_C1;
	pi(d->dev_node[CC], 2)->lid = LID_C2;
	lft(sa, LID_A1, 1);
	lft(sa, LID_A2, 2);
	lft(sa, LID_B1, 3);
	lft(sa, LID_B2, 3);
	lft(sa, LID_C1, 5);
	lft(sa, LID_C2, 3);
	lft(sa, LID_SB, 3);
	lft(sb, LID_B1, 1);
	lft(sb, LID_B2, 2);
	lft(sb, LID_A1, 3);
	lft(sb, LID_A2, 3);
	lft(sb, LID_C2, 5);
	lft(sb, LID_C1, 3);
	lft(sb, LID_SA, 3);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sib_subnet_free(&d->sn->fab);
	sib_fabric_free(&d->sn->fab);
	sib_subnet_delete(d->sn);
	free(d->shm);
	free(d);
	return 0;
}

static struct sib_ctl_route ask(uint32_t dev, uint8_t port, uint16_t dlid)
{
	struct sib_ctl_route r = { .dev_index = dev, .port = port, .dlid = dlid };

	assert_int_equal(sibd_route_answer(d, &r), 0);
	assert_int_equal(r.dev_index, dev);
	assert_int_equal(r.dlid, dlid);
	return r;
}

static void expect_to(uint32_t dev, uint8_t port, uint16_t dlid, uint32_t to, uint8_t to_port, uint8_t hops)
{
	struct sib_ctl_route r = ask(dev, port, dlid);

	assert_int_equal(r.verdict, 0);
	assert_int_equal(r.dst_dev, to);
	assert_int_equal(r.dst_port, to_port);
	assert_int_equal(r.hops, hops);
}

static void test_unicast(void **state)
{
	(void)state;
	expect_to(A1, 1, LID_B2, B2, 1, 3);  /* a1 -> A -> B -> b2 */
	expect_to(B2, 1, LID_A1, A1, 1, 3);
	expect_to(A1, 1, LID_A2, A2, 1, 2);  /* one switch */
	expect_to(A1, 1, LID_A1, A1, 1, 0);  /* its own LID: loopback */
	expect_to(A1, 1, LID_C2, CC, 2, 3);  /* c's port 2, by B */
	expect_to(CC, 2, LID_C1, CC, 1, 3);  /* c to itself across both switches */
	/* A switch's LID is no verbs device's. */
	assert_int_equal(ask(A1, 1, LID_SB).verdict, SIB_CTL_ROUTE_NOT_CA);
	/* Not unicast LIDs. */
	assert_int_equal(ask(A1, 1, 0).verdict, SIB_ROUTE_BAD_LID);
	assert_int_equal(ask(A1, 1, 0xffff).verdict, SIB_ROUTE_BAD_LID);
}

static void test_unicast_drops(void **state)
{
	(void)state;
	/* An unprogrammed LFT entry (IBA 18.2.4.3.2: 0xFF) on switch B. */
	lft(sb, LID_B2, MAD_LFT_NO_PATH);
	assert_int_equal(ask(A1, 1, LID_B2).verdict, SIB_ROUTE_LFT_MISS);
	assert_int_equal(ask(B1, 1, LID_B2).verdict, SIB_ROUTE_LFT_MISS);
	lft(sb, LID_B2, 2);
	expect_to(A1, 1, LID_B2, B2, 1, 3);
	/* The link between the switches down (both ends Polling). */
	set_state(sa, 3, MAD_PORT_STATE_DOWN, MAD_PORT_PHYS_STATE_POLLING);
	set_state(sb, 3, MAD_PORT_STATE_DOWN, MAD_PORT_PHYS_STATE_POLLING);
	assert_int_equal(ask(A1, 1, LID_B2).verdict, SIB_ROUTE_LINK_DOWN);
	expect_to(A1, 1, LID_A2, A2, 1, 2);  /* the rest still goes */
	/* An SM reroutes by the second link. */
	lft(sa, LID_B2, 4);
	expect_to(A1, 1, LID_B2, B2, 1, 3);
	set_state(sa, 3, MAD_PORT_STATE_ACTIVE, MAD_PORT_PHYS_STATE_LINKUP);
	set_state(sb, 3, MAD_PORT_STATE_ACTIVE, MAD_PORT_PHYS_STATE_LINKUP);
	lft(sa, LID_B2, 3);
	/* The destination port in INIT (link up, neither ARMED nor ACTIVE):
	 * data stops. */
	set_state(d->dev_node[B2], 1, MAD_PORT_STATE_INIT, MAD_PORT_PHYS_STATE_LINKUP);
	assert_int_equal(ask(A1, 1, LID_B2).verdict, SIB_ROUTE_PORT_STATE);
	set_state(d->dev_node[B2], 1, MAD_PORT_STATE_ACTIVE, MAD_PORT_PHYS_STATE_LINKUP);
	/* The source port down. */
	set_state(d->dev_node[A1], 1, MAD_PORT_STATE_DOWN, MAD_PORT_PHYS_STATE_LINKUP);
	assert_int_equal(ask(A1, 1, LID_B2).verdict, SIB_ROUTE_SRC_DOWN);
	set_state(d->dev_node[A1], 1, MAD_PORT_STATE_ACTIVE, MAD_PORT_PHYS_STATE_LINKUP);
	expect_to(A1, 1, LID_B2, B2, 1, 3);
}

static void test_bad_requests(void **state)
{
	struct sib_ctl_route r = { .dev_index = NDEVS, .port = 1, .dlid = LID_A1 };

	(void)state;
	assert_int_equal(sibd_route_answer(d, &r), -EINVAL);   /* no such device */
	r.dev_index = 0xffffffffu;
	assert_int_equal(sibd_route_answer(d, &r), -EINVAL);
	r.dev_index = A1;
	r.port = 0;
	assert_int_equal(sibd_route_answer(d, &r), -EINVAL);   /* ports are 1-based */
	r.port = 2;
	assert_int_equal(sibd_route_answer(d, &r), -EINVAL);   /* a1 has one port */
	r.port = 1;
	d->devs[A1].gen = 2;                                   /* removed */
	assert_int_equal(sibd_route_answer(d, &r), -EINVAL);
	d->devs[A1].gen = 3;
	assert_int_equal(sibd_route_answer(d, &r), 0);
	/* A removed destination device is no longer reached. */
	d->devs[B2].gen = 2;
	assert_int_equal(ask(A1, 1, LID_B2).verdict, SIB_CTL_ROUTE_NOT_CA);
	d->devs[B2].gen = 3;
}

static bool reached(const struct sib_ctl_route *r, uint32_t dev, uint8_t port)
{
	uint32_t bit = dev * SIB_MAX_PORTS + port - 1;

	return r->mcast_mask[bit / 64] & (1ull << (bit % 64));
}

static unsigned int nreached(const struct sib_ctl_route *r)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < SIB_CTL_ROUTE_MASK_WORDS; i++)
		n += (unsigned int)__builtin_popcountll(r->mcast_mask[i]);
	return n;
}

static void test_multicast(void **state)
{
	struct sib_ctl_route r;

	(void)state;
	/* No MFT set anywhere: the sender's own port only. */
	r = ask(A1, 1, MLID);
	assert_int_equal(r.verdict, 0);
	assert_true(reached(&r, A1, 1));
	assert_int_equal(nreached(&r), 1);
	/* A: a1, a2 and both links to B; B: b1 and both links back to A.
	 * The packet loops A -> B -> A: each switch forwards once, never out
	 * of the port it came in on. */
	mft(sa, (const uint8_t[]){ 1, 2, 3, 4, 0 });
	mft(sb, (const uint8_t[]){ 1, 3, 4, 0 });
	r = ask(A1, 1, MLID);
	assert_int_equal(r.verdict, 0);
	assert_true(reached(&r, A1, 1));
	assert_true(reached(&r, A2, 1));
	assert_true(reached(&r, B1, 1));
	assert_int_equal(nreached(&r), 3); /* not b2, not c */
	/* From b1: B takes it to A by both links, A to a1 and a2. */
	r = ask(B1, 1, MLID);
	assert_true(reached(&r, A1, 1) && reached(&r, A2, 1) && reached(&r, B1, 1));
	assert_int_equal(nreached(&r), 3);
	/* c's port 2 joins on B: a bit of its own, port 1 stays out. */
	mft(sb, (const uint8_t[]){ 1, 3, 4, 5, 0 });
	r = ask(A1, 1, MLID);
	assert_true(reached(&r, CC, 2));
	assert_false(reached(&r, CC, 1));
	assert_int_equal(nreached(&r), 4);
	/* a2's port not ACTIVE: it drops out. */
	set_state(d->dev_node[A2], 1, MAD_PORT_STATE_INIT, MAD_PORT_PHYS_STATE_LINKUP);
	r = ask(A1, 1, MLID);
	assert_false(reached(&r, A2, 1));
	assert_int_equal(nreached(&r), 3);
	set_state(d->dev_node[A2], 1, MAD_PORT_STATE_ACTIVE, MAD_PORT_PHYS_STATE_LINKUP);
	/* Another MLID has no entries. */
	r = ask(A1, 1, MLID + 1);
	assert_int_equal(nreached(&r), 1);
	/* The sender's port down: a verdict. */
	set_state(d->dev_node[A1], 1, MAD_PORT_STATE_DOWN, MAD_PORT_PHYS_STATE_POLLING);
	assert_int_equal(ask(A1, 1, MLID).verdict, SIB_ROUTE_SRC_DOWN);
	set_state(d->dev_node[A1], 1, MAD_PORT_STATE_ACTIVE, MAD_PORT_PHYS_STATE_LINKUP);
}

static void test_route_gen(void **state)
{
	uint32_t g0 = atomic_load(&d->shm->route_gen);

	(void)state;
	assert_int_equal(ask(A1, 1, LID_B2).route_gen, g0);
	sibd_route_changed(d);
	assert_int_equal(atomic_load(&d->shm->route_gen), g0 + 1);
	assert_int_equal(ask(A1, 1, LID_B2).route_gen, g0 + 1);
	assert_int_equal(ask(A1, 1, MLID).route_gen, g0 + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unicast),
		cmocka_unit_test(test_unicast_drops),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_multicast),
		cmocka_unit_test(test_route_gen),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
