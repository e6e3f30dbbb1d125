// SPDX-License-Identifier: MIT
/*
 * softib IBA packet CRCs: the ICRC (CRC-32 with variant fields masked, native
 * LNH 2/3 and RoCEv2 IPv4/IPv6) and the VCRC (CRC-16 poly 0x100B). IBA 7.8.
 * Only the headers are copied for masking; the payload is hashed in place.
 * No I/O, no state; the tables are const.
 */
#include <endian.h>
#include <string.h>
#include <isa-l/crc.h>

#include "iba/iba.h"
#include "iba/vcrc_table.h"

/* crc32() state after eight 0xFF bytes: the all-1s LRH that the global and
 * RoCEv2 ICRCs start with (the register value 0xDEBB20E3, complemented). */
#define ICRC_FF8_SEED 0x2144df1cu

/*
 * The standard reflected CRC-32 (zlib's crc32(), same seed and chaining
 * convention) from Intel ISA-L, which folds with PCLMULQDQ: about 12x
 * zlib 1.2.13 on 4 KiB payloads (docs/iba.md).
 */
static uint32_t crc32_sz(uint32_t crc, const uint8_t *p, size_t len)
{
	return crc32_gzip_refl(crc, p, len);
}

/*
 * Each function below hashes the headers from a masked copy m, then
 * continues over the rest of the packet in place.
 */
uint32_t iba_icrc(const uint8_t *pkt, size_t len)
{
	uint8_t m[IBA_GRH_BYTES + IBA_BTH_BYTES];
	uint32_t crc;
	size_t n;

	if (len < IBA_LRH_BYTES + IBA_BTH_BYTES)
		return 0;
	switch (pkt[1] & 3) {
	case IBA_LNH_LOCAL:
		/* LRH.VL and BTH byte 4 (FECN, BECN, resv6) are variant. */
		n = IBA_LRH_BYTES + IBA_BTH_BYTES;
		memcpy(m, pkt, n);
		m[0] |= 0xF0;
		m[IBA_LRH_BYTES + 4] = 0xFF;
		crc = crc32_sz(0, m, n);
		break;
	case IBA_LNH_GLOBAL:
		/* The whole LRH; GRH TClass, FlowLabel, HopLmt; BTH byte 4. */
		if (len < IBA_LRH_BYTES + IBA_GRH_BYTES + IBA_BTH_BYTES)
			return 0;
		pkt += IBA_LRH_BYTES;
		len -= IBA_LRH_BYTES;
		n = IBA_GRH_BYTES + IBA_BTH_BYTES;
		memcpy(m, pkt, n);
		m[0] |= 0x0F;
		memset(m + 1, 0xFF, 3);
		m[7] = 0xFF;
		m[IBA_GRH_BYTES + 4] = 0xFF;
		crc = crc32_sz(ICRC_FF8_SEED, m, n);
		break;
	default:
		return 0;	/* raw packets carry no ICRC */
	}
	return crc32_sz(crc, pkt + n, len - n);
}

uint32_t iba_icrc_rocev2_ipv4(const uint8_t *ip, size_t len)
{
	uint8_t m[60 + 8 + IBA_BTH_BYTES];
	size_t ihl, n;

	if (len < 20)
		return 0;
	ihl = (size_t)(ip[0] & 0x0F) * 4;
	n = ihl + 8 + IBA_BTH_BYTES;
	if (ihl < 20 || len < n)
		return 0;
	memcpy(m, ip, n);
	m[1] = 0xFF;			/* TOS: DSCP, ECN */
	m[8] = 0xFF;			/* TTL */
	m[10] = m[11] = 0xFF;		/* header checksum */
	m[ihl + 6] = m[ihl + 7] = 0xFF;	/* UDP checksum */
	m[ihl + 8 + 4] = 0xFF;		/* BTH FECN/BECN/resv6 */
	return crc32_sz(crc32_sz(ICRC_FF8_SEED, m, n), ip + n, len - n);
}

uint32_t iba_icrc_rocev2_ipv6(const uint8_t *ip6, size_t len)
{
	uint8_t m[40 + 8 + IBA_BTH_BYTES];

	if (len < sizeof(m))
		return 0;
	memcpy(m, ip6, sizeof(m));
	m[0] |= 0x0F;			/* TClass, high nibble */
	memset(m + 1, 0xFF, 3);		/* TClass low nibble, FlowLabel */
	m[7] = 0xFF;			/* HopLimit */
	m[46] = m[47] = 0xFF;		/* UDP checksum */
	m[52] = 0xFF;			/* BTH FECN/BECN/resv6 */
	return crc32_sz(crc32_sz(ICRC_FF8_SEED, m, sizeof(m)), ip6 + sizeof(m),
			len - sizeof(m));
}

/*
 * Slicing-by-16 over the register c (not yet complemented). Only the first
 * two bytes of each block mix with c, so the loop-carried chain is one xor,
 * two lookups and the xor tree; the other 14 lookups run off the chain.
 */
static uint16_t vcrc_update(uint16_t c, const uint8_t *p, size_t len)
{
	uint64_t q, r;
	uint32_t x;

	while (len >= 16) {
		memcpy(&q, p, 8);
		memcpy(&r, p + 8, 8);
		q = le64toh(q);
		r = le64toh(r);
		x = c ^ (uint16_t)q;
		c = vcrc_tab[15][x & 0xFF] ^ vcrc_tab[14][x >> 8] ^
		    (vcrc_tab[13][(q >> 16) & 0xFF] ^ vcrc_tab[12][(q >> 24) & 0xFF] ^
		     vcrc_tab[11][(q >> 32) & 0xFF] ^ vcrc_tab[10][(q >> 40) & 0xFF] ^
		     vcrc_tab[9][(q >> 48) & 0xFF] ^ vcrc_tab[8][q >> 56] ^
		     vcrc_tab[7][r & 0xFF] ^ vcrc_tab[6][(r >> 8) & 0xFF] ^
		     vcrc_tab[5][(r >> 16) & 0xFF] ^ vcrc_tab[4][(r >> 24) & 0xFF] ^
		     vcrc_tab[3][(r >> 32) & 0xFF] ^ vcrc_tab[2][(r >> 40) & 0xFF] ^
		     vcrc_tab[1][(r >> 48) & 0xFF] ^ vcrc_tab[0][r >> 56]);
		p += 16;
		len -= 16;
	}
	while (len--)
		c = (c >> 8) ^ vcrc_tab[0][(c ^ *p++) & 0xFF];
	return c;
}

uint16_t iba_vcrc(const uint8_t *pkt, size_t len)
{
	return vcrc_update(0xFFFF, pkt, len) ^ 0xFFFF;
}
