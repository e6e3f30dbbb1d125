/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the managed subnet's storage and LID routing
 * (src/subnet/subnet.c): the power-on defaults (IBA 14.2.5.4, 14.2.5.6) and
 * sib_subnet_route() over tests/data/subnet-2sw.topo, every verdict provoked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "subnet/subnet.h"

#define DATA(name) SIB_TEST_DATA "/" name

/* LIDs the tests give: switch A 1, B 2, a1 3, a2 4, b1 5 (LMC 1: 5-6), b2 7. */
enum { LID_A = 1, LID_B, LID_A1, LID_A2, LID_B1, LID_B2 = 7, LID_FREE = 9 };

struct topo {
	struct sib_fabric f;
	struct sib_fab_node *a, *b, *a1, *a2, *b1, *b2;
};

static struct sib_fab_node *node(const struct sib_fabric *f, const char *id)
{
	unsigned int i;

	for (i = 0; i < f->n_nodes; i++)
		if (!strcmp(f->nodes[i]->id, id))
			return f->nodes[i];
	fail_msg("no node %s", id);
	return NULL;
}

static struct mad_port_info *pi(struct sib_fab_node *n, unsigned int p)
{
	return &n->mgmt->port[p].pi;
}

static void set_lid(struct sib_fab_node *n, unsigned int p, uint16_t lid, uint8_t lmc)
{
	pi(n, p)->lid = lid;
	pi(n, p)->lmc = lmc;
}

static void lft_set(struct sib_fab_node *sw, uint16_t lid, uint8_t port)
{
	assert_int_equal(sib_subnet_lft_entry_set(sw->mgmt->sw, lid, port), 0);
}

/* Every linked port ACTIVE, LIDs given, min-hop LFTs on both switches. */
static int setup(void **state)
{
	struct topo *t = calloc(1, sizeof(*t));
	char err[256];

	assert_non_null(t);
	if (sib_fabric_load_file(&t->f, DATA("subnet-2sw.topo"), err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(sib_subnet_init(&t->f), 0);
	t->a = node(&t->f, "S-5eed000000000a00");
	t->b = node(&t->f, "S-5eed000000000b00");
	t->a1 = node(&t->f, "H-5eed000000000a10");
	t->a2 = node(&t->f, "H-5eed000000000a20");
	t->b1 = node(&t->f, "H-5eed000000000b10");
	t->b2 = node(&t->f, "H-5eed000000000b20");
	*state = t;
	return 0;
}

static void program(struct topo *t)
{
	unsigned int i, p;

	for (i = 0; i < t->f.n_nodes; i++)
		for (p = 0; p <= t->f.nodes[i]->num_ports; p++)
			if (pi(t->f.nodes[i], p)->port_state == MAD_PORT_STATE_INIT)
				pi(t->f.nodes[i], p)->port_state = MAD_PORT_STATE_ACTIVE;
	set_lid(t->a, 0, LID_A, 0);
	set_lid(t->b, 0, LID_B, 0);
	set_lid(t->a1, 1, LID_A1, 0);
	set_lid(t->a2, 1, LID_A2, 0);
	set_lid(t->b1, 1, LID_B1, 1);
	set_lid(t->b2, 1, LID_B2, 0);
	lft_set(t->a, LID_A, 0);
	lft_set(t->a, LID_B, 3);
	lft_set(t->a, LID_A1, 1);
	lft_set(t->a, LID_A2, 2);
	lft_set(t->a, LID_B1, 3);
	lft_set(t->a, LID_B1 + 1, 3);
	lft_set(t->a, LID_B2, 3);
	lft_set(t->b, LID_A, 3);
	lft_set(t->b, LID_B, 0);
	lft_set(t->b, LID_A1, 3);
	lft_set(t->b, LID_A2, 3);
	lft_set(t->b, LID_B1, 1);
	lft_set(t->b, LID_B1 + 1, 1);
	lft_set(t->b, LID_B2, 2);
}

static int setup_programmed(void **state)
{
	setup(state);
	program(*state);
	return 0;
}

static int teardown(void **state)
{
	struct topo *t = *state;

	sib_subnet_free(&t->f);
	for (unsigned int i = 0; i < t->f.n_nodes; i++)
		assert_null(t->f.nodes[i]->mgmt);
	sib_fabric_free(&t->f);
	free(t);
	return 0;
}

static void assert_ok(struct sib_route r, const struct sib_fab_node *n, uint8_t port,
		      uint16_t hops)
{
	if (r.verdict != SIB_ROUTE_OK)
		fail_msg("verdict %s, at %s port %u", sib_route_verdict_str(r.verdict),
			 r.at ? r.at->id : "-", r.at_port);
	assert_ptr_equal(r.node, n);
	assert_int_equal(r.port, port);
	assert_int_equal(r.hops, hops);
}

static void assert_drop(struct sib_route r, enum sib_route_verdict v,
			const struct sib_fab_node *at, uint8_t at_port)
{
	assert_string_equal(sib_route_verdict_str(r.verdict), sib_route_verdict_str(v));
	assert_ptr_equal(r.at, at);
	assert_int_equal(r.at_port, at_port);
	assert_null(r.node);
}

/* ---- defaults ----------------------------------------------------------- */

static void test_defaults(void **state)
{
	struct topo *t = *state;
	const struct mad_switch_info *si = &t->a->mgmt->sw->si;
	unsigned int i, p;

	for (i = 0; i < t->f.n_nodes; i++) {
		struct sib_fab_node *n = t->f.nodes[i];

		for (p = 0; p <= n->num_ports; p++) {
			const struct sib_port_mgmt *pm = &n->mgmt->port[p];
			bool linked = n->ports[p].peer || (n->type == SIB_NODE_SWITCH && p == 0);

			if (n->type == SIB_NODE_CA && p == 0)
				continue;
			assert_int_equal(pm->pi.lid, 0);
			assert_int_equal(n->ports[p].lid, 0);
			assert_int_equal(pm->pi.local_port_num, p);
			assert_int_equal(pm->pi.port_state,
					 linked ? MAD_PORT_STATE_INIT : MAD_PORT_STATE_DOWN);
			assert_int_equal(pm->pi.port_phys_state,
					 linked ? MAD_PORT_PHYS_STATE_LINKUP
						: MAD_PORT_PHYS_STATE_POLLING);
			assert_int_equal(pm->pi.mtu_cap, MAD_MTU_4096);
			assert_int_equal(pm->pi.neighbor_mtu, MAD_MTU_4096);
			assert_int_equal(pm->pi.vl_cap, 4);
			assert_int_equal(pm->pi.link_width_active, linked ? 2 : 1);
			assert_int_equal(pm->pi.link_speed_active, linked ? 4 : 1);
			assert_true(pm->pi.link_width_enabled & pm->pi.link_width_active);
			assert_true(pm->pi.link_speed_enabled & pm->pi.link_speed_active);
			assert_int_equal(pm->pkey[0], 0xFFFF);
			assert_int_equal(pm->pkey[1], 0);
			if (n->type == SIB_NODE_CA)
				assert_true(pm->pi.capability_mask & MAD_PORT_CAP_IS_TRAP_SUP);
			assert_false(pm->pi.capability_mask & MAD_PORT_CAP_IS_SM);
		}
		assert_true((n->type == SIB_NODE_SWITCH) == (n->mgmt->sw != NULL));
	}
	assert_int_equal(si->linear_fdb_cap, 0xC000);
	assert_int_equal(si->multicast_fdb_cap, 0x4000);
	assert_int_equal(si->enhanced_port0, 0);
	assert_int_equal(si->linear_fdb_top, 0);
	assert_int_equal(si->port_state_change, 0);
	assert_null(t->a->mgmt->sw->lft);
	assert_null(t->a->mgmt->sw->mft);
	/* init is idempotent; a second call keeps the state */
	pi(t->a1, 1)->lid = 77;
	assert_int_equal(sib_subnet_init(&t->f), 0);
	assert_int_equal(pi(t->a1, 1)->lid, 77);
}

/* ---- routes that arrive -------------------------------------------------- */

static void test_route_ok(void **state)
{
	struct topo *t = *state;

	assert_ok(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), t->b2, 1, 3);
	assert_ok(sib_subnet_route(&t->f, t->a1, 1, LID_A2, false), t->a2, 1, 2);
	assert_ok(sib_subnet_route(&t->f, t->b2, 1, LID_A1, false), t->a1, 1, 3);
	/* both LIDs of b1's LMC 1 range */
	assert_ok(sib_subnet_route(&t->f, t->a2, 1, LID_B1, false), t->b1, 1, 3);
	assert_ok(sib_subnet_route(&t->f, t->a2, 1, LID_B1 + 1, false), t->b1, 1, 3);
	/* switch LIDs end at port 0 */
	assert_ok(sib_subnet_route(&t->f, t->a1, 1, LID_B, false), t->b, 0, 2);
	assert_ok(sib_subnet_route(&t->f, t->a1, 1, LID_A, true), t->a, 0, 1);
	/* from switch port 0 (a trap) */
	assert_ok(sib_subnet_route(&t->f, t->b, 0, LID_A1, true), t->a1, 1, 2);
	assert_ok(sib_subnet_route(&t->f, t->b, 0, LID_A, true), t->a, 0, 1);
	/* own LID range: loopback, hops 0 */
	assert_ok(sib_subnet_route(&t->f, t->b1, 1, LID_B1 + 1, false), t->b1, 1, 0);
	assert_ok(sib_subnet_route(&t->f, t->a, 0, LID_A, false), t->a, 0, 0);
}

/* ---- every drop ---------------------------------------------------------- */

static void test_bad_lid(void **state)
{
	struct topo *t = *state;

	assert_drop(sib_subnet_route(&t->f, t->a1, 1, 0, false), SIB_ROUTE_BAD_LID, t->a1, 1);
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, 0xC000, false), SIB_ROUTE_BAD_LID, t->a1, 1);
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, 0xFFFF, true), SIB_ROUTE_BAD_LID, t->a1, 1);
}

static void test_src_down(void **state)
{
	struct topo *t = *state;

	/* port 0 of a CA, a port that does not exist, a port without a link */
	assert_drop(sib_subnet_route(&t->f, t->a1, 0, LID_B2, true), SIB_ROUTE_SRC_DOWN, t->a1, 0);
	assert_drop(sib_subnet_route(&t->f, t->a1, 2, LID_B2, true), SIB_ROUTE_SRC_DOWN, t->a1, 2);
	assert_drop(sib_subnet_route(&t->f, t->b1, 2, LID_B2, true), SIB_ROUTE_SRC_DOWN, t->b1, 2);
	/* INIT may send SMPs but not data */
	pi(t->a1, 1)->port_state = MAD_PORT_STATE_INIT;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), SIB_ROUTE_SRC_DOWN, t->a1, 1);
	assert_ok(sib_subnet_route(&t->f, t->a1, 1, LID_B2, true), t->b2, 1, 3);
	/* ARMED neither sends data */
	pi(t->a1, 1)->port_state = MAD_PORT_STATE_ARMED;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), SIB_ROUTE_SRC_DOWN, t->a1, 1);
	/* DOWN nothing */
	pi(t->a1, 1)->port_state = MAD_PORT_STATE_DOWN;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, true), SIB_ROUTE_SRC_DOWN, t->a1, 1);
	/* ACTIVE but physically disabled */
	pi(t->a1, 1)->port_state = MAD_PORT_STATE_ACTIVE;
	pi(t->a1, 1)->port_phys_state = MAD_PORT_PHYS_STATE_DISABLED;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, true), SIB_ROUTE_SRC_DOWN, t->a1, 1);
}

static void test_link_down(void **state)
{
	struct topo *t = *state;

	/* the far end of A-B is disabled: A's egress 3 has no live link */
	pi(t->b, 3)->port_phys_state = MAD_PORT_PHYS_STATE_DISABLED;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, true), SIB_ROUTE_LINK_DOWN, t->a, 3);
	pi(t->b, 3)->port_phys_state = MAD_PORT_PHYS_STATE_LINKUP;
	/* an LFT entry naming switch A's unlinked port 4 */
	lft_set(t->a, LID_FREE, 4);
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_FREE, false), SIB_ROUTE_LINK_DOWN, t->a, 4);
	/* the switch end of a CA's link training */
	pi(t->a, 1)->port_phys_state = MAD_PORT_PHYS_STATE_POLLING;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), SIB_ROUTE_LINK_DOWN, t->a1, 1);
}

static void test_lft_miss(void **state)
{
	struct topo *t = *state;

	/* unprogrammed entry inside the top */
	lft_set(t->a, LID_FREE + 1, 3);
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_FREE, false), SIB_ROUTE_LFT_MISS, t->a, 1);
	/* programmed on A, unprogrammed on B: dropped at B's ingress 3 */
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_FREE + 1, false), SIB_ROUTE_LFT_MISS,
		    t->b, 3);
	/* above LinearFDBTop: dropped even though the entry is set */
	t->a->mgmt->sw->si.linear_fdb_top = LID_B1;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), SIB_ROUTE_LFT_MISS, t->a, 1);
	assert_ok(sib_subnet_route(&t->f, t->a1, 1, LID_B1, false), t->b1, 1, 3);
	/* an entry naming a port the switch does not have */
	t->a->mgmt->sw->si.linear_fdb_top = 0xBFFF;
	t->a->mgmt->sw->lft[LID_B2] = 9;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), SIB_ROUTE_LFT_MISS, t->a, 1);
	/* from port 0 of a switch with no LFT at all */
	free(t->b->mgmt->sw->lft);
	t->b->mgmt->sw->lft = NULL;
	assert_drop(sib_subnet_route(&t->f, t->b, 0, LID_A1, true), SIB_ROUTE_LFT_MISS, t->b, 0);
}

static void test_port_state(void **state)
{
	struct topo *t = *state;

	/* switch egress INIT: data stops there, SMPs pass */
	pi(t->a, 3)->port_state = MAD_PORT_STATE_INIT;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), SIB_ROUTE_PORT_STATE, t->a, 3);
	assert_ok(sib_subnet_route(&t->f, t->a1, 1, LID_B2, true), t->b2, 1, 3);
	pi(t->a, 3)->port_state = MAD_PORT_STATE_ACTIVE;
	/* ingress ARMED takes data; ingress INIT does not */
	pi(t->b2, 1)->port_state = MAD_PORT_STATE_ARMED;
	assert_ok(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), t->b2, 1, 3);
	pi(t->b2, 1)->port_state = MAD_PORT_STATE_INIT;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), SIB_ROUTE_PORT_STATE,
		    t->b2, 1);
	assert_ok(sib_subnet_route(&t->f, t->a1, 1, LID_B2, true), t->b2, 1, 3);
	/* an ingress DOWN with the link physically up stops SMPs too */
	pi(t->b, 3)->port_state = MAD_PORT_STATE_DOWN;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, true), SIB_ROUTE_PORT_STATE, t->b, 3);
}

static void test_no_owner(void **state)
{
	struct topo *t = *state;

	/* B sends b2's LID to b1: b1 does not own it */
	t->b->mgmt->sw->lft[LID_B2] = 1;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), SIB_ROUTE_NO_OWNER, t->b1, 1);
	/* an LFT entry 0 for a LID that is not the switch's */
	t->a->mgmt->sw->lft[LID_B2] = 0;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), SIB_ROUTE_NO_OWNER, t->a, 0);
	/* b1's LMC 0 now: LID_B1 + 1 is nobody's */
	pi(t->b1, 1)->lmc = 0;
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B1 + 1, false), SIB_ROUTE_NO_OWNER,
		    t->b1, 1);
}

static void test_loop(void **state)
{
	struct topo *t = *state;
	struct sib_route r;

	lft_set(t->a, LID_FREE, 3);
	lft_set(t->b, LID_FREE, 3);
	r = sib_subnet_route(&t->f, t->a1, 1, LID_FREE, false);
	assert_int_equal(r.verdict, SIB_ROUTE_LOOP);
	assert_true(r.at == t->a || r.at == t->b);
	assert_int_equal(r.hops, SIB_SUBN_MAX_HOPS + 1);
	/* from switch port 0 as well, and for SMPs */
	r = sib_subnet_route(&t->f, t->b, 0, LID_FREE, true);
	assert_int_equal(r.verdict, SIB_ROUTE_LOOP);
}

static void test_verdict_str(void **state)
{
	(void)state;
	assert_string_equal(sib_route_verdict_str(SIB_ROUTE_OK), "ok");
	assert_string_equal(sib_route_verdict_str(SIB_ROUTE_LOOP), "loop");
	assert_string_equal(sib_route_verdict_str((enum sib_route_verdict)99), "?");
}

/* A fresh fabric: nothing routes data until an SM programs it. */
static void test_unprogrammed(void **state)
{
	struct topo *t = *state;

	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, true), SIB_ROUTE_LFT_MISS, t->a, 1);
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_B2, false), SIB_ROUTE_SRC_DOWN, t->a1, 1);
}

/* A node added later gets its state alone; freeing it alone clears it. */
static void test_node_init(void **state)
{
	struct topo *t = *state;

	sib_subnet_node_free(t->a2);
	assert_null(t->a2->mgmt);
	sib_subnet_node_free(t->a2); /* twice: no-op */
	/* a node without state on the way is a link down, not a crash */
	assert_drop(sib_subnet_route(&t->f, t->a1, 1, LID_A2, true), SIB_ROUTE_LINK_DOWN, t->a, 2);
	assert_drop(sib_subnet_route(&t->f, t->a2, 1, LID_A1, true), SIB_ROUTE_SRC_DOWN, t->a2, 1);
	assert_int_equal(sib_subnet_node_init(t->a2), 0);
	assert_int_equal(pi(t->a2, 1)->port_state, MAD_PORT_STATE_INIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unprogrammed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_init, setup_programmed, teardown),
		cmocka_unit_test_setup_teardown(test_route_ok, setup_programmed, teardown),
		cmocka_unit_test_setup_teardown(test_bad_lid, setup_programmed, teardown),
		cmocka_unit_test_setup_teardown(test_src_down, setup_programmed, teardown),
		cmocka_unit_test_setup_teardown(test_link_down, setup_programmed, teardown),
		cmocka_unit_test_setup_teardown(test_lft_miss, setup_programmed, teardown),
		cmocka_unit_test_setup_teardown(test_port_state, setup_programmed, teardown),
		cmocka_unit_test_setup_teardown(test_no_owner, setup_programmed, teardown),
		cmocka_unit_test_setup_teardown(test_loop, setup_programmed, teardown),
		cmocka_unit_test(test_verdict_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
