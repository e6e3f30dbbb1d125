/* SPDX-License-Identifier: MIT */
/*
 * Fault wrapper (docs/link.md): per link, seeded, on the sending side:
 * loss, duplication, reordering (a packet is held back behind the next
 * one), corruption (one bit flipped after the ICRC was computed, here if
 * the sender did not, so that only the receiver's ICRC check can catch
 * it, IBA 9.8.x/7.8), delay and
 * link down.  Faulted packets are built in a staging buffer and queued, so
 * a full destination holds them back (flow control) instead of losing them.
 * A packet kept for later holds a count on its destination (l->dest_ref),
 * so that the owner does not unmap a peer inbox a queued packet still
 * goes to.  A destination whose inbox is full holds back only its own
 * packets: those to other destinations pass them (no head-of-line
 * blocking), each destination's packets leave in the order decided here.
 * Not on the fast path.  Runs under the owner's progress lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iba/iba.h"
#include "link/wrap.h"

#define QMAX            64          /* packets held (queue); `used` is one bit each */
#define REORDER_HOLD_NS 1000000ull  /* a held-back packet goes after 1 ms anyway */
#define BLOCKED_RETRY_NS 50000ull   /* destination full: try again */

struct held {
	void *dest;
	uint64_t due;                  /* ns */
	uint32_t len, flags;
	uint8_t port;
	uint8_t data[SIB_SLOT_DATA_BYTES];
};

struct sib_faults {
	struct sib_faults_cfg cfg;
	uint64_t rng;
	uint8_t stage[SIB_SLOT_DATA_BYTES];
	struct held q[QMAX];           /* storage: entry i in use if bit i of `used` */
	uint64_t used;
	uint8_t order[QMAX];           /* indices into q, in the order decided */
	uint32_t qcount;
	struct held hold;              /* reordered: waits for the next packet */
	bool holding;
	uint64_t hold_since;
	bool refused;                  /* a reserve found no room (sib_faults_room) */
};
_Static_assert(QMAX <= 64, "one bit of `used` per queue entry");

/* splitmix64: small, seedable, good enough for fault decisions. */
static uint64_t rnd(struct sib_faults *f)
{
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool chance(struct sib_faults *f, double p)
{
	return p > 0 && (double)(rnd(f) >> 11) * 0x1.0p-53 < p;
}

static int parse_prob(const char *v, double *out)
{
	char *end;
	double d = strtod(v, &end);

	if (end == v || *end || !(d >= 0 && d <= 1))
		return EINVAL;
	*out = d;
	return 0;
}

int sib_faults_parse(const char *spec, struct sib_faults_cfg *cfg, const char **bad)
{
	static char badbuf[128];
	char buf[512], *save = NULL;

	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 1;
	*bad = NULL;
	if (strlen(spec) >= sizeof(buf))
		return EINVAL;
	strcpy(buf, spec);
	for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *v = strchr(kv, '='), *end;
		int rc = 0;

		if (!v)
			goto bad;
		*v++ = '\0';
		if (!strcmp(kv, "seed")) {
			cfg->seed = strtoull(v, &end, 0);
			rc = end == v || *end ? EINVAL : 0;
		} else if (!strcmp(kv, "loss")) {
			rc = parse_prob(v, &cfg->loss);
		} else if (!strcmp(kv, "dup")) {
			rc = parse_prob(v, &cfg->dup);
		} else if (!strcmp(kv, "reorder")) {
			rc = parse_prob(v, &cfg->reorder);
		} else if (!strcmp(kv, "corrupt")) {
			rc = parse_prob(v, &cfg->corrupt);
		} else if (!strcmp(kv, "delay_us")) {
			unsigned long d = strtoul(v, &end, 0);

			rc = end == v || *end || d > 10000000 ? EINVAL : 0;
			cfg->delay_us = (uint32_t)d;
		} else if (!strcmp(kv, "down")) {
			rc = strcmp(v, "0") && strcmp(v, "1") ? EINVAL : 0;
			cfg->down = *v == '1';
		} else if (!strcmp(kv, "dev")) {
			rc = strlen(v) < sizeof(cfg->dev) ? 0 : EINVAL;
			if (!rc)
				strcpy(cfg->dev, v);
		} else if (!strcmp(kv, "port")) {
			unsigned long p = strtoul(v, &end, 0);

			rc = end == v || *end || p > SIB_MAX_PORTS ? EINVAL : 0;
			cfg->port = (uint8_t)p;
		} else {
			rc = EINVAL;
		}
		if (rc) {
			v[-1] = '=';
			goto bad_kv;
		}
		continue;
bad:
bad_kv:
		snprintf(badbuf, sizeof(badbuf), "%s", kv);
		*bad = badbuf;
		return EINVAL;
	}
	return 0;
}

struct sib_faults *sib_faults_new(const struct sib_faults_cfg *cfg, uint64_t salt)
{
	struct sib_faults *f = calloc(1, sizeof(*f));

	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	f->cfg = *cfg;
	f->rng = cfg->seed ^ (salt * 0x9e3779b97f4a7c15ull);
	return f;
}

void sib_faults_free(struct sib_faults *f)
{
	free(f);
}

static void put_held(struct sib_faults *f, const struct held *h);
static uint64_t flush_queue(struct sib_link *l, struct sib_faults *f, uint64_t now, bool all);

bool sib_faults_idle(const struct sib_faults *f)
{
	return !f->qcount && !f->holding;
}

void sib_faults_adopt(struct sib_faults *to, struct sib_faults *from)
{
	uint32_t i = 0;

	for (; i < from->qcount && to->qcount < QMAX; i++) {
		put_held(to, &from->q[from->order[i]]); /* its dest reference moves with it */
		from->used &= ~(1ull << from->order[i]);
	}
	from->qcount -= i;
	memmove(from->order, from->order + i, from->qcount);
	to->refused = to->refused || from->refused; /* a sender still waits for room */
	if (from->holding && to->qcount < QMAX) {
		put_held(to, &from->hold);
		from->holding = false;
	}
}

uint8_t *sib_faults_stage(struct sib_faults *f)
{
	return f->stage;
}

static bool room(const struct sib_faults *f)
{
	return f->qcount + 3 <= QMAX; /* this packet, its duplicate, a held one */
}

bool sib_faults_room(struct sib_faults *f)
{
	if (room(f))
		return true;
	f->refused = true; /* the next flush that makes room says "now" */
	return false;
}

static void dest_ref(struct sib_link *l, void *dest, int delta)
{
	if (l->dest_ref)
		l->dest_ref(dest, delta);
}

/* Append a copy of h to f's queue (room checked by the caller). */
static void put_held(struct sib_faults *f, const struct held *h)
{
	unsigned int i = (unsigned int)__builtin_ctzll(~f->used); /* a free entry: qcount < QMAX */
	struct held *e = &f->q[i];

	e->dest = h->dest;
	e->due = h->due;
	e->len = h->len;
	e->flags = h->flags;
	e->port = h->port;
	memcpy(e->data, h->data, h->len);
	f->used |= 1ull << i;
	f->order[f->qcount++] = (uint8_t)i;
}

/* Keep a packet past the send that gave it: the destination stays
 * referenced (mapped) until the packet leaves or is dropped. */
static void enqueue(struct sib_link *l, struct sib_faults *f, const struct held *h)
{
	dest_ref(l, h->dest, +1);
	put_held(f, h);
}

/* Flip one bit between the fixed headers and the end of the ICRC: every
 * such bit is invariant, so the ICRC no longer matches.  The VCRC (if the
 * link computes it) is recomputed: the damage happened past the last hop's
 * link check, where only the end-to-end ICRC can see it. */
static bool corrupt(struct sib_faults *f, uint8_t *pkt, uint32_t len, uint32_t flags)
{
	size_t fixed, end;

	if (len < IBA_LRH_BYTES + IBA_BTH_BYTES + IBA_ICRC_BYTES + IBA_VCRC_BYTES)
		return false;
	fixed = IBA_LRH_BYTES + IBA_BTH_BYTES + ((pkt[1] & 3) == IBA_LNH_GLOBAL ? IBA_GRH_BYTES : 0);
	end = len - IBA_VCRC_BYTES;
	if (end <= fixed)
		return false;
	uint64_t r = rnd(f);
	pkt[fixed + r % (end - fixed)] ^= (uint8_t)(1u << ((r >> 32) & 7));
	if (flags & SIB_SLOT_F_VCRC) {
		uint16_t v = iba_vcrc(pkt, end);

		pkt[end] = (uint8_t)v;
		pkt[end + 1] = (uint8_t)(v >> 8);
	}
	return true;
}

void sib_faults_send(struct sib_link *l, struct sib_faults *f, void *dest, uint32_t len, uint32_t flags,
		     uint8_t port, uint64_t now)
{
	struct held *h = &f->hold;
	struct held cur;
	bool dup;

	if (len > SIB_SLOT_DATA_BYTES)
		return;
	if (f->cfg.down) {
		sib_link_count(l, SIB_LC_DOWN, 1);
		return;
	}
	if (chance(f, f->cfg.loss)) {
		sib_link_count(l, SIB_LC_LOSS, 1);
		return;
	}
	/* The packet leaves memory here: it carries a computed ICRC from now
	 * on, so that the receiver's check catches the corruption below
	 * (IBA 9.8.x). */
	flags = sib_link_fill_icrc(f->stage, len, flags);
	if (chance(f, f->cfg.corrupt) && corrupt(f, f->stage, len, flags))
		sib_link_count(l, SIB_LC_CORRUPT, 1);
	dup = chance(f, f->cfg.dup);
	if (dup)
		sib_link_count(l, SIB_LC_DUP, 1);
	if (f->cfg.delay_us)
		sib_link_count(l, SIB_LC_DELAY, 1);
	/* Build the queue entry in place of the staging buffer's copy. */
	cur.dest = dest;
	cur.due = now + (uint64_t)f->cfg.delay_us * 1000u;
	cur.len = len;
	cur.flags = flags;
	cur.port = port;
	memcpy(cur.data, f->stage, len);
	if (!f->holding && chance(f, f->cfg.reorder)) {
		/* Held back: it leaves after the next packet (or 1 ms). */
		sib_link_count(l, SIB_LC_REORDER, 1);
		*h = cur;
		dest_ref(l, h->dest, +1);
		f->holding = true;
		f->hold_since = now;
		if (dup)
			enqueue(l, f, &cur);
	} else {
		enqueue(l, f, &cur);
		if (dup)
			enqueue(l, f, &cur);
		if (f->holding) {
			h->due = cur.due;
			enqueue(l, f, h);
			dest_ref(l, h->dest, -1);
			f->holding = false;
		}
	}
	(void)flush_queue(l, f, now, false);
}

static bool in(void *const *set, unsigned int n, const void *dest)
{
	for (unsigned int i = 0; i < n; i++)
		if (set[i] == dest)
			return true;
	return false;
}

/*
 * Send what is due, in the queue's order, skipping the destinations that
 * cannot take their next packet (not due yet, or their inbox full): what
 * follows to those waits behind it, what goes elsewhere passes.  Each entry
 * is looked at once and each destination refused at most once per call.
 * `all` (closing): due times are ignored and what cannot leave is lost.
 */
static uint64_t flush_queue(struct sib_link *l, struct sib_faults *f, uint64_t now, bool all)
{
	void *stopped[QMAX];
	unsigned int nstopped = 0;
	uint32_t keep = 0;
	uint64_t next = 0;

	if (f->holding && (all || now - f->hold_since >= REORDER_HOLD_NS) && f->qcount < QMAX) {
		f->hold.due = now;
		enqueue(l, f, &f->hold);
		dest_ref(l, f->hold.dest, -1);
		f->holding = false;
	}
	for (uint32_t i = 0; i < f->qcount; i++) {
		uint8_t idx = f->order[i];
		struct held *e = &f->q[idx];
		bool stop = in(stopped, nstopped, e->dest);

		if (!stop) {
			if (!all && e->due > now) {
				if (!next || e->due < next)
					next = e->due;
				stop = true;
			} else if (sib_link_put(l, e->dest, e->data, e->len, e->flags, e->port)) {
				if (!all && (!next || now + BLOCKED_RETRY_NS < next))
					next = now + BLOCKED_RETRY_NS;
				stop = true;
			}
			if (stop)
				stopped[nstopped++] = e->dest;
		}
		if (stop && !all) {
			f->order[keep++] = idx; /* stays, in its place */
			continue;
		}
		/* sent, or closing: what cannot leave is lost */
		dest_ref(l, e->dest, -1);
		f->used &= ~(1ull << idx);
	}
	f->qcount = keep;
	if (all && f->holding) { /* closing with a full queue: lost too */
		dest_ref(l, f->hold.dest, -1);
		f->holding = false;
	}
	if (f->holding) {
		uint64_t t = f->hold_since + REORDER_HOLD_NS;

		if (!next || t < next)
			next = t;
	}
	return next;
}

uint64_t sib_faults_flush(struct sib_link *l, struct sib_faults *f, uint64_t now, bool all)
{
	uint64_t next = flush_queue(l, f, now, all);

	/* A sender was refused room and there is room now: it should try
	 * again at once, not when the next packet is due. */
	if (f->refused && room(f)) {
		f->refused = false;
		next = now ? now : 1;
	}
	return next;
}
