/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the subnet layer's interface to its host (src/subnet/
 * subnet_api.c, sib_subnet_mad_count in mad_router.c) without softibd: the
 * fabric loaded and swept, its nodes walked, a CA added at run time on a
 * free switch port with a fresh GUID and LID and removed again, the route
 * lookups on the way, --sm external, and every host MAD event on its
 * counter.  The host table records what the subnet tells it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "subnet/subnet_api.h"
#include "fake_subnet_host.h"

static unsigned int n_changed, n_routes;

static void on_port(void *ctx, struct sib_fab_node *n, uint8_t pn, unsigned int what,
		    uint16_t old_lid, uint8_t old_lmc)
{
	(void)ctx, (void)n, (void)pn, (void)what, (void)old_lid, (void)old_lmc;
	n_changed++;
}

static void on_route(void *ctx)
{
	(void)ctx;
	n_routes++;
}

static int no_chan_at(void *ctx, uint32_t chan, const struct sib_fab_node *n, uint8_t port,
		      uint8_t qp, const mai_mad_t *m)
{
	(void)n, (void)port, (void)qp;
	return fake_host_no_chan(ctx, chan, m);
}

/* The fake host, but port and route changes are counted. */
static const struct sib_subnet_host host = {
	.port_changed = on_port, .route_changed = on_route,
	.data_counters = fake_host_no_counters, .log = fake_host_no_log,
	.mad_filters = fake_host_agents_only, .mad_push = fake_host_no_chan,
	.mad_response = no_chan_at,
};

/* The default fabric (one 8-port switch, four CAs), built-in SM or not. */
static struct sib_subnet *load(bool external)
{
	struct sib_subnet *sn = sib_subnet_new(&host, NULL);
	char err[128];

	assert_non_null(sn);
	sib_subnet_set_sm_external(sn, external);
	assert_int_equal(sib_subnet_load(sn, NULL, err, sizeof(err)), 0);
	assert_int_equal(sib_mad_init(sn), 0);
	return sn;
}

static void unload(struct sib_subnet *sn)
{
	sib_mad_fini(sn);
	sib_subnet_unload(sn);
	sib_subnet_unload(sn); /* twice is harmless */
	sib_subnet_delete(sn);
}

static struct sib_fab_node *first_ca(const struct sib_subnet *sn)
{
	struct sib_fab_node *n;

	for (unsigned int i = 0; (n = sib_subnet_node(sn, i)); i++)
		if (n->type == SIB_NODE_CA)
			return n;
	return NULL;
}

static void test_load(void **state)
{
	struct sib_subnet *sn = load(false), *bad = sib_subnet_new(&host, NULL);
	unsigned int i, cas = 0;
	struct sib_fab_node *n;
	char err[128] = "";

	(void)state;
	assert_false(sib_subnet_sm_external(sn));
	assert_int_equal(sib_subnet_nodes(sn), 5);
	assert_null(sib_subnet_node(sn, 5));
	for (i = 0; (n = sib_subnet_node(sn, i)); i++) {
		assert_non_null(n->mgmt);
		if (n->type != SIB_NODE_CA)
			continue;
		cas++; /* the built-in SM's first sweep made every CA port ACTIVE */
		assert_int_equal(n->mgmt->port[1].pi.port_state, MAD_PORT_STATE_ACTIVE);
		assert_int_not_equal(n->mgmt->port[1].pi.lid, 0);
	}
	assert_int_equal(cas, 4);
	assert_non_null(sib_subnet_find_switch(sn, "S-5eed000000000100", 64));
	assert_null(sib_subnet_find_switch(sn, "H-5eed000000000010", 64)); /* a CA */
	assert_null(sib_subnet_find_switch(sn, "nonesuch", 64));
	assert_true(sib_subnet_sma_counters(sn)->smps > 0); /* the sweep's SMPs */
	unload(sn);

	assert_non_null(bad);
	assert_int_equal(sib_subnet_load(bad, "/nonexistent/x.topo", err, sizeof(err)), -EINVAL);
	assert_true(err[0] != '\0');
	assert_int_equal(sib_subnet_nodes(bad), 0);
	sib_subnet_delete(bad);
	sib_subnet_unload(NULL); /* NULL is ignored */
	sib_subnet_delete(NULL);
}

static void test_external(void **state)
{
	struct sib_subnet *sn = load(true);
	struct sib_fab_node *ca = first_ca(sn);

	(void)state;
	assert_true(sib_subnet_sm_external(sn));
	assert_non_null(ca); /* no SM: INIT, LID 0 */
	assert_int_equal(ca->mgmt->port[1].pi.port_state, MAD_PORT_STATE_INIT);
	assert_int_equal(ca->mgmt->port[1].pi.lid, 0);
	unload(sn);
}

/* What registry.c does for DEVICE_ADD and DEVICE_REMOVE. */
static void test_ca_add_remove(void **state)
{
	struct sib_subnet *sn = load(false);
	struct sib_fab_node *src = first_ca(sn), *n;
	struct sib_fab_port *sw = sib_subnet_free_switch_port(sn);
	uint64_t guid = sib_subnet_fresh_guid(sn, 1, 0);
	uint16_t lid = sib_subnet_fresh_lid(sn);
	struct sib_route rt;

	(void)state;
	assert_non_null(sw);
	assert_int_equal(sw->num, 5); /* ports 1..4 hold the CAs */
	assert_int_equal(guid, 0x5eed000000000101ull); /* above the switch's */
	assert_int_equal(sib_subnet_fresh_guid(sn, 1, 0x5eed000000000200ull), 0x5eed000000000201ull);
	assert_int_equal(lid, 6);
	assert_true(sib_subnet_lid_free(sn, lid, NULL));
	n = sib_subnet_ca_add(sn, "t0", sw, guid);
	assert_non_null(n);
	assert_int_equal(sib_subnet_nodes(sn), 6);
	assert_ptr_equal(sib_subnet_node(sn, 5), n);
	assert_string_equal(n->dev_name, "t0");
	assert_int_equal(n->ports[1].guid, guid + 1);
	assert_ptr_equal(sw->peer, &n->ports[1]);
	assert_int_equal(n->mgmt->port[1].pi.lid, 0); /* cabled, not trained */

	n_changed = 0;
	sib_sma_link_up(sn, n, 1); /* the SM gives it the lowest free LID */
	assert_int_equal(n->mgmt->port[1].pi.lid, lid);
	assert_int_equal(n->mgmt->port[1].pi.port_state, MAD_PORT_STATE_ACTIVE);
	assert_true(n_changed > 0);
	assert_false(sib_subnet_lid_free(sn, lid, NULL));
	assert_true(sib_subnet_lid_free(sn, lid, &n->ports[1]));
	assert_int_equal(sib_subnet_fresh_lid(sn), 7);
	rt = sib_subnet_lookup(sn, src, 1, lid);
	assert_int_equal(rt.verdict, SIB_ROUTE_OK);
	assert_ptr_equal(rt.node, n);
	assert_int_equal(rt.hops, 2);

	sib_subnet_ca_remove(sn, n);
	assert_int_equal(sib_subnet_nodes(sn), 5);
	assert_null(sw->peer);
	assert_ptr_equal(sib_subnet_free_switch_port(sn), sw);
	assert_int_not_equal(sib_subnet_lookup(sn, src, 1, lid).verdict, SIB_ROUTE_OK);
	assert_int_equal(sib_subnet_fresh_lid(sn), lid);
	unload(sn);
}

static void count_reach(void *ctx, const struct sib_fab_node *n, uint8_t port)
{
	(void)n, (void)port;
	++*(unsigned int *)ctx;
}

static void test_mcast_lookup(void **state)
{
	struct sib_subnet *sn = load(false);
	unsigned int reached = 0;

	(void)state; /* the default mode's SM sends every MLID to every CA port */
	assert_int_equal(sib_subnet_mcast_lookup(sn, first_ca(sn), 1, 0xC001, count_reach, &reached),
			 0);
	assert_int_equal(reached, 4);
	unload(sn);
	sn = load(true); /* no SM: the sender's port is not ACTIVE, only its own members */
	reached = 0;
	assert_int_equal(sib_subnet_mcast_lookup(sn, first_ca(sn), 1, 0xC001, count_reach, &reached),
			 SIB_ROUTE_SRC_DOWN);
	assert_int_equal(reached, 1);
	unload(sn);
}

static void test_mad_count(void **state)
{
	struct sib_subnet *sn = load(true);
	const struct sib_mad_counters *c = sib_subnet_mad_counters(sn);
	struct sib_mad_counters before = *c;

	(void)state;
	sib_subnet_mad_count(sn, SIB_MAD_EV_DELIVERED, 1);
	sib_subnet_mad_count(sn, SIB_MAD_EV_RESENT, 2);
	sib_subnet_mad_count(sn, SIB_MAD_EV_TIMEOUT, 3);
	sib_subnet_mad_count(sn, SIB_MAD_EV_OOB, 4);
	sib_subnet_mad_count(sn, SIB_MAD_EV_DUP_TID, 5);
	sib_subnet_mad_count(sn, SIB_MAD_EV_BAD_MESSAGE, 6);
	sib_subnet_mad_count(sn, SIB_MAD_EV_QUEUE_FULL, 7);
	sib_subnet_mad_count(sn, SIB_MAD_EV_NOT_PRIV, 8);
	sib_subnet_mad_count(sn, SIB_MAD_EV_QP_MISMATCH, 9);
	sib_subnet_mad_count(sn, SIB_MAD_EV_MAX, 100); /* out of range: nothing */
	assert_int_equal(c->delivered - before.delivered, 1);
	assert_int_equal(c->resent - before.resent, 2);
	assert_int_equal(c->timeouts - before.timeouts, 3);
	assert_int_equal(c->oob - before.oob, 4);
	assert_int_equal(c->dup_tid - before.dup_tid, 5);
	assert_int_equal(c->bad_messages - before.bad_messages, 6);
	assert_int_equal(c->drop[SIB_MAD_DROP_QUEUE_FULL] - before.drop[SIB_MAD_DROP_QUEUE_FULL], 7);
	assert_int_equal(c->drop[SIB_MAD_DROP_NOT_PRIV] - before.drop[SIB_MAD_DROP_NOT_PRIV], 8);
	assert_int_equal(c->drop[SIB_MAD_DROP_QP_MISMATCH] - before.drop[SIB_MAD_DROP_QP_MISMATCH],
			 9);
	assert_int_equal(c->sent, before.sent);
	assert_int_equal(c->forwarded, before.forwarded);
	unload(sn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_external),
		cmocka_unit_test(test_ca_add_remove),
		cmocka_unit_test(test_mcast_lookup),
		cmocka_unit_test(test_mad_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
