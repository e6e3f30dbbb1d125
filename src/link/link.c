/* SPDX-License-Identifier: MIT */
/*
 * The link of one context (docs/link.md): the shm ring's ops table, opening
 * the wrappers that the environment asks for, following what softibd pushes
 * through the fabric map's link area (capture rings, faults: noticed in
 * sib_link_tick, never per packet, and applied by the engine thread in
 * sib_link_fetch/sib_link_apply), and the slow paths that run only while a
 * wrapper is active.  Not IBA (it stands in for ch. 7).
 * Must not call hca/ or verbs/.  Runs under the owner's progress lock,
 * except sib_link_fetch (the engine thread, without it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/ctl.h"
#include "iba/iba.h"
#include "link/dest.h"
#include "link/wrap.h"

const char *const sib_link_counter_name[SIB_LC_MAX] = {
	[SIB_LC_TX] = "tx",
	[SIB_LC_RX] = "rx",
	[SIB_LC_TX_FULL] = "tx_full",
	[SIB_LC_TX_LOST] = "tx_lost",
	[SIB_LC_LOSS] = "fault_loss",
	[SIB_LC_DUP] = "fault_dup",
	[SIB_LC_REORDER] = "fault_reorder",
	[SIB_LC_CORRUPT] = "fault_corrupt",
	[SIB_LC_DELAY] = "fault_delay",
	[SIB_LC_DOWN] = "fault_down",
	[SIB_LC_RX_ICRC] = "rx_icrc_drops",
	[SIB_LC_RX_BAD] = "rx_bad",
	[SIB_LC_RX_BAD_SLOT] = "rx_bad_slots",
	[SIB_LC_RX_FOREIGN] = "rx_foreign",
	[SIB_LC_RX_PAIRS] = "rx_pairs",
	[SIB_LC_CAPTURED] = "captured",
	[SIB_LC_CAP_MISSED] = "capture_missed",
	[SIB_LC_TR_ACK_TIMEOUTS] = "ack_timeouts",
	[SIB_LC_TR_SEQ_NAKS] = "seq_naks",
	[SIB_LC_TR_RNR_NAKS] = "rnr_naks",
	[SIB_LC_TR_STARVED] = "ack_timeouts_starved",
	[SIB_LC_NO_ROUTE] = "no_route",
};

uint64_t sib_link_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint32_t sib_link_fill_icrc(uint8_t *pkt, uint32_t len, uint32_t flags)
{
	uint32_t icrc_off;
	uint32_t v;

	if (flags & SIB_SLOT_F_ICRC)
		return flags;
	flags |= SIB_SLOT_F_ICRC;
	if (len < IBA_LRH_BYTES + IBA_ICRC_BYTES + IBA_VCRC_BYTES)
		return flags; /* no room for an ICRC: malformed, the receiver drops it */
	icrc_off = len - IBA_VCRC_BYTES - IBA_ICRC_BYTES;
	v = iba_icrc(pkt, icrc_off);
	for (int i = 0; i < 4; i++)
		pkt[icrc_off + i] = (uint8_t)(v >> (8 * i)); /* least significant byte first */
	if (flags & SIB_SLOT_F_VCRC) {
		uint16_t vc = iba_vcrc(pkt, len - IBA_VCRC_BYTES);

		pkt[len - 2] = (uint8_t)vc;
		pkt[len - 1] = (uint8_t)(vc >> 8);
	}
	return flags;
}

/* ---- the shm pair rings as a link ---- */

static int shm_reserve(struct sib_link *l, struct sib_link_tx *tx)
{
	tx->slot = sib_pair_reserve(tx->dest);
	if (!tx->slot)
		return -EAGAIN;
	tx->slot->src_inbox = l->src_inbox;
	tx->data = tx->slot->data;
	return 0;
}

static int shm_publish(struct sib_link *l, struct sib_link_tx *tx, uint32_t len, uint32_t flags)
{
	(void)l;
	return sib_pair_publish(tx->dest, tx->slot, len, flags);
}

static void shm_wake(void *dest)
{
	sib_link_wake(dest);
}

int sib_link_rx_garbage(struct sib_link *l, struct sib_link_rxq *q)
{
	for (uint32_t n = 0; n < SIB_PAIR_GARBAGE_BATCH; n++) {
		int k = sib_pair_look(&q->r, q->head);

		if (k >= 0)
			return k;
		/* No honest sender leaves another turn at our head: only we
		 * move a slot past its lap.  Drop it, free it for the next. */
		l->rx.bad_slots++;
		atomic_fetch_add_explicit(&q->r.hdr->dropped, 1, memory_order_relaxed);
		sib_pair_release(&q->r, q->head);
		q->head++;
	}
	return 0;
}

void sib_link_wait(struct sib_link *l, uint32_t seq, int64_t timeout_ns)
{
	struct sib_link_rx *rx = &l->rx;
	uint32_t n = __atomic_load_n(&rx->n, __ATOMIC_ACQUIRE);

	/* Without the lock (pairs.c keeps what it removes mapped for us). */
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&__atomic_load_n(&rx->q[i], __ATOMIC_ACQUIRE)->r.hdr->sleeping, 1,
				      memory_order_seq_cst);
	/* Store-load order against senders (publish, then read sleeping). */
	atomic_thread_fence(memory_order_seq_cst);
	if (!sib_link_rx_ready(l) &&
	    atomic_load_explicit(&rx->db.hdr->pairs_seq, memory_order_acquire) ==
		    __atomic_load_n(&rx->pairs_seen, __ATOMIC_RELAXED))
		sib_ring_nap(&rx->db, seq, timeout_ns);
	n = __atomic_load_n(&rx->n, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&__atomic_load_n(&rx->q[i], __ATOMIC_ACQUIRE)->r.hdr->sleeping, 0,
				      memory_order_relaxed);
}

/* The fast path in link.h inlines these same steps for this table. */
const struct sib_link_ops sib_link_shm_ops = {
	.name = "shm",
	.place = true,
	.reserve = shm_reserve,
	.publish = shm_publish,
	.wake = shm_wake,
};

/* ---- open / close ---- */

static bool dev_selected(const char *want, const struct sib_shm_device *dev)
{
	return !want[0] || (dev && !strncmp(want, dev->name, SIB_DEV_NAME_MAX));
}

static unsigned int nports(const struct sib_link *l)
{
	return l->dev && l->dev->num_ports < SIB_MAX_PORTS ? l->dev->num_ports : SIB_MAX_PORTS;
}

/* slow, and the stats flags, from what is active now. */
static void recompute(struct sib_link *l)
{
	struct sib_link_wrap *w = l->wrap;
	bool cap = w && w->cap_dev, faults = false;

	for (unsigned int p = 0; w && p < SIB_MAX_PORTS; p++) {
		cap = cap || w->cap_base[p];
		faults = faults || w->faults[p];
	}
	l->slow = l->ops != &sib_link_shm_ops || cap || faults;
	atomic_store_explicit(&l->stats->flags, (cap ? SIB_LINK_STAT_CAPTURE : 0) |
			      (faults ? SIB_LINK_STAT_FAULTS : 0), memory_order_relaxed);
}

static struct sib_link_wrap *wrap(struct sib_link *l)
{
	if (!l->wrap)
		l->wrap = calloc(1, sizeof(*l->wrap));
	return l->wrap;
}

/*
 * Replace a port's faults (NULL cfg: none).  What the old ones queue or hold
 * back is not lost: it moves to the new ones, or, with none, stays in a
 * faults object without faults that sends it and then goes
 * (sib_link_flush).  Only `closing` gives up what cannot leave now.
 */
static int set_faults(struct sib_link *l, unsigned int p, const struct sib_faults_cfg *cfg, bool closing)
{
	static const struct sib_faults_cfg none;
	struct sib_link_wrap *w = l->wrap;
	struct sib_faults *old = w->faults[p], *f = NULL;

	if (old)
		(void)sib_faults_flush(l, old, sib_link_now_ns(), closing);
	w->draining[p] = false;
	if (!cfg && old && !closing && !sib_faults_idle(old)) {
		cfg = &none;
		w->draining[p] = true;
	}
	if (cfg) {
		f = sib_faults_new(cfg, (l->dev ? l->dev->node_guid : 0) + p);
		if (!f)
			return ENOMEM;
		if (old)
			sib_faults_adopt(f, old);
	}
	if (old) {
		/* What did not fit in the new queue (one packet at most) goes
		 * now or is dropped, its destination reference with it. */
		if (!sib_faults_idle(old))
			(void)sib_faults_flush(l, old, sib_link_now_ns(), true);
		sib_faults_free(old);
	}
	w->faults[p] = f;
	return 0;
}

static void unmap_capture(struct sib_link_wrap *w, unsigned int p)
{
	if (w->cap_base[p])
		munmap(w->cap_base[p], SIB_RING_BYTES);
	w->cap_base[p] = NULL;
}

/* Map the capture ring `word` through softibd (GET_CAPTURE), on a
 * connection of its own: this happens once per `softib capture`. */
static void *map_capture(uint32_t word)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_HELLO };
	struct timeval tmo = { .tv_sec = 1 };
	int fd = sib_ctl_open(false), mfd = -1;
	void *base = NULL;

	if (fd < 0)
		return NULL;
	/* A daemon that does not answer costs the engine thread 1 s, once. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo));
	m.u.hello.abi_version = SIB_ABI_VERSION;
	m.u.hello.pid = getpid();
	if (sib_ctl_call(fd, &m, &mfd) || m.hdr.status)
		goto out;
	if (mfd >= 0)
		close(mfd);
	mfd = -1;
	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_GET_CAPTURE;
	m.u.link.cap = word;
	if (sib_ctl_call(fd, &m, &mfd) || m.hdr.status || mfd < 0 || m.u.link.ring_size != SIB_RING_BYTES)
		goto out;
	base = mmap(NULL, SIB_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (base == MAP_FAILED)
		base = NULL;
out:
	if (mfd >= 0)
		close(mfd);
	close(fd);
	return base;
}

/* Read port p's faults from the fabric map (seqlock, one try: a config
 * being written is picked up next time).  True if *cfg was read. */
static bool read_faults(const struct sib_shm_link_port *lp, uint32_t seq, struct sib_faults_cfg *cfg,
			bool *on)
{
	uint32_t flags;

	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = atomic_load_explicit(&lp->fault_seed, memory_order_relaxed);
	cfg->loss = atomic_load_explicit(&lp->fault_ppm[0], memory_order_relaxed) / 1e6;
	cfg->dup = atomic_load_explicit(&lp->fault_ppm[1], memory_order_relaxed) / 1e6;
	cfg->reorder = atomic_load_explicit(&lp->fault_ppm[2], memory_order_relaxed) / 1e6;
	cfg->corrupt = atomic_load_explicit(&lp->fault_ppm[3], memory_order_relaxed) / 1e6;
	cfg->delay_us = atomic_load_explicit(&lp->fault_delay_us, memory_order_relaxed);
	flags = atomic_load_explicit(&lp->fault_flags, memory_order_relaxed);
	cfg->down = flags & SIB_LINK_FAULT_DOWN;
	*on = flags & SIB_LINK_FAULT_ACTIVE;
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&lp->fault_seq, memory_order_relaxed) == seq &&
	       cfg->loss <= 1 && cfg->dup <= 1 && cfg->reorder <= 1 && cfg->corrupt <= 1 &&
	       cfg->delay_us <= 10000000;
}

/* The faults $SOFTIB_FAULTS asks for on port p (index), or NULL. */
static const struct sib_faults_cfg *env_faults(const struct sib_link_wrap *w, unsigned int p)
{
	return w->env_faults && (!w->env_cfg.port || w->env_cfg.port == p + 1) ? &w->env_cfg : NULL;
}

/* Did softibd push something for our ports that we have not acted on?
 * Reads the link area only: no system call, no allocation. */
static bool cfg_changed(const struct sib_link *l)
{
	for (unsigned int p = 0; l->cfg && p < nports(l); p++) {
		const struct sib_shm_link_port *lp = &l->cfg[p];
		uint32_t seq = atomic_load_explicit(&lp->fault_seq, memory_order_acquire);

		if (atomic_load_explicit(&lp->cap, memory_order_acquire) != l->seen_cap[p] ||
		    (seq != l->seen_fault_seq[p] && !(seq & 1)))
			return true;
	}
	return false;
}

void sib_link_fetch(struct sib_link *l, struct sib_link_fetch *f)
{
	memset(f, 0, sizeof(*f));
	atomic_store_explicit(&l->service, 0, memory_order_relaxed);
	sib_link_accept(l, f);
	for (unsigned int p = 0; l->cfg && p < nports(l); p++) {
		uint32_t word = atomic_load_explicit(&l->cfg[p].cap, memory_order_acquire);

		if (word == l->seen_cap[p])
			continue;
		f->changed[p] = true;
		f->cap_word[p] = word;
		f->cap_base[p] = word ? map_capture(word) : NULL; /* tried once, even if it fails */
	}
}

/*
 * Apply what softibd pushed for our ports: the capture rings f mapped, and
 * faults.  An active pushed setting replaces the port's faults (those of
 * $SOFTIB_FAULTS too); an inactive one ("off") removes only pushed faults,
 * and the port goes back to what $SOFTIB_FAULTS says (docs/link.md).
 */
void sib_link_apply(struct sib_link *l, struct sib_link_fetch *f)
{
	bool changed = false;

	sib_link_rx_apply(l, f, true);
	for (unsigned int p = 0; l->cfg && p < nports(l); p++) {
		const struct sib_shm_link_port *lp = &l->cfg[p];
		uint32_t seq = atomic_load_explicit(&lp->fault_seq, memory_order_acquire);
		struct sib_link_wrap *w;
		struct sib_faults_cfg cfg;
		bool on;

		if (!f->changed[p] && (seq == l->seen_fault_seq[p] || (seq & 1)))
			continue;
		if (!(w = wrap(l))) {
			if (f->cap_base[p])
				munmap(f->cap_base[p], SIB_RING_BYTES);
			f->cap_base[p] = NULL;
			continue;
		}
		if (f->changed[p]) {
			unmap_capture(w, p);
			l->seen_cap[p] = f->cap_word[p];
			if ((w->cap_base[p] = f->cap_base[p]))
				sib_ring_attach(&w->cap_ring[p], w->cap_base[p]);
			f->cap_base[p] = NULL;
			changed = true;
		}
		if (seq != l->seen_fault_seq[p] && !(seq & 1) && read_faults(lp, seq, &cfg, &on)) {
			l->seen_fault_seq[p] = seq;
			if (on) {
				(void)set_faults(l, p, &cfg, false);
				w->pushed[p] = true;
			} else if (w->pushed[p]) {
				(void)set_faults(l, p, env_faults(w, p), false);
				w->pushed[p] = false;
			}
			changed = true;
		}
	}
	if (changed)
		recompute(l);
	if (l->wrap && l->wrap->cap_dirty) {
		sib_capture_flush(l->wrap->cap);
		l->wrap->cap_dirty = false;
	}
}

/* At open, on the opening thread: fetch and apply at once. */
static void poll_cfg(struct sib_link *l)
{
	struct sib_link_fetch f;

	sib_link_fetch(l, &f);
	sib_link_apply(l, &f);
}

int sib_link_open(struct sib_link *l, void *inbox_base, int32_t pid, uint32_t src_inbox,
		  const struct sib_shm_device *dev, const struct sib_shm_link_port *cfg)
{
	const char *spec = getenv("SOFTIB_FAULTS");
	struct sib_link_wrap *w;
	int err = 0;

	memset(l, 0, sizeof(*l));
	sib_ring_attach(&l->rx.db, inbox_base);
	l->rx.pairs_seen = atomic_load_explicit(&l->rx.db.hdr->pairs_seq, memory_order_acquire);
	l->stats = (struct sib_link_stats *)((char *)inbox_base + SIB_LINK_STATS_OFF);
	memset(l->stats, 0, sizeof(*l->stats));
	l->ops = &sib_link_shm_ops;
	l->pid = pid > 0 ? pid : 1;
	l->src_inbox = src_inbox;
	l->dev = dev;
	l->cfg = cfg;

	w = wrap(l);
	if (!w)
		return ENOMEM;
	w->cap = sib_capture_from_env(&w->cap_sel, &err);
	if (err)
		goto fail;
	w->cap_dev = w->cap && dev_selected(w->cap_sel.dev, dev);
	if (spec && *spec) {
		const char *bad = NULL;

		if (sib_faults_parse(spec, &w->env_cfg, &bad)) {
			fprintf(stderr, "softib: SOFTIB_FAULTS: cannot parse '%s' (docs/link.md)\n",
				bad ? bad : spec);
			err = EINVAL;
			goto fail;
		}
		if (dev_selected(w->env_cfg.dev, dev)) {
			w->env_faults = true;
			for (unsigned int p = 0; p < nports(l); p++)
				if (env_faults(w, p) && (err = set_faults(l, p, &w->env_cfg, false)))
					goto fail;
		}
	}
	poll_cfg(l);
	recompute(l);
	if (!l->slow && !w->cap) {
		free(w);
		l->wrap = NULL;
	}
	atomic_store_explicit(&l->stats->magic, SIB_LINK_STATS_MAGIC, memory_order_release);
	return 0;
fail:
	sib_link_close(l);
	return err;
}

void sib_link_close(struct sib_link *l)
{
	struct sib_link_wrap *w = l->wrap;

	sib_link_rx_close(l);
	if (!w) {
		sib_link_dests_close(l);
		return;
	}
	for (unsigned int p = 0; p < SIB_MAX_PORTS; p++) {
		(void)set_faults(l, p, NULL, true);
		unmap_capture(w, p);
	}
	if (w->cap) {
		sib_capture_flush(w->cap);
		sib_capture_put(w->cap);
	}
	free(w);
	l->wrap = NULL;
	l->slow = l->ops != &sib_link_shm_ops;
	sib_link_dests_close(l); /* after the wrappers let go of theirs */
}

/* ---- slow paths ---- */

/* Which of our ports does a received packet's DLID name?  0: none. */
static uint8_t rx_port(const struct sib_link *l, const uint8_t *pkt, uint32_t len)
{
	uint16_t dlid;

	if (!l->dev || len < IBA_LRH_BYTES)
		return 0;
	dlid = (uint16_t)(pkt[2] << 8 | pkt[3]);
	for (unsigned int i = 0; i < nports(l); i++) {
		const struct sib_shm_port *p = &l->dev->ports[i];
		uint16_t mask = (uint16_t)~((1u << (p->lmc & 7)) - 1);

		if (p->lid && (dlid & mask) == (p->lid & mask))
			return (uint8_t)(i + 1);
	}
	return 0;
}

/* Copy a packet into softibd's capture ring for `softib capture`; a full
 * ring means the packet is not captured (counted), never a wait. */
static void capture_ring(struct sib_link *l, struct sib_ring *r, const uint8_t *pkt, uint32_t len,
			 uint32_t flags)
{
	struct sib_ring_slot *s;
	struct timespec ts;
	uint64_t t;

	s = sib_ring_reserve(r, l->pid, &t);
	if (!s) {
		sib_link_count(l, SIB_LC_CAP_MISSED, 1);
		return;
	}
	memcpy(s->data, pkt, len);
	clock_gettime(CLOCK_REALTIME, &ts);
	s->stamp = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	/* The tool's sink computes the CRCs that are not (sib_capture_packet_at). */
	if (sib_ring_publish(r, s, t, l->pid, len, flags & (SIB_SLOT_F_VCRC | SIB_SLOT_F_ICRC)) > 0)
		sib_ring_wake(r);
	sib_link_count(l, SIB_LC_CAPTURED, 1);
}

void sib_link_capture(struct sib_link *l, const uint8_t *pkt, uint32_t len, uint32_t flags, uint8_t port)
{
	struct sib_link_wrap *w = l->wrap;

	if (!w)
		return;
	if (len > SIB_SLOT_DATA_BYTES)
		len = SIB_SLOT_DATA_BYTES;
	if (port >= 1 && port <= SIB_MAX_PORTS && w->cap_base[port - 1])
		capture_ring(l, &w->cap_ring[port - 1], pkt, len, flags);
	if (!w->cap_dev || (w->cap_sel.port && port != w->cap_sel.port))
		return;
	if (sib_capture_packet(w->cap, pkt, len, flags)) {
		sib_link_count(l, SIB_LC_CAPTURED, 1);
		w->cap_dirty = true;
	} else {
		sib_link_count(l, SIB_LC_CAP_MISSED, 1);
	}
}

int sib_link_put(struct sib_link *l, void *dest, const uint8_t *pkt, uint32_t len, uint32_t flags,
		 uint8_t port)
{
	struct sib_link_tx tx = { .dest = dest, .port = port };
	int rc;

	if (l->ops->reserve(l, &tx))
		return -EAGAIN;
	memcpy(tx.data, pkt, len);
	sib_link_capture(l, pkt, len, flags, port);
	rc = l->ops->publish(l, &tx, len, flags);
	if (rc > 0)
		l->ops->wake(dest);
	else if (rc < 0)
		sib_link_count(l, SIB_LC_TX_LOST, 1);
	return 0;
}

static struct sib_faults *faults_on(const struct sib_link_wrap *w, uint8_t port)
{
	return w && port >= 1 && port <= SIB_MAX_PORTS ? w->faults[port - 1] : NULL;
}

int sib_link_reserve_slow(struct sib_link *l, struct sib_link_tx *tx)
{
	struct sib_faults *f = faults_on(l->wrap, tx->port);

	if (f) {
		if (!sib_faults_room(f)) {
			/* Room comes back when a held packet leaves: at the
			 * time sib_link_flush returns, not by polling. */
			sib_link_count(l, SIB_LC_TX_FULL, 1);
			return -ENOBUFS;
		}
		tx->slot = NULL;
		tx->data = sib_faults_stage(f);
		return 0;
	}
	if (l->ops->reserve(l, tx)) {
		sib_link_count(l, SIB_LC_TX_FULL, 1);
		return -EAGAIN;
	}
	return 0;
}

int sib_link_send_slow(struct sib_link *l, struct sib_link_tx *tx, uint32_t len, uint32_t flags)
{
	struct sib_faults *f = faults_on(l->wrap, tx->port);
	int rc;

	sib_link_count(l, SIB_LC_TX, 1);
	if (!tx->slot && f) {
		sib_faults_send(l, f, tx->dest, len, flags, tx->port, sib_link_now_ns());
		return 0;
	}
	sib_link_capture(l, tx->data, len, flags, tx->port);
	rc = l->ops->publish(l, tx, len, flags);
	if (rc > 0)
		l->ops->wake(tx->dest);
	else if (rc < 0) {
		sib_link_count(l, SIB_LC_TX_LOST, 1);
		return -1;
	}
	return 0;
}

void sib_link_recv_slow(struct sib_link *l, const uint8_t *data, uint32_t len, uint32_t flags)
{
	sib_link_capture(l, data, len, flags, rx_port(l, data, len < SIB_SLOT_DATA_BYTES ? len : 0));
}

uint64_t sib_link_flush(struct sib_link *l, uint64_t now)
{
	uint64_t next = 0;

	for (unsigned int p = 0; l->wrap && p < SIB_MAX_PORTS; p++) {
		struct sib_link_wrap *w = l->wrap;
		uint64_t t = w->faults[p] ? sib_faults_flush(l, w->faults[p], now, false) : 0;

		if (w->draining[p] && sib_faults_idle(w->faults[p])) {
			/* Faults removed, and what they held is sent now. */
			sib_faults_free(w->faults[p]);
			w->faults[p] = NULL;
			w->draining[p] = false;
			recompute(l);
		}
		if (t && (!next || t < next))
			next = t;
	}
	return next;
}

uint64_t sib_link_tick(struct sib_link *l, uint64_t now)
{
	uint64_t next = 0;

	(void)now;
	atomic_store_explicit(&l->stats->c[SIB_LC_RX_BAD_SLOT], l->rx.bad_slots, memory_order_relaxed);
	atomic_store_explicit(&l->stats->c[SIB_LC_RX_PAIRS], l->rx.n, memory_order_relaxed);
	/* A sender's context closed: its ring goes (sib_link_apply). */
	for (uint32_t i = 0; i < l->rx.n; i++)
		if (l->rx.q[i]->from_gen && sib_link_inbox_gen(l->rx.q[i]->from_inbox) != l->rx.q[i]->from_gen)
			atomic_store_explicit(&l->service, 1, memory_order_relaxed);
	/* The slow part (a round trip to softibd, mmap, allocation, the
	 * capture file's write) is the engine thread's: this may run inside
	 * the application's poll or post, which make no system call. */
	if (cfg_changed(l) || (l->wrap && l->wrap->cap_dirty))
		atomic_store_explicit(&l->service, 1, memory_order_relaxed);
	return next;
}
