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
	bool echo;			/* an error answer carries echo_data (OpenSM's
					 * InformInfo errors: the request, Subscribe 0) */
	uint8_t echo_data[MAD_SA_DATA_SIZE];
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

/* ---- the SA's own records (sa_service.c, sa_inform.c) ---- */

struct sa_svc;
struct sa_sub;
struct sa_report;
struct sa_trap_age;

/*
 * What the SA keeps besides the groups, hung off them (sa_mcast.c made
 * it; freed with them): ServiceRecords, InformInfo subscriptions, Reports
 * waiting for their ReportResp, the end ports in service at the last
 * sweep (by port GUID, sorted), the host's clock.
 */
struct sa_db {
	uint64_t now_ns;		/* the last sib_sa_tick's time (0: never) */
	struct sa_svc *svc;		/* newest first, as OpenSM lists them */
	unsigned int nsvc;
	struct sa_sub *sub;		/* newest first */
	unsigned int nsub;
	struct sa_report *rep;		/* newest first */
	struct sa_report *rep_oldest;	/* the list's last */
	unsigned int nrep;
	uint32_t report_tid;		/* low 32 bits of the last Report's TID */
	void *in_service;		/* sa_inform.c's: GUIDs and LinkDowned counts */
	unsigned int nin;
	bool swept;			/* in_service holds a sweep's set */
	uint64_t sm_traps;		/* sm_traps - traps_suppressed at the last tick */
	struct sa_trap_age *trap_age;	/* sa_inform.c's trap aging (SA_TRAP_AGE_MAX) */
	unsigned int ntrap_age;
	struct sib_sa_counters ctr;	/* subnet_api.h */
};

/* The SA's records of sn (made on first use; NULL without memory). */
struct sa_db *sa_db(struct sib_subnet *sn);
/* Free what db holds (sa_service.c, sa_inform.c); db itself is the caller's. */
void sa_service_free(struct sa_db *db);
void sa_inform_free(struct sa_db *db);

/* The end port owning LID lid / whose port GUID is guid (CA ports
 * 1..N, switch port 0; by GUID also a port without a LID). */
bool sa_port_by_lid(struct sib_subnet *sn, uint16_t lid, struct sib_fab_node **n, uint8_t *pn);
bool sa_port_by_guid(struct sib_subnet *sn, uint64_t guid, struct sib_fab_node **n, uint8_t *pn);
/* Do two end ports share a partition, one of them at least a full member
 * (OpenSM's osm_physp_share_pkey)? */
bool sa_share_pkey(const struct sib_fab_node *a, uint8_t ap, const struct sib_fab_node *b,
		   uint8_t bp);

/* ServiceRecord (15.2.5.14): Set, Delete, Get, GetTable. */
uint16_t sa_service(struct sa_req *q);
/* Expire the leases run out at db->now_ns; the next expiry (0: none). */
uint64_t sa_service_tick(struct sa_db *db);

/* InformInfo (13.4.8.3) Set and InformInfoRecord (15.2.5.12) Get/GetTable. */
uint16_t sa_inform(struct sa_req *q);
uint16_t sa_inform_record(struct sa_req *q);

/* Traps the SM issues (IBA 13.4.8.2 table 119, 14.4.4): 64 GID in
 * service, 65 out of service (gid: the port's), 66 MGID created, 67
 * deleted (gid: the MGID, pkey the group's), reported to each matching
 * subscriber as OpenSM's osm_report_notice does. */
#define SA_TRAP_GID_IN		64
#define SA_TRAP_GID_OUT		65
#define SA_TRAP_MGID_CREATED	66
#define SA_TRAP_MGID_DELETED	67
void sa_notice(struct sib_subnet *sn, uint16_t trap, const uint8_t gid[16], uint16_t pkey);

/* sm_builtin.c's hooks: after a sweep brought ports up, the ports in and
 * out of service (traps 64, 65; memberships and subscriptions of the
 * ports gone): true if a group's members changed (MFTs to reprogram);
 * a ReportResp that came back to the SM's channel. */
bool sib_sa_sweep(struct sib_subnet *sn);
/* sma.c's hook: the built-in SM's port took a Trap(Notice) SMP (mad: 256
 * bytes), answered with TrapRepress: forwarded to the InformInfo
 * subscribers as OpenSM's trap receiver does (sa_inform.c; repeats
 * suppressed, 129-131 kept back). */
void sib_sa_trap(struct sib_subnet *sn, const uint8_t *mad);
void sib_sa_report_resp(struct sib_subnet *sn, const mai_mad_t *m);
/* Memberships of ports no longer in the fabric (a CA removed since the
 * last sweep) go, before MFTs are computed from them (no MFT is sent). */
void sib_sa_mcast_refresh(struct sib_subnet *sn);

/* sa_mcast.c: every membership of a port whose GUID is not in in[0..nin)
 * (sorted) leaves; a group left empty goes (but the SM's).  true if a
 * group's members changed (the caller reprograms the MFTs). */
bool sa_mcast_ports_left(struct sib_subnet *sn, const uint64_t *in, unsigned int nin);

#endif
