/* SPDX-License-Identifier: MIT */
/*
 * Shared memory published by softibd: the fabric map.
 *
 * softibd owns and is the only writer of this map (a memfd handed to each
 * client on HELLO).  It is sealed with F_SEAL_FUTURE_WRITE before any
 * client sees it: clients can only map it PROT_READ, and a store faults in
 * the storing process.  softibd keeps its own state privately and only
 * writes it here; it never reads the map back (DESIGN principle 6).
 * Clients read it on the data path without any system call: port
 * attributes, LID -> port, QPN -> owning inbox and XRC domain.  Entries
 * that change while clients run (qp_owner, qp_xrcd, inbox gen) are single
 * 64/32-bit atomics written with release and read with acquire; port
 * attributes change under the seqlock `port_seq`, read with a bounded
 * number of tries (common/fabric_view.h).  Counters a client keeps are not in here.
 *
 * Changing any struct in this file changes SIB_ABI_VERSION (sib_ctl.h).
 */
#ifndef SIB_SHM_H
#define SIB_SHM_H

#include <stdatomic.h>
#include <stdint.h>

#define SIB_SHM_MAGIC      0x53494246u /* "SIBF" */
#define SIB_MAX_DEVICES    64          /* CA nodes (verbs devices) */
#define SIB_MAX_PORTS      2           /* ports per CA */
#define SIB_MAX_INBOXES    256         /* opened device contexts, fabric-wide */
#define SIB_MAX_QPN        65536       /* QPNs 2..65535 are handed out */
#define SIB_PKEY_TBL_LEN   16
#define SIB_GID_TBL_LEN    128         /* as a real port's; only index 0 holds a GID */
#define SIB_UNICAST_LIDS   0xC000      /* LIDs 1..0xBFFF are unicast */
#define SIB_DEV_NAME_MAX   64
#define SIB_MCAST_LID_MIN  0xC000      /* multicast LIDs 0xC000..0xFFFE (0xFFFF: permissive) */
#define SIB_MCAST_LIDS     0x3FFF
#define SIB_MAX_MCAST_GRP  256         /* groups fabric-wide (max_mcast_grp) */
#define SIB_MAX_MCAST_QP_ATTACH 64     /* QPs per group (max_mcast_qp_attach) */

/*
 * Inboxes: one memfd of SIB_INBOX_BYTES (one page) per opened device
 * context, created zero-filled by softibd: the context's doorbell (the
 * futex its senders wake, src/link/ring.h struct sib_ring_hdr) and its
 * link counters.  Packets travel in pair rings (src/link/pair.h), one per
 * (sender, receiver) context pair.  Capture rings (SIB_RING_BYTES) are
 * multi-producer rings of SIB_INBOX_SLOTS slots (src/link/ring.h).
 */
#define SIB_INBOX_SLOTS      1024u
#define SIB_INBOX_SLOT_BYTES 4608u   /* one packet up to MTU 4096 + headers */
#define SIB_INBOX_HDR_BYTES  4096u
#define SIB_INBOX_BYTES      SIB_INBOX_HDR_BYTES
#define SIB_RING_BYTES       (SIB_INBOX_HDR_BYTES + SIB_INBOX_SLOTS * SIB_INBOX_SLOT_BYTES)
/* A pair ring (src/link/pair.h): a header page and SIB_PAIR_SLOTS slots. */
#define SIB_PAIR_SLOTS       512u
#define SIB_PAIR_HDR_BYTES   4096u
#define SIB_PAIR_BYTES       (SIB_PAIR_HDR_BYTES + SIB_PAIR_SLOTS * SIB_INBOX_SLOT_BYTES)

/* One CA port, as the SMA of that port would report it (IBA 14.2.5.6). */
struct sib_shm_port {
	uint64_t port_guid;
	uint64_t gid_prefix;       /* subnet prefix, host order */
	uint16_t lid;              /* base LID, 0 = unassigned */
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t state;             /* enum ibv_port_state; also read alone, atomically,
	                              by the data path: only ACTIVE passes packets */
	uint8_t phys_state;        /* 5 = LinkUp */
	uint8_t max_mtu;           /* enum ibv_mtu */
	uint8_t active_mtu;
	uint8_t active_width;      /* IBA encoding: 2 = 4X */
	uint8_t active_speed;      /* IBA encoding: 1 = SDR */
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t max_vl_num;
	uint8_t init_type_reply;
	uint8_t pad0;
	uint32_t cap_flags;        /* PortInfo:CapabilityMask */
	uint16_t pkey[SIB_PKEY_TBL_LEN];
};

/* Every device's firmware version: ibv_query_device's fw_ver (hca), the sysfs
 * fw_ver (verbs) and umad_get_ca's (softibd's MGMT_QUERY) report this one string. */
#define SIB_FW_VERSION "0.1.0"

/* One CA node: one verbs device (softib0, ...). */
struct sib_shm_device {
	char name[SIB_DEV_NAME_MAX];   /* verbs device name */
	char node_desc[64];            /* NodeDescription */
	uint64_t node_guid;
	uint64_t sys_image_guid;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	uint8_t num_ports;
	uint8_t pad[3];
	_Atomic uint32_t gen;          /* odd = registered; bumped on add and remove */
	struct sib_shm_port ports[SIB_MAX_PORTS]; /* ports[0] is port 1 */
};

/* An inbox: the receive ring of one opened device context. */
struct sib_shm_inbox_desc {
	_Atomic uint32_t gen;  /* odd = live; bumped on open and close */
	int32_t pid;           /* owner, for status */
	uint32_t dev_index;
	uint32_t pad;
};

/*
 * QP ownership word (qp_owner[qpn]): 0 = free, else
 *   bits 0..15  inbox index, bits 16..47 inbox gen, bits 48..55 dev index,
 *   bit 63 valid.
 */
#define SIB_QPO_VALID        (1ull << 63)
#define SIB_QPO_MAKE(inbox, gen, dev) \
	(SIB_QPO_VALID | (uint64_t)(inbox) | ((uint64_t)(gen) << 16) | ((uint64_t)(dev) << 48))
#define SIB_QPO_INBOX(w)     ((uint32_t)((w) & 0xffff))
#define SIB_QPO_GEN(w)       ((uint32_t)(((w) >> 16) & 0xffffffffu))
#define SIB_QPO_DEV(w)       ((uint32_t)(((w) >> 48) & 0xff))

/* LID map entry (lid_map[lid]): 0 = no port, else (dev_index << 8 | port_num). */
#define SIB_LIDM_MAKE(dev, port) ((uint16_t)(((dev) << 8) | (port)))

/*
 * Link configuration softibd pushes to clients (docs/link.md), one entry per
 * CA port, written only by softibd (src/daemon/linkcfg.c), read by each
 * context's link now and then (never per packet).
 *  cap: a capture ring armed for this port, SIB_LINK_CAP_MAKE(session, gen);
 *       0 = none.  Clients map it with SIB_CTL_GET_CAPTURE and copy every
 *       packet crossing the port into it.
 *  fault_*: the port's faults under the seqlock fault_seq (odd while
 *       softibd writes; 0 = never set); fault_flags 0 = no faults.
 */
#define SIB_LINK_CAP_MAKE(session, gen) ((((uint32_t)(session) + 1) << 24) | ((gen) & 0xffffffu))
#define SIB_LINK_CAP_SESSION(w)         (((w) >> 24) - 1)
#define SIB_LINK_FAULT_ACTIVE 0x1
#define SIB_LINK_FAULT_DOWN   0x2

struct sib_shm_link_port {
	_Atomic uint32_t cap;
	_Atomic uint32_t fault_seq;
	_Atomic uint64_t fault_seed;
	_Atomic uint32_t fault_ppm[4];  /* loss, dup, reorder, corrupt: per million packets */
	_Atomic uint32_t fault_delay_us;
	_Atomic uint32_t fault_flags;   /* SIB_LINK_FAULT_* */
};

/*
 * A multicast group (daemon/mcast.c is its only writer): the inboxes of
 * the contexts with at least one QP attached, each once.  A sender fans a
 * datagram to the group's MLID out to each of them; each context's
 * receive demux then hands it to its own attached QPs.  Read under the
 * seqlock `seq` (odd while softibd writes), with a bounded number of tries.
 */
struct sib_shm_mcast_member {
	uint32_t inbox, gen;       /* inbox index and the generation attached */
};
struct sib_shm_mcast_grp {
	_Atomic uint32_t seq;
	uint16_t mlid;             /* 0 = slot free */
	uint16_t nmembers;         /* <= SIB_MAX_MCAST_QP_ATTACH */
	uint8_t mgid[16];
	struct sib_shm_mcast_member members[SIB_MAX_MCAST_QP_ATTACH];
};

struct sib_fabric_shm {
	uint32_t magic;             /* SIB_SHM_MAGIC */
	uint32_t abi_version;       /* SIB_ABI_VERSION */
	uint32_t size;              /* bytes of this mapping */
	_Atomic uint32_t num_devices; /* devs[] slots ever used; present ones have gen odd */
	_Atomic uint32_t port_seq;  /* seqlock over ports[] and lid_map[] */
	/* Bumped (release) by softibd on every change that can move a
	 * LID-routed packet: an LFT or MFT entry, a LID, a port or link state
	 * (daemon/route.c).  Clients cache SIB_CTL_ROUTE answers while it
	 * keeps the value they were computed at: one load per packet. */
	_Atomic uint32_t route_gen;
	uint64_t daemon_pid;
	struct sib_shm_device devs[SIB_MAX_DEVICES];
	struct sib_shm_inbox_desc inboxes[SIB_MAX_INBOXES];
	_Atomic uint16_t lid_map[SIB_UNICAST_LIDS];
	_Atomic uint64_t qp_owner[SIB_MAX_QPN];
	/* XRC: the domain number (softibd's, XRCD_OPEN) of the XRC_RECV QP that
	 * holds QPN qpn; 0 = free or another QP type.  Stored before qp_owner
	 * (release) when the QPN is handed out, cleared after it when freed. */
	_Atomic uint32_t qp_xrcd[SIB_MAX_QPN];
	_Atomic uint16_t mlid_grp[SIB_MCAST_LIDS]; /* MLID - 0xC000 -> group slot + 1, 0 = none */
	struct sib_shm_mcast_grp mcast[SIB_MAX_MCAST_GRP];
	struct sib_shm_link_port link[SIB_MAX_DEVICES][SIB_MAX_PORTS]; /* keep last */
};

/* This process's read-only view of the fabric map (common/shm.c): set by
 * whoever maps it (the verbs library on HELLO, a test), read by the HCA. */
extern struct sib_fabric_shm *sib_fabric;

#endif
