/* SPDX-License-Identifier: MIT */
/*
 * IPoIB wire formats as pure functions (no I/O, no allocation): the 20-byte
 * hardware address (RFC 4391 §9.1.1: flags|QPN, GID), the 4-byte IPoIB
 * encapsulation header (RFC 4391 §6: EtherType, reserved), ARP over IB
 * (RFC 4391 §4.2: hardware type 32, hlen 20, plen 4), the IPoIB MGIDs
 * (RFC 4391 §4: ff1S:401b:PKEY::ffff:ffff broadcast, ff1S:401b:PKEY::IPv4
 * mapped multicast), and the two SA records the ULP sends (IBA 1.4 vol 1,
 * 15.2.5.16 PathRecord, 15.2.5.17 MCMemberRecord) inside an SA MAD (15.2.1,
 * 13.4.2).  All multi-byte fields big-endian on the wire.
 */
#ifndef SOFTIB_IPOIB_WIRE_H
#define SOFTIB_IPOIB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IPOIB_HWADDR_LEN	20	/* INFINIBAND_ALEN */
#define IPOIB_ENCAP_LEN		4	/* struct ipoib_header */
#define IPOIB_ARPHRD		32	/* ARPHRD_INFINIBAND */
#define IPOIB_ARP_LEN		56	/* 8 + 2 * (20 + 4) */
#define IPOIB_FLAGS_RC		0x80	/* byte 0 of the hw address: connected mode */
#define IPOIB_QPN_MASK		0xFFFFFFu
#define IPOIB_BCAST_QPN		0xFFFFFFu
#define IPOIB_GRH_LEN		40	/* the GRH area of a UD receive buffer */

#define ETH_P_IPV4		0x0800
#define ETH_P_ARP_		0x0806
#define ETH_P_IPV6_		0x86DD
#define ARP_OP_REQUEST		1
#define ARP_OP_REPLY		2

/* The link-layer address of an IPoIB interface (RFC 4391 §9.1.1). */
struct ipoib_hwaddr {
	uint8_t flags;		/* IPOIB_FLAGS_RC or 0 */
	uint32_t qpn;		/* 24 bits */
	uint8_t gid[16];
};

void ipoib_hwaddr_encode(const struct ipoib_hwaddr *a, uint8_t out[IPOIB_HWADDR_LEN]);
void ipoib_hwaddr_decode(const uint8_t in[IPOIB_HWADDR_LEN], struct ipoib_hwaddr *a);

/* The 4-byte IPoIB header: EtherType then 2 reserved bytes (zero on send,
 * ignored on receive, RFC 4391 §6).  decode returns the EtherType, or -1 if
 * len < 4. */
void ipoib_hdr_encode(uint16_t ethertype, uint8_t out[IPOIB_ENCAP_LEN]);
int ipoib_hdr_decode(const uint8_t *in, size_t len);

/* An ARP packet over IPoIB (RFC 4391 §4.2, RFC 826). IPv4 addresses in host
 * order. */
struct ipoib_arp {
	uint16_t op;		/* ARP_OP_REQUEST / ARP_OP_REPLY */
	struct ipoib_hwaddr sha, tha;
	uint32_t spa, tpa;
};

/* Encode into out (IPOIB_ARP_LEN bytes). */
void ipoib_arp_encode(const struct ipoib_arp *a, uint8_t out[IPOIB_ARP_LEN]);
/* Decode len bytes: 0, or -EINVAL when short or not htype 32 / ptype 0x0800 /
 * hlen 20 / plen 4 / op 1 or 2 (the caller drops and counts). */
int ipoib_arp_decode(const uint8_t *in, size_t len, struct ipoib_arp *a);

/* MGID of the partition's broadcast group (scope 2): ff12:401b:PKEY::ffff:ffff,
 * pkey with the full-member bit set as the kernel's ib_addr_set_pkey does. */
void ipoib_bcast_mgid(uint16_t pkey, uint8_t mgid[16]);
/* MGID of IPv4 multicast group ip (host order, RFC 4391 §4):
 * ff12:401b:PKEY::0:0:IP low 28 bits, as the kernel's ip_ib_mc_map. */
void ipoib_ipv4_mc_mgid(uint16_t pkey, uint32_t ip, uint8_t mgid[16]);

/* ---- IPv6 neighbour discovery with the IPoIB link-layer address option
 * (RFC 4861 §4.3/4.4 NS/NA; RFC 4391 §5: option type 1 source / 2 target,
 * length 3 (24 bytes): type, length, 2 reserved bytes, the 20-byte address).
 * Only what the bridge sends: an IPv6 header without extension headers, hop
 * limit 255, one NS or NA with at most one link-layer option. */
#define ND_NS			135
#define ND_NA			136
#define ND_NA_SOLICITED		0x40000000u
#define ND_NA_OVERRIDE		0x20000000u
#define IPOIB_ND_LEN		(40 + 24 + 24)

struct ipoib_nd {
	uint8_t type;			/* ND_NS / ND_NA */
	uint8_t src[16], dst[16];	/* the IPv6 header's */
	uint8_t target[16];
	uint32_t flags;			/* NA: R|S|O in the top bits */
	bool has_lla;
	struct ipoib_hwaddr lla;	/* NS: source, NA: target link-layer address */
};

/* Encode an IPv6 packet carrying nd (hop limit 255, ICMPv6 checksum set):
 * returns its length (IPOIB_ND_LEN, or 24 less without the option). */
size_t ipoib_nd_encode(const struct ipoib_nd *nd, uint8_t out[IPOIB_ND_LEN]);
/* Decode an IPv6 packet: 0 for a valid NS/NA (RFC 4861 §7.1.1/7.1.2: hop
 * limit 255, code 0, checksum, lengths; a link-layer option of another
 * length than 3 is refused), -ENOENT when it is no NS/NA (deliver it),
 * -EINVAL when it is a malformed one (drop it). */
int ipoib_nd_decode(const uint8_t *pkt, size_t len, struct ipoib_nd *nd);
/* The ICMPv6 checksum of msg (len bytes, its checksum field included as it
 * is) under the IPv6 pseudo-header (RFC 8200 §8.1). */
uint16_t ipoib_icmp6_csum(const uint8_t src[16], const uint8_t dst[16],
			  const uint8_t *msg, size_t len);
/* The solicited-node multicast address of target: ff02::1:ffXX:XXXX. */
void ipoib_solicited_node(const uint8_t target[16], uint8_t out[16]);

/* ---- IPoIB connected mode (RFC 4755; the kernel's ipoib_cm.c) ----------- */
#define IPOIB_CM_IETF_ID	0x1000000000000000ull	/* ServiceID | the UD QPN */
#define IPOIB_CM_MTU		65520			/* the interface's MTU */
#define IPOIB_CM_BUF_SIZE	(IPOIB_CM_MTU + IPOIB_ENCAP_LEN) /* a receive buffer */
#define IPOIB_CM_DATA_LEN	8

/* The REQ's and REP's private data (the kernel's struct ipoib_cm_data:
 * __be32 qpn, __be32 mtu): the sender's UD QPN and the size of its
 * receive buffers in bytes (IPOIB_CM_BUF_SIZE, the 4-byte header included). */
struct ipoib_cm_data {
	uint32_t qpn;
	uint32_t mtu;
};

/* 0x1000000000000000 | qpn: the ServiceID a connected-mode endpoint whose UD
 * QPN is qpn listens on (IPOIB_CM_IETF_ID). */
uint64_t ipoib_cm_service_id(uint32_t qpn);
void ipoib_cm_data_encode(const struct ipoib_cm_data *d, uint8_t out[IPOIB_CM_DATA_LEN]);
/* Decode the first 8 bytes of a REQ's or REP's private data: 0, or -EINVAL
 * when in is NULL or short, the QPN is 0 or 0xFFFFFF, or the buffer size is
 * too small for the smallest IPv4 datagram (68 bytes) and the header (the
 * caller rejects the REQ, or tears down the connection). */
int ipoib_cm_data_decode(const uint8_t *in, size_t len, struct ipoib_cm_data *d);
/* The largest IP datagram to send to a peer whose buffers are buf_size bytes
 * (at most IPOIB_CM_MTU). */
unsigned int ipoib_cm_peer_mtu(uint32_t buf_size);

/* An ICMP "fragmentation needed" (RFC 792/1191: type 3 code 4 with the
 * next-hop MTU) or ICMPv6 "packet too big" (RFC 4443 3.2) for an IP datagram
 * too large for the UD path (the kernel's ipoib_cm_skb_too_long), addressed
 * to its source from its destination, quoting its start: its length, or 0
 * when none is due (no ICMP about ICMP errors or fragments, not IP). */
#define IPOIB_TOO_BIG_MAX	1280
size_t ipoib_icmp_too_big(const uint8_t *pkt, size_t len, unsigned int mtu,
			  uint8_t out[IPOIB_TOO_BIG_MAX]);

/* ---- SA MADs (IBA 13.4.2 common header, 15.2.1 SA header) ---------------- */
#define SA_MAD_LEN		256
#define SA_DATA_OFF		56
#define SA_CLASS		0x03
#define SA_CLASS_VERSION	2
#define SA_METHOD_GET		0x01
#define SA_METHOD_SET		0x02
#define SA_METHOD_GET_RESP	0x81
#define SA_METHOD_DELETE	0x15
#define SA_METHOD_DELETE_RESP	0x95
#define SA_ATTR_PATH		0x0035
#define SA_ATTR_MCMEMBER	0x0038

/* MCMemberRecord ComponentMask bits (15.2.5.17). */
#define MCM_COMP_MGID		(1ull << 0)
#define MCM_COMP_PORT_GID	(1ull << 1)
#define MCM_COMP_QKEY		(1ull << 2)
#define MCM_COMP_MLID		(1ull << 3)
#define MCM_COMP_MTU_SEL	(1ull << 4)
#define MCM_COMP_MTU		(1ull << 5)
#define MCM_COMP_TCLASS		(1ull << 6)
#define MCM_COMP_PKEY		(1ull << 7)
#define MCM_COMP_RATE_SEL	(1ull << 8)
#define MCM_COMP_RATE		(1ull << 9)
#define MCM_COMP_SL		(1ull << 12)
#define MCM_COMP_FLOW		(1ull << 13)
#define MCM_COMP_HOP		(1ull << 14)
#define MCM_COMP_JOIN_STATE	(1ull << 16)
/* PathRecord ComponentMask bits (15.2.5.16; ServiceID takes bits 0-1). */
#define PR_COMP_DGID		(1ull << 2)
#define PR_COMP_SGID		(1ull << 3)
#define PR_COMP_REVERSIBLE	(1ull << 11)
#define PR_COMP_NUMB_PATH	(1ull << 12)
#define PR_COMP_PKEY		(1ull << 13)

struct ipoib_mcm {		/* MCMemberRecord, 56 bytes */
	uint8_t mgid[16], port_gid[16];
	uint32_t qkey;
	uint16_t mlid;
	uint8_t mtu_sel, mtu, tclass;
	uint16_t pkey;
	uint8_t rate_sel, rate, plt_sel, plt, sl;
	uint32_t flow_label;
	uint8_t hop_limit, scope, join_state;
};

struct ipoib_path {		/* PathRecord, 64 bytes (the fields used) */
	uint8_t dgid[16], sgid[16];
	uint16_t dlid, slid;
	uint32_t flow_label;
	uint8_t hop_limit, tclass, reversible, numb_path;
	uint16_t pkey;
	uint8_t sl, mtu, rate, plt;
};

void ipoib_mcm_encode(const struct ipoib_mcm *r, uint8_t out[56]);
void ipoib_mcm_decode(const uint8_t in[56], struct ipoib_mcm *r);
void ipoib_path_encode(const struct ipoib_path *r, uint8_t out[64]);
void ipoib_path_decode(const uint8_t in[64], struct ipoib_path *r);

/* An SA request MAD (256 bytes, zeroed first): header, TID, attribute,
 * ComponentMask; the record goes at SA_DATA_OFF. */
void ipoib_sa_mad_init(uint8_t mad[SA_MAD_LEN], uint8_t method, uint16_t attr,
		       uint64_t tid, uint64_t comp_mask);
/* The answer's fields: 0 and *status, *method, *tid, or -EINVAL when len is
 * short or the MAD is no SA MAD of class version 2. */
int ipoib_sa_mad_parse(const uint8_t *mad, size_t len, uint8_t *method,
		       uint16_t *status, uint16_t *attr, uint64_t *tid);

/* IB MTU enum (1..5) to bytes (256..4096), 0 if invalid. */
unsigned int ipoib_mtu_bytes(uint8_t mtu_enum);

#endif
