/* SPDX-License-Identifier: MIT */
/*
 * The link of one context (docs/link.md): the shm ring's ops table, opening
 * the wrappers that the environment asks for, and the slow paths that run
 * only while a wrapper is active.  Not IBA (it stands in for ch. 7).
 * Must not call hca/ or verbs/.  Runs under the owner's progress lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iba/iba.h"
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
	[SIB_LC_RX_BAD_TAIL] = "rx_bad_tail",
	[SIB_LC_RX_STALLED] = "rx_stalled_skips",
	[SIB_LC_CAPTURED] = "captured",
	[SIB_LC_CAP_MISSED] = "capture_missed",
	[SIB_LC_TR_ACK_TIMEOUTS] = "ack_timeouts",
	[SIB_LC_TR_SEQ_NAKS] = "seq_naks",
	[SIB_LC_TR_RNR_NAKS] = "rnr_naks",
};

uint64_t sib_link_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the shm ring as a link ---- */

static int shm_reserve(struct sib_link *l, struct sib_link_tx *tx)
{
	tx->slot = sib_ring_reserve(tx->dest, l->pid, &tx->ticket);
	if (!tx->slot)
		return -EAGAIN;
	tx->slot->src_inbox = l->src_inbox;
	tx->data = tx->slot->data;
	return 0;
}

static int shm_publish(struct sib_link *l, struct sib_link_tx *tx, uint32_t len, uint32_t flags)
{
	return sib_ring_publish(tx->dest, tx->slot, tx->ticket, l->pid, len, flags);
}

static const uint8_t *shm_poll(struct sib_link *l, uint32_t *len, uint32_t *flags)
{
	struct sib_ring_slot *s = sib_ring_peek(&l->rx);

	if (!s)
		return NULL;
	*len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
	*flags = __atomic_load_n(&s->flags, __ATOMIC_RELAXED);
	return s->data;
}

static void shm_consume(struct sib_link *l)
{
	sib_ring_release(&l->rx, &l->rx.r.slots[l->rx.head % SIB_INBOX_SLOTS]);
}

static void shm_wake(void *dest)
{
	sib_ring_wake(dest);
}

/* The fast path in link.h inlines these same steps for this table. */
const struct sib_link_ops sib_link_shm_ops = {
	.name = "shm",
	.reserve = shm_reserve,
	.publish = shm_publish,
	.poll = shm_poll,
	.consume = shm_consume,
	.wake = shm_wake,
};

/* ---- open / close ---- */

static bool dev_selected(const char *want, const struct sib_shm_device *dev)
{
	return !want[0] || (dev && !strncmp(want, dev->name, SIB_DEV_NAME_MAX));
}

int sib_link_open(struct sib_link *l, void *inbox_base, int32_t pid, uint32_t src_inbox,
		  const struct sib_shm_device *dev)
{
	const char *spec = getenv("SOFTIB_FAULTS");
	struct sib_link_wrap *w;
	int err = 0;

	memset(l, 0, sizeof(*l));
	sib_ring_rx_attach(&l->rx, inbox_base);
	l->stats = (struct sib_link_stats *)((char *)inbox_base + SIB_LINK_STATS_OFF);
	memset(l->stats, 0, sizeof(*l->stats));
	l->ops = &sib_link_shm_ops;
	l->pid = pid > 0 ? pid : 1;
	l->src_inbox = src_inbox;
	l->dev = dev;

	w = calloc(1, sizeof(*w));
	if (!w)
		return ENOMEM;
	w->cap = sib_capture_from_env(&w->cap_sel, &err);
	if (err)
		goto fail;
	w->cap_dev = w->cap && dev_selected(w->cap_sel.dev, dev);
	if (spec && *spec) {
		struct sib_faults_cfg cfg;
		const char *bad = NULL;

		if (sib_faults_parse(spec, &cfg, &bad)) {
			fprintf(stderr, "softib: SOFTIB_FAULTS: cannot parse '%s' (docs/link.md)\n",
				bad ? bad : spec);
			err = EINVAL;
			goto fail;
		}
		if (dev_selected(cfg.dev, dev)) {
			w->faults = sib_faults_new(&cfg, dev ? dev->node_guid : 0);
			if (!w->faults) {
				err = ENOMEM;
				goto fail;
			}
			w->fault_port = cfg.port;
			w->faults_dev = true;
		}
	}
	if (!w->cap_dev && !w->faults) {
		sib_capture_put(w->cap);
		free(w);
	} else {
		l->wrap = w;
		l->slow = true;
	}
	atomic_store_explicit(&l->stats->flags,
			      (l->wrap && l->wrap->cap_dev ? SIB_LINK_STAT_CAPTURE : 0) |
			      (l->wrap && l->wrap->faults ? SIB_LINK_STAT_FAULTS : 0), memory_order_relaxed);
	atomic_store_explicit(&l->stats->magic, SIB_LINK_STATS_MAGIC, memory_order_release);
	return 0;
fail:
	sib_capture_put(w->cap);
	free(w);
	return err;
}

void sib_link_close(struct sib_link *l)
{
	struct sib_link_wrap *w = l->wrap;

	if (!w)
		return;
	if (w->faults) {
		(void)sib_faults_flush(l, w->faults, sib_link_now_ns(), true);
		sib_faults_free(w->faults);
	}
	if (w->cap) {
		sib_capture_flush(w->cap);
		sib_capture_put(w->cap);
	}
	free(w);
	l->wrap = NULL;
	l->slow = l->ops != &sib_link_shm_ops;
}

/* ---- slow paths ---- */

/* Which of our ports does a received packet's DLID name?  0: none. */
static uint8_t rx_port(const struct sib_link *l, const uint8_t *pkt, uint32_t len)
{
	uint16_t dlid;

	if (!l->dev || len < IBA_LRH_BYTES)
		return 0;
	dlid = (uint16_t)(pkt[2] << 8 | pkt[3]);
	for (unsigned int i = 0; i < l->dev->num_ports && i < SIB_MAX_PORTS; i++) {
		const struct sib_shm_port *p = &l->dev->ports[i];
		uint16_t mask = (uint16_t)~((1u << (p->lmc & 7)) - 1);

		if (p->lid && (dlid & mask) == (p->lid & mask))
			return (uint8_t)(i + 1);
	}
	return 0;
}

void sib_link_capture(struct sib_link *l, const uint8_t *pkt, uint32_t len, uint32_t flags, uint8_t port)
{
	struct sib_link_wrap *w = l->wrap;

	if (!w || !w->cap_dev || (w->cap_sel.port && port != w->cap_sel.port))
		return;
	if (sib_capture_packet(w->cap, pkt, len, flags & SIB_SLOT_F_VCRC)) {
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

static bool faults_on(const struct sib_link_wrap *w, uint8_t port)
{
	return w && w->faults && (!w->fault_port || w->fault_port == port);
}

int sib_link_reserve_slow(struct sib_link *l, struct sib_link_tx *tx)
{
	if (faults_on(l->wrap, tx->port)) {
		if (!sib_faults_room(l->wrap->faults)) {
			sib_link_count(l, SIB_LC_TX_FULL, 1);
			return -EAGAIN;
		}
		tx->slot = NULL;
		tx->data = sib_faults_stage(l->wrap->faults);
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
	int rc;

	sib_link_count(l, SIB_LC_TX, 1);
	if (!tx->slot && faults_on(l->wrap, tx->port)) {
		sib_faults_send(l, l->wrap->faults, tx->dest, len, flags, tx->port, sib_link_now_ns());
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
	if (len > SIB_SLOT_DATA_BYTES)
		len = SIB_SLOT_DATA_BYTES;
	if (l->wrap && l->wrap->cap_dev)
		sib_link_capture(l, data, len, flags, rx_port(l, data, len));
}

uint64_t sib_link_flush(struct sib_link *l, uint64_t now)
{
	if (!l->wrap || !l->wrap->faults)
		return 0;
	return sib_faults_flush(l, l->wrap->faults, now, false);
}

uint64_t sib_link_tick(struct sib_link *l, uint64_t now)
{
	uint64_t next = 0;

	(void)sib_ring_check(&l->rx, now, &next);
	atomic_store_explicit(&l->stats->c[SIB_LC_RX_BAD_SLOT], l->rx.bad_slots, memory_order_relaxed);
	atomic_store_explicit(&l->stats->c[SIB_LC_RX_BAD_TAIL], l->rx.bad_tail, memory_order_relaxed);
	atomic_store_explicit(&l->stats->c[SIB_LC_RX_STALLED], l->rx.skipped, memory_order_relaxed);
	if (l->wrap && l->wrap->cap_dirty) {
		sib_capture_flush(l->wrap->cap);
		l->wrap->cap_dirty = false;
	}
	return next;
}
