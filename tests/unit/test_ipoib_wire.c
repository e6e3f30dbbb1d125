/* SPDX-License-Identifier: MIT */
/*
 * The pure parts of IPoIB (src/ipoib/wire.c, neigh.c) against known bytes:
 * the 20-byte hardware address (RFC 4391 §9.1.1; the one tshark printed for
 * softib1's QPN 3 in a capture), the 4-byte header, ARP over IB (RFC 4391
 * §4.2, malformed ones refused), the broadcast and IPv4 multicast MGIDs
 * (ff12:401b:PKEY::ffff:ffff, RFC 4391 §4), MCMemberRecord and PathRecord
 * at their IBA offsets (15.2.5.16/17) inside an SA MAD, and the neighbour
 * table's bound (oldest evicted), IPv6 NS/NA with the IPoIB link-layer
 * option (RFC 4391 §5) and its checksum, expiry, per-entry queue bound and AH
 * release; connected mode's ServiceID and private data (RFC 4755) and the
 * ICMP too-big answers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ipoib/neigh.h"
#include "ipoib/wire.h"

static const uint8_t gid21[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
				   0x5e, 0xed, 0, 0, 0, 0, 0, 0x21 };

static void test_hwaddr(void **state)
{
	static const uint8_t want[20] = { 0x00, 0x00, 0x00, 0x03, 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
					  0x5e, 0xed, 0, 0, 0, 0, 0, 0x21 };
	struct ipoib_hwaddr a = { .qpn = 3 }, b;
	uint8_t out[20];

	(void)state;
	memcpy(a.gid, gid21, 16);
	ipoib_hwaddr_encode(&a, out);
	assert_memory_equal(out, want, 20);
	a.flags = IPOIB_FLAGS_RC;
	a.qpn = 0x12345678;	/* only 24 bits go */
	ipoib_hwaddr_encode(&a, out);
	assert_int_equal(out[0], 0x80);
	assert_int_equal(out[1], 0x34);
	assert_int_equal(out[3], 0x78);
	ipoib_hwaddr_decode(out, &b);
	assert_int_equal(b.flags, 0x80);
	assert_int_equal(b.qpn, 0x345678);
	assert_memory_equal(b.gid, gid21, 16);
}

static void test_header(void **state)
{
	uint8_t h[4] = { 0xaa, 0xaa, 0xaa, 0xaa };
	static const uint8_t v6[4] = { 0x86, 0xdd, 0x12, 0x34 };

	(void)state;
	ipoib_hdr_encode(ETH_P_IPV4, h);
	assert_memory_equal(h, ((uint8_t[]){ 0x08, 0x00, 0, 0 }), 4);
	assert_int_equal(ipoib_hdr_decode(h, 4), 0x0800);
	assert_int_equal(ipoib_hdr_decode(v6, 4), 0x86DD);	/* reserved ignored */
	assert_int_equal(ipoib_hdr_decode(h, 3), -1);
}

static void test_arp(void **state)
{
	struct ipoib_arp a = { .op = ARP_OP_REQUEST, .sha = { .qpn = 2 },
			       .spa = 0x0A4D0001, .tpa = 0x0A4D0002 }, b;
	uint8_t p[IPOIB_ARP_LEN], bad[IPOIB_ARP_LEN];

	(void)state;
	memcpy(a.sha.gid, gid21, 16);
	ipoib_arp_encode(&a, p);
	assert_memory_equal(p, ((uint8_t[]){ 0x00, 0x20, 0x08, 0x00, 20, 4, 0x00, 0x01,
					    0, 0, 0, 2, 0xfe, 0x80 }), 14);
	assert_memory_equal(p + 28, ((uint8_t[]){ 10, 77, 0, 1 }), 4);
	assert_memory_equal(p + 32, ((uint8_t[20]){ 0 }), 20);	/* tha unknown */
	assert_memory_equal(p + 52, ((uint8_t[]){ 10, 77, 0, 2 }), 4);
	assert_int_equal(ipoib_arp_decode(p, sizeof(p), &b), 0);
	assert_int_equal(b.op, 1);
	assert_int_equal(b.sha.qpn, 2);
	assert_int_equal(b.spa, 0x0A4D0001);
	assert_int_equal(b.tpa, 0x0A4D0002);
	assert_memory_equal(b.sha.gid, gid21, 16);
	/* Refused: short, Ethernet htype, hlen 6, IPv6 ptype, op 3. */
	assert_int_equal(ipoib_arp_decode(p, sizeof(p) - 1, &b), -EINVAL);
	struct { int off; uint8_t v; } muts[] = { { 1, 1 }, { 4, 6 }, { 2, 0x86 }, { 7, 3 } };
	for (size_t i = 0; i < sizeof(muts) / sizeof(muts[0]); i++) {
		memcpy(bad, p, sizeof(p));
		bad[muts[i].off] = muts[i].v;
		assert_int_equal(ipoib_arp_decode(bad, sizeof(bad), &b), -EINVAL);
	}
}

static void test_mgids(void **state)
{
	uint8_t m[16];

	(void)state;
	ipoib_bcast_mgid(0x7fff, m);	/* the full bit is set */
	assert_memory_equal(m, ((uint8_t[]){ 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0,
					    0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff }), 16);
	ipoib_bcast_mgid(0x8001, m);
	assert_int_equal(m[4], 0x80);
	assert_int_equal(m[5], 0x01);
	ipoib_ipv4_mc_mgid(0xffff, 0xEFFFFFFA, m);	/* 239.255.255.250: low 28 bits */
	assert_memory_equal(m, ((uint8_t[]){ 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0,
					    0, 0, 0, 0, 0x0f, 0xff, 0xff, 0xfa }), 16);
}

static void test_sa_records(void **state)
{
	struct ipoib_mcm r = { .qkey = 0x0B1B, .mlid = 0xC000, .mtu_sel = 2, .mtu = 4,
			       .tclass = 0x11, .pkey = 0xFFFF, .rate_sel = 2, .rate = 3,
			       .plt_sel = 2, .plt = 18, .sl = 5, .flow_label = 0xABCDE,
			       .hop_limit = 0x7F, .scope = 2, .join_state = 1 }, d;
	struct ipoib_path pr, pd;
	uint8_t b[64], mad[SA_MAD_LEN];
	uint64_t tid;
	uint16_t st, attr;
	uint8_t meth;

	(void)state;
	ipoib_bcast_mgid(0xffff, r.mgid);
	memcpy(r.port_gid, gid21, 16);
	ipoib_mcm_encode(&r, b);
	assert_memory_equal(b + 32, ((uint8_t[]){ 0, 0, 0x0b, 0x1b, 0xc0, 0x00, 0x84, 0x11,
						 0xff, 0xff, 0x83, 0x92, 0x5a, 0xbc, 0xde, 0x7f,
						 0x21, 0 }), 18);
	ipoib_mcm_decode(b, &d);
	assert_memory_equal(&d, &r, sizeof(r));

	memset(&pr, 0, sizeof(pr));
	memcpy(pr.dgid, gid21, 16);
	pr.dlid = 3; pr.slid = 2; pr.hop_limit = 0; pr.reversible = 1; pr.numb_path = 1;
	pr.pkey = 0xffff; pr.sl = 0; pr.mtu = 4; pr.rate = 3; pr.plt = 18;
	ipoib_path_encode(&pr, b);
	assert_memory_equal(b + 40, ((uint8_t[]){ 0, 3, 0, 2, 0, 0, 0, 0, 0, 0x81, 0xff, 0xff,
						 0, 0, 0x04, 0x03, 0x12 }), 17);
	ipoib_path_decode(b, &pd);
	assert_memory_equal(&pd, &pr, sizeof(pr));

	ipoib_sa_mad_init(mad, SA_METHOD_SET, SA_ATTR_MCMEMBER, 0x1122334455667788ull,
			  MCM_COMP_MGID | MCM_COMP_PORT_GID | MCM_COMP_PKEY | MCM_COMP_JOIN_STATE);
	assert_memory_equal(mad, ((uint8_t[]){ 1, 3, 2, 2, 0, 0, 0, 0, 0x11, 0x22, 0x33, 0x44,
					      0x55, 0x66, 0x77, 0x88, 0, 0x38 }), 18);
	assert_memory_equal(mad + 48, ((uint8_t[]){ 0, 0, 0, 0, 0, 0x01, 0x00, 0x83 }), 8);
	mad[3] = SA_METHOD_GET_RESP;
	mad[4] = 0x02;	/* status 0x0200 */
	assert_int_equal(ipoib_sa_mad_parse(mad, SA_MAD_LEN, &meth, &st, &attr, &tid), 0);
	assert_int_equal(meth, 0x81);
	assert_int_equal(st, 0x0200);
	assert_int_equal(attr, 0x38);
	assert_true(tid == 0x1122334455667788ull);
	assert_int_equal(ipoib_sa_mad_parse(mad, 40, &meth, &st, &attr, &tid), -EINVAL);
	mad[2] = 1;
	assert_int_equal(ipoib_sa_mad_parse(mad, SA_MAD_LEN, &meth, &st, &attr, &tid), -EINVAL);
	assert_int_equal(ipoib_mtu_bytes(4), 2048);
	assert_int_equal(ipoib_mtu_bytes(0), 0);
	assert_int_equal(ipoib_mtu_bytes(6), 0);
}

/* An NS from fd77::1 for fd77::2 with the source link-layer option (QPN 2,
 * GID fe80::5eed:0:0:21): the checksum 0x2107 computed independently (RFC
 * 8200 §8.1 pseudo-header). */
static void test_nd(void **state)
{
	struct ipoib_nd ns = { .type = ND_NS, .has_lla = true, .lla = { .qpn = 2 } }, d;
	uint8_t p[IPOIB_ND_LEN], bad[IPOIB_ND_LEN];
	size_t len;

	(void)state;
	memcpy(ns.lla.gid, gid21, 16);
	ns.src[0] = ns.target[0] = 0xfd;
	ns.src[1] = ns.target[1] = 0x77;
	ns.src[15] = 1;
	ns.target[15] = 2;
	ipoib_solicited_node(ns.target, ns.dst);
	assert_memory_equal(ns.dst, ((uint8_t[]){ 0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
						 0xff, 0, 0, 2 }), 16);
	len = ipoib_nd_encode(&ns, p);
	assert_int_equal(len, 88);
	assert_memory_equal(p, ((uint8_t[]){ 0x60, 0, 0, 0, 0, 48, 58, 255 }), 8);
	assert_memory_equal(p + 40, ((uint8_t[]){ 135, 0, 0x21, 0x07, 0, 0, 0, 0 }), 8);
	assert_memory_equal(p + 64, ((uint8_t[]){ 1, 3, 0, 0, 0, 0, 0, 2, 0xfe, 0x80 }), 10);
	assert_int_equal(ipoib_nd_decode(p, len, &d), 0);
	assert_int_equal(d.type, ND_NS);
	assert_true(d.has_lla);
	assert_int_equal(d.lla.qpn, 2);
	assert_memory_equal(d.target, ns.target, 16);
	assert_memory_equal(d.src, ns.src, 16);
	/* An NA: flags kept, target option. */
	ns.type = ND_NA;
	ns.flags = ND_NA_SOLICITED | ND_NA_OVERRIDE;
	len = ipoib_nd_encode(&ns, p);
	assert_int_equal(p[40 + 24], 2);
	assert_int_equal(p[40 + 4], 0x60);
	assert_int_equal(ipoib_nd_decode(p, len, &d), 0);
	assert_int_equal(d.flags, 0x60000000);
	/* Refused: a bad checksum, hop limit 254, code 1, option length 0 or 2,
	 * a truncated packet; not ND at all: an echo request, IPv4. */
	struct { int off; uint8_t v; int want; } muts[] = {
		{ 43, 0x00, -EINVAL }, { 7, 254, -EINVAL }, { 41, 1, -EINVAL },
		{ 65, 0, -EINVAL }, { 65, 2, -EINVAL }, { 40, 128, -ENOENT }, { 0, 0x45, -ENOENT },
	};
	for (size_t i = 0; i < sizeof(muts) / sizeof(muts[0]); i++) {
		memcpy(bad, p, len);
		bad[muts[i].off] = muts[i].v;
		assert_int_equal(ipoib_nd_decode(bad, len, &d), muts[i].want);
	}
	assert_int_equal(ipoib_nd_decode(p, len - 1, &d), -EINVAL);
}

/* Hostile input: random and mutated frames of every length to each decoder,
 * each in a buffer of exactly its length (the ASan build catches a read past
 * it); a decoder says yes only to what it can use. Deterministic (seed 16). */
static void test_decoders_hostile(void **state)
{
	struct ipoib_nd nd = { .type = ND_NS, .has_lla = true, .lla = { .qpn = 5 } }, d;
	uint8_t valid_nd[IPOIB_ND_LEN], valid_arp[IPOIB_ARP_LEN];
	struct ipoib_arp a = { .op = 1, .sha = { .qpn = 5 } }, ad;
	unsigned int seed = 16, accepted = 0;
	uint64_t tid;
	uint16_t st, attr;
	uint8_t meth;

	(void)state;
	nd.src[0] = nd.target[0] = 0xfd;
	nd.target[15] = 2;
	ipoib_solicited_node(nd.target, nd.dst);
	ipoib_nd_encode(&nd, valid_nd);
	ipoib_arp_encode(&a, valid_arp);
	for (int it = 0; it < 20000; it++) {
		size_t len = (size_t)rand_r(&seed) % 130;
		uint8_t *b = malloc(len ? len : 1);
		int kind = rand_r(&seed) % 3;

		assert_non_null(b);
		for (size_t i = 0; i < len; i++) {
			const uint8_t *base = kind == 1 ? valid_nd : valid_arp;
			size_t blen = kind == 1 ? sizeof(valid_nd) : sizeof(valid_arp);

			b[i] = kind && i < blen ? base[i] : (uint8_t)rand_r(&seed);
		}
		if (kind && len)	/* one byte flipped */
			b[(size_t)rand_r(&seed) % len] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		if (!ipoib_nd_decode(b, len, &d)) {
			accepted++;
			assert_true(d.type == ND_NS || d.type == ND_NA);
			assert_true(len >= 64);
		}
		if (!ipoib_arp_decode(b, len, &ad)) {
			accepted++;
			assert_true(ad.op == 1 || ad.op == 2);
			assert_true(len >= IPOIB_ARP_LEN);
		}
		(void)ipoib_hdr_decode(b, len);
		(void)ipoib_sa_mad_parse(b, len, &meth, &st, &attr, &tid);
		free(b);
	}
	assert_true(accepted > 0);	/* the unflipped bytes of long copies */
}

static int released;

static const uint8_t *key(uint32_t v, uint8_t *buf)
{
	neigh_v4(v, buf);
	return buf;
}
#define K(v) key((v), (uint8_t[16]){ 0 })

static void rel(void *ah, void *arg)
{
	(void)ah;
	(void)arg;
	released++;
}

static void test_neigh_bound(void **state)
{
	struct neigh_table t;
	struct ipoib_hwaddr hw = { .qpn = 7 };
	static int ahs[8];

	(void)state;
	released = 0;
	assert_int_equal(neigh_init(&t, 4, 1000, rel, NULL), 0);
	for (uint32_t i = 0; i < 6; i++) {
		struct neigh *n = neigh_confirm(&t, K(0x0A000001 + i), &hw, 10 + i);

		n->ah = &ahs[i];
	}
	assert_int_equal(neigh_count(&t), 4);
	assert_int_equal(t.evicted, 2);
	assert_int_equal(released, 2);	/* the evicted entries' AHs */
	assert_null(neigh_lookup(&t, K(0x0A000001), 20));	/* the oldest went */
	assert_null(neigh_lookup(&t, K(0x0A000002), 20));
	assert_non_null(neigh_lookup(&t, K(0x0A000006), 20));
	/* A new hardware address drops the AH made for the old one. */
	hw.qpn = 8;
	neigh_confirm(&t, K(0x0A000006), &hw, 30);
	assert_int_equal(released, 3);
	assert_null(neigh_lookup(&t, K(0x0A000006), 30)->ah);
	neigh_fini(&t);
	assert_int_equal(released, 6);
}

static void test_neigh_expiry_queue(void **state)
{
	struct neigh_table t;
	struct ipoib_hwaddr hw = { .qpn = 9 };
	struct neigh *n;
	uint8_t pkt[4];

	(void)state;
	released = 0;
	assert_int_equal(neigh_init(&t, 8, 1000, rel, NULL), 0);
	neigh_confirm(&t, K(1), &hw, 0);
	assert_non_null(neigh_lookup(&t, K(1), 999));
	assert_null(neigh_lookup(&t, K(1), 1000));
	assert_int_equal(t.expired, 1);
	neigh_confirm(&t, K(2), &hw, 0);
	neigh_confirm(&t, K(3), &hw, 500);
	assert_int_equal(neigh_expire(&t, 1200), 1);
	assert_int_equal(neigh_count(&t), 1);
	/* Unresolved: at most NEIGH_QLEN packets, the oldest dropped. */
	n = neigh_get_incomplete(&t, K(4), 0);
	assert_int_equal(n->state, NEIGH_INCOMPLETE);
	assert_ptr_equal(neigh_get_incomplete(&t, K(4), 0), n);
	for (uint8_t i = 0; i < NEIGH_QLEN + 1; i++) {
		memset(pkt, i, sizeof(pkt));
		assert_int_equal(neigh_enqueue(&t, n, pkt, sizeof(pkt)), 0);
	}
	assert_int_equal(n->qn, NEIGH_QLEN);
	assert_int_equal(t.qdrops, 1);
	assert_int_equal(n->q[0].data[0], 1);
	/* An incomplete entry never expires by neigh_expire (probes end it). */
	assert_int_equal(neigh_expire(&t, 100000), 1);
	assert_non_null(neigh_lookup(&t, K(4), 100000));
	/* Resolution keeps the queue for the caller to send. */
	n = neigh_confirm(&t, K(4), &hw, 100000);
	assert_int_equal(n->state, NEIGH_VALID);
	assert_int_equal(n->qn, NEIGH_QLEN);
	neigh_fini(&t);
	assert_int_equal(neigh_init(&t, 0, 1, NULL, NULL), -EINVAL);
}

/* Connected mode (RFC 4755, the kernel's ipoib_cm.c): the ServiceID, the
 * REQ/REP private data (ipoib_cm_data: __be32 qpn, __be32 mtu) as the bytes
 * the kernel sends, the refused ones, and the peer's MTU. */
static void test_cm_data(void **state)
{
	static const uint8_t want[8] = { 0, 0, 0, 3, 0, 0, 0xff, 0xf4 };	/* QPN 3, 65524 */
	struct ipoib_cm_data d = { .qpn = 3, .mtu = IPOIB_CM_BUF_SIZE }, e;
	uint8_t out[8], bad[8];

	(void)state;
	assert_int_equal(IPOIB_CM_MTU, 65520);
	assert_true(ipoib_cm_service_id(0x000203) == 0x1000000000000203ull);
	assert_true(ipoib_cm_service_id(0xff000203) == 0x1000000000000203ull);	/* 24 bits */
	ipoib_cm_data_encode(&d, out);
	assert_memory_equal(out, want, 8);
	assert_int_equal(ipoib_cm_data_decode(out, 8, &e), 0);
	assert_int_equal(e.qpn, 3);
	assert_int_equal(e.mtu, 65524);
	/* the whole REQ field (92 bytes) is fine: only the first 8 count */
	uint8_t req[92] = { 0 };
	memcpy(req, want, 8);
	req[50] = 0xAA;
	assert_int_equal(ipoib_cm_data_decode(req, sizeof(req), &e), 0);
	/* short, none, QPN 0 or the broadcast QPN, a buffer too small */
	assert_int_equal(ipoib_cm_data_decode(out, 7, &e), -EINVAL);
	assert_int_equal(ipoib_cm_data_decode(NULL, 8, &e), -EINVAL);
	memcpy(bad, want, 8);
	bad[3] = 0;
	assert_int_equal(ipoib_cm_data_decode(bad, 8, &e), -EINVAL);
	memcpy(bad, "\x00\xff\xff\xff\x00\x00\xff\xf4", 8);
	assert_int_equal(ipoib_cm_data_decode(bad, 8, &e), -EINVAL);
	memcpy(bad, "\x01\x00\x00\x03\x00\x00\xff\xf4", 8);	/* above 24 bits */
	assert_int_equal(ipoib_cm_data_decode(bad, 8, &e), -EINVAL);
	memcpy(bad, "\x00\x00\x00\x03\x00\x00\x00\x48", 8);	/* 72 = 4 + 68 */
	assert_int_equal(ipoib_cm_data_decode(bad, 8, &e), -EINVAL);
	memcpy(bad, "\x00\x00\x00\x03\x00\x00\x00\x49", 8);
	assert_int_equal(ipoib_cm_data_decode(bad, 8, &e), 0);
	/* the peer's MTU: its buffers - 4, at most 65520 */
	assert_int_equal(ipoib_cm_peer_mtu(65524), 65520);
	assert_int_equal(ipoib_cm_peer_mtu(0xffffffff), 65520);
	assert_int_equal(ipoib_cm_peer_mtu(2048), 2044);
	assert_int_equal(ipoib_cm_peer_mtu(4), 0);
}

static uint16_t csum(const uint8_t *p, size_t len)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* ICMP "fragmentation needed" (RFC 1191) and ICMPv6 "packet too big" (RFC
 * 4443) for a datagram over the UD MTU: from its destination to its source,
 * the MTU, checksums right, the start of the datagram quoted; none about an
 * ICMP error or a fragment. */
static void test_too_big(void **state)
{
	uint8_t pkt[3000] = { 0x45, 0, 0x0b, 0xb8, 0, 0, 0x40, 0, 64, 6, 0, 0,
			      10, 78, 0, 1, 10, 78, 0, 2 }, out[IPOIB_TOO_BIG_MAX];
	size_t n;

	(void)state;
	n = ipoib_icmp_too_big(pkt, sizeof(pkt), 2044, out);
	assert_int_equal(n, 20 + 8 + 28);
	assert_int_equal(out[0], 0x45);
	assert_int_equal(out[2] << 8 | out[3], n);
	assert_int_equal(out[9], 1);
	assert_memory_equal(out + 12, pkt + 16, 4);	/* from 10.78.0.2 */
	assert_memory_equal(out + 16, pkt + 12, 4);	/* to 10.78.0.1 */
	assert_int_equal(csum(out, 20), 0xffff);
	assert_int_equal(out[20], 3);
	assert_int_equal(out[21], 4);
	assert_int_equal(out[26] << 8 | out[27], 2044);
	assert_int_equal(csum(out + 20, n - 20), 0xffff);
	assert_memory_equal(out + 28, pkt, 28);
	/* an echo request gets one; an ICMP error or a later fragment none */
	pkt[9] = 1;
	pkt[20] = 8;
	assert_int_equal(ipoib_icmp_too_big(pkt, sizeof(pkt), 2044, out), 56);
	pkt[20] = 3;
	assert_int_equal(ipoib_icmp_too_big(pkt, sizeof(pkt), 2044, out), 0);
	pkt[9] = 6;
	pkt[7] = 0x10;
	assert_int_equal(ipoib_icmp_too_big(pkt, sizeof(pkt), 2044, out), 0);
	pkt[0] = 0x44;	/* IHL 16: malformed */
	pkt[7] = 0;
	assert_int_equal(ipoib_icmp_too_big(pkt, sizeof(pkt), 2044, out), 0);
	assert_int_equal(ipoib_icmp_too_big(pkt, 10, 2044, out), 0);

	/* IPv6: fd77::1 -> fd77::2, UDP */
	uint8_t p6[3000] = { 0x60, 0, 0, 0, 0x0b, 0x90, 17, 64 };
	p6[8] = p6[24] = 0xfd;
	p6[9] = p6[25] = 0x77;
	p6[23] = 1;
	p6[39] = 2;
	n = ipoib_icmp_too_big(p6, sizeof(p6), 2044, out);
	assert_int_equal(n, IPOIB_TOO_BIG_MAX);	/* at most the IPv6 minimum MTU */
	assert_int_equal(out[0] >> 4, 6);
	assert_int_equal(out[4] << 8 | out[5], n - 40);
	assert_int_equal(out[6], 58);
	assert_memory_equal(out + 8, p6 + 24, 16);
	assert_memory_equal(out + 24, p6 + 8, 16);
	assert_int_equal(out[40], 2);
	assert_int_equal(out[44] << 24 | out[45] << 16 | out[46] << 8 | out[47], 2044);
	assert_int_equal(ipoib_icmp6_csum(out + 8, out + 24, out + 40, n - 40), 0);
	assert_memory_equal(out + 48, p6, n - 48);
	p6[6] = 58;
	p6[40] = 1;	/* an ICMPv6 error: none */
	assert_int_equal(ipoib_icmp_too_big(p6, sizeof(p6), 2044, out), 0);
	p6[40] = 128;	/* an echo request: one */
	assert_int_equal(ipoib_icmp_too_big(p6, sizeof(p6), 2044, out), IPOIB_TOO_BIG_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hwaddr),
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_arp),
		cmocka_unit_test(test_mgids),
		cmocka_unit_test(test_sa_records),
		cmocka_unit_test(test_nd),
		cmocka_unit_test(test_decoders_hostile),
		cmocka_unit_test(test_neigh_bound),
		cmocka_unit_test(test_neigh_expiry_queue),
		cmocka_unit_test(test_cm_data),
		cmocka_unit_test(test_too_big),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
