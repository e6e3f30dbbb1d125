/* SPDX-License-Identifier: MIT */
/*
 * The managed subnet: what each node's SMA and PMA hold (IBA 1.4 vol 1,
 * 14.2.5 SM attributes, 16.1 PMA) on top of the fabric model (fabric.h),
 * and LID routing through the switches' linear forwarding tables (IBA
 * 18.2.4.3.2 LinearFDB).  The subnet layer's state (src/subnet): the SMA
 * and PMA tables (sma.c, pma.c) are its only writers; the MAD router and
 * the host (softibd's map writer, fabmap.c) read it.  Pure data and
 * functions over it: no I/O, no locks (single-threaded), every index from
 * a MAD is bounds-checked.
 *
 * This header is the contract between the parts of issue 7 (docs/subnet.md):
 *  - subnet.c: storage, defaults, sib_subnet_route();
 *  - sma.c/pma.c: attribute tables {attribute, methods, size, get, set};
 *  - mad_router.c: QP0/QP1 delivery (directed route and LID routed);
 *  - the data path asks softibd (SIB_CTL_ROUTE), which asks sib_subnet_route().
 */
#ifndef SIB_SUBNET_SUBNET_H
#define SIB_SUBNET_SUBNET_H

#include <stdbool.h>
#include <stdint.h>

#include "subnet/fabric.h"
#include "iba/mad.h"

#define SIB_SUBN_LFT_CAP   0xC000u  /* SwitchInfo.LinearFDBCap: LIDs 0..0xBFFF */
#define SIB_SUBN_MAX_HOPS  255u     /* LID-routing loop guard (no IBA limit; ibsim's 16 is a gap) */

#define SIB_SUBN_PKEYS     32u      /* NodeInfo.PartitionCap: one P_KeyTable block */

/*
 * PMA counters of one port (IBA 16.1.3.5 PortCounters, 16.1.4.6
 * PortCountersExtended), kept 64-bit; PortCounters reads saturate them to
 * its widths.  Data counts are in 4-byte words (PortXmitData/PortRcvData).
 * What softibd moves itself (MADs) is counted here directly; what the
 * clients' data path moves is added on read from the contexts' counters
 * (pma.c), less `base` taken when a Set cleared them.
 */
struct sib_pma_counters {
	uint64_t xmit_data, rcv_data, xmit_pkts, rcv_pkts;
	uint64_t ucast_xmit_pkts, ucast_rcv_pkts, mcast_xmit_pkts, mcast_rcv_pkts;
	uint64_t symbol_errors, link_error_recovery, link_downed;
	uint64_t rcv_errors, rcv_remote_physical_errors, rcv_switch_relay_errors;
	uint64_t xmit_discards, xmit_constraint_errors, rcv_constraint_errors;
	uint64_t local_link_integrity_errors, excessive_buffer_overrun_errors;
	uint64_t vl15_dropped, qp1_dropped, xmit_wait;
};

/* One port's management state: what its SMA answers (14.2.5). */
struct sib_port_mgmt {
	struct mad_port_info pi;       /* authoritative PortInfo (LID, LMC, state, ...);
	                                  sib_fab_port.lid/lmc are kept equal to it */
	uint16_t pkey[SIB_SUBN_PKEYS]; /* P_KeyTable */
	uint8_t sl2vl[16];             /* CA port: SLtoVLMappingTable; switches use
	                                  sib_switch_mgmt.sl2vl */
	struct mad_vl_arb vlarb[4];    /* VLArbitrationTable blocks 1..4 */
	struct sib_pma_counters pma;   /* counted by softibd */
	struct sib_pma_counters base;  /* values at the last clearing Set */
};

/* A switch's own tables (14.2.5.4, 14.2.5.10, 14.2.5.12, 14.2.5.8). */
struct sib_switch_mgmt {
	struct mad_switch_info si;
	uint8_t *lft;          /* SIB_SUBN_LFT_CAP egress ports, 0xFF = none; NULL
	                          until the first LFT Set (reads as all 0xFF) */
	uint16_t *mft;         /* MulticastFDBCap MLIDs x positions (16 ports each):
	                          mask of ports 16p..16p+15 for MLID m at
	                          mft[(m - 0xC000) * sib_subnet_mft_positions(n) + p];
	                          NULL until the first MFT Set (reads as all 0) */
	uint8_t *sl2vl;        /* (num_ports + 1)^2 tables of 16: [in][out][sl];
	                          NULL until the first SLtoVL Set (reads as
	                          port[0].sl2vl, the default SL -> SL mod 8) */
	uint64_t mcast_walk;   /* sib_subnet_mcast_route: the walk that last visited it */
};

/* MFT positions of switch n: ports 0..NumPorts in masks of 16 (14.2.5.12). */
static inline unsigned int sib_subnet_mft_positions(const struct sib_fab_node *n)
{
	return n->num_ports / 16u + 1u;
}

/* Hung off sib_fab_node.mgmt by sib_subnet_init(). */
struct sib_node_mgmt {
	struct sib_port_mgmt *port;    /* num_ports + 1 entries; [0] = switch port 0 */
	struct sib_switch_mgmt *sw;    /* switches only */
	uint32_t route_gen;            /* bumped when this node's LFT or port states change */
	/* the built-in SM's record of the node (sm_builtin.c), not SMA state:
	 * the directed route its last discovery reached it by */
	uint32_t sm_seen;              /* = sib_sm_agent.sweeps: found by the last discovery */
	uint8_t sm_hops;               /* DR HopCount from the SM's port (0: the SM's node) */
	uint8_t sm_path[MAD_DR_MAX_HOPS]; /* InitialPath[0..sm_hops] */
};

/*
 * Why sib_subnet_route() stopped (the drop causes are counted by whoever
 * asked: the PMA port counters of the port named in struct sib_route.at).
 */
enum sib_route_verdict {
	SIB_ROUTE_OK = 0,          /* .node/.port: the CA port or switch port 0 owning dlid */
	SIB_ROUTE_BAD_LID,         /* dlid 0, multicast (>= 0xC000) or permissive */
	SIB_ROUTE_SRC_DOWN,        /* the source port may not send (state, link) */
	SIB_ROUTE_LINK_DOWN,       /* a link on the way has no peer or is not LinkUp */
	SIB_ROUTE_LFT_MISS,        /* a switch LFT entry is unprogrammed (0xFF) or
	                              names a port that does not exist */
	SIB_ROUTE_PORT_STATE,      /* a port on the way is not in a state that passes
	                              this traffic (data: ACTIVE; VL15: >= INIT) */
	SIB_ROUTE_NO_OWNER,        /* reached a CA port whose LID range lacks dlid */
	SIB_ROUTE_LOOP,            /* more than SIB_SUBN_MAX_HOPS switches */
};

/* The result of routing one LID-routed packet. */
struct sib_route {
	enum sib_route_verdict verdict;
	struct sib_fab_node *node;  /* OK: destination node */
	uint8_t port;               /* OK: destination port (0 = switch port 0) */
	uint16_t hops;              /* links crossed */
	struct sib_fab_node *at;    /* drop: the node where the packet was dropped */
	uint8_t at_port;            /* drop: its port (egress, or ingress for NO_OWNER) */
};

/* Allocate and fill every node's management state with the defaults a
 * freshly powered fabric has (ports LinkUp/INIT or Polling/DOWN, LID 0,
 * empty LFTs).  0 or -ENOMEM. */
int sib_subnet_init(struct sib_fabric *f);
void sib_subnet_free(struct sib_fabric *f);

/* The same for one node (a CA added at run time; a no-op if n->mgmt is
 * set) and its release (n->mgmt NULL after).  0 or -ENOMEM. */
int sib_subnet_node_init(struct sib_fab_node *n);
void sib_subnet_node_free(struct sib_fab_node *n);

/* Does the port with PortInfo pi own lid (LID .. LID + 2^LMC - 1, LID != 0)? */
bool sib_subnet_owns(const struct mad_port_info *pi, uint16_t lid);

/*
 * Route a packet to dlid leaving node src by port src_port (a CA port 1..n,
 * or 0 on a switch: the switch's own port 0 sends, e.g. a trap), following
 * each switch's LFT (IBA 18.2.4.3.2).  vl15: an SMP on VL15, which needs the
 * links physically up and ports at least INIT; otherwise data, which needs
 * every egress port ACTIVE and every ingress port ARMED or ACTIVE
 * (IBA 7.2 port states; 18.2.4.1).  A dlid inside the source
 * port's own LID range routes to itself (hops 0).  Never fails otherwise:
 * every stop is a verdict.  A switch drops unicast DLIDs above its
 * LinearFDBTop (14.2.5.4) as LFT_MISS; an LFT entry 0 that is not the
 * switch's own LID is NO_OWNER at port 0.  .at_port of LFT_MISS is the
 * ingress port (there is no egress).
 */
/* The switch's LFT, allocated on first use with every entry MAD_LFT_NO_PATH
 * (0xFF); NULL without memory.  SIB_SUBN_LFT_CAP entries. */
uint8_t *sib_subnet_lft(struct sib_switch_mgmt *sw);

/* One LFT entry: lid -> egress port, LinearFDBTop raised to cover lid (the
 * tests' and a sweep's way to program one LID).  0 or -ENOMEM. */
int sib_subnet_lft_entry_set(struct sib_switch_mgmt *sw, uint16_t lid, uint8_t port);

struct sib_route sib_subnet_route(const struct sib_fabric *f, const struct sib_fab_node *src,
				  uint8_t src_port, uint16_t dlid, bool vl15);

/*
 * The CA ports a multicast packet from CA port (src, port) to mlid
 * (>= 0xC000) reaches through the switches' MFTs (IBA 18.2.4.3.3): every
 * switch forwards to the ports of its entry except the one it came in on,
 * each switch once (a loop in the tables ends there), over links ACTIVE at
 * both ends.  reach(ctx, n, port) is called for each CA port reached, the
 * source port first (local loopback of the sender's own members).  0 or a
 * verdict (SIB_ROUTE_SRC_DOWN; SIB_ROUTE_LOOP: no memory, nobody else
 * reached).  Stamps sib_switch_mgmt.mcast_walk.
 */
int sib_subnet_mcast_route(const struct sib_fabric *f, const struct sib_fab_node *src,
			   uint8_t port, uint16_t mlid,
			   void (*reach)(void *ctx, const struct sib_fab_node *n, uint8_t port),
			   void *ctx);

/* Short name of a verdict ("ok", "lft_miss", ...) for logs and counters. */
const char *sib_route_verdict_str(enum sib_route_verdict v);

#endif
