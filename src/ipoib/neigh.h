/* SPDX-License-Identifier: MIT */
/*
 * The IPoIB neighbour table (the kernel's neighbour cache + ipoib_neigh/path:
 * IP address -> 20-byte hardware address -> address handle; IPv4 and IPv6
 * alike, an IPv4 address kept IPv4-mapped, ::ffff:a.b.c.d): bounded (the
 * oldest entry goes when full), with expiry (a VALID entry lives ttl_ms after
 * it was last confirmed by ARP; an INCOMPLETE one while its probes last), a
 * short queue of packets waiting for resolution per entry (unres_qlen).  Pure:
 * the caller passes the time (ms) and owns the AHs through a release hook.
 */
#ifndef SOFTIB_IPOIB_NEIGH_H
#define SOFTIB_IPOIB_NEIGH_H

#include <stddef.h>
#include <stdint.h>

#include "ipoib/wire.h"

#define NEIGH_QLEN	3	/* packets kept per unresolved entry */

enum neigh_state { NEIGH_FREE, NEIGH_INCOMPLETE, NEIGH_VALID };

struct neigh_pkt {
	uint8_t *data;
	size_t len;
};

struct neigh {
	enum neigh_state state;
	uint8_t ip[16];			/* IPv6, or IPv4-mapped (neigh_v4) */
	struct ipoib_hwaddr hw;		/* VALID only */
	void *ah;			/* the caller's address handle, or NULL */
	uint16_t dlid;			/* the LID the AH leads to, or the neighbour was
					 * last heard from (the caller's) */
	uint64_t expires;		/* ms: VALID: end of life; INCOMPLETE: next probe */
	uint64_t born;			/* ms: for eviction of the oldest */
	unsigned int probes;		/* ARP requests sent while INCOMPLETE */
	struct neigh_pkt q[NEIGH_QLEN];
	unsigned int qn;
};

/* release(ah, arg) frees an AH the table drops (evicted, expired, new hw). */
struct neigh_table {
	struct neigh *e;
	size_t cap;
	uint64_t ttl_ms;
	void (*release)(void *ah, void *arg);
	void *arg;
	uint64_t evicted, expired, qdrops;	/* counters */
};

/* 0, or -ENOMEM. cap >= 1 entries. */
int neigh_init(struct neigh_table *t, size_t cap, uint64_t ttl_ms,
	       void (*release)(void *ah, void *arg), void *arg);
/* Frees every entry (AHs through release) and the table. */
void neigh_fini(struct neigh_table *t);

/* ip as a table key: ::ffff:a.b.c.d (ip4 in host order). */
void neigh_v4(uint32_t ip4, uint8_t ip[16]);

/* The entry of ip, or NULL; a VALID entry past its life is removed first. */
struct neigh *neigh_lookup(struct neigh_table *t, const uint8_t ip[16], uint64_t now);
/* Learn ip -> hw (an ARP answer or request): the entry becomes VALID for
 * ttl_ms; a different hw drops the old AH.  Makes the entry (evicting the
 * oldest when full). Never NULL. */
struct neigh *neigh_confirm(struct neigh_table *t, const uint8_t ip[16],
			    const struct ipoib_hwaddr *hw, uint64_t now);
/* An INCOMPLETE entry for ip (existing entry returned as is). Never NULL. */
struct neigh *neigh_get_incomplete(struct neigh_table *t, const uint8_t ip[16], uint64_t now);
/* Keep a copy of a packet on an unresolved entry: 0, or -ENOMEM; a full queue
 * drops its oldest packet (counted in qdrops). */
int neigh_enqueue(struct neigh_table *t, struct neigh *n, const void *pkt, size_t len);
/* Release n's AH (the path changed): the next use makes a new one. */
void neigh_forget_ah(struct neigh_table *t, struct neigh *n);
/* Remove an entry: its queue freed, its AH released. */
void neigh_remove(struct neigh_table *t, struct neigh *n);
/* Remove every VALID entry past its life; returns how many. */
size_t neigh_expire(struct neigh_table *t, uint64_t now);
/* Entries in use. */
size_t neigh_count(const struct neigh_table *t);

#endif
