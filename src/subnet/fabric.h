/* SPDX-License-Identifier: MIT */
/*
 * The fabric model of softibd: nodes (CAs and switches), their ports and the
 * links between them, loaded from a topology file in the text format that
 * ibnetdiscover prints and ibsim reads (subset documented in docs/topology.md).
 *
 * Pure data and parsing: no I/O besides reading the topology file, no locks.
 */
#ifndef SIB_FABRIC_H
#define SIB_FABRIC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Limits of the parser (docs/topology.md). */
/* A full subnet fits: 49,151 unicast LIDs (one per CA port or switch). */
#define SIB_FAB_MAX_NODES        65536
#define SIB_FAB_MAX_NODE_PORTS   254       /* ports per node, 1..254 */
#define SIB_FAB_MAX_TOTAL_PORTS  1048576   /* sum over nodes of ports + 1 */
#define SIB_FAB_MAX_LINE         4096      /* bytes per line, without EOL */
#define SIB_FAB_MAX_FILE         (64u << 20)

/* NodeInfo defaults when the file has no vendid=/devid= (docs/topology.md). */
#define SIB_FAB_VENDOR_ID        0x5eed00  /* 24 bits; = the GUID prefix */
#define SIB_FAB_CA_DEVICE_ID     0x0001
#define SIB_FAB_SWITCH_DEVICE_ID 0x0002
#define SIB_FAB_GUID_PREFIX      0x5eed000000000000ull

/* IBA NodeInfo:NodeType (IBA 1.4 vol 1, 14.2.5.3). */
enum sib_node_type {
	SIB_NODE_CA = 1,
	SIB_NODE_SWITCH = 2,
	SIB_NODE_ROUTER = 3,
};

struct sib_fab_node;
struct sib_node_mgmt; /* subnet.h: SMA/PMA state, owned by subnet.c */

struct sib_fab_port {
	struct sib_fab_node *node;
	uint8_t num;                 /* 0 = switch management port */
	struct sib_fab_port *peer;   /* the other end of the link, or NULL */
	uint64_t guid;               /* port GUID (CA ports; switch port 0) */
	uint16_t lid;                /* base LID, 0 = none */
	uint8_t lmc;
};

/* An IP address the topology gives a CA port (a `caip=` line,
 * docs/topology.md); softibd puts it in the rdma_cm's table (cma.h). */
#define SIB_FAB_MAX_NODE_IPS     16        /* caip= lines per CA */
struct sib_fab_ip {
	uint8_t port;                /* 1..num_ports */
	uint8_t prefix;              /* prefix length, <= 32 (IPv4) or 128 */
	uint16_t family;             /* AF_INET or AF_INET6 */
	uint8_t addr[16];            /* network order; IPv4 in addr[0..3] */
};

struct sib_fab_node {
	enum sib_node_type type;
	uint64_t node_guid;
	uint64_t sys_image_guid;
	uint32_t vendor_id;
	uint32_t device_id;
	char id[80];                 /* the quoted name in the file, e.g. "H-5eed000000000010" */
	char desc[65];               /* NodeDescription (the `# "..."` comment) */
	char dev_name[64];           /* CAs: verbs device name, softib0, softib1, ... */
	uint8_t num_ports;
	struct sib_fab_port *ports;  /* num_ports + 1 entries; [0] is port 0 */
	struct sib_node_mgmt *mgmt;  /* sib_subnet_init(); the parser leaves it NULL */
	struct sib_fab_ip *ips;      /* CAs: caip= addresses, n_ips of them (NULL: none) */
	uint8_t n_ips;
};

struct sib_fabric {
	struct sib_fab_node **nodes;
	unsigned int n_nodes;
	unsigned int n_cas;
};

/*
 * Parse a topology text into *f (zeroed by the caller).  `origin` names the
 * text in errors ("file.topo").  Returns 0, or -1 with a message
 * "origin:line: what" in err.
 */
int sib_fabric_parse(struct sib_fabric *f, const char *text, const char *origin,
		     char *err, size_t errlen);

/* Read and parse a topology file.  Returns 0 or -1 with err set. */
int sib_fabric_load_file(struct sib_fabric *f, const char *path, char *err, size_t errlen);

/* The embedded default topology text: one 8-port switch, four 1-port CAs. */
const char *sib_fabric_default_topology(void);

/*
 * Give LIDs to every switch (port 0) and every connected CA port, in file
 * order starting at 1, as a subnet manager's first sweep would.
 */
void sib_fabric_assign_lids(struct sib_fabric *f);

struct sib_fab_node *sib_fabric_find_guid(const struct sib_fabric *f, uint64_t node_guid);

void sib_fabric_free(struct sib_fabric *f);

/*
 * Print the fabric in ibnetdiscover's format (nodes in fabric order, every
 * link from both ends, current LIDs in the comments), such that parsing the
 * output gives back the same fabric.  Returns 0, or -1 if the stream failed.
 */
int sib_fabric_write(const struct sib_fabric *f, FILE *out);

#endif
