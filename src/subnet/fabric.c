/* SPDX-License-Identifier: MIT */
/*
 * The fabric model of softibd: parser and writer for the subset of the
 * ibnetdiscover / ibsim topology format described in docs/topology.md,
 * GUID and name derivation, and the LIDs of a first subnet-manager sweep.
 *
 * Pure data: no I/O besides reading the file and writing to the caller's
 * stream, no locks, no global state.  Every input is untrusted (fuzzed).
 */
#include "subnet/fabric.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define ID_HASH_MAX   (2 * SIB_FAB_MAX_NODES)   /* power of two */
#define NODE_MIN_TEXT 9  /* bytes of the shortest node line: Ca 1 "a" + EOL */
#define DESC_MAX      64                        /* NodeDescription bytes */
#define LID_MAX       0xbfff                    /* last unicast LID */

static const char default_topology[] =
	"# softib default fabric: one 8-port switch, four 1-port CAs.\n"
	"# Format: docs/topology.md\n"
	"\n"
	"switchguid=0x5eed000000000100\n"
	"Switch\t8 \"S-5eed000000000100\"\t\t# \"softib switch\"\n"
	"[1]\t\"H-5eed000000000010\"[1]\n"
	"[2]\t\"H-5eed000000000020\"[1]\n"
	"[3]\t\"H-5eed000000000030\"[1]\n"
	"[4]\t\"H-5eed000000000040\"[1]\n"
	"\n"
	"caguid=0x5eed000000000010\n"
	"Ca\t1 \"H-5eed000000000010\"\t\t# \"softib HCA softib0\"\n"
	"[1](5eed000000000011)\t\"S-5eed000000000100\"[1]\n"
	"\n"
	"caguid=0x5eed000000000020\n"
	"Ca\t1 \"H-5eed000000000020\"\t\t# \"softib HCA softib1\"\n"
	"[1](5eed000000000021)\t\"S-5eed000000000100\"[2]\n"
	"\n"
	"caguid=0x5eed000000000030\n"
	"Ca\t1 \"H-5eed000000000030\"\t\t# \"softib HCA softib2\"\n"
	"[1](5eed000000000031)\t\"S-5eed000000000100\"[3]\n"
	"\n"
	"caguid=0x5eed000000000040\n"
	"Ca\t1 \"H-5eed000000000040\"\t\t# \"softib HCA softib3\"\n"
	"[1](5eed000000000041)\t\"S-5eed000000000100\"[4]\n";

/* One `[p] "remote"[rp]` line, resolved once every node is known. */
struct port_decl {
	unsigned long line;
	unsigned int node;          /* index of the declaring node */
	uint8_t port;
	uint8_t rport;
	uint8_t rid_len;
	bool has_rguid;
	uint64_t rguid;
	const char *rid;            /* into the parsed text, not terminated */
};

/* Where things came from, for error messages; per port of a node. */
struct port_aux {
	unsigned long guid_line;    /* line of an explicit (guid), 0 = default */
	unsigned long link_line;    /* line that first declared the link */
	unsigned long decl_line;    /* this node's own line for the port */
};

struct node_aux {
	unsigned long line;         /* the node header line */
	struct port_aux *ports;     /* num_ports + 1 entries */
};

/* A one-shot directive waiting for the next node header. */
struct pending {
	unsigned long line;         /* 0 = none */
	uint64_t val;
	uint64_t port0;             /* switchguid=...(port0) */
	bool has_port0;
};

struct parser {
	struct sib_fabric *f;
	const char *origin;
	char *err;
	size_t errlen;
	unsigned long line;
	unsigned int cap_nodes;
	struct node_aux *aux;
	struct port_decl *decls;
	size_t n_decls, cap_decls;
	size_t total_ports;
	int32_t *id_hash;
	size_t id_mask;               /* slots - 1: twice the nodes the text can hold */
	struct sib_fab_node *cur;   /* record being read, NULL outside one */
	bool have_vendor, have_device;
	uint32_t vendor_id, device_id;
	struct pending sysimg, swguid, caguid;
	struct sib_fab_ip ips[SIB_FAB_MAX_NODE_IPS]; /* caip= lines for the next node */
	unsigned int n_ips;
	unsigned long ips_line;       /* the first of them, 0 = none */
};

static int perr_at(struct parser *ps, unsigned long line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr_at(struct parser *ps, unsigned long line, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!ps->err || !ps->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s:%lu: %s", ps->origin, line, msg);
	return -1;
}

#define perr(ps, ...) perr_at((ps), (ps)->line, __VA_ARGS__)

static uint64_t fnv1a(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (len--) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Slot of id in the id hash: its node's slot, or the empty slot to use. */
static size_t id_slot(const struct parser *ps, const char *id, size_t len)
{
	size_t i = fnv1a(id, len) & ps->id_mask;

	for (;;) {
		int32_t n = ps->id_hash[i];
		const char *nid;

		if (n < 0)
			return i;
		nid = ps->f->nodes[n]->id;
		if (strlen(nid) == len && !memcmp(nid, id, len))
			return i;
		i = (i + 1) & ps->id_mask;
	}
}

/* Index of the node called id, or -1. */
static int32_t find_id(const struct parser *ps, const char *id, size_t len)
{
	return ps->id_hash[id_slot(ps, id, len)];
}

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decimal number <= max.  Returns 0, -1 (no digits) or -2 (too large). */
static int parse_dec(const char **sp, unsigned long max, unsigned long *out)
{
	const char *s = *sp;
	unsigned long v = 0;

	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9') {
		if (v > (max - (unsigned long)(*s - '0')) / 10)
			return -2;
		v = v * 10 + (unsigned long)(*s - '0');
		s++;
	}
	*sp = s;
	*out = v;
	return 0;
}

/* Hex digits, at most 16.  Returns 0, -1 (no digits) or -2 (too large). */
static int parse_hex(const char **sp, uint64_t *out)
{
	const char *s = *sp;
	uint64_t v = 0;
	int d, n = 0;

	while (*s == '0' && hexval(s[1]) >= 0)
		s++;            /* leading zeros do not count towards 16 */
	while ((d = hexval(*s)) >= 0) {
		if (++n > 16)
			return -2;
		v = v << 4 | (uint64_t)d;
		s++;
	}
	if (!n)
		return -1;
	*sp = s;
	*out = v;
	return 0;
}

/* Directive value: 0x<hex> or decimal.  0 or -1 (malformed or too large). */
static int parse_num(const char **sp, uint64_t *out)
{
	const char *s = *sp;
	unsigned long long v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		if (parse_hex(&s, out))
			return -1;
		*sp = s;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9') {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		s++;
	}
	*sp = s;
	*out = v;
	return 0;
}

/* "(hex)" with an optional 0x, as ibnetdiscover prints port GUIDs. */
static int parse_paren_guid(struct parser *ps, const char **sp, uint64_t *out)
{
	const char *s = *sp + 1;

	s = skip_ws(s);
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (parse_hex(&s, out))
		return perr(ps, "malformed GUID in parentheses");
	s = skip_ws(s);
	if (*s != ')')
		return perr(ps, "missing ')' after GUID");
	if (!*out)
		return perr(ps, "GUID 0 is not valid");
	*sp = s + 1;
	return 0;
}

/*
 * "text" into out (size outsz, so at most outsz - 1 bytes).  Control
 * characters are refused so that what the writer prints parses again.
 */
static int parse_quoted(struct parser *ps, const char **sp, char *out, size_t outsz,
			const char *what)
{
	const char *s = *sp + 1;
	size_t n = 0;

	for (; *s != '"'; s++, n++) {
		unsigned char c = (unsigned char)*s;

		if (!c)
			return perr(ps, "unterminated %s (missing '\"')", what);
		if (c < 0x20 || c == 0x7f)
			return perr(ps, "control character in %s", what);
		if (n + 1 >= outsz)
			return perr(ps, "%s longer than %zu bytes", what, outsz - 1);
		out[n] = (char)c;
	}
	out[n] = 0;
	*sp = s + 1;
	return 0;
}

/* "[ext N]" after a port number (ibnetdiscover -g); ignored. */
static int skip_ext(struct parser *ps, const char **sp)
{
	const char *s = *sp;
	unsigned long v;

	if (strncmp(s, "[ext", 4) || (s[4] != ' ' && s[4] != '\t'))
		return 0;
	s = skip_ws(s + 4);
	if (parse_dec(&s, 255, &v))
		return perr(ps, "malformed [ext N]");
	if (*s != ']')
		return perr(ps, "missing ']' after [ext N");
	*sp = s + 1;
	return 0;
}

/* "S-<hex>" for switches, "H-<hex>" for CAs: the whole id is the GUID. */
static bool guid_from_id(const char *id, enum sib_node_type type, uint64_t *guid)
{
	const char *s = id + 2;

	if (id[0] != (type == SIB_NODE_SWITCH ? 'S' : 'H') || id[1] != '-')
		return false;
	return !parse_hex(&s, guid) && !*s;
}

static void pending_clear(struct parser *ps)
{
	memset(&ps->sysimg, 0, sizeof(ps->sysimg));
	memset(&ps->swguid, 0, sizeof(ps->swguid));
	memset(&ps->caguid, 0, sizeof(ps->caguid));
	ps->n_ips = 0;
	ps->ips_line = 0;
}

static int grow_nodes(struct parser *ps)
{
	struct sib_fabric *f = ps->f;
	unsigned int cap = ps->cap_nodes ? 2 * ps->cap_nodes : 16;
	struct sib_fab_node **nodes;
	struct node_aux *aux;

	if (cap > SIB_FAB_MAX_NODES)
		cap = SIB_FAB_MAX_NODES;
	nodes = realloc(f->nodes, cap * sizeof(*nodes));
	if (!nodes)
		return perr(ps, "out of memory");
	f->nodes = nodes;
	aux = realloc(ps->aux, cap * sizeof(*aux));
	if (!aux)
		return perr(ps, "out of memory");
	ps->aux = aux;
	ps->cap_nodes = cap;
	return 0;
}

/* Parses the text of `Switch|Ca|Hca <nports> "<id>" [# "<desc>" ...]` after the type. */
static int parse_node_line(struct parser *ps, const char *s, unsigned long *nports,
			   char *id, size_t id_len, char *desc, size_t desc_len,
			   bool *has_desc)
{
	if (*s != ' ' && *s != '\t')
		return perr(ps, "expected a port count after the node type");
	s = skip_ws(s);
	if (parse_dec(&s, 255, nports) || *nports < 1 || *nports > SIB_FAB_MAX_NODE_PORTS)
		return perr(ps, "port count must be 1..%d", SIB_FAB_MAX_NODE_PORTS);
	s = skip_ws(s);
	if (*s != '"')
		return perr(ps, "expected a quoted node id after the port count");
	if (parse_quoted(ps, &s, id, id_len, "node id"))
		return -1;
	if (!id[0])
		return perr(ps, "empty node id");
	s = skip_ws(s);
	if (*s == '#') {
		s = skip_ws(s + 1);
		if (*s == '"') {
			if (parse_quoted(ps, &s, desc, desc_len, "node description"))
				return -1;
			*has_desc = true;
		}
	} else if (*s) {
		return perr(ps, "unexpected text after the node id");
	}
	return 0;
}

/* Checks the fabric limits and the id for a new node; sets its id_hash slot and node GUID. */
static int check_new_node(struct parser *ps, const char *id, enum sib_node_type type,
			  unsigned long nports, size_t *slot, uint64_t *guid)
{
	struct sib_fabric *f = ps->f;
	struct pending *own = type == SIB_NODE_SWITCH ? &ps->swguid : &ps->caguid;
	struct pending *other = type == SIB_NODE_SWITCH ? &ps->caguid : &ps->swguid;

	if (other->line)
		return perr(ps, "%s on line %lu does not belong to a %s",
			    type == SIB_NODE_SWITCH ? "caguid=" : "switchguid=",
			    other->line, type == SIB_NODE_SWITCH ? "Switch" : "Ca");
	if (f->n_nodes >= SIB_FAB_MAX_NODES)
		return perr(ps, "more than %d nodes", SIB_FAB_MAX_NODES);
	if (ps->total_ports + nports + 1 > SIB_FAB_MAX_TOTAL_PORTS)
		return perr(ps, "more than %d ports in the fabric", SIB_FAB_MAX_TOTAL_PORTS);
	*slot = id_slot(ps, id, strlen(id));
	if (ps->id_hash[*slot] >= 0)
		return perr(ps, "duplicate node id \"%s\" (first on line %lu)", id,
			    ps->aux[ps->id_hash[*slot]].line);

	if (own->line)
		*guid = own->val;
	else if (!guid_from_id(id, type, guid))
		*guid = SIB_FAB_GUID_PREFIX | (fnv1a(id, strlen(id)) >> 32) << 8;
	if (!*guid)
		return perr(ps, "node GUID 0 is not valid");
	if (type != SIB_NODE_SWITCH && *guid > UINT64_MAX - nports)
		return perr(ps, "port GUIDs of node GUID 0x%" PRIx64 " overflow", *guid);
	return 0;
}

/* Allocates a node with nports + 1 ports and appends it to the fabric under id slot `slot`. */
static struct sib_fab_node *append_node(struct parser *ps, unsigned long nports, size_t slot)
{
	struct sib_fabric *f = ps->f;
	struct sib_fab_node *n;

	if (f->n_nodes == ps->cap_nodes && grow_nodes(ps))
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n) {
		perr(ps, "out of memory");
		return NULL;
	}
	n->ports = calloc(nports + 1, sizeof(*n->ports));
	ps->aux[f->n_nodes].ports = calloc(nports + 1, sizeof(struct port_aux));
	if (!n->ports || !ps->aux[f->n_nodes].ports) {
		free(ps->aux[f->n_nodes].ports);
		free(n->ports);
		free(n);
		perr(ps, "out of memory");
		return NULL;
	}
	ps->aux[f->n_nodes].line = ps->line;
	ps->id_hash[slot] = (int32_t)f->n_nodes;
	f->nodes[f->n_nodes++] = n;
	ps->total_ports += nports + 1;
	return n;
}

/* Fills a new node's identity, ports and description from the line and pending settings. */
static void init_node(struct parser *ps, struct sib_fab_node *n, enum sib_node_type type,
		      uint64_t guid, const char *id, unsigned long nports, char *desc,
		      size_t desc_len, bool has_desc)
{
	struct sib_fabric *f = ps->f;
	struct pending *own = type == SIB_NODE_SWITCH ? &ps->swguid : &ps->caguid;
	unsigned int p;

	n->type = type;
	n->node_guid = guid;
	n->sys_image_guid = ps->sysimg.line ? ps->sysimg.val : guid;
	n->vendor_id = ps->have_vendor ? ps->vendor_id : SIB_FAB_VENDOR_ID;
	if (ps->have_device)
		n->device_id = ps->device_id;
	else
		n->device_id = type == SIB_NODE_SWITCH ? SIB_FAB_SWITCH_DEVICE_ID :
			       SIB_FAB_CA_DEVICE_ID;
	memcpy(n->id, id, strlen(id) + 1);
	n->num_ports = (uint8_t)nports;
	for (p = 0; p <= nports; p++) {
		n->ports[p].node = n;
		n->ports[p].num = (uint8_t)p;
	}
	if (type == SIB_NODE_SWITCH) {
		n->ports[0].guid = own->has_port0 ? own->port0 : guid;
		if (!has_desc) {
			size_t l = strnlen(id, DESC_MAX);

			memcpy(desc, id, l);
			desc[l] = 0;
		}
	} else {
		for (p = 1; p <= nports; p++)
			n->ports[p].guid = guid + p;
		snprintf(n->dev_name, sizeof(n->dev_name), "softib%u", f->n_cas);
		f->n_cas++;
		if (!has_desc)
			snprintf(desc, desc_len, "softib HCA softib%u", f->n_cas - 1);
	}
	memcpy(n->desc, desc, strlen(desc) + 1);
}

/* `Switch|Ca|Hca <nports> "<id>" [# "<desc>" ...]` */
static int parse_node(struct parser *ps, const char *s, enum sib_node_type type)
{
	struct sib_fab_node *n;
	char id[sizeof(n->id)], desc[DESC_MAX + 1];
	bool has_desc = false;
	unsigned long nports = 0;
	uint64_t guid = 0;
	size_t slot = 0;

	if (parse_node_line(ps, s, &nports, id, sizeof(id), desc, sizeof(desc), &has_desc))
		return -1;
	if (check_new_node(ps, id, type, nports, &slot, &guid))
		return -1;
	n = append_node(ps, nports, slot);
	if (!n)
		return -1;
	init_node(ps, n, type, guid, id, nports, desc, sizeof(desc), has_desc);
	if (ps->n_ips) {
		if (type != SIB_NODE_CA)
			return perr(ps, "caip= on line %lu does not belong to a Switch",
				    ps->ips_line);
		for (unsigned int i = 0; i < ps->n_ips; i++)
			if (ps->ips[i].port > nports)
				return perr(ps, "caip= on line %lu names port %u of a %lu-port Ca",
					    ps->ips_line, ps->ips[i].port, nports);
		n->ips = malloc(ps->n_ips * sizeof(*n->ips));
		if (!n->ips)
			return perr(ps, "out of memory");
		memcpy(n->ips, ps->ips, ps->n_ips * sizeof(*n->ips));
		n->n_ips = (uint8_t)ps->n_ips;
	}
	pending_clear(ps);
	ps->cur = n;
	return 0;
}

/* `[p][(guid)] "<remote id>"[rp][(remote guid)] [# ...]` */
static int parse_port(struct parser *ps, const char *s, const char *text_line,
		      const char *buf)
{
	struct sib_fab_node *n = ps->cur;
	struct port_decl d = { .line = ps->line };
	char rid[sizeof(n->id)];
	unsigned long v;
	unsigned int ni;

	if (!n)
		return perr(ps, "port line outside a node record");
	ni = ps->f->n_nodes - 1;
	d.node = ni;
	s++;
	if (parse_dec(&s, 255, &v) || *s != ']')
		return perr(ps, "malformed port number");
	if (v < 1 || v > n->num_ports)
		return perr(ps, "port %lu out of range (\"%s\" has ports 1..%u)", v,
			    n->id, n->num_ports);
	d.port = (uint8_t)v;
	if (ps->aux[ni].ports[d.port].decl_line)
		return perr(ps, "port %u already declared on line %lu", d.port,
			    ps->aux[ni].ports[d.port].decl_line);
	s++;
	if (skip_ext(ps, &s))
		return -1;
	s = skip_ws(s);
	if (*s == '(') {
		struct port_aux *pa = &ps->aux[ni].ports[d.port];
		uint64_t g;

		if (parse_paren_guid(ps, &s, &g))
			return -1;
		if (n->type == SIB_NODE_SWITCH)
			return perr(ps, "switch port %u has no port GUID of its own", d.port);
		n->ports[d.port].guid = g;
		pa->guid_line = ps->line;
		s = skip_ws(s);
	}
	if (*s != '"')
		return perr(ps, "expected a quoted remote node id");
	d.rid = text_line + (s + 1 - buf);
	if (parse_quoted(ps, &s, rid, sizeof(rid), "remote node id"))
		return -1;
	if (!rid[0])
		return perr(ps, "empty remote node id");
	d.rid_len = (uint8_t)strlen(rid);
	s = skip_ws(s);
	if (*s != '[')
		return perr(ps, "expected [port] after the remote node id");
	s++;
	if (parse_dec(&s, 255, &v) || *s != ']')
		return perr(ps, "malformed remote port number");
	if (v < 1 || v > SIB_FAB_MAX_NODE_PORTS)
		return perr(ps, "remote port %lu out of range", v);
	d.rport = (uint8_t)v;
	s++;
	if (skip_ext(ps, &s))
		return -1;
	s = skip_ws(s);
	if (*s == '(') {
		if (parse_paren_guid(ps, &s, &d.rguid))
			return -1;
		d.has_rguid = true;
		s = skip_ws(s);
	}
	if (*s && *s != '#')
		return perr(ps, "unexpected text after the link");

	if (ps->n_decls == ps->cap_decls) {
		size_t cap = ps->cap_decls ? 2 * ps->cap_decls : 64;
		struct port_decl *nd = realloc(ps->decls, cap * sizeof(*nd));

		if (!nd)
			return perr(ps, "out of memory");
		ps->decls = nd;
		ps->cap_decls = cap;
	}
	ps->decls[ps->n_decls++] = d;
	ps->aux[ni].ports[d.port].decl_line = ps->line;
	return 0;
}

static bool word_is(const char *word, size_t wlen, const char *kw)
{
	return strlen(kw) == wlen && !memcmp(word, kw, wlen);
}

/* caip=PORT:ADDR[/PREFIX]: an IP address of port PORT of the next node, a
 * CA (IPv4 or IPv6; no /PREFIX: 32 or 128).  Repeatable. */
static int parse_caip(struct parser *ps, const char *s)
{
	struct sib_fab_ip *ip;
	char addr[64];
	unsigned long port, prefix;
	size_t len;

	s = skip_ws(s);
	if (*s != '=')
		return perr(ps, "expected '=' after caip");
	s = skip_ws(s + 1);
	if (parse_dec(&s, SIB_FAB_MAX_NODE_PORTS, &port) || !port || *s++ != ':')
		return perr(ps, "caip= wants PORT:ADDR[/PREFIX]");
	len = strcspn(s, "/ \t#");
	if (!len || len >= sizeof(addr))
		return perr(ps, "caip= wants PORT:ADDR[/PREFIX]");
	if (ps->n_ips == SIB_FAB_MAX_NODE_IPS)
		return perr(ps, "more than %d caip= lines for one node", SIB_FAB_MAX_NODE_IPS);
	ip = &ps->ips[ps->n_ips];
	memset(ip, 0, sizeof(*ip));
	memcpy(addr, s, len);
	addr[len] = 0;
	s += len;
	ip->family = memchr(addr, ':', len) ? AF_INET6 : AF_INET;
	if (inet_pton(ip->family, addr, ip->addr) != 1)
		return perr(ps, "caip=: not an IPv4 or IPv6 address: %s", addr);
	prefix = ip->family == AF_INET ? 32 : 128;
	if (*s == '/') {
		s++;
		if (parse_dec(&s, ip->family == AF_INET ? 32 : 128, &prefix))
			return perr(ps, "caip=: bad prefix length");
	}
	s = skip_ws(s);
	if (*s && *s != '#')
		return perr(ps, "unexpected text after caip=");
	ip->port = (uint8_t)port;
	ip->prefix = (uint8_t)prefix;
	if (!ps->n_ips++)
		ps->ips_line = ps->line;
	return 0;
}

/* vendid=, devid=, sysimgguid=, switchguid=0x..[(port0)], caguid= */
static int parse_directive(struct parser *ps, const char *word, size_t wlen,
			   const char *s)
{
	struct pending *pd = NULL;
	uint64_t v;

	s = skip_ws(s);
	if (*s == '+')
		return perr(ps, "relative GUID bases ('+') are not supported");
	if (*s != '=')
		return perr(ps, "expected '=' after %.*s", (int)wlen, word);
	s = skip_ws(s + 1);
	if (parse_num(&s, &v))
		return perr(ps, "malformed number after %.*s=", (int)wlen, word);

	if (word_is(word, wlen, "vendid")) {
		if (v > 0xffffff)
			return perr(ps, "vendid 0x%" PRIx64 " exceeds 24 bits", v);
		ps->vendor_id = (uint32_t)v;
		ps->have_vendor = true;
	} else if (word_is(word, wlen, "devid")) {
		if (v > 0xffff)
			return perr(ps, "devid 0x%" PRIx64 " exceeds 16 bits", v);
		ps->device_id = (uint32_t)v;
		ps->have_device = true;
	} else {
		if (word_is(word, wlen, "sysimgguid"))
			pd = &ps->sysimg;
		else if (word_is(word, wlen, "switchguid"))
			pd = &ps->swguid;
		else
			pd = &ps->caguid;
		if (pd->line)
			return perr(ps, "%.*s= repeats line %lu before any node",
				    (int)wlen, word, pd->line);
		if (!v)
			return perr(ps, "GUID 0 is not valid");
		pd->val = v;
		pd->line = ps->line;
		s = skip_ws(s);
		if (*s == '(' && pd == &ps->swguid) {
			if (parse_paren_guid(ps, &s, &pd->port0))
				return -1;
			pd->has_port0 = true;
			s = skip_ws(s);
		}
	}
	if (*s && *s != '#')
		return perr(ps, "unexpected text after %.*s=", (int)wlen, word);
	return 0;
}

/* One line, NUL-terminated in buf; text_line is where it sits in the text. */
static int parse_line(struct parser *ps, const char *buf, const char *text_line)
{
	static const char *const unsupported[] = {
		"Rt", "rtguid", "hcaguids", "include", "do", "module", "width",
		"speed", "extspeed", "pdebug",
	};
	const char *s = skip_ws(buf), *word;
	size_t wlen, i;

	if (!*s) {
		ps->cur = NULL;         /* a blank line ends a node record */
		return 0;
	}
	if (*s == '#')
		return 0;
	if (*s == '[')
		return parse_port(ps, s, text_line, buf);
	if (*s == '@')
		return perr(ps, "ibsim port aliases ('@') are not supported");

	ps->cur = NULL;                 /* any other line ends the record too */
	word = s;
	while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')
		s++;
	wlen = (size_t)(s - word);

	if (word_is(word, wlen, "Switch"))
		return parse_node(ps, s, SIB_NODE_SWITCH);
	if (word_is(word, wlen, "Ca") || word_is(word, wlen, "Hca"))
		return parse_node(ps, s, SIB_NODE_CA);
	if (word_is(word, wlen, "vendid") || word_is(word, wlen, "devid") ||
	    word_is(word, wlen, "sysimgguid") || word_is(word, wlen, "switchguid") ||
	    word_is(word, wlen, "caguid"))
		return parse_directive(ps, word, wlen, s);
	if (word_is(word, wlen, "caip"))
		return parse_caip(ps, s);
	/* ibnetdiscover -g grouping lines carry nothing the model needs. */
	if ((word_is(word, wlen, "Chassis") && (*s == ' ' || *s == '\t')) ||
	    (word_is(word, wlen, "Hostname") && *s == ':') ||
	    !strncmp(word, "Non-Chassis Nodes", 17))
		return 0;
	for (i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
		if (word_is(word, wlen, unsupported[i]))
			return perr(ps, "'%s' is not supported", unsupported[i]);
	return perr(ps, "unrecognized line");
}

static const char *guid_directive(const struct sib_fab_node *n)
{
	return n->type == SIB_NODE_SWITCH ? "switchguid=" : "caguid=";
}

struct guid_ent {
	uint64_t guid;
	unsigned long line;
	unsigned int node;
	bool is_node;               /* the node GUID, not a port GUID */
};

static int guid_ent_cmp(const void *a, const void *b)
{
	const struct guid_ent *x = a, *y = b;

	if (x->guid != y->guid)
		return x->guid < y->guid ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return (int)y->is_node - (int)x->is_node;
}

/*
 * Every node GUID and port GUID is unique in the fabric, except that a
 * node's own port GUIDs may equal its node GUID (switch port 0 always
 * does; some single-port CAs do).  Reports the first offending line.
 */
static int check_guids(struct parser *ps)
{
	struct sib_fabric *f = ps->f;
	struct guid_ent *e, *bad = NULL, *with = NULL;
	size_t n = 0, i, j;
	unsigned int k, p;

	e = calloc(ps->total_ports + f->n_nodes, sizeof(*e));
	if (!e)
		return perr(ps, "out of memory");
	for (k = 0; k < f->n_nodes; k++) {
		struct sib_fab_node *nd = f->nodes[k];

		e[n++] = (struct guid_ent){ nd->node_guid, ps->aux[k].line, k, true };
		for (p = 0; p <= nd->num_ports; p++) {
			unsigned long line = ps->aux[k].ports[p].guid_line;

			if (!nd->ports[p].guid)
				continue;
			e[n++] = (struct guid_ent){ nd->ports[p].guid,
						    line ? line : ps->aux[k].line, k, false };
		}
	}
	qsort(e, n, sizeof(*e), guid_ent_cmp);
	for (i = 1; i < n; i++) {
		if (e[i].guid != e[i - 1].guid)
			continue;
		/* At most one earlier entry of a group (its node GUID) is allowed. */
		for (j = i; j-- > 0 && e[j].guid == e[i].guid;) {
			if (e[j].node != e[i].node || (!e[j].is_node && !e[i].is_node)) {
				if (!bad || e[i].line < bad->line) {
					bad = &e[i];
					with = &e[j];
				}
				break;
			}
		}
	}
	if (bad) {
		perr_at(ps, bad->line, "GUID 0x%016" PRIx64 " of \"%s\" is already used by \"%s\" (line %lu)",
			bad->guid, f->nodes[bad->node]->id, f->nodes[with->node]->id,
			with->line);
		free(e);
		return -1;
	}
	free(e);
	return 0;
}

/* Connect the declared links, in file order; both ends must agree. */
static int resolve_links(struct parser *ps)
{
	struct sib_fabric *f = ps->f;
	size_t i;

	for (i = 0; i < ps->n_decls; i++) {
		const struct port_decl *d = &ps->decls[i];
		struct sib_fab_node *a = f->nodes[d->node], *b;
		struct sib_fab_port *pa, *pb, *busy;
		unsigned int busy_node;
		int32_t bi;

		bi = find_id(ps, d->rid, d->rid_len);
		if (bi < 0)
			return perr_at(ps, d->line, "unknown node \"%.*s\"",
				       (int)d->rid_len, d->rid);
		b = f->nodes[bi];
		if (d->rport > b->num_ports)
			return perr_at(ps, d->line, "remote port %u out of range (\"%s\" has ports 1..%u)",
				       d->rport, b->id, b->num_ports);
		pa = &a->ports[d->port];
		pb = &b->ports[d->rport];
		if (pa == pb)
			return perr_at(ps, d->line, "port %u is linked to itself", d->port);
		if (d->has_rguid) {
			uint64_t want = b->type == SIB_NODE_SWITCH ? b->ports[0].guid : pb->guid;

			if (d->rguid != want)
				return perr_at(ps, d->line, "remote port GUID 0x%" PRIx64 " does not match 0x%" PRIx64 " of \"%s\"[%u]",
					       d->rguid, want, b->id, d->rport);
		}
		if (pa->peer == pb)
			continue;       /* the other end said the same */
		if (!pa->peer && !pb->peer) {
			pa->peer = pb;
			pb->peer = pa;
			ps->aux[d->node].ports[d->port].link_line = d->line;
			ps->aux[bi].ports[d->rport].link_line = d->line;
			continue;
		}
		busy = pa->peer ? pa : pb;
		busy_node = pa->peer ? d->node : (unsigned int)bi;
		return perr_at(ps, d->line, "\"%s\"[%u] is already linked to \"%s\"[%u] (line %lu)",
			       busy->node->id, busy->num, busy->peer->node->id,
			       busy->peer->num,
			       ps->aux[busy_node].ports[busy->num].link_line);
	}
	return 0;
}

static void parser_done(struct parser *ps)
{
	unsigned int i;

	if (ps->aux)
		for (i = 0; i < ps->f->n_nodes; i++)
			free(ps->aux[i].ports);
	free(ps->aux);
	free(ps->decls);
	free(ps->id_hash);
}

/*
 * Parse a topology text into *f (zeroed by the caller); see fabric.h and
 * docs/topology.md.  On error *f is left empty (zeroed).
 */
int sib_fabric_parse(struct sib_fabric *f, const char *text, const char *origin,
		     char *err, size_t errlen)
{
	struct parser ps = {
		.f = f, .origin = origin ? origin : "<topology>",
		.err = err, .errlen = errlen,
	};
	char *buf = NULL;
	const char *p, *end;
	size_t i, slots;
	int rc = -1;

	memset(f, 0, sizeof(*f));
	if (err && errlen)
		err[0] = 0;
	if (!text) {
		perr_at(&ps, 0, "no text");
		return -1;
	}
	/* sized to the text, so that a small file costs little */
	for (slots = 64; slots < ID_HASH_MAX && slots < 2 * (strlen(text) / NODE_MIN_TEXT + 1);)
		slots *= 2;
	ps.id_mask = slots - 1;
	ps.id_hash = malloc(slots * sizeof(*ps.id_hash));
	buf = malloc(SIB_FAB_MAX_LINE + 1);
	if (!ps.id_hash || !buf) {
		perr_at(&ps, 0, "out of memory");
		goto out;
	}
	for (i = 0; i < slots; i++)
		ps.id_hash[i] = -1;

	p = text;
	end = text + strlen(text);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);

		ps.line++;
		if (len > SIB_FAB_MAX_LINE) {
			perr(&ps, "line longer than %d bytes", SIB_FAB_MAX_LINE);
			goto out;
		}
		memcpy(buf, p, len);
		while (len && (buf[len - 1] == '\r' || buf[len - 1] == ' ' ||
			       buf[len - 1] == '\t'))
			len--;
		buf[len] = 0;
		if (parse_line(&ps, buf, p))
			goto out;
		p = nl ? nl + 1 : end;
	}
	if (ps.sysimg.line || ps.swguid.line || ps.caguid.line || ps.ips_line) {
		unsigned long l = ps.sysimg.line;

		if (ps.ips_line > l)
			l = ps.ips_line;

		if (ps.swguid.line > l)
			l = ps.swguid.line;
		if (ps.caguid.line > l)
			l = ps.caguid.line;
		perr_at(&ps, l, l == ps.ips_line ? "caip= not followed by a node" :
			"GUID directive not followed by a node");
		goto out;
	}
	if (!f->n_nodes) {
		perr_at(&ps, ps.line ? ps.line : 1, "no nodes defined");
		goto out;
	}
	if (check_guids(&ps) || resolve_links(&ps))
		goto out;
	rc = 0;
out:
	parser_done(&ps);
	free(buf);
	if (rc)
		sib_fabric_free(f);
	return rc;
}

/* Read and parse a topology file; NUL bytes and files over 64 MiB are refused. */
int sib_fabric_load_file(struct sib_fabric *f, const char *path, char *err, size_t errlen)
{
	FILE *fp;
	char *text;
	size_t len = 0, cap = 1 << 16, n, i;
	unsigned long line = 1;
	int rc;

	memset(f, 0, sizeof(*f));
	fp = fopen(path, "r");
	if (!fp) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	text = malloc(cap + 1);
	while (text && (n = fread(text + len, 1, cap - len, fp)) > 0) {
		len += n;
		if (len == cap) {
			char *t;

			if (cap >= SIB_FAB_MAX_FILE) {
				free(text);
				fclose(fp);
				if (err && errlen)
					snprintf(err, errlen, "%s: larger than %u bytes",
						 path, SIB_FAB_MAX_FILE);
				return -1;
			}
			cap *= 2;
			t = realloc(text, cap + 1);
			if (!t) {
				free(text);
				text = NULL;
			} else {
				text = t;
			}
		}
	}
	if (!text || ferror(fp)) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path,
				 text ? "read error" : "out of memory");
		free(text);
		fclose(fp);
		return -1;
	}
	fclose(fp);
	text[len] = 0;
	for (i = 0; i < len; i++) {
		if (text[i] == '\n')
			line++;
		else if (!text[i])
			break;
	}
	if (i < len) {
		if (err && errlen)
			snprintf(err, errlen, "%s:%lu: NUL byte in topology file", path, line);
		free(text);
		return -1;
	}
	rc = sib_fabric_parse(f, text, path, err, errlen);
	free(text);
	return rc;
}

/* The embedded default topology (docs/topology.md shows it). */
const char *sib_fabric_default_topology(void)
{
	return default_topology;
}

/*
 * LIDs as a first SM sweep gives them, in fabric order from 1: a switch's
 * port 0, then each CA port that has a peer.  Everything else gets LID 0,
 * and LMC is 0.  LIDs stop at the last unicast LID 0xBFFF.
 */
void sib_fabric_assign_lids(struct sib_fabric *f)
{
	unsigned int next = 1, i, p;

	for (i = 0; i < f->n_nodes; i++) {
		struct sib_fab_node *n = f->nodes[i];

		for (p = 0; p <= n->num_ports; p++) {
			struct sib_fab_port *pt = &n->ports[p];
			bool wants = n->type == SIB_NODE_SWITCH ? p == 0 : p > 0 && pt->peer;

			pt->lmc = 0;
			pt->lid = 0;
			if (wants && next <= LID_MAX)
				pt->lid = (uint16_t)next++;
		}
	}
}

/* The node whose NodeGUID is node_guid, or NULL. */
struct sib_fab_node *sib_fabric_find_guid(const struct sib_fabric *f, uint64_t node_guid)
{
	unsigned int i;

	for (i = 0; i < f->n_nodes; i++)
		if (f->nodes[i]->node_guid == node_guid)
			return f->nodes[i];
	return NULL;
}

/* Free everything the parser allocated; *f is left zeroed. */
void sib_fabric_free(struct sib_fabric *f)
{
	unsigned int i;

	if (!f)
		return;
	for (i = 0; i < f->n_nodes; i++) {
		free(f->nodes[i]->ips);
		free(f->nodes[i]->ports);
		free(f->nodes[i]);
	}
	free(f->nodes);
	memset(f, 0, sizeof(*f));
}

static uint16_t node_lid(const struct sib_fab_port *pt)
{
	return pt->node->type == SIB_NODE_SWITCH ? pt->node->ports[0].lid : pt->lid;
}

/* Print the fabric in ibnetdiscover's format; see fabric.h. */
int sib_fabric_write(const struct sib_fabric *f, FILE *out)
{
	unsigned int i, p;

	fprintf(out, "#\n# Topology file: written by softib (format: docs/topology.md)\n#\n");
	for (i = 0; i < f->n_nodes; i++) {
		const struct sib_fab_node *n = f->nodes[i];
		bool sw = n->type == SIB_NODE_SWITCH;

		fprintf(out, "\nvendid=0x%" PRIx32 "\ndevid=0x%" PRIx32 "\n", n->vendor_id,
			n->device_id);
		fprintf(out, "sysimgguid=0x%016" PRIx64 "\n", n->sys_image_guid);
		if (sw) {
			fprintf(out, "%s0x%016" PRIx64 "(%016" PRIx64 ")\n", guid_directive(n),
				n->node_guid, n->ports[0].guid);
			fprintf(out, "Switch\t%u \"%s\"\t\t# \"%s\" base port 0 lid %u lmc %u\n",
				n->num_ports, n->id, n->desc, n->ports[0].lid, n->ports[0].lmc);
		} else {
			for (unsigned int k = 0; k < n->n_ips; k++) {
				char text[INET6_ADDRSTRLEN];

				inet_ntop(n->ips[k].family, n->ips[k].addr, text, sizeof(text));
				fprintf(out, "caip=%u:%s/%u\n", n->ips[k].port, text,
					n->ips[k].prefix);
			}
			fprintf(out, "%s0x%016" PRIx64 "\n", guid_directive(n), n->node_guid);
			fprintf(out, "Ca\t%u \"%s\"\t\t# \"%s\"\n", n->num_ports, n->id, n->desc);
		}
		for (p = 1; p <= n->num_ports; p++) {
			const struct sib_fab_port *pt = &n->ports[p], *r = pt->peer;
			bool rsw;

			if (!r)
				continue;
			rsw = r->node->type == SIB_NODE_SWITCH;
			if (sw)
				fprintf(out, "[%u]\t\"%s\"[%u]", p, r->node->id, r->num);
			else
				fprintf(out, "[%u](%016" PRIx64 ") \t\"%s\"[%u]", p, pt->guid,
					r->node->id, r->num);
			if (!rsw)
				fprintf(out, "%s(%016" PRIx64 ") ", sw ? "" : " ", r->guid);
			if (sw)
				fprintf(out, "\t\t# \"%s\" lid %u\n", r->node->desc, node_lid(r));
			else
				fprintf(out, "\t\t# lid %u lmc %u \"%s\" lid %u\n", pt->lid,
					pt->lmc, r->node->desc, node_lid(r));
		}
	}
	fflush(out);
	return ferror(out) ? -1 : 0;
}
