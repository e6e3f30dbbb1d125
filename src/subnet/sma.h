/* SPDX-License-Identifier: MIT */
/*
 * The agents of every node of the managed subnet: the SMA (IBA 1.4 vol 1,
 * 14.2.5 SM attributes; sma.c), the PMA (16.1; pma.c) and the built-in SM
 * of the default mode (sm_builtin.c).  They answer MADs the MAD router
 * hands them and change only the subnet state (subnet.h); what the host
 * must hear (a CA port changed, forwarding changed) goes through the
 * host's table (subnet_api.h).  Single-threaded: no locks.  docs/subnet.md.
 */
#ifndef SIB_SUBNET_SMA_H
#define SIB_SUBNET_SMA_H

#include <stdbool.h>
#include <stdint.h>

#include "softib/mai.h"
#include "subnet/subnet.h"

struct sib_subnet;

/* What the agents counted (status report, tests). */
struct sib_sma_counters {
	uint64_t smps, gmps;            /* requests answered */
	uint64_t dropped;               /* no reply: not a request, bad class, ... */
	uint64_t bad_version;           /* answered 0x0004 */
	uint64_t unsupported;           /* answered 0x0008 or 0x000C */
	uint64_t invalid_field;         /* answered 0x001C */
	uint64_t m_key_violations;      /* dropped by the M_Key check (14.2.4) */
	uint64_t traps_sent, traps_unsent; /* unsent: no master SM LID or no mad_out */
	uint64_t trap_represses;        /* TrapRepress consumed */
	uint64_t train_failed;          /* links left Polling: no common width/speed */
	uint64_t sm_traps;              /* traps the built-in SM repressed (default mode) */
	uint64_t sa_answers;            /* SA requests answered with status 0 (sa_agent.c) */
	uint64_t sa_errors;             /* SA requests answered with a non-zero status */
	uint64_t sa_dropped;            /* SA MADs not answered: responses, RMPP segments, bad */
};

/*
 * The SMA of node n answering the 256-byte SMP req (class 0x01 or 0x81)
 * that came in on in_port (a switch's SMA answers for the whole node, as
 * port 0; NodeInfo.LocalPortNum and PortInfo.LocalPortNum give in_port).
 * Returns 1: resp holds the reply (req with the attribute, mad_make_reply
 * applied); 0: no reply (a response, a TrapRepress, a Trap, an M_Key
 * mismatch or a MAD that is no SMP), counted.  In default mode the port with
 * LID SIB_SM_LID is the built-in SM's: it also answers SMInfo Get and
 * represses a Trap (resp = the TrapRepress, counted in sm_traps).  Status: 0x0004 bad base/class version,
 * 0x0008 method, 0x000C attribute (or Set of a read-only one), 0x001C a bad
 * attribute modifier or field value (nothing is changed then).  Set side
 * effects (LIDs, port states, LFTs, the verbs map, events, traps) happen
 * inside.  req and resp may be the same buffer.
 */
int sib_sma_process(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t in_port,
		     const uint8_t *req, uint8_t *resp);

/* The PMA (class 0x04) of node n, as sib_sma_process (16.1.3, 16.1.4):
 * ClassPortInfo, PortCounters (Get; Set clears per CounterSelect),
 * PortCountersExtended (Get; Set clears); PortSelect 0xFF sums all ports. */
int sib_pma_process(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t in_port,
		     const uint8_t *req, uint8_t *resp);

/*
 * Turn cap_bits of port's PortInfo.CapabilityMask on or off (IsSM when an
 * SM opens the ISSM device of that port, 14.2.5.6); a change sends trap 144
 * to the master SM (14.2.5.1) and is published like any port change.
 * Port 0 of a CA or a port beyond num_ports is ignored.
 */
void sib_sma_set_capability(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port,
			     uint32_t cap_bits, bool on);

/* ---- the port state machine (IBA 7.2, 14.2.5.6), also used by the
 * registry's `softib port DEV PORT down|up` ---- */

/*
 * Why a link goes down, which decides LinkDownedCounter (IBA 16.1.3.5: the
 * links the port's training state machine downed after link error
 * recovery failed; not a port its SMA was told to take down, nor the
 * retrain such an order starts).  A fresh port counts 0.
 */
enum sib_link_cause {
	SIB_LINK_LOST,		/* a pulled cable (`softib port down`), a removed
				 * device: PortPhysicalState Disabled here, both ends count */
	SIB_LINK_DISABLED,	/* a Set of PortPhysicalState Disabled (3): only the
				 * peer, whose link failed, counts */
	SIB_LINK_RETRAIN,	/* a Set of PortState Down or PortPhysicalState Polling
				 * (OpenSM's op-VL/MTU change, `ibportstate reset`): the
				 * link retrains at once, neither end counts */
};

/*
 * Take the link of port pn of n down (SIB_LINK_LOST and _DISABLED:
 * PortPhysicalState Disabled; SIB_LINK_RETRAIN: the link retrains at once)
 * or bring a disabled one back (sib_sma_link_up: Polling, then LinkUp and
 * INIT at both ends when the peer is not disabled).  Both ends change;
 * switches among them set SwitchInfo.PortStateChange and send trap 128;
 * CA ports are published.
 */
void sib_sma_link_down(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn, enum sib_link_cause why);
void sib_sma_link_up(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn);

/* What changed on a port (the host's port_changed, subnet_api.h). */
#define SIB_CHG_LID    0x1u   /* base LID or LMC */
#define SIB_CHG_SM     0x2u   /* MasterSMLID or MasterSMSL */
#define SIB_CHG_STATE  0x4u   /* PortState or PortPhysicalState */
#define SIB_CHG_ATTR   0x8u   /* anything else verbs shows (MTU, P_Keys, caps, ...) */

/* ---- the built-in SM (sm_builtin.c) ---- */

/*
 * The default mode's subnet manager, as a sweep of a real SM: discovery by
 * directed route from its port (the one with LID SIB_SM_LID), then every
 * change a Set SMP through the MAD router to the node's SMA: LIDs in
 * sib_fabric_assign_lids order, MasterSMLID SIB_SM_LID, min-hop LFTs,
 * MFTs that take every MLID to every CA port but the SA's groups' (to their
 * members only), every linked port ACTIVE; then the IPoIB broadcast groups.
 * Nodes discovery does not reach are left alone.  Runs at start and after
 * a link comes up.  0 or -errno (-ENOMEM; -EIO: an SMP went unanswered or a
 * Set was refused, a bug).
 */
int sib_sm_sweep(struct sib_subnet *sn);

/* The router's delivery to the built-in SM (channel SIB_MAD_CHAN_SM): a
 * response m arriving at (n, port); kept if it answers the SMP in flight. */
void sib_sm_receive(struct sib_subnet *sn, const struct sib_fab_node *n, uint8_t port,
		    const mai_mad_t *m);

/* ---- the built-in SM's SA (sa_agent.c; docs/subnet.md "The SA") ---- */

/* Is (n, port) where the SA lives: the built-in SM's port, default mode
 * only (with --sm external the external SM's own SA answers). */
bool sib_sa_at(const struct sib_subnet *sn, const struct sib_fab_node *n, uint8_t port);

/*
 * The SA (IBA 15) answering the 256-byte SubnAdm request req, from
 * req_lid.  Serves ClassPortInfo (Get), NodeRecord, PortInfoRecord,
 * PathRecord, LinkRecord, SwitchInfoRecord and GUIDInfoRecord (Get and
 * GetTable, ComponentMask matching), MCMemberRecord (also Set: join,
 * Delete: leave; sa_mcast.c).  Returns 1 with
 * out[0..*len) the whole answer: for Get/Set one 256-byte MAD (GetResp),
 * for GetTable a message of 56 header bytes and the records, RMPP Active,
 * that the caller cuts into segments (sa_rmpp_build_seg, IBA 13.6);
 * statuses as OpenSM's (0x0300 no records, 0x0400 too many for a Get,
 * 0x0100 more than cap, 0x000C attribute, 0x0008 method, 0x0004 class
 * version).  Returns 0 (no answer, counted in sa_dropped) for a response,
 * a Send or Trap (no response exists), an RMPP-active request (multi-MAD requests are not taken yet) or a MAD
 * that is no SA MAD.  cap >= 256; MAD_SA_HDR_SIZE + SA_RMPP_MAX_DATA holds
 * any table.
 */
int sib_sa_process(struct sib_subnet *sn, const uint8_t *req, uint16_t req_lid, uint8_t *out,
		   size_t cap, size_t *len);

/* ---- the SA's multicast groups (sa_mcast.c; IBA 15.2.5.17) ---- */

/* Create the IPoIB broadcast group of each partition of the SM's port if
 * it is not there (after every sweep).  0, or -1 without memory or MLIDs. */
int sib_sa_mcast_init(struct sib_subnet *sn);
/* Forget every group (the fabric is unloaded). */
void sib_sa_mcast_free(struct sib_subnet *sn);
/* Is mlid an SA group's (then its MFT entries follow its members)? */
bool sib_sa_mcast_group(const struct sib_subnet *sn, uint16_t mlid);
/* Member i of mlid's group: its port, whether it receives (JoinState
 * FullMember or NonMember; the send-only ones only send).  Returns the
 * group's member count, 0 when i is past it or there is no such group. */
unsigned int sib_sa_mcast_members(const struct sib_subnet *sn, uint16_t mlid, unsigned int i,
				  struct sib_fab_node **node, uint8_t *port, bool *receives);
/* The built-in SM reprograms mlid's MFT entries in every switch from its
 * group's members (none: nowhere; no group: every CA port), by Set
 * MulticastForwardingTable SMPs through the router (sm_builtin.c). */
void sib_sm_mcast_update(struct sib_subnet *sn, uint16_t mlid);

/* Get / Set PortInfo of port pn of n as a local management tool does: a
 * DR SMP of hop count 0 from that port itself, through the MAD router to
 * the node's SMA (IBA 14.2.2.2: the SMI loops it back).  For a Set, *pi is the whole attribute (PortState 0 and
 * PortPhysicalState 0 change nothing); on return it holds the reply.
 * 0, or the reply's MAD status (-1: no reply). */
int sib_sm_get_port_info(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn,
			  struct mad_port_info *pi);
int sib_sm_set_port_info(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn,
			  struct mad_port_info *pi);

#endif
