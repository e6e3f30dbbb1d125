// SPDX-License-Identifier: MIT
/*
 * Fuzz harness for the topology parser sib_fabric_parse() (src/daemon/
 * fabric.c), libFuzzer style.
 *
 * The input is the text, up to its first NUL byte, in an exact-size heap
 * copy (ASan catches a read past the terminator). A failed parse must leave
 * an error message "origin:line: what" and an empty fabric. A successful
 * parse must give a consistent model (symmetric links, unique node GUIDs,
 * CA device names in order, LIDs in range); sib_fabric_write() of it must
 * parse again to the same fabric, and writing that one must give the same
 * text. sib_fabric_free() always runs, so LeakSanitizer sees any leak.
 *
 * Built with tests/fuzz/driver.c (plain gcc, the ctest run) or with clang
 * -fsanitize=fuzzer (docs/fuzzing.md).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "subnet/fabric.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_print_stats(FILE *out);

#define ORIGIN "fuzz.topo"

static const char *g_text;	/* for the report */

static void __attribute__((noreturn, format(printf, 4, 5)))
fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_topology: %s:%d: invariant violated: (%s)", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (g_text)
		fprintf(stderr, "input (%zu bytes):\n%.4096s\n", strlen(g_text), g_text);
	abort();
}

#define CHECK(cond, ...) \
	do { if (!(cond)) fail(__FILE__, __LINE__, #cond, " " __VA_ARGS__); } while (0)

static unsigned long st_inputs, st_parsed, st_nodes, st_links, st_max_nodes;

void fuzz_print_stats(FILE *out)
{
	fprintf(out, "  parsed: %lu of %lu inputs; %lu nodes and %lu links in them, "
		"largest fabric %lu nodes\n",
		st_parsed, st_inputs, st_nodes, st_links, st_max_nodes);
}

static bool str_ok(const char *s, size_t size)
{
	return memchr(s, 0, size) != NULL;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* What the parser promises about any fabric it returns (fabric.h and
 * docs/topology.md). Returns the number of links. */
static unsigned long check_model(const struct sib_fabric *f)
{
	unsigned int i, p, cas = 0;
	unsigned long links = 0;
	uint64_t *guids;

	CHECK(f->n_nodes >= 1 && f->n_nodes <= SIB_FAB_MAX_NODES, "n_nodes %u", f->n_nodes);
	CHECK(f->nodes != NULL);
	for (i = 0; i < f->n_nodes; i++) {
		const struct sib_fab_node *n = f->nodes[i];
		char dev[sizeof(n->dev_name)];

		CHECK(n != NULL);
		CHECK(n->type == SIB_NODE_CA || n->type == SIB_NODE_SWITCH, "type %d", n->type);
		CHECK(n->num_ports >= 1 && n->num_ports <= SIB_FAB_MAX_NODE_PORTS);
		CHECK(n->node_guid != 0, "node %u has GUID 0", i);
		CHECK(n->vendor_id <= 0xffffff && n->device_id <= 0xffff);
		CHECK(str_ok(n->id, sizeof(n->id)) && n->id[0], "node %u id", i);
		CHECK(str_ok(n->desc, sizeof(n->desc)), "node %u desc", i);
		CHECK(str_ok(n->dev_name, sizeof(n->dev_name)), "node %u dev_name", i);
		/* find_guid is linear: sample it on large fabrics. */
		if (i < 64 || i + 1 == f->n_nodes)
			CHECK(sib_fabric_find_guid(f, n->node_guid) == n,
			      "node GUID 0x%016llx of \"%s\" is not unique",
			      (unsigned long long)n->node_guid, n->id);
		if (n->type == SIB_NODE_CA) {
			snprintf(dev, sizeof(dev), "softib%u", cas++);
			CHECK(!strcmp(n->dev_name, dev), "CA %u is %s", i, n->dev_name);
		} else {
			CHECK(!n->dev_name[0], "switch %u has device %s", i, n->dev_name);
			CHECK(n->ports[0].guid != 0);
		}
		CHECK(n->ports != NULL);
		for (p = 0; p <= n->num_ports; p++) {
			const struct sib_fab_port *pt = &n->ports[p];

			CHECK(pt->node == n && pt->num == p, "node %u port %u", i, p);
			if (n->type == SIB_NODE_CA && p)
				CHECK(pt->guid != 0, "CA %u port %u has GUID 0", i, p);
			if (n->type == SIB_NODE_SWITCH && p)
				CHECK(pt->guid == 0, "switch %u port %u has a GUID", i, p);
			if (!pt->peer)
				continue;
			CHECK(p != 0, "port 0 of node %u is linked", i);
			CHECK(pt->peer != pt && pt->peer->peer == pt,
			      "link of node %u port %u is not symmetric", i, p);
			CHECK(pt->peer->num >= 1 && pt->peer->num <= pt->peer->node->num_ports);
			links++;
		}
	}
	CHECK(cas == f->n_cas, "n_cas %u, counted %u", f->n_cas, cas);
	/* Node GUIDs are unique (docs/topology.md). */
	guids = malloc(f->n_nodes * sizeof(*guids));
	CHECK(guids != NULL);
	for (i = 0; i < f->n_nodes; i++)
		guids[i] = f->nodes[i]->node_guid;
	qsort(guids, f->n_nodes, sizeof(*guids), u64_cmp);
	for (i = 1; i < f->n_nodes; i++)
		CHECK(guids[i] != guids[i - 1], "node GUID 0x%016llx twice",
		      (unsigned long long)guids[i]);
	free(guids);
	return links / 2;
}

static void check_lids(const struct sib_fabric *f)
{
	unsigned int i, p, want = 1;

	/* LIDs in fabric order from 1: switch port 0, linked CA ports. */
	for (i = 0; i < f->n_nodes; i++) {
		const struct sib_fab_node *n = f->nodes[i];

		for (p = 0; p <= n->num_ports; p++) {
			const struct sib_fab_port *pt = &n->ports[p];
			bool wants = n->type == SIB_NODE_SWITCH ? p == 0 : p > 0 && pt->peer;

			CHECK(pt->lmc == 0);
			if (wants && want <= 0xbfff)
				CHECK(pt->lid == want++, "node %u port %u lid %u", i, p, pt->lid);
			else
				CHECK(pt->lid == 0, "node %u port %u lid %u", i, p, pt->lid);
		}
	}
}

static void check_same(const struct sib_fabric *a, const struct sib_fabric *b)
{
	unsigned int i, p;

	CHECK(a->n_nodes == b->n_nodes, "%u nodes, rewritten %u", a->n_nodes, b->n_nodes);
	CHECK(a->n_cas == b->n_cas);
	for (i = 0; i < a->n_nodes; i++) {
		const struct sib_fab_node *x = a->nodes[i], *y = b->nodes[i];

		CHECK(x->type == y->type, "node %u type", i);
		CHECK(x->node_guid == y->node_guid, "node %u GUID 0x%016llx, rewritten 0x%016llx",
		      i, (unsigned long long)x->node_guid, (unsigned long long)y->node_guid);
		CHECK(x->sys_image_guid == y->sys_image_guid, "node %u sysimgguid", i);
		CHECK(x->vendor_id == y->vendor_id && x->device_id == y->device_id,
		      "node %u vendid/devid", i);
		CHECK(!strcmp(x->id, y->id), "node %u id \"%s\", rewritten \"%s\"", i, x->id, y->id);
		CHECK(!strcmp(x->desc, y->desc), "node %u desc \"%s\", rewritten \"%s\"", i,
		      x->desc, y->desc);
		CHECK(!strcmp(x->dev_name, y->dev_name), "node %u dev_name", i);
		CHECK(x->num_ports == y->num_ports, "node %u ports", i);
		for (p = 0; p <= x->num_ports; p++) {
			const struct sib_fab_port *s = &x->ports[p], *t = &y->ports[p];

			CHECK(s->guid == t->guid, "node %u port %u GUID 0x%016llx, rewritten 0x%016llx",
			      i, p, (unsigned long long)s->guid, (unsigned long long)t->guid);
			CHECK(!s->peer == !t->peer, "node %u port %u: link %s after rewrite", i, p,
			      s->peer ? "lost" : "appeared");
			if (!s->peer)
				continue;
			/* Node ids are unique in a fabric. */
			CHECK(!strcmp(s->peer->node->id, t->peer->node->id) &&
			      s->peer->num == t->peer->num,
			      "node %u port %u: linked to \"%s\"[%u], rewritten \"%s\"[%u]", i, p,
			      s->peer->node->id, s->peer->num, t->peer->node->id, t->peer->num);
		}
	}
}

/* sib_fabric_write() into a malloc'd string. */
static char *write_text(const struct sib_fabric *f, size_t *len)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);

	CHECK(out != NULL, "open_memstream");
	CHECK(sib_fabric_write(f, out) == 0, "sib_fabric_write failed");
	CHECK(fclose(out) == 0);
	CHECK(text != NULL && strlen(text) == *len, "written text has a NUL byte");
	return text;
}

/*
 * sib_fabric_load_file() on the whole input, through a memfd: it must agree
 * with sib_fabric_parse() (same result, same message but for the origin),
 * or refuse the NUL byte if the input has one.
 */
static void check_load_file(const uint8_t *text, size_t len, bool has_nul, int parse_rc,
			    const char *parse_err)
{
	static int fd = -2;
	static char path[64];
	struct sib_fabric f = { 0 };
	char err[512];
	const char *colon;
	size_t off = 0;
	int rc;

	if (fd == -2) {		/* one memfd for the whole run */
		fd = memfd_create("fuzz.topo", MFD_CLOEXEC);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (fd < 0)
		return;		/* no memfd: skip this check */
	CHECK(ftruncate(fd, 0) == 0, "ftruncate memfd");
	while (off < len) {
		ssize_t w = pwrite(fd, text + off, len - off, (off_t)off);

		CHECK(w > 0, "write to memfd");
		off += (size_t)w;
	}
	rc = sib_fabric_load_file(&f, path, err, sizeof(err));
	if (has_nul) {
		CHECK(rc == -1 && strstr(err, ": NUL byte in topology file"),
		      "NUL byte accepted: %d \"%s\"", rc, err);
		CHECK(!f.nodes && !f.n_nodes);
		return;
	}
	CHECK(rc == parse_rc, "sib_fabric_load_file gives %d, sib_fabric_parse %d (%s)", rc,
	      parse_rc, rc ? err : parse_err);
	if (rc) {
		/* "path:line: what" against "fuzz.topo:line: what" */
		colon = strchr(parse_err, ':');
		CHECK(!strncmp(err, path, strlen(path)) && colon &&
		      !strcmp(err + strlen(path), colon),
		      "load_file says \"%s\", parse says \"%s\"", err, parse_err);
		CHECK(!f.nodes && !f.n_nodes);
	} else {
		CHECK(f.n_nodes >= 1);
		sib_fabric_free(&f);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sib_fabric f = { 0 }, g = { 0 };	/* zeroed by the caller (fabric.h) */
	char err[512];
	char *text, *out1, *out2;
	size_t len1, len2;
	int rc;

	/* The text ends at the first NUL; the copy is exactly that long. */
	const uint8_t *nul = memchr(data, 0, size);
	size_t n = nul ? (size_t)(nul - data) : size;

	text = malloc(n + 1);
	if (!text)
		return 0;
	memcpy(text, data, n);
	text[n] = 0;
	g_text = text;
	st_inputs++;

	memset(err, 'X', sizeof(err));
	rc = sib_fabric_parse(&f, text, ORIGIN, err, sizeof(err));
	CHECK(rc == 0 || rc == -1, "returned %d", rc);
	CHECK(memchr(err, 0, sizeof(err)) != NULL, "error message not terminated");
	/* File I/O costs more than the parse: one input in eight, by size. */
	if ((size & 7) == 0)
		check_load_file(data, size, nul != NULL, rc, err);
	if (rc) {
		char small[12];

		CHECK(!strncmp(err, ORIGIN ":", strlen(ORIGIN) + 1),
		      "error message \"%s\" does not start with the origin", err);
		CHECK(!f.nodes && !f.n_nodes && !f.n_cas, "fabric not empty after an error");
		sib_fabric_free(&f);
		/* The same failure without a message buffer, and with a short one. */
		CHECK(sib_fabric_parse(&f, text, ORIGIN, NULL, 0) == -1, "no err: parses");
		CHECK(!f.nodes && !f.n_nodes);
		CHECK(sib_fabric_parse(&f, text, ORIGIN, small, sizeof(small)) == -1);
		CHECK(!f.nodes && !f.n_nodes);
		CHECK(strlen(small) < sizeof(small) && !strncmp(small, err, strlen(small)) &&
		      strlen(small) == (strlen(err) < sizeof(small) ? strlen(err) : sizeof(small) - 1),
		      "short message \"%s\" is not a prefix of \"%s\"", small, err);
		free(text);
		g_text = NULL;
		return 0;
	}
	CHECK(!err[0], "success with an error message \"%s\"", err);
	st_parsed++;
	st_nodes += f.n_nodes;
	if (f.n_nodes > st_max_nodes)
		st_max_nodes = f.n_nodes;
	st_links += check_model(&f);

	/* The writer prints the current LIDs: give them first. */
	sib_fabric_assign_lids(&f);
	check_lids(&f);
	out1 = write_text(&f, &len1);

	rc = sib_fabric_parse(&g, out1, "rewritten", err, sizeof(err));
	if (rc)
		fail(__FILE__, __LINE__, "parse", "the written fabric does not parse: %s\nwritten:\n%s",
		     err, out1);
	check_model(&g);
	check_same(&f, &g);
	sib_fabric_assign_lids(&g);
	out2 = write_text(&g, &len2);
	if (len1 != len2 || memcmp(out1, out2, len1))
		fail(__FILE__, __LINE__, "same text", "writing the re-parsed fabric gives other text:\n"
		     "first:\n%s\nsecond:\n%s", out1, out2);

	free(out1);
	free(out2);
	sib_fabric_free(&g);
	sib_fabric_free(&f);
	CHECK(!f.nodes && !f.n_nodes, "sib_fabric_free left the fabric non-empty");
	free(text);
	g_text = NULL;
	return 0;
}
