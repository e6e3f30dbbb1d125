/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the fabric model (src/subnet/fabric.c): the embedded default
 * topology, ibnetdiscover and ibsim style files, every error class with its
 * line number, the writer's round trip, and a bounded deterministic fuzz.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "subnet/fabric.h"

#define DATA(name) SIB_TEST_DATA "/" name

static char err[512];

static struct sib_fabric parse_ok(const char *text)
{
	struct sib_fabric f;
	int rc;

	memset(&f, 0, sizeof(f));
	rc = sib_fabric_parse(&f, text, "t.topo", err, sizeof(err));
	if (rc)
		fail_msg("unexpected parse error: %s", err);
	return f;
}

static struct sib_fabric load_ok(const char *path)
{
	struct sib_fabric f;

	memset(&f, 0, sizeof(f));
	if (sib_fabric_load_file(&f, path, err, sizeof(err)))
		fail_msg("unexpected load error: %s", err);
	return f;
}

static struct sib_fab_node *node_by_id(const struct sib_fabric *f, const char *id)
{
	unsigned int i;

	for (i = 0; i < f->n_nodes; i++)
		if (!strcmp(f->nodes[i]->id, id))
			return f->nodes[i];
	fail_msg("no node \"%s\"", id);
	return NULL;
}

static void assert_linked(const struct sib_fab_node *a, unsigned int pa,
			  const struct sib_fab_node *b, unsigned int pb)
{
	assert_ptr_equal(a->ports[pa].peer, &b->ports[pb]);
	assert_ptr_equal(b->ports[pb].peer, &a->ports[pa]);
}

static unsigned int node_index(const struct sib_fabric *f, const struct sib_fab_node *n)
{
	unsigned int i;

	for (i = 0; i < f->n_nodes; i++)
		if (f->nodes[i] == n)
			return i;
	return ~0u;
}

/* Field-by-field equality, links compared as (node index, port). */
static void assert_same_fabric(const struct sib_fabric *a, const struct sib_fabric *b)
{
	unsigned int i, p;

	assert_int_equal(a->n_nodes, b->n_nodes);
	assert_int_equal(a->n_cas, b->n_cas);
	for (i = 0; i < a->n_nodes; i++) {
		const struct sib_fab_node *x = a->nodes[i], *y = b->nodes[i];

		assert_int_equal(x->type, y->type);
		assert_true(x->node_guid == y->node_guid);
		assert_true(x->sys_image_guid == y->sys_image_guid);
		assert_int_equal(x->vendor_id, y->vendor_id);
		assert_int_equal(x->device_id, y->device_id);
		assert_string_equal(x->id, y->id);
		assert_string_equal(x->desc, y->desc);
		assert_string_equal(x->dev_name, y->dev_name);
		assert_int_equal(x->num_ports, y->num_ports);
		for (p = 0; p <= x->num_ports; p++) {
			const struct sib_fab_port *s = &x->ports[p], *t = &y->ports[p];

			assert_ptr_equal(s->node, x);
			assert_ptr_equal(t->node, y);
			assert_int_equal(s->num, p);
			assert_int_equal(t->num, p);
			assert_true(s->guid == t->guid);
			assert_int_equal(s->lid, t->lid);
			assert_int_equal(s->lmc, t->lmc);
			assert_int_equal(!s->peer, !t->peer);
			if (s->peer) {
				assert_int_equal(node_index(a, s->peer->node),
						 node_index(b, t->peer->node));
				assert_int_equal(s->peer->num, t->peer->num);
			}
		}
	}
}

static char *write_str(const struct sib_fabric *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	assert_non_null(m);
	assert_int_equal(sib_fabric_write(f, m), 0);
	fclose(m);
	return buf;
}

/* The GUID rule of docs/topology.md for ids without a hex GUID. */
static uint64_t derived_guid(const char *id)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *id; id++) {
		h ^= (unsigned char)*id;
		h *= 0x100000001b3ull;
	}
	return 0x5eed000000000000ull | (h >> 32) << 8;
}

static void test_default_topology(void **state)
{
	struct sib_fabric f = parse_ok(sib_fabric_default_topology());
	struct sib_fab_node *sw;
	unsigned int i, p;

	(void)state;
	assert_int_equal(f.n_nodes, 5);
	assert_int_equal(f.n_cas, 4);
	sw = f.nodes[0];
	assert_int_equal(sw->type, SIB_NODE_SWITCH);
	assert_string_equal(sw->id, "S-5eed000000000100");
	assert_true(sw->node_guid == 0x5eed000000000100ull);
	assert_true(sw->ports[0].guid == sw->node_guid);
	assert_true(sw->sys_image_guid == sw->node_guid);
	assert_string_equal(sw->desc, "softib switch");
	assert_string_equal(sw->dev_name, "");
	assert_int_equal(sw->num_ports, 8);
	assert_int_equal(sw->vendor_id, SIB_FAB_VENDOR_ID);
	assert_int_equal(sw->device_id, SIB_FAB_SWITCH_DEVICE_ID);
	for (i = 0; i < 4; i++) {
		struct sib_fab_node *ca = f.nodes[i + 1];
		char name[32];

		assert_int_equal(ca->type, SIB_NODE_CA);
		assert_int_equal(ca->num_ports, 1);
		assert_true(ca->node_guid == 0x5eed000000000000ull + 0x10 * (i + 1));
		assert_true(ca->ports[1].guid == ca->node_guid + 1);
		assert_true(ca->ports[0].guid == 0);
		assert_int_equal(ca->vendor_id, SIB_FAB_VENDOR_ID);
		assert_int_equal(ca->device_id, SIB_FAB_CA_DEVICE_ID);
		snprintf(name, sizeof(name), "softib%u", i);
		assert_string_equal(ca->dev_name, name);
		snprintf(name, sizeof(name), "softib HCA softib%u", i);
		assert_string_equal(ca->desc, name);
		assert_linked(sw, i + 1, ca, 1);
		assert_ptr_equal(sib_fabric_find_guid(&f, ca->node_guid), ca);
	}
	for (p = 5; p <= 8; p++)
		assert_null(sw->ports[p].peer);
	assert_ptr_equal(sib_fabric_find_guid(&f, 0x5eed000000000100ull), sw);
	assert_null(sib_fabric_find_guid(&f, 0x5eed000000000011ull));

	sib_fabric_assign_lids(&f);
	assert_int_equal(sw->ports[0].lid, 1);
	for (p = 1; p <= 8; p++)
		assert_int_equal(sw->ports[p].lid, 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(f.nodes[i + 1]->ports[1].lid, i + 2);
		assert_int_equal(f.nodes[i + 1]->ports[1].lmc, 0);
	}
	sib_fabric_free(&f);
	assert_int_equal(f.n_nodes, 0);
	assert_null(f.nodes);
}

static void test_ibnetdiscover_sample(void **state)
{
	struct sib_fabric f = load_ok(DATA("ibnetdiscover-2sw.topo"));
	struct sib_fab_node *s1, *s2, *n1, *n2, *n3, *n4;

	(void)state;
	assert_int_equal(f.n_nodes, 6);
	assert_int_equal(f.n_cas, 4);
	s1 = node_by_id(&f, "S-7cfe900300aa1122");
	s2 = node_by_id(&f, "S-7cfe900300bb3344");
	n1 = node_by_id(&f, "H-0002c90300a1b2c0");
	n2 = node_by_id(&f, "H-248a0703005abcde");
	n3 = node_by_id(&f, "H-0002c90300a1c4e0");
	n4 = node_by_id(&f, "H-0002c90300a1d5f0");

	assert_int_equal(s1->type, SIB_NODE_SWITCH);
	assert_int_equal(s1->num_ports, 36);
	assert_true(s1->node_guid == 0x7cfe900300aa1122ull);
	assert_true(s1->ports[0].guid == 0x7cfe900300aa1122ull);
	assert_int_equal(s1->vendor_id, 0x2c9);
	assert_int_equal(s1->device_id, 0xc738);
	assert_string_equal(s1->desc, "MF0;sw-leaf1:SX6036/U1");
	assert_string_equal(s2->desc, "MF0;sw-leaf2:SX6036/U1");

	assert_true(n1->node_guid == 0x0002c90300a1b2c0ull);
	assert_true(n1->sys_image_guid == 0x0002c90300a1b2c3ull);
	assert_true(n1->ports[1].guid == 0x0002c90300a1b2c1ull);
	assert_true(n1->ports[2].guid == 0x0002c90300a1b2c2ull);  /* default: +2 */
	assert_int_equal(n1->device_id, 0x1003);
	assert_string_equal(n1->desc, "node01 mlx4_0");
	assert_string_equal(n1->dev_name, "softib0");
	/* ConnectX-4 style: the port GUID equals the node GUID. */
	assert_true(n2->ports[1].guid == n2->node_guid);
	assert_int_equal(n2->device_id, 0x1013);
	assert_string_equal(n2->dev_name, "softib1");
	assert_string_equal(n3->dev_name, "softib2");
	assert_string_equal(n4->dev_name, "softib3");

	assert_linked(s1, 1, n1, 1);
	assert_linked(s1, 2, n2, 1);
	assert_linked(s1, 35, s2, 35);
	assert_linked(s1, 36, s2, 36);
	assert_linked(s2, 1, n3, 1);
	assert_linked(s2, 7, n4, 2);
	assert_null(n1->ports[2].peer);
	assert_null(n4->ports[1].peer);
	assert_null(s1->ports[3].peer);

	sib_fabric_assign_lids(&f);
	assert_int_equal(s1->ports[0].lid, 1);
	assert_int_equal(s2->ports[0].lid, 2);
	assert_int_equal(n1->ports[1].lid, 3);
	assert_int_equal(n1->ports[2].lid, 0);
	assert_int_equal(n2->ports[1].lid, 4);
	assert_int_equal(n3->ports[1].lid, 5);
	assert_int_equal(n4->ports[1].lid, 0);
	assert_int_equal(n4->ports[2].lid, 6);
	sib_fabric_free(&f);
}

static void test_ibsim_style(void **state)
{
	struct sib_fabric f = load_ok(DATA("ibsim-2sw2path4hca.topo"));
	struct sib_fab_node *s1, *s2, *h1, *h4;
	unsigned int i;

	(void)state;
	assert_int_equal(f.n_nodes, 6);
	assert_int_equal(f.n_cas, 4);
	s1 = node_by_id(&f, "Switch1");
	s2 = node_by_id(&f, "Switch2");
	h1 = node_by_id(&f, "Hca1");
	h4 = node_by_id(&f, "Hca4");
	assert_true(s1->node_guid == derived_guid("Switch1"));
	assert_true(s1->ports[0].guid == s1->node_guid);
	assert_true(h1->node_guid == derived_guid("Hca1"));
	assert_true(h1->ports[1].guid == h1->node_guid + 1);
	assert_true(h1->ports[2].guid == h1->node_guid + 2);
	assert_true((h1->node_guid >> 40) == 0x5eed00);
	assert_string_equal(s1->desc, "Switch1");
	assert_string_equal(h1->desc, "softib HCA softib0");
	assert_string_equal(h4->dev_name, "softib3");
	assert_int_equal(h4->num_ports, 2);
	assert_linked(s1, 1, h1, 1);
	assert_linked(s1, 3, s2, 3);
	assert_linked(s1, 5, s2, 5);
	assert_linked(s2, 2, h4, 1);
	for (i = 0; i < f.n_nodes; i++)
		assert_ptr_equal(sib_fabric_find_guid(&f, f.nodes[i]->node_guid), f.nodes[i]);
	sib_fabric_free(&f);
}

static void test_one_sided_and_defaults(void **state)
{
	static const char text[] =
		"vendid=0x123456\n"
		"Switch 4 \"sw\"\n"
		"[1] \"a\"[1]   # only the switch declares this link\n"
		"[2] \"b\"[2]\n"
		"\n"
		"Hca 2 \"a\"\n"
		"devid=77\n"
		"Ca 2 \"b\" # \"\"\n"
		"[2] \"sw\"[2]\n"
		"\n"
		"sysimgguid=0x42\n"
		"Ca 1 \"H-00000000000000ab\"\n";
	struct sib_fabric f = parse_ok(text);
	struct sib_fab_node *sw, *a, *b, *c;

	(void)state;
	sw = f.nodes[0];
	a = f.nodes[1];
	b = f.nodes[2];
	c = f.nodes[3];
	assert_linked(sw, 1, a, 1);
	assert_linked(sw, 2, b, 2);
	/* vendid= and devid= hold for every later node. */
	assert_int_equal(sw->vendor_id, 0x123456);
	assert_int_equal(a->vendor_id, 0x123456);
	assert_int_equal(sw->device_id, SIB_FAB_SWITCH_DEVICE_ID);
	assert_int_equal(a->device_id, SIB_FAB_CA_DEVICE_ID);
	assert_int_equal(b->device_id, 77);
	assert_int_equal(c->device_id, 77);
	/* An empty description is kept; sysimgguid= applies to one node. */
	assert_string_equal(b->desc, "");
	assert_true(c->node_guid == 0xab);
	assert_true(c->sys_image_guid == 0x42);
	assert_true(b->sys_image_guid == b->node_guid);
	assert_true(c->ports[1].guid == 0xac);
	sib_fabric_assign_lids(&f);
	assert_int_equal(sw->ports[0].lid, 1);
	assert_int_equal(a->ports[1].lid, 2);
	assert_int_equal(a->ports[2].lid, 0);
	assert_int_equal(b->ports[1].lid, 0);
	assert_int_equal(b->ports[2].lid, 3);
	assert_int_equal(c->ports[1].lid, 0);
	sib_fabric_free(&f);
}

static void test_crlf_and_no_trailing_newline(void **state)
{
	const char *def = sib_fabric_default_topology();
	size_t len = strlen(def);
	char *crlf = malloc(2 * len + 1), *q = crlf;
	struct sib_fabric a = parse_ok(def), b, c;
	const char *p;

	(void)state;
	for (p = def; *p; p++) {
		if (*p == '\n')
			*q++ = '\r';
		*q++ = *p;
	}
	*q = 0;
	b = parse_ok(crlf);
	assert_same_fabric(&a, &b);
	q[-2] = 0;              /* drop the final CRLF */
	c = parse_ok(crlf);
	assert_same_fabric(&a, &c);
	sib_fabric_free(&a);
	sib_fabric_free(&b);
	sib_fabric_free(&c);
	free(crlf);
}

static void round_trip(struct sib_fabric *f1)
{
	struct sib_fabric f2, f3;
	char *t1, *t2, *t3;

	t1 = write_str(f1);
	f2 = parse_ok(t1);
	assert_same_fabric(f1, &f2);
	t2 = write_str(&f2);
	assert_string_equal(t1, t2);

	/* With LIDs the comments change, the fabric read back does not. */
	sib_fabric_assign_lids(&f2);
	t3 = write_str(&f2);
	f3 = parse_ok(t3);
	assert_same_fabric(f1, &f3);
	sib_fabric_free(&f2);
	sib_fabric_free(&f3);
	free(t1);
	free(t2);
	free(t3);
}

static void test_round_trip(void **state)
{
	struct sib_fabric f;
	char *t;

	(void)state;
	f = parse_ok(sib_fabric_default_topology());
	round_trip(&f);
	sib_fabric_assign_lids(&f);
	t = write_str(&f);
	assert_non_null(strstr(t, "Switch\t8 \"S-5eed000000000100\"\t\t# \"softib switch\" base port 0 lid 1 lmc 0\n"));
	assert_non_null(strstr(t, "[1](5eed000000000011) \t\"S-5eed000000000100\"[1]\t\t# lid 2 lmc 0 \"softib switch\" lid 1\n"));
	assert_non_null(strstr(t, "[4]\t\"H-5eed000000000040\"[1](5eed000000000041) \t\t# \"softib HCA softib3\" lid 5\n"));
	free(t);
	sib_fabric_free(&f);

	f = load_ok(DATA("ibnetdiscover-2sw.topo"));
	round_trip(&f);
	sib_fabric_free(&f);
	f = load_ok(DATA("ibsim-2sw2path4hca.topo"));
	round_trip(&f);
	sib_fabric_free(&f);
}

struct err_case {
	const char *text;
	const char *want;       /* the whole "origin:line: " prefix + a word */
};

static const struct err_case err_cases[] = {
	/* unknown remote node */
	{ "Switch 4 \"s\"\n[1] \"a\"[1]\n\nCa 1 \"b\"\n[1] \"nobody\"[1]\n",
	  "t.topo:2: unknown node \"a\"" },
	/* local port out of range */
	{ "Switch 4 \"s\"\n[1] \"a\"[1]\n[5] \"a\"[1]\n\nCa 1 \"a\"\n",
	  "t.topo:3: port 5 out of range" },
	{ "Switch 4 \"s\"\n[0] \"a\"[1]\n", "t.topo:2: port 0 out of range" },
	/* remote port out of range */
	{ "Switch 4 \"s\"\n\nCa 1 \"a\"\n[1] \"s\"[9]\n",
	  "t.topo:4: remote port 9 out of range" },
	{ "Switch 4 \"s\"\n[1] \"a\"[2]\n\nCa 1 \"a\"\n",
	  "t.topo:2: remote port 2 out of range" },
	/* duplicate node id, duplicate GUIDs */
	{ "Ca 1 \"a\"\nCa 1 \"b\"\nCa 2 \"a\"\n",
	  "t.topo:3: duplicate node id \"a\" (first on line 1)" },
	{ "Ca 1 \"H-10\"\n\ncaguid=0x10\nCa 1 \"x\"\n",
	  "t.topo:4: GUID 0x0000000000000010 of \"x\" is already used by \"H-10\"" },
	{ "Ca 2 \"H-10\"\n\nCa 1 \"H-12\"\n",
	  "t.topo:3: GUID 0x0000000000000012 of \"H-12\" is already used by \"H-10\"" },
	{ "Switch 2 \"s\"\n\nCa 2 \"a\"\n[1](77) \"s\"[1]\n[2](77) \"s\"[2]\n",
	  "t.topo:5: GUID 0x0000000000000077 of \"a\" is already used by \"a\" (line 4)" },
	{ "switchguid=0x5(0x99)\nSwitch 2 \"s\"\n\nCa 1 \"H-99\"\n",
	  "t.topo:4: GUID 0x0000000000000099" },
	/* both ends disagree */
	{ "Switch 4 \"s\"\n[1] \"a\"[1]\n\nCa 2 \"a\"\n[1] \"s\"[2]\n",
	  "t.topo:5: \"a\"[1] is already linked to \"s\"[1] (line 2)" },
	{ "Switch 4 \"s\"\n[1] \"a\"[1]\n\nCa 2 \"a\"\n[2] \"s\"[1]\n",
	  "t.topo:5: \"s\"[1] is already linked to \"a\"[1] (line 2)" },
	{ "Switch 4 \"s\"\n[1] \"s\"[1]\n", "t.topo:2: port 1 is linked to itself" },
	{ "Switch 4 \"s\"\n[1] \"s\"[2]\n[1] \"s\"[3]\n",
	  "t.topo:3: port 1 already declared on line 2" },
	/* remote port GUID that does not match */
	{ "Switch 4 \"s\"\n[1] \"H-1000\"[1](1234)\n\nCa 1 \"H-1000\"\n",
	  "t.topo:2: remote port GUID 0x1234 does not match 0x1001" },
	{ "Switch 4 \"S-50\"\n\nCa 1 \"a\"\n[1] \"S-50\"[1] (51)\n",
	  "t.topo:4: remote port GUID 0x51 does not match 0x50" },
	/* structure */
	{ "# c\n[1] \"a\"[1]\n", "t.topo:2: port line outside a node record" },
	{ "Ca 1 \"a\"\n\n[1] \"a\"[1]\n", "t.topo:3: port line outside a node record" },
	{ "Ca 1 \"a\"\nhello world\n", "t.topo:2: unrecognized line" },
	{ "Ca 1 \"a\"\n42\n", "t.topo:2: unrecognized line" },
	{ "include \"x\"\n", "t.topo:1: 'include' is not supported" },
	{ "Rt 2 \"r\"\n", "t.topo:1: 'Rt' is not supported" },
	{ "@x\n", "t.topo:1: ibsim port aliases" },
	{ "switchguid+4\n", "t.topo:1: relative GUID bases" },
	{ "", "t.topo:1: no nodes defined" },
	{ "# only\n# comments\n", "t.topo:2: no nodes defined" },
	/* node lines */
	{ "Switch 0 \"s\"\n", "t.topo:1: port count must be 1..254" },
	{ "Switch 255 \"s\"\n", "t.topo:1: port count must be 1..254" },
	{ "Ca 99999999999999999999 \"s\"\n", "t.topo:1: port count must be 1..254" },
	{ "Ca2 \"s\"\n", "t.topo:1: expected a port count" },
	{ "Ca 1 s\n", "t.topo:1: expected a quoted node id" },
	{ "Ca 1 \"s\n", "t.topo:1: unterminated node id" },
	{ "Ca 1 \"\"\n", "t.topo:1: empty node id" },
	{ "Ca 1 \"a\" b\n", "t.topo:1: unexpected text after the node id" },
	{ "Ca 1 \"a\" # \"open\n", "t.topo:1: unterminated node description" },
	{ "Ca 1 \"a\tb\"\n", "t.topo:1: control character in node id" },
	{ "Ca 1 \"0123456789012345678901234567890123456789"
	  "0123456789012345678901234567890123456789\"\n",
	  "t.topo:1: node id longer than 79 bytes" },
	{ "Ca 1 \"a\" # \"0123456789012345678901234567890123456789"
	  "0123456789012345678901234\"\n",
	  "t.topo:1: node description longer than 64 bytes" },
	{ "Ca 1 \"H-0\"\n", "t.topo:1: node GUID 0 is not valid" },
	/* port lines */
	{ "Ca 1 \"a\"\n[x] \"a\"[1]\n", "t.topo:2: malformed port number" },
	{ "Ca 1 \"a\"\n[1] a[1]\n", "t.topo:2: expected a quoted remote node id" },
	{ "Ca 1 \"a\"\n[1] \"b\"\n", "t.topo:2: expected [port]" },
	{ "Ca 1 \"a\"\n[1] \"b\"[0]\n", "t.topo:2: remote port 0 out of range" },
	{ "Ca 1 \"a\"\n[1] \"b\"[1] w=4\n", "t.topo:2: unexpected text after the link" },
	{ "Ca 1 \"a\"\n[1](0) \"b\"[1]\n", "t.topo:2: GUID 0 is not valid" },
	{ "Ca 1 \"a\"\n[1](12 \"b\"[1]\n", "t.topo:2: missing ')'" },
	{ "Ca 1 \"a\"\n[1](12345678901234567) \"b\"[1]\n",
	  "t.topo:2: malformed GUID" },
	{ "Switch 2 \"s\"\n[1](5) \"b\"[1]\n",
	  "t.topo:2: switch port 1 has no port GUID of its own" },
	/* directives */
	{ "vendid=0x1000000\n", "t.topo:1: vendid 0x1000000 exceeds 24 bits" },
	{ "devid=65536\n", "t.topo:1: devid 0x10000 exceeds 16 bits" },
	{ "vendid 5\n", "t.topo:1: expected '=' after vendid" },
	{ "caguid=zz\n", "t.topo:1: malformed number after caguid=" },
	{ "caguid=0x\n", "t.topo:1: malformed number after caguid=" },
	{ "caguid=18446744073709551616\n", "t.topo:1: malformed number" },
	{ "caguid=0\n", "t.topo:1: GUID 0 is not valid" },
	{ "caguid=1 x\n", "t.topo:1: unexpected text after caguid=" },
	{ "caguid=1\ncaguid=2\n", "t.topo:2: caguid= repeats line 1" },
	{ "caguid=0x10\nSwitch 2 \"s\"\n",
	  "t.topo:2: caguid= on line 1 does not belong to a Switch" },
	{ "switchguid=0x10\nCa 2 \"s\"\n",
	  "t.topo:2: switchguid= on line 1 does not belong to a Ca" },
	{ "Ca 1 \"a\"\n\nsysimgguid=0x10\n",
	  "t.topo:3: GUID directive not followed by a node" },
	{ "caguid=0xffffffffffffffff\nCa 2 \"a\"\n", "t.topo:2: port GUIDs" },
	{ "caip=1:10.0.0.1/24\nSwitch 2 \"s\"\n",
	  "t.topo:2: caip= on line 1 does not belong to a Switch" },
	{ "caip=3:10.0.0.1\nCa 2 \"a\"\n", "t.topo:2: caip= on line 1 names port 3 of a 2-port Ca" },
	{ "caip=0:10.0.0.1\nCa 2 \"a\"\n", "t.topo:1: caip= wants PORT:ADDR[/PREFIX]" },
	{ "caip=1 10.0.0.1\nCa 2 \"a\"\n", "t.topo:1: caip= wants PORT:ADDR[/PREFIX]" },
	{ "caip 1:10.0.0.1\nCa 2 \"a\"\n", "t.topo:1: expected '=' after caip" },
	{ "caip=1:10.0.0.300\nCa 2 \"a\"\n", "t.topo:1: caip=: not an IPv4 or IPv6 address" },
	{ "caip=1:10.0.0.1/33\nCa 2 \"a\"\n", "t.topo:1: caip=: bad prefix length" },
	{ "caip=1:fe80::1/129\nCa 2 \"a\"\n", "t.topo:1: caip=: bad prefix length" },
	{ "caip=1:10.0.0.1/8 x\nCa 2 \"a\"\n", "t.topo:1: unexpected text after caip=" },
	{ "Ca 1 \"a\"\n\ncaip=1:10.0.0.1\n", "t.topo:3: caip= not followed by a node" },
};

/* caip= lines (docs/topology.md): the next CA's port addresses, through the
 * writer and back. */
static void test_caip(void **state)
{
	static const char text[] =
		"caip=1:10.9.0.1/24\n"
		"caip=2:2001:db8::5/64   # a comment\n"
		"caip=1:10.9.0.2\n"
		"Ca 2 \"a\"\n"
		"[1] \"b\"[1]\n"
		"\n"
		"Ca 1 \"b\"\n"
		"[1] \"a\"[1]\n";
	const uint8_t a1[4] = { 10, 9, 0, 1 };
	struct sib_fabric f, g;
	char *t;

	(void)state;
	f = parse_ok(text);
	assert_int_equal(f.nodes[0]->n_ips, 3);
	assert_int_equal(f.nodes[1]->n_ips, 0);
	assert_null(f.nodes[1]->ips);
	assert_int_equal(f.nodes[0]->ips[0].port, 1);
	assert_int_equal(f.nodes[0]->ips[0].prefix, 24);
	assert_int_equal(f.nodes[0]->ips[0].family, 2);
	assert_memory_equal(f.nodes[0]->ips[0].addr, a1, 4);
	assert_int_equal(f.nodes[0]->ips[1].port, 2);
	assert_int_equal(f.nodes[0]->ips[1].family, 10);
	assert_int_equal(f.nodes[0]->ips[1].prefix, 64);
	assert_int_equal(f.nodes[0]->ips[1].addr[15], 5);
	assert_int_equal(f.nodes[0]->ips[2].prefix, 32);
	t = write_str(&f);
	assert_non_null(strstr(t, "caip=1:10.9.0.1/24\ncaip=2:2001:db8::5/64\ncaip=1:10.9.0.2/32\n"
				  "caguid="));
	g = parse_ok(t);
	assert_int_equal(g.nodes[0]->n_ips, 3);
	assert_memory_equal(g.nodes[0]->ips, f.nodes[0]->ips, 3 * sizeof(*f.nodes[0]->ips));
	round_trip(&f);
	free(t);
	sib_fabric_free(&g);
	sib_fabric_free(&f);
}

static void test_errors(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
		struct sib_fabric f;
		int rc;

		memset(&f, 0xa5, sizeof(f));
		err[0] = 0;
		rc = sib_fabric_parse(&f, err_cases[i].text, "t.topo", err, sizeof(err));
		if (rc != -1 || strncmp(err, err_cases[i].want, strlen(err_cases[i].want)))
			fail_msg("case %zu: rc %d, got \"%s\", want \"%s...\"", i, rc, err,
				 err_cases[i].want);
		assert_int_equal(f.n_nodes, 0);
		assert_int_equal(f.n_cas, 0);
		assert_null(f.nodes);
	}
}

static void test_long_line_and_limits(void **state)
{
	size_t n = SIB_FAB_MAX_NODES + 10, len = 0, cap = 24 * (SIB_FAB_MAX_NODES + 10);
	char *text = malloc(cap), *big;
	struct sib_fabric f;
	unsigned int i;

	(void)state;
	/* A line over the limit, after a valid node line. */
	big = malloc(SIB_FAB_MAX_LINE + 64);
	len = (size_t)sprintf(big, "Ca 1 \"a\"\n#");
	memset(big + len, 'x', SIB_FAB_MAX_LINE);
	big[len + SIB_FAB_MAX_LINE] = 0;
	assert_int_equal(sib_fabric_parse(&f, big, "t.topo", err, sizeof(err)), -1);
	assert_string_equal(err, "t.topo:2: line longer than 4096 bytes");
	big[len + SIB_FAB_MAX_LINE - 1] = 0;   /* exactly at the limit is fine */
	assert_int_equal(sib_fabric_parse(&f, big, "t.topo", err, sizeof(err)), 0);
	sib_fabric_free(&f);
	free(big);

	/* 65536 nodes load; node 65537 is refused on its own line. */
	len = 0;
	for (i = 0; i < n && i <= SIB_FAB_MAX_NODES; i++)
		len += (size_t)snprintf(text + len, cap - len, "Ca 1 \"n%u\"\n", i);
	assert_int_equal(sib_fabric_parse(&f, text, "t.topo", err, sizeof(err)), -1);
	assert_string_equal(err, "t.topo:65537: more than 65536 nodes");
	*strrchr(text, 'C') = 0;
	f = parse_ok(text);
	assert_int_equal(f.n_nodes, SIB_FAB_MAX_NODES);
	assert_string_equal(f.nodes[65535]->dev_name, "softib65535");
	sib_fabric_free(&f);

	/* Total ports are bounded too: 4200 switches of 254 ports. */
	len = 0;
	for (i = 0; i < 4200; i++)
		len += (size_t)snprintf(text + len, cap - len, "Switch 254 \"s%u\"\n", i);
	assert_int_equal(sib_fabric_parse(&f, text, "t.topo", err, sizeof(err)), -1);
	assert_string_equal(err, "t.topo:4113: more than 1048576 ports in the fabric");
	free(text);
}

static void test_load_file_errors(void **state)
{
	static const char nul_text[] = "Ca 1 \"a\"\n# x\n[1] \"a\0\"[1]\n";
	char path[] = "/tmp/test_fabric_XXXXXX";
	struct sib_fabric f;
	int fd;

	(void)state;
	assert_int_equal(sib_fabric_load_file(&f, "/nonexistent/x.topo", err, sizeof(err)), -1);
	assert_string_equal(err, "/nonexistent/x.topo: No such file or directory");

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, nul_text, sizeof(nul_text) - 1), sizeof(nul_text) - 1);
	close(fd);
	assert_int_equal(sib_fabric_load_file(&f, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, ":3: NUL byte in topology file"));
	assert_int_equal(f.n_nodes, 0);

	/* The default topology through a file, without a final newline. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_true(write(fd, sib_fabric_default_topology(),
			  strlen(sib_fabric_default_topology()) - 1) > 0);
	close(fd);
	f = load_ok(path);
	assert_int_equal(f.n_nodes, 5);
	sib_fabric_free(&f);
	unlink(path);

	/* A NULL err buffer is allowed. */
	assert_int_equal(sib_fabric_parse(&f, "bogus", "t", NULL, 0), -1);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static unsigned int fuzz_parsed;

static void fuzz_one(const char *text)
{
	struct sib_fabric f;
	char small[8];

	if (sib_fabric_parse(&f, text, "fuzz", err, sizeof(err)) == 0) {
		char *t;
		struct sib_fabric g;

		/* Whatever parses must survive the round trip and LIDs. */
		fuzz_parsed++;
		t = write_str(&f);
		g = parse_ok(t);
		assert_same_fabric(&f, &g);
		sib_fabric_assign_lids(&f);
		sib_fabric_free(&g);
		free(t);
		sib_fabric_free(&f);
	} else {
		assert_null(f.nodes);
		assert_true(!strncmp(err, "fuzz:", 5));
	}
	/* Truncated error buffers are fine. */
	sib_fabric_parse(&f, text, "fuzz", small, sizeof(small));
	sib_fabric_free(&f);
}

static void test_fuzz(void **state)
{
	static const char *const tokens[] = {
		"Switch", "Ca", "Hca", " ", "\t", "\n", "\r\n", "\"", "[", "]", "(", ")",
		"#", "=", "1", "2", "8", "254", "255", "0x", "5eed", "ff", "S-", "H-",
		"vendid=", "devid=", "sysimgguid=", "switchguid=", "caguid=", "\"a\"",
		"\"b\"", "\"S-10\"", "\"H-20\"", "[1]", "[2]", "(21)", "[ext 3]", "lid",
		"\n\n", "Chassis ", "Hostname:", "Non-Chassis Nodes", "@", "+", "\x80",
	};
	const char *seeds[3];
	char *seed_text[2];
	char *buf = malloc(8192);
	size_t i, j, len;
	struct sib_fabric f;

	(void)state;
	f = load_ok(DATA("ibnetdiscover-2sw.topo"));
	seed_text[0] = write_str(&f);
	sib_fabric_free(&f);
	f = load_ok(DATA("ibsim-2sw2path4hca.topo"));
	seed_text[1] = write_str(&f);
	sib_fabric_free(&f);
	seeds[0] = sib_fabric_default_topology();
	seeds[1] = seed_text[0];
	seeds[2] = seed_text[1];

	/* Random bytes (a NUL ends the text early, as it would). */
	for (i = 0; i < 5000; i++) {
		len = rng() % 600;
		for (j = 0; j < len; j++)
			buf[j] = (char)(rng() % 256);
		buf[len] = 0;
		fuzz_one(buf);
	}
	/* Token soup: reaches deeper into the grammar. */
	for (i = 0; i < 20000; i++) {
		size_t n = rng() % 60;

		len = 0;
		for (j = 0; j < n; j++) {
			const char *t = tokens[rng() % (sizeof(tokens) / sizeof(tokens[0]))];
			size_t tl = strlen(t);

			memcpy(buf + len, t, tl);
			len += tl;
		}
		buf[len] = 0;
		fuzz_one(buf);
	}
	/* Mutations of valid files: byte flips, deletions, truncation. */
	for (i = 0; i < 10000; i++) {
		const char *s = seeds[i % 3];
		size_t sl = strlen(s), k, m = 1 + rng() % 4;

		if (sl > 8000)
			sl = 8000;
		memcpy(buf, s, sl);
		len = sl;
		for (k = 0; k < m && len; k++) {
			size_t at = rng() % len;

			switch (rng() % 3) {
			case 0:
				buf[at] = (char)(rng() % 256);
				break;
			case 1:
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
				break;
			default:
				len = at;
				break;
			}
		}
		buf[len] = 0;
		fuzz_one(buf);
	}
	/* Some mutants must still parse, or the round trip went untested. */
	assert_true(fuzz_parsed > 100);
	free(seed_text[0]);
	free(seed_text[1]);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_topology),
		cmocka_unit_test(test_ibnetdiscover_sample),
		cmocka_unit_test(test_ibsim_style),
		cmocka_unit_test(test_one_sided_and_defaults),
		cmocka_unit_test(test_crlf_and_no_trailing_newline),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_caip),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_long_line_and_limits),
		cmocka_unit_test(test_load_file_errors),
		cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
