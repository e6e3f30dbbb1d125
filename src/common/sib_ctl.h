/* SPDX-License-Identifier: MIT */
/*
 * softibd control protocol: the "uverbs" of softib (seed 003).
 *
 * Clients talk to softibd over a SOCK_SEQPACKET Unix socket.  Every message
 * is one fixed-layout struct sib_ctl_msg: a header plus one body per op.
 * Objects are named by small per-connection handles, never by pointers.
 * File descriptors (the fabric map and inboxes, both memfds) travel as
 * SCM_RIGHTS ancillary data on the reply.
 *
 * Changing any struct in this file changes SIB_ABI_VERSION.
 */
#ifndef SIB_CTL_H
#define SIB_CTL_H

#include <stdint.h>

#include "common/sib_ctl_cm.h"

#define SIB_ABI_VERSION 10u /* 2: sealed read-only map, no counters in it; 3: device
                               * generations, pushed events, registry commands;
                               * 4: link area in the fabric map, LINK_* ops;
                               * 5: multicast groups in the map, MCAST op;
                               * 6: XRC domains (XRCD_OPEN, SIB_OBJ_XRCD);
                               * 7: an XRC_RECV QP names its XRCD handle
                               *    (obj.xrcd_handle), qp_xrcd[] in the map;
                               * 8: the managed fabric (MAI_*, MGMT_QUERY, ROUTE);
                               * 9: pair rings (PAIR_OPEN, PAIR_ACCEPT), a
                               *    one-page inbox, GET_INBOX for pairs only;
                               * 10: rdma_cm (CM, CM_EVENT: sib_ctl_cm.h) */
#define SIB_CTL_MAGIC   0x53494243u /* "SIBC" */

/* Default socket path when SOFTIB_SOCKET is unset: $XDG_RUNTIME_DIR/softib.sock,
 * else /tmp/softib-<uid>/softib.sock (see sib_ctl_default_path()). */

enum sib_ctl_op {
	SIB_CTL_HELLO = 1,     /* -> fabric memfd */
	SIB_CTL_OPEN_DEVICE,   /* -> device handle, inbox index and memfd */
	SIB_CTL_CLOSE_DEVICE,
	SIB_CTL_GET_INBOX,     /* a paired receiver's inbox page (its doorbell): -> memfd */
	SIB_CTL_CREATE_OBJ,    /* PD, MR, CQ, QP, ...: -> handle (+ QPN) */
	SIB_CTL_DESTROY_OBJ,
	SIB_CTL_STATUS,        /* -> text report, in chunks */
	SIB_CTL_SHUTDOWN,      /* stop the daemon (tests, `softib stop`) */
	SIB_CTL_SUBSCRIBE,     /* this connection receives pushed EVENTs from now on */
	SIB_CTL_EVENT,         /* daemon -> client, unsolicited (never a request) */
	SIB_CTL_DEVICE_ADD,    /* `softib device add NAME`: -> dev index */
	SIB_CTL_DEVICE_REMOVE, /* `softib device remove NAME` */
	SIB_CTL_PORT_SET,      /* `softib port DEV PORT down|up` */
	SIB_CTL_LINK_CAPTURE,  /* arm a capture ring on ports: -> its memfd (`softib capture`) */
	SIB_CTL_GET_CAPTURE,   /* map an armed capture ring: -> memfd (clients' links) */
	SIB_CTL_LINK_FAULTS,   /* set or clear a port's faults (`softib fault`) */
	SIB_CTL_MCAST,         /* attach / detach a UD QP to a multicast group (daemon/mcast.c) */
	SIB_CTL_XRCD_OPEN,     /* open an XRC domain (+ the file's fd): -> handle, number */
	SIB_CTL_MAI_OPEN,      /* open a MAI channel on QP0/QP1 of a port: -> its fd (daemon/mai_chan.c) */
	SIB_CTL_MAI_FILTER,    /* create / delete a filter of a MAI channel */
	SIB_CTL_MGMT_QUERY,    /* CA and port attributes for libibumad (umad_get_ca, _port) */
	SIB_CTL_ROUTE,         /* data path: where a LID-routed packet from a port ends (subnet.h) */
	SIB_CTL_CAPABLE,       /* has this connection's process a capability now (daemon/peer.c) */
	SIB_CTL_PAIR_OPEN,     /* the pair ring from our context to another: -> memfd (link/pair.h) */
	SIB_CTL_PAIR_ACCEPT,   /* the next pair ring into our context: -> memfd + its sender */
	SIB_CTL_DX_PUT,        /* direct placement: give softibd a memfd to broker (daemon/dx.c) */
	SIB_CTL_DX_GET,        /* direct placement: a peer's memfd, for a QP that talks to it */
	SIB_CTL_CM,            /* an rdma_cm command (sib_ctl_cm.h, daemon/ucma.c) */
	SIB_CTL_CM_EVENT,      /* daemon -> an rdma_cm event channel, unsolicited */
	SIB_CTL_IPADDR,        /* add, delete, list a CA port's IP addresses (`softib ipoib ... add`) */
	SIB_CTL_OP_MAX,
};

/* Object types tracked per connection (also the status report columns). */
enum sib_obj_type {
	SIB_OBJ_PD = 1,
	SIB_OBJ_MR,
	SIB_OBJ_CQ,
	SIB_OBJ_QP,
	SIB_OBJ_SRQ,
	SIB_OBJ_AH,
	SIB_OBJ_COMP_CHANNEL,
	SIB_OBJ_XRCD,         /* an opener's handle on an XRC domain (XRCD_OPEN) */
	SIB_OBJ_TYPE_MAX,
};

/* Handles one connection (one process) may hold: its OPEN_DEVICE handles
 * and every object of CREATE_OBJ and XRCD_OPEN together; one more is
 * ENOMEM.  The HCA's max_* are computed from it (hca.h "Limits"). */
#define SIB_CTL_MAX_HANDLES 65536u

struct sib_ctl_hdr {
	uint32_t magic;   /* SIB_CTL_MAGIC */
	uint16_t op;      /* enum sib_ctl_op */
	uint16_t flags;   /* SIB_CTL_F_* */
	uint32_t seq;     /* echoed in the reply */
	int32_t status;   /* reply: 0 or a positive errno */
};

#define SIB_CTL_F_MORE 0x1 /* reply: more chunks follow (STATUS) */
/* daemon -> client, unasked, the first message of a connection softibd
 * refuses (then closes): hdr.status says why, EMFILE (the process holds
 * its share of connections) or ENFILE (softibd keeps the rest for new
 * clients); docs/daemon.md "Budgets".  Any op and seq. */
#define SIB_CTL_F_REFUSED 0x2

struct sib_ctl_hello {
	uint32_t abi_version; /* in and out */
	int32_t pid;          /* in */
	uint32_t fabric_size; /* out: bytes of the fabric memfd */
	uint32_t num_devices; /* out */
};

struct sib_ctl_open_device {
	uint32_t dev_index;   /* in: index in sib_fabric_shm.devs */
	uint32_t dev_gen;     /* in: devs[].gen seen by the client, else ENODEV */
	uint32_t handle;      /* out */
	uint32_t inbox;       /* out: inbox index */
	uint32_t inbox_gen;   /* out */
	uint32_t inbox_size;  /* out: bytes of the inbox memfd */
};

/* GET_INBOX: only for a context paired with it (PAIR_OPEN from
 * dev_handle to inbox), else EPERM: a sender maps its receiver's page
 * to wake it; nobody else maps anyone's. */
struct sib_ctl_get_inbox {
	uint32_t inbox;       /* in */
	uint32_t inbox_gen;   /* in: must match, else ESTALE */
	uint32_t inbox_size;  /* out */
	uint32_t dev_handle;  /* in: the asking context's OPEN_DEVICE handle */
};

/*
 * PAIR_OPEN: softibd makes a pair ring (link/pair.h) from the context of
 * dev_handle (the sender) to context `inbox` at inbox_gen (the receiver),
 * replies with the sender's end and keeps the receiver's until it asks
 * (PAIR_ACCEPT), bumping the receiver's pairs_seq.  ESTALE: no such live
 * context; EBADF: not our device; EAGAIN: the receiver has
 * SIB_CTL_PAIRS_PENDING_MAX rings it did not take yet (retry later).
 * PAIR_ACCEPT: the oldest ring made for the context of dev_handle, its
 * sender in inbox, inbox_gen; ENOENT when there is none.
 */
struct sib_ctl_pair {
	uint32_t dev_handle;  /* in: our OPEN_DEVICE handle */
	uint32_t inbox;       /* OPEN: in, the receiver; ACCEPT: out, the sender */
	uint32_t inbox_gen;   /* likewise */
	uint32_t ring_size;   /* out: SIB_PAIR_BYTES */
};
#define SIB_CTL_PAIRS_PENDING_MAX 64u

struct sib_ctl_obj {
	uint32_t type;        /* enum sib_obj_type */
	uint32_t dev_handle;  /* in: the owning OPEN_DEVICE handle */
	uint32_t handle;      /* out (CREATE) / in (DESTROY) */
	uint32_t qpn;         /* out for QPs: 24-bit QPN, unique per port */
	uint32_t qp_type;     /* in for QPs: enum ibv_qp_type */
	uint32_t xrcd_handle; /* in for XRC_RECV QPs: an XRCD handle of this connection
	                       * under the same device handle (XRCD_OPEN), else 0 */
};

/*
 * Pushed events (docs/events.md).  A connection that sent SUBSCRIBE gets one
 * SIB_CTL_EVENT message per event, in order, with hdr.seq counting that
 * connection's events from 1 (a gap never happens silently: lost events are
 * reported by one SIB_EV_OVERFLOW).  The daemon never blocks on a subscriber:
 * at most SIB_EV_QUEUE_MAX events wait for a slow one, the rest are dropped
 * and counted.  MAD receives (later issues) will be SIB_EV_MAD with the MAD
 * in a body after struct sib_ctl_event.
 */
enum sib_event_type {
	SIB_EV_PORT_CHANGE = 1, /* PortState or PortPhysicalState changed */
	SIB_EV_LID_CHANGE,      /* the port's base LID or LMC changed */
	SIB_EV_SM_CHANGE,       /* the port's SM LID or SL changed */
	SIB_EV_DEVICE_ADD,      /* a CA was registered (softib device add) */
	SIB_EV_DEVICE_REMOVE,   /* a CA was unregistered: DEVICE_FATAL for its users */
	SIB_EV_OVERFLOW,        /* `lost` events were dropped: re-read the fabric map */
	SIB_EV_MAD,             /* reserved: a MAD receive (QP0/QP1) */
	SIB_EV_TYPE_MAX,
};

#define SIB_EV_QUEUE_MAX 64 /* events queued in softibd per slow subscriber */

struct sib_ctl_subscribe {
	uint32_t abi_version; /* in: SIB_ABI_VERSION; out: the daemon's */
	uint32_t mask;        /* in: 1 << SIB_EV_* wanted, 0 = all */
};

/* One pushed event; the port fields are the state after the change. */
struct sib_ctl_event {
	uint32_t type;        /* enum sib_event_type */
	uint32_t dev_index;   /* index in sib_fabric_shm.devs */
	uint32_t dev_gen;     /* devs[].gen of the device the event is about */
	uint8_t port_num;     /* 1-based; 0 = the whole device */
	uint8_t state;        /* enum ibv_port_state */
	uint8_t phys_state;   /* PortPhysicalState (IBA 14.2.5.6) */
	uint8_t lmc;
	uint16_t lid, sm_lid;
	uint32_t lost;        /* OVERFLOW: events dropped before this one */
	char name[64];        /* device name (SIB_DEV_NAME_MAX) */
};

/* What PORT_SET does to a port. */
enum sib_port_action {
	SIB_PORT_DOWN = 0,    /* PortState DOWN, PortPhysicalState Disabled */
	SIB_PORT_UP,          /* ACTIVE, LinkUp (the port must have a LID) */
	SIB_PORT_LID,         /* base LID := value (a free unicast LID) */
	SIB_PORT_SM_LID,      /* SM LID := value (a unicast LID) */
	SIB_PORT_ACTION_MAX,
};

/* DEVICE_ADD, DEVICE_REMOVE and PORT_SET (admin commands, no HELLO needed). */
struct sib_ctl_dev_cmd {
	char name[64];        /* in: device name, NUL-terminated */
	uint32_t port_num;    /* in (PORT_SET): 1-based */
	uint32_t action;      /* in (PORT_SET): enum sib_port_action */
	uint32_t value;       /* in (PORT_SET): the LID for SIB_PORT_LID / _SM_LID */
	uint32_t dev_index;   /* out (DEVICE_ADD) */
	uint32_t dev_gen;     /* out (DEVICE_ADD) */
};

/* LINK_CAPTURE, GET_CAPTURE, LINK_FAULTS (docs/link.md). */
#define SIB_CTL_LINK_ALL   0xffffffffu /* dev_index: every device */
#define SIB_CTL_SPEC_MAX   256
struct sib_ctl_link {
	uint32_t dev_index;   /* in: index in sib_fabric_shm.devs, or SIB_CTL_LINK_ALL */
	uint32_t port;        /* in: port number, 0 = every port */
	uint32_t cap;         /* out (LINK_CAPTURE), in (GET_CAPTURE): SIB_LINK_CAP_MAKE word */
	uint32_t ring_size;   /* out: bytes of the capture ring memfd */
	char spec[SIB_CTL_SPEC_MAX]; /* in (LINK_FAULTS): SOFTIB_FAULTS syntax, "off" = none */
};

/* MCAST: ibv_attach_mcast / ibv_detach_mcast (IBA 11.3.1, 10.5.2.x). */
struct sib_ctl_mcast {
	uint32_t qp_handle;   /* in: a UD QP of this connection (CREATE_OBJ handle) */
	uint16_t mlid;        /* in: 0xC000..0xFFFE */
	uint16_t attach;      /* in: 1 attach, 0 detach */
	uint8_t mgid[16];     /* in: MGID (first byte 0xFF) */
};

/*
 * XRCD_OPEN (ibv_open_xrcd(3)): the domain of the file whose fd travels
 * as SCM_RIGHTS (has_fd 1; identified by its st_dev and st_ino, one
 * domain per device and file), or a new private one (has_fd 0).  The
 * handle is closed with DESTROY_OBJ; the domain goes with its last handle.
 */
struct sib_ctl_xrcd {
	uint32_t dev_handle;  /* in: the OPEN_DEVICE handle */
	uint32_t oflags;      /* in: O_CREAT | O_EXCL only */
	uint32_t has_fd;      /* in: 1 if an fd is passed */
	uint32_t handle;      /* out */
	uint32_t num;         /* out: the domain's number on the device, never 0 */
	uint32_t pad;
};

/*
 * MAI_OPEN (include/softib/mai.h mai_open, docs/mai.md "Channels"): a
 * channel on QP0 or QP1 of CA port (dev, port).  The reply passes one end
 * of a SOCK_SEQPACKET socketpair (the channel handle); messages on it are
 * mai_mmstream streams both ways (a client's may carry an 8-byte
 * mai_send_req trailer).  The channel ends when that fd or this
 * connection closes.  No HELLO needed; abi_version is checked instead.
 */
#define SIB_MAI_F_PRIV 0x1u /* out: the opener is privileged (uid 0 or CAP_NET_ADMIN) */
struct sib_ctl_mai_open {
	uint32_t abi_version; /* in: SIB_ABI_VERSION, else EPROTO */
	char dev[64];         /* in: verbs device name, NUL-terminated */
	uint32_t port;        /* in: 1-based CA port */
	uint32_t qp;          /* in: 0 (SMI) or 1 (GSI) */
	uint32_t chan;        /* out: channel number, TID bits 63..40 of its requests */
	uint32_t flags;       /* out: SIB_MAI_F_* */
};

/* MAI_FILTER: create or delete a filter of a channel this connection opened. */
enum sib_mai_filter_op {
	SIB_MAI_FILTER_CREATE = 1,
	SIB_MAI_FILTER_DELETE,
};
#define SIB_MAI_FSTREAM_MAX 120 /* >= MAI_FSTREAM_SIZE (114) */
struct sib_ctl_mai_filter {
	uint32_t chan;        /* in: the channel number MAI_OPEN gave */
	uint32_t op;          /* in: enum sib_mai_filter_op */
	uint32_t handle;      /* out (CREATE) / in (DELETE) */
	uint32_t len;         /* in (CREATE): bytes of fstream used */
	uint8_t fstream[SIB_MAI_FSTREAM_MAX]; /* in (CREATE): mai_mfstream's bytes */
};

/*
 * MGMT_QUERY (daemon/mgmt_query.c): what libibumad reads from sysfs on a
 * kernel stack, answered live from softibd's state (docs/umad.md).  No
 * HELLO needed; abi_version must be SIB_ABI_VERSION (else EPROTO, with
 * the daemon's in abi_version).  CA names are the verbs devices' (at most
 * SIB_MGMT_NAME_LEN - 1 characters: longer names are not listed, as
 * libibumad could not hold them).  Numbers are host order.
 */
#define SIB_MGMT_NAME_LEN  20          /* UMAD_CA_NAME_LEN */
#define SIB_MGMT_MAX_CAS   64          /* names one CAS reply holds */
#define SIB_MGMT_PKEYS     32          /* P_Keys one PORT reply holds */
#define SIB_MGMT_PATH_MAX  108         /* sizeof(sockaddr_un.sun_path) */

enum sib_mgmt_what {
	SIB_MGMT_CAS = 1,     /* -> count, names[] in device order */
	SIB_MGMT_CA,          /* ca_name -> node type, versions, GUIDs, count = ports */
	SIB_MGMT_PORT,        /* ca_name, port_num -> port */
	SIB_MGMT_ISSM,        /* ca_name, port_num -> path of the port's ISSM FIFO */
	SIB_MGMT_WHAT_MAX,
};

struct sib_mgmt_port {
	uint64_t gid_prefix;  /* GID index 0: subnet prefix */
	uint64_t port_guid;   /* ... and interface ID */
	uint32_t capmask;     /* PortInfo:CapabilityMask */
	uint32_t rate;        /* Gb/s, integer part (sysfs "rate") */
	uint16_t base_lid, sm_lid;
	uint8_t lmc, sm_sl;
	uint8_t state;        /* PortInfo:PortState, 1 Down .. 4 Active */
	uint8_t phys_state;   /* PortInfo:PortPhysicalState, 5 LinkUp */
	uint16_t num_pkeys;   /* entries of pkeys[] used */
	uint16_t pkeys[SIB_MGMT_PKEYS];
	uint16_t pad[3];
};

struct sib_ctl_mgmt_query {
	uint32_t abi_version; /* in: SIB_ABI_VERSION; out: the daemon's */
	uint32_t what;        /* in: enum sib_mgmt_what */
	char ca_name[SIB_MGMT_NAME_LEN]; /* in (CA, PORT, ISSM) */
	uint32_t port_num;    /* in (PORT, ISSM) */
	uint32_t count;       /* out: CAS names; CA ports */
	uint32_t node_type;   /* out (CA): 1 CA, 2 switch, 3 router */
	uint64_t node_guid, sys_image_guid; /* out (CA) */
	char fw_ver[20], hw_ver[20], ca_type[40]; /* out (CA) */
	struct sib_mgmt_port port;                /* out (PORT) */
	char path[SIB_MGMT_PATH_MAX];             /* out (ISSM) */
	char names[SIB_MGMT_MAX_CAS][SIB_MGMT_NAME_LEN]; /* out (CAS) */
};

/*
 * ROUTE (data path, docs/subnet.md): where a packet leaving CA port `port`
 * of device `dev_index` for `dlid` ends, as the switches' forwarding
 * tables say (IBA 18.2.4.3.2 LFT, 18.2.4.3.3 MFT), computed by softibd
 * (sib_subnet_route, data rules: every port on the way ACTIVE).
 * Unicast: verdict 0 and (dst_dev, dst_port), the CA port owning dlid;
 * else the drop verdict (subnet/subnet.h enum sib_route_verdict values,
 * or SIB_CTL_ROUTE_NOT_CA: the LID is a switch's, not a verbs device's).
 * Multicast (0xC000..0xFFFE): verdict 0 and the CA ports the MFTs reach
 * from that port, bit dev * SIB_MAX_PORTS + (port - 1) of mcast_mask
 * (the sending port itself included: local loopback).  route_gen: the
 * map's route_gen when computed; the answer holds while it is unchanged.
 */
#define SIB_CTL_ROUTE_NOT_CA 0x80u
#define SIB_CTL_ROUTE_MASK_WORDS 2u /* SIB_MAX_DEVICES * SIB_MAX_PORTS bits (sib_shm.h) */
struct sib_ctl_route {
	uint32_t dev_index;   /* in: index in sib_fabric_shm.devs (a present device) */
	uint8_t port;         /* in: 1-based port of that device */
	uint8_t verdict;      /* out: 0 = reaches, else why it is dropped */
	uint16_t dlid;        /* in */
	uint32_t route_gen;   /* out */
	uint32_t dst_dev;     /* out (unicast, verdict 0) */
	uint8_t dst_port;     /* out (unicast, verdict 0) */
	uint8_t hops;         /* out: links crossed (unicast; 255 and more: 255) */
	uint16_t pad;
	uint32_t pad2;
	uint64_t mcast_mask[SIB_CTL_ROUTE_MASK_WORDS]; /* out (multicast) */
};

/*
 * CAPABLE: does the process that made this connection hold capability
 * `cap` (linux/capability.h numbering, 0..63) in its effective set now?
 * softibd reads it itself (SO_PEERCRED, /proc/<pid>/status), as the
 * kernel's capable() looks at the caller: status 0 yes, EPERM no, EINVAL
 * for cap > 63.  The verbs library asks it for CAP_NET_RAW before giving
 * a QP a controlled Q_Key (linux drivers/infiniband/core/uverbs_cmd.c
 * modify_qp; docs/threat-model.md "Privilege").
 */
struct sib_ctl_capable {
	uint32_t cap;         /* in */
};

/*
 * DX_PUT, DX_GET (daemon/dx.c, docs/transport.md "Direct placement",
 * docs/threat-model.md): the memfds of direct placement never stay in a
 * process's fd table (where /proc/<pid>/fd would offer them to any
 * process of the uid); softibd keeps them and hands them out.
 * PUT (the owner, the fd as SCM_RIGHTS): softibd keeps the fd for this
 * connection, a TAB or CNT under the context of dev_handle (one of each:
 * a new one replaces the old), an MR region under `id` (the process's own
 * number, never 0); drop 1 with no fd forgets `id` instead.  Released
 * with the context (CLOSE_DEVICE) or the connection; each counts in the
 * process's "dx_fds" budget (EMFILE, ENFILE: docs/daemon.md "Budgets").
 * EINVAL: not a memfd sealed against shrinking, or a bad kind or id.
 * GET (a peer): the fd of kind (and id) of the context owning inbox
 * (inbox, inbox_gen), passed on the reply, only if the asker's qp_handle
 * is an RC or XRC QP of this connection and QPN qpn belongs to a QP of
 * that context (the asker has a QP to talk to it): else EPERM (counted,
 * `softib status` "dx_refused"); ESTALE: the context is gone; ENOENT:
 * it gave no such fd.
 */
enum sib_dx_kind {
	SIB_DX_KIND_TAB = 1,  /* the export table (SIB_DX_BYTES, hca/direct.h) */
	SIB_DX_KIND_CNT,      /* the in-flight counters (SIB_DX_CNT_BYTES) */
	SIB_DX_KIND_MR,       /* a region of registered pages (its id) */
	SIB_DX_KIND_MAX,
};

struct sib_ctl_dx {
	uint32_t kind;        /* in: enum sib_dx_kind */
	uint32_t dev_handle;  /* in (PUT of TAB, CNT): the owning OPEN_DEVICE handle */
	uint32_t id;          /* in (MR): the region's number */
	uint32_t drop;        /* in (PUT): 1 = forget id (MR), no fd */
	uint32_t qp_handle;   /* in (GET): the asker's RC or XRC QP (CREATE_OBJ handle) */
	uint32_t inbox;       /* in (GET): the owner's inbox ... */
	uint32_t inbox_gen;   /* in (GET): ... and its generation, else ESTALE */
	uint32_t qpn;         /* in (GET): a QP of the owner's context */
};

/*
 * IPADDR (daemon/ucma.c, docs/rdmacm.md "Addresses"): the IP addresses of
 * CA port (dev, port) in the rdma_cm's table, as `ip addr add|del|show`
 * (linux devinet.c / addrconf.c) would map them.  No HELLO needed and no
 * privilege: softibd is per-uid, every client of it may (as PORT_SET;
 * docs/threat-model.md).
 * - ADD: family/addr/prefix.  EEXIST (some port has it), EINVAL (name,
 *   port, family, prefix > 32/128, the wildcard), ENOSPC (SIB_CMA_ADDRS_MAX).
 * - DEL: likewise, prefix SIB_IPADDR_PREFIX_ANY = whatever it has.
 *   EADDRNOTAVAIL (the port has no such address), EPERM (a default
 *   address: 127.1.d.p or the GID's).  Ids bound to it stay.
 * - GET: the index-th address of the port (0 127.1.d.p/8, 1 the GID's/64,
 *   then the added ones): family, addr, prefix, flags; ENOENT past the last.
 * ENODEV: no such device.
 */
enum sib_ipaddr_op {
	SIB_IPADDR_ADD = 1,
	SIB_IPADDR_DEL,
	SIB_IPADDR_GET,
};
#define SIB_IPADDR_PREFIX_ANY 0xffu /* DEL: any prefix length */
#define SIB_IPADDR_F_DEFAULT  0x1u  /* GET: a default address, not deletable */
struct sib_ctl_ipaddr {
	char dev[64];         /* in: verbs device name, NUL-terminated */
	uint32_t port;        /* in: 1-based CA port */
	uint32_t op;          /* in: enum sib_ipaddr_op */
	uint32_t index;       /* in (GET) */
	uint16_t family;      /* in (ADD, DEL), out (GET): AF_INET 2, AF_INET6 10 */
	uint8_t prefix;       /* in (ADD, DEL), out (GET): prefix length */
	uint8_t flags;        /* out (GET): SIB_IPADDR_F_* */
	uint8_t addr[16];     /* in / out: network order, IPv4 in addr[0..3] */
};

#define SIB_CTL_TEXT_MAX 3072

struct sib_ctl_text {
	uint32_t len;
	char text[SIB_CTL_TEXT_MAX];
};

struct sib_ctl_msg {
	struct sib_ctl_hdr hdr;
	union {
		struct sib_ctl_hello hello;
		struct sib_ctl_open_device open;
		struct sib_ctl_get_inbox get_inbox;
		struct sib_ctl_pair pair;
		struct sib_ctl_obj obj;
		struct sib_ctl_text text;
		struct sib_ctl_subscribe subscribe;
		struct sib_ctl_event event;
		struct sib_ctl_dev_cmd dev;
		struct sib_ctl_link link;
		struct sib_ctl_mcast mcast;
		struct sib_ctl_xrcd xrcd;
		struct sib_ctl_mai_open mai_open;
		struct sib_ctl_mai_filter mai_filter;
		struct sib_ctl_mgmt_query mgmt;
		struct sib_ctl_route route;
		struct sib_ctl_capable capable;
		struct sib_ctl_dx dx;
		struct sib_ctl_cm cm;
		struct sib_ctl_cm_event cm_event;
		struct sib_ctl_ipaddr ipaddr;
		uint32_t handle;
	} u;
};

_Static_assert(sizeof(struct sib_ctl_hdr) == 16, "ctl header is ABI");
_Static_assert(sizeof(struct sib_ctl_obj) == 24, "ctl obj is ABI");
_Static_assert(sizeof(struct sib_ctl_event) == 88, "ctl event is ABI");
_Static_assert(sizeof(struct sib_ctl_dev_cmd) == 84, "ctl dev cmd is ABI");
_Static_assert(sizeof(struct sib_ctl_mcast) == 24, "ctl mcast is ABI");
_Static_assert(sizeof(struct sib_ctl_mai_open) == 84, "ctl mai_open is ABI");
_Static_assert(sizeof(struct sib_ctl_mai_filter) == 136, "ctl mai_filter is ABI");
_Static_assert(sizeof(struct sib_mgmt_port) == 104, "mgmt port is ABI");
_Static_assert(sizeof(struct sib_ctl_dx) == 32, "ctl dx is ABI");
_Static_assert(sizeof(struct sib_ctl_ipaddr) == 96, "ctl ipaddr is ABI");
_Static_assert(sizeof(struct sib_ctl_route) == 24 + 8 * SIB_CTL_ROUTE_MASK_WORDS, "ctl route is ABI");

#endif
