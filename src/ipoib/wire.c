// SPDX-License-Identifier: MIT
/*
 * IPoIB wire formats (wire.h): the hardware address, the encapsulation
 * header, ARP over IB, the IPoIB MGIDs and the SA records, as pure functions
 * over caller-given bytes (RFC 4391; IBA 1.4 vol 1, 13.4.2, 15.2.1, 15.2.5.16,
 * 15.2.5.17).
 */
#include <errno.h>
#include <string.h>

#include "ipoib/wire.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

void ipoib_hwaddr_encode(const struct ipoib_hwaddr *a, uint8_t out[IPOIB_HWADDR_LEN])
{
	put32(out, (a->qpn & IPOIB_QPN_MASK));
	out[0] = a->flags;
	memcpy(out + 4, a->gid, 16);
}

void ipoib_hwaddr_decode(const uint8_t in[IPOIB_HWADDR_LEN], struct ipoib_hwaddr *a)
{
	a->flags = in[0];
	a->qpn = get32(in) & IPOIB_QPN_MASK;
	memcpy(a->gid, in + 4, 16);
}

void ipoib_hdr_encode(uint16_t ethertype, uint8_t out[IPOIB_ENCAP_LEN])
{
	put16(out, ethertype);
	out[2] = out[3] = 0;
}

int ipoib_hdr_decode(const uint8_t *in, size_t len)
{
	if (len < IPOIB_ENCAP_LEN)
		return -1;
	return get16(in);
}

void ipoib_arp_encode(const struct ipoib_arp *a, uint8_t out[IPOIB_ARP_LEN])
{
	put16(out, IPOIB_ARPHRD);
	put16(out + 2, ETH_P_IPV4);
	out[4] = IPOIB_HWADDR_LEN;
	out[5] = 4;
	put16(out + 6, a->op);
	ipoib_hwaddr_encode(&a->sha, out + 8);
	put32(out + 28, a->spa);
	ipoib_hwaddr_encode(&a->tha, out + 32);
	put32(out + 52, a->tpa);
}

int ipoib_arp_decode(const uint8_t *in, size_t len, struct ipoib_arp *a)
{
	if (len < IPOIB_ARP_LEN || get16(in) != IPOIB_ARPHRD ||
	    get16(in + 2) != ETH_P_IPV4 || in[4] != IPOIB_HWADDR_LEN || in[5] != 4)
		return -EINVAL;
	a->op = get16(in + 6);
	if (a->op != ARP_OP_REQUEST && a->op != ARP_OP_REPLY)
		return -EINVAL;
	ipoib_hwaddr_decode(in + 8, &a->sha);
	a->spa = get32(in + 28);
	ipoib_hwaddr_decode(in + 32, &a->tha);
	a->tpa = get32(in + 52);
	return 0;
}

void ipoib_bcast_mgid(uint16_t pkey, uint8_t mgid[16])
{
	static const uint8_t base[16] = { 0xff, 0x12, 0x40, 0x1b, 0, 0, 0, 0,
					  0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };

	memcpy(mgid, base, 16);
	put16(mgid + 4, pkey | 0x8000);
}

void ipoib_ipv4_mc_mgid(uint16_t pkey, uint32_t ip, uint8_t mgid[16])
{
	memset(mgid, 0, 16);
	mgid[0] = 0xff;
	mgid[1] = 0x12;
	mgid[2] = 0x40;
	mgid[3] = 0x1b;
	put16(mgid + 4, pkey | 0x8000);
	put32(mgid + 12, ip & 0x0FFFFFFF);
}

void ipoib_mcm_encode(const struct ipoib_mcm *r, uint8_t out[56])
{
	memset(out, 0, 56);
	memcpy(out, r->mgid, 16);
	memcpy(out + 16, r->port_gid, 16);
	put32(out + 32, r->qkey);
	put16(out + 36, r->mlid);
	out[38] = (uint8_t)(r->mtu_sel << 6 | (r->mtu & 0x3F));
	out[39] = r->tclass;
	put16(out + 40, r->pkey);
	out[42] = (uint8_t)(r->rate_sel << 6 | (r->rate & 0x3F));
	out[43] = (uint8_t)(r->plt_sel << 6 | (r->plt & 0x3F));
	put32(out + 44, (uint32_t)r->sl << 28 | (r->flow_label & 0xFFFFF) << 8 | r->hop_limit);
	out[48] = (uint8_t)(r->scope << 4 | (r->join_state & 0xF));
}

void ipoib_mcm_decode(const uint8_t in[56], struct ipoib_mcm *r)
{
	uint32_t w;

	memset(r, 0, sizeof(*r));
	memcpy(r->mgid, in, 16);
	memcpy(r->port_gid, in + 16, 16);
	r->qkey = get32(in + 32);
	r->mlid = get16(in + 36);
	r->mtu_sel = in[38] >> 6;
	r->mtu = in[38] & 0x3F;
	r->tclass = in[39];
	r->pkey = get16(in + 40);
	r->rate_sel = in[42] >> 6;
	r->rate = in[42] & 0x3F;
	r->plt_sel = in[43] >> 6;
	r->plt = in[43] & 0x3F;
	w = get32(in + 44);
	r->sl = w >> 28;
	r->flow_label = (w >> 8) & 0xFFFFF;
	r->hop_limit = (uint8_t)w;
	r->scope = in[48] >> 4;
	r->join_state = in[48] & 0xF;
}

void ipoib_path_encode(const struct ipoib_path *r, uint8_t out[64])
{
	memset(out, 0, 64);
	memcpy(out + 8, r->dgid, 16);
	memcpy(out + 24, r->sgid, 16);
	put16(out + 40, r->dlid);
	put16(out + 42, r->slid);
	put32(out + 44, (r->flow_label & 0xFFFFF) << 8 | r->hop_limit);
	out[48] = r->tclass;
	out[49] = (uint8_t)((r->reversible & 1) << 7 | (r->numb_path & 0x7F));
	put16(out + 50, r->pkey);
	put16(out + 52, r->sl & 0xF);
	out[54] = r->mtu & 0x3F;
	out[55] = r->rate & 0x3F;
	out[56] = r->plt & 0x3F;
}

void ipoib_path_decode(const uint8_t in[64], struct ipoib_path *r)
{
	uint32_t w;

	memset(r, 0, sizeof(*r));
	memcpy(r->dgid, in + 8, 16);
	memcpy(r->sgid, in + 24, 16);
	r->dlid = get16(in + 40);
	r->slid = get16(in + 42);
	w = get32(in + 44);
	r->flow_label = (w >> 8) & 0xFFFFF;
	r->hop_limit = (uint8_t)w;
	r->tclass = in[48];
	r->reversible = in[49] >> 7;
	r->numb_path = in[49] & 0x7F;
	r->pkey = get16(in + 50);
	r->sl = in[53] & 0xF;
	r->mtu = in[54] & 0x3F;
	r->rate = in[55] & 0x3F;
	r->plt = in[56] & 0x3F;
}

void ipoib_sa_mad_init(uint8_t mad[SA_MAD_LEN], uint8_t method, uint16_t attr,
		       uint64_t tid, uint64_t comp_mask)
{
	memset(mad, 0, SA_MAD_LEN);
	mad[0] = 1;			/* BaseVersion */
	mad[1] = SA_CLASS;
	mad[2] = SA_CLASS_VERSION;
	mad[3] = method;
	put64(mad + 8, tid);
	put16(mad + 16, attr);
	put64(mad + 48, comp_mask);
}

int ipoib_sa_mad_parse(const uint8_t *mad, size_t len, uint8_t *method,
		       uint16_t *status, uint16_t *attr, uint64_t *tid)
{
	if (len < SA_DATA_OFF || mad[0] != 1 || mad[1] != SA_CLASS ||
	    mad[2] != SA_CLASS_VERSION)
		return -EINVAL;
	*method = mad[3];
	*status = get16(mad + 4);
	*tid = get64(mad + 8);
	*attr = get16(mad + 16);
	return 0;
}

unsigned int ipoib_mtu_bytes(uint8_t mtu_enum)
{
	return mtu_enum >= 1 && mtu_enum <= 5 ? 128u << mtu_enum : 0;
}

uint16_t ipoib_icmp6_csum(const uint8_t src[16], const uint8_t dst[16],
			  const uint8_t *msg, size_t len)
{
	uint64_t sum = 0;

	for (int i = 0; i < 16; i += 2)
		sum += get16(src + i) + get16(dst + i);
	sum += (uint32_t)len;
	sum += 58;		/* next header: ICMPv6 */
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += get16(msg + i);
	if (len & 1)
		sum += (uint16_t)(msg[len - 1] << 8);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

void ipoib_solicited_node(const uint8_t target[16], uint8_t out[16])
{
	static const uint8_t base[13] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff };

	memcpy(out, base, 13);
	memcpy(out + 13, target + 13, 3);
}

size_t ipoib_nd_encode(const struct ipoib_nd *nd, uint8_t out[IPOIB_ND_LEN])
{
	size_t icmp = 24 + (nd->has_lla ? 24 : 0);
	uint8_t *m = out + 40;

	memset(out, 0, 40 + icmp);
	out[0] = 0x60;
	put16(out + 4, (uint16_t)icmp);
	out[6] = 58;
	out[7] = 255;
	memcpy(out + 8, nd->src, 16);
	memcpy(out + 24, nd->dst, 16);
	m[0] = nd->type;
	if (nd->type == ND_NA)
		put32(m + 4, nd->flags);
	memcpy(m + 8, nd->target, 16);
	if (nd->has_lla) {
		m[24] = nd->type == ND_NS ? 1 : 2;
		m[25] = 3;
		ipoib_hwaddr_encode(&nd->lla, m + 28);
	}
	put16(m + 2, ipoib_icmp6_csum(nd->src, nd->dst, m, icmp));
	return 40 + icmp;
}

/* The options after the NS/NA body: the link-layer one of the right type. */
static int nd_options(const uint8_t *o, size_t len, struct ipoib_nd *nd)
{
	uint8_t want = nd->type == ND_NS ? 1 : 2;

	while (len) {
		size_t olen = len >= 2 ? (size_t)o[1] * 8 : 0;

		if (!olen || olen > len)
			return -EINVAL;		/* RFC 4861 §7.1.1: length 0 */
		if (o[0] == want) {
			if (olen != 24)
				return -EINVAL;
			nd->has_lla = true;
			ipoib_hwaddr_decode(o + 4, &nd->lla);
		}
		o += olen;
		len -= olen;
	}
	return 0;
}

int ipoib_nd_decode(const uint8_t *pkt, size_t len, struct ipoib_nd *nd)
{
	const uint8_t *m = pkt + 40;
	size_t plen;

	if (len < 41 || pkt[0] >> 4 != 6 || pkt[6] != 58 || (pkt[40] != ND_NS && pkt[40] != ND_NA))
		return -ENOENT;
	plen = get16(pkt + 4);
	memset(nd, 0, sizeof(*nd));
	if (plen < 24 || plen + 40 > len || pkt[7] != 255 || m[1] != 0 ||
	    ipoib_icmp6_csum(pkt + 8, pkt + 24, m, plen) != 0)
		return -EINVAL;
	nd->type = m[0];
	memcpy(nd->src, pkt + 8, 16);
	memcpy(nd->dst, pkt + 24, 16);
	nd->flags = nd->type == ND_NA ? get32(m + 4) & 0xE0000000u : 0;
	memcpy(nd->target, m + 8, 16);
	if (nd->target[0] == 0xff)
		return -EINVAL;		/* a multicast target */
	return nd_options(m + 24, plen - 24, nd);
}

/* ---- connected mode (RFC 4755) ---- */

uint64_t ipoib_cm_service_id(uint32_t qpn)
{
	return IPOIB_CM_IETF_ID | (qpn & IPOIB_QPN_MASK);
}

void ipoib_cm_data_encode(const struct ipoib_cm_data *d, uint8_t out[IPOIB_CM_DATA_LEN])
{
	put32(out, d->qpn);
	put32(out + 4, d->mtu);
}

int ipoib_cm_data_decode(const uint8_t *in, size_t len, struct ipoib_cm_data *d)
{
	if (!in || len < IPOIB_CM_DATA_LEN)
		return -EINVAL;
	d->qpn = get32(in);
	d->mtu = get32(in + 4);
	if (!d->qpn || d->qpn >= IPOIB_BCAST_QPN || d->mtu <= IPOIB_ENCAP_LEN + 68)
		return -EINVAL;
	return 0;
}

unsigned int ipoib_cm_peer_mtu(uint32_t buf_size)
{
	if (buf_size > IPOIB_CM_BUF_SIZE)
		buf_size = IPOIB_CM_BUF_SIZE;
	return buf_size > IPOIB_ENCAP_LEN ? buf_size - IPOIB_ENCAP_LEN : 0;
}

/* The Internet checksum of len bytes (RFC 1071). */
static uint16_t inet_csum(const uint8_t *p, size_t len)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

size_t ipoib_icmp_too_big(const uint8_t *pkt, size_t len, unsigned int mtu,
			  uint8_t out[IPOIB_TOO_BIG_MAX])
{
	size_t quote;

	if (len >= 20 && pkt[0] >> 4 == 4) {
		size_t ihl = (size_t)(pkt[0] & 0xf) * 4;

		if (ihl < 20 || ihl > len || (get16(pkt + 6) & 0x1fff) ||
		    (pkt[9] == 1 && (ihl == len || (pkt[ihl] != 0 && pkt[ihl] != 8))))
			return 0;	/* no ICMP about an ICMP error or a fragment (RFC 1122 3.2.2) */
		quote = ihl + 8 < len ? ihl + 8 : len;
		memset(out, 0, 28);
		out[0] = 0x45;
		put16(out + 2, (uint16_t)(28 + quote));
		out[8] = 64;
		out[9] = 1;
		memcpy(out + 12, pkt + 16, 4);	/* from the destination */
		memcpy(out + 16, pkt + 12, 4);
		put16(out + 10, inet_csum(out, 20));
		out[20] = 3;			/* destination unreachable */
		out[21] = 4;			/* fragmentation needed (RFC 1191) */
		put16(out + 26, (uint16_t)mtu);
		memcpy(out + 28, pkt, quote);
		put16(out + 22, inet_csum(out + 20, 8 + quote));
		return 28 + quote;
	}
	if (len >= 40 && pkt[0] >> 4 == 6) {
		if (pkt[6] == 58 && len > 40 && pkt[40] < 128)
			return 0;	/* no error about an ICMPv6 error (RFC 4443 2.4) */
		quote = len < IPOIB_TOO_BIG_MAX - 48 ? len : IPOIB_TOO_BIG_MAX - 48;
		memset(out, 0, 48);
		out[0] = 0x60;
		put16(out + 4, (uint16_t)(8 + quote));
		out[6] = 58;
		out[7] = 64;
		memcpy(out + 8, pkt + 24, 16);
		memcpy(out + 24, pkt + 8, 16);
		out[40] = 2;			/* packet too big (RFC 4443 3.2) */
		put32(out + 44, mtu);
		memcpy(out + 48, pkt, quote);
		put16(out + 42, ipoib_icmp6_csum(out + 8, out + 24, out + 40, 8 + quote));
		return 48 + quote;
	}
	return 0;
}
