/* SPDX-License-Identifier: MIT */
/*
 * Inside the built-in SM's SA (sa_agent.c, sa_mcast.c): the request being
 * answered and the helpers both files use to read the SM's database (the
 * subnet state) and to add matching records to an answer.  Included by
 * src/subnet/ files and tests only.
 */
#ifndef SIB_SUBNET_SA_INT_H
#define SIB_SUBNET_SA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iba/sa.h"
#include "subnet/subnet_int.h"

#define SA_SEL_EXACT	2	/* selectors (15.2.5.16): 0 >, 1 <, 2 =, 3 best */
#define SA_PKT_LIFE	18	/* PathRecord.PacketLifeTime: the subnet timeout */

/* One request being answered: the decoded SA header and the records. */
struct sa_req {
	struct sib_subnet *sn;
	const uint8_t *wire;		/* the request, 256 bytes */
	struct mad_sa sa;
	const struct sa_layout *l;	/* the record's layout */
	uint16_t req_lid;		/* the requester's LID (LRH.SLID) */
	uint8_t *out;			/* the answer: 56 + records */
	size_t cap;
	uint64_t skip;			/* ComponentMask bits the record's own code
					 * matched already (not by equality) */
	uint32_t count;			/* records in out */
	bool overflow;			/* more than cap: NO_RESOURCES */
};

/* A big-endian number of `bytes` bytes at p. */
uint64_t sa_be_get(const uint8_t *p, unsigned int bytes);

/* Append record rec (q->l->size bytes) to the answer if it matches the
 * request's ComponentMask (15.2.4.1; bits in q->skip excepted). */
void sa_add_record(struct sa_req *q, const uint8_t *rec);

/* PortInfo of port pn of n as the SMA holds it. */
const struct mad_port_info *sa_pinfo(const struct sib_fab_node *n, uint8_t pn);

/* Is port pn of n an end port the SM gave a LID (a CA port, switch port 0)? */
bool sa_endport(const struct sib_fab_node *n, uint8_t pn);

/* The GID of an end port: subnet prefix and port GUID (IBA 4.1.1). */
void sa_port_gid(const struct sib_fab_node *n, uint8_t pn, uint8_t gid[16]);

/* The MTU and rate (PathRecord codes) of the link leaving a port with
 * PortInfo pi, lowered into *mtu and *rate (0: nothing yet). */
void sa_link_min(const struct mad_port_info *pi, uint8_t *mtu, uint8_t *rate);

/* A 2-bit selector (0 >, 1 <, 2 =, 3 any) of want against have. */
bool sa_sel_ok(uint8_t sel, uint8_t want, uint8_t have);

/* Does port (n, pn)'s P_KeyTable hold partition pkey (low 15 bits)?
 * *full: as a full member (bit 15). */
bool sa_has_pkey(const struct sib_fab_node *n, uint8_t pn, uint16_t pkey, bool *full);

/* ---- sa_mcast.c: MCMemberRecord (15.2.5.17) and the groups ---- */

/* Set (join), Delete (leave), Get and GetTable of MCMemberRecords:
 * the status to answer with (records in q->out). */
uint16_t sa_mcmember(struct sa_req *q);

#endif
