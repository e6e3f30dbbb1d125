// SPDX-License-Identifier: MIT
/*
 * softibd and the link layer (docs/link.md): capture sessions and per-port
 * faults that `softib capture` and `softib fault` set on running programs,
 * pushed to clients through the link area at the end of the fabric map
 * (sib_fabric_shm.link, written only here); and the per-context link
 * counters of the status report and the PMA's data counters
 * (sibd_data_counters), read from each inbox's header page through a
 * read-only mapping, printed or reported and never acted on.
 * What is armed and set where is softibd's PRIVATE record (ports[] here,
 * devices from d->devs): the map's link area is written from it and never
 * read back.  Nothing a client wrote is trusted.  Single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "daemon/linkcfg.h"
#include "subnet/mad_router.h"
#include "subnet/subnet.h"
#include "daemon/softibd.h"
#include "link/link.h"
#include "link/wrap.h"

#define CAP_SESSIONS 16

/* A capture ring and the connection (`softib capture`) that drains it. */
static struct cap_session {
	int fd;                        /* memfd; -1 = free (0 before init) */
	const struct sibd_client *owner;
	uint32_t word;                 /* SIB_LINK_CAP_MAKE(index, gen) */
	void *base;                    /* softibd's own mapping (MAD capture), or NULL */
	struct sib_ring ring;
	uint64_t mads, mads_missed;    /* MADs softibd put in it, and those a full ring lost */
} caps[CAP_SESSIONS];
static bool caps_init;
static uint32_t cap_gen;

/* What softibd set on each port: the truth the link area is written from. */
static struct port_rec {
	uint32_t cap;                  /* armed capture word, 0 = none */
	uint32_t faults_seq;           /* the seqlock count last stored */
	bool faults;                   /* faults set (cfg valid) */
	struct sib_faults_cfg cfg;
} ports[SIB_MAX_DEVICES][SIB_MAX_PORTS];

/* The data counters of contexts that closed, per port: the PMA's counts do
 * not go back when a program exits (IBA 16.1.3.5: they only grow, until a
 * clearing Set).  Display only, as the link stats they come from. */
static struct sib_pma_counters retired[SIB_MAX_DEVICES][SIB_MAX_PORTS];

/* Inbox i's link stats, mapped read-only (munmap SIB_INBOX_HDR_BYTES at
 * page), or NULL if it has none (yet). */
static const struct sib_link_stats *map_stats(struct sibd *d, uint32_t i, void **page)
{
	const struct sib_link_stats *st;

	*page = mmap(NULL, SIB_INBOX_HDR_BYTES, PROT_READ, MAP_SHARED, d->inbox[i].fd, 0);
	if (*page == MAP_FAILED)
		return NULL;
	st = (const struct sib_link_stats *)((const char *)*page + SIB_LINK_STATS_OFF);
	if (atomic_load_explicit(&st->magic, memory_order_acquire) != SIB_LINK_STATS_MAGIC) {
		munmap(*page, SIB_INBOX_HDR_BYTES);
		return NULL;
	}
	return st;
}

static void init_caps(void)
{
	if (caps_init)
		return;
	for (int i = 0; i < CAP_SESSIONS; i++)
		caps[i].fd = -1;
	caps_init = true;
}

/* The ports a request names, among the present devices of softibd's own
 * record: false (EINVAL) if it names none that exist. */
static bool for_ports(struct sibd *d, const struct sib_ctl_link *l,
		      void (*fn)(struct sibd *d, uint32_t dev, uint32_t port, void *arg), void *arg)
{
	uint32_t first = l->dev_index, last = l->dev_index;
	bool any = false;

	if (l->dev_index == SIB_CTL_LINK_ALL) {
		first = 0;
		last = d->num_devices - 1;
	}
	if (d->num_devices == 0 || last >= d->num_devices || first > last)
		return false;
	if (l->dev_index != SIB_CTL_LINK_ALL && !sibd_dev_present(d, l->dev_index))
		return false;
	for (uint32_t dev = first; dev <= last; dev++) {
		uint32_t np = d->devs[dev].num_ports;

		if (!sibd_dev_present(d, dev))
			continue;
		if (l->port > np && l->dev_index != SIB_CTL_LINK_ALL)
			return false;
		for (uint32_t p = 1; p <= np && p <= SIB_MAX_PORTS; p++) {
			if (l->port && p != l->port)
				continue;
			if (fn)
				fn(d, dev, p - 1, arg);
			any = true;
		}
	}
	return any;
}

static void port_busy(struct sibd *d, uint32_t dev, uint32_t port, void *arg)
{
	(void)d;
	if (ports[dev][port].cap)
		*(bool *)arg = true;
}

static void set_cap(struct sibd *d, uint32_t dev, uint32_t port, uint32_t word)
{
	ports[dev][port].cap = word;
	atomic_store_explicit(&d->shm->link[dev][port].cap, word, memory_order_release);
}

static void port_arm(struct sibd *d, uint32_t dev, uint32_t port, void *arg)
{
	set_cap(d, dev, port, *(uint32_t *)arg);
}

int sibd_link_capture(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	struct sib_ctl_link *l = &m->u.link;
	bool busy = false;
	int i, fd;

	init_caps();
	if (!for_ports(d, l, port_busy, &busy))
		return -EINVAL;
	if (busy)
		return -EBUSY; /* one capture per port at a time */
	for (i = 0; i < CAP_SESSIONS && caps[i].fd >= 0; i++)
		;
	if (i == CAP_SESSIONS)
		return -EBUSY;
	/* Sealed: no client can shrink it under the others' mappings. */
	fd = sibd_sealed_memfd("softib-capture", SIB_RING_BYTES);
	if (fd < 0)
		return fd;
	caps[i].fd = fd;
	caps[i].owner = c;
	/* softibd produces the MADs crossing the armed ports into it too */
	caps[i].base = mmap(NULL, SIB_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (caps[i].base == MAP_FAILED)
		caps[i].base = NULL;
	else
		sib_ring_attach(&caps[i].ring, caps[i].base);
	caps[i].mads = caps[i].mads_missed = 0;
	caps[i].word = SIB_LINK_CAP_MAKE(i, ++cap_gen);
	for_ports(d, l, port_arm, &caps[i].word);
	sibd_log("capture %#x armed by pid %d", caps[i].word, (int)c->pid);
	l->cap = caps[i].word;
	l->ring_size = SIB_RING_BYTES;
	*pass_fd = fd;
	return 0;
}

int sibd_link_get_capture(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	struct sib_ctl_link *l = &m->u.link;
	uint32_t i = SIB_LINK_CAP_SESSION(l->cap);

	init_caps();
	if (!l->cap || i >= CAP_SESSIONS || caps[i].fd < 0 || caps[i].word != l->cap)
		return -ESTALE;
	l->ring_size = SIB_RING_BYTES;
	*pass_fd = caps[i].fd;
	return 0;
}

void sibd_link_mad_trace(struct sibd *d, uint32_t dev, uint8_t port, const mai_mad_t *m, bool out)
{
	uint8_t pkt[SIB_MAD_WIRE_MAX];
	struct cap_session *cs;
	struct sib_ring_slot *slot;
	struct timespec ts;
	uint32_t word, i;
	uint64_t t;
	size_t len;

	(void)d;
	if (dev >= SIB_MAX_DEVICES || port < 1 || port > SIB_MAX_PORTS || !(word = ports[dev][port - 1].cap))
		return;
	i = SIB_LINK_CAP_SESSION(word);
	if (i >= CAP_SESSIONS || caps[i].word != word || !caps[i].base)
		return;
	cs = &caps[i];
	len = sib_mad_wire(m, out, pkt, sizeof(pkt));
	if (!len)
		return;
	slot = sib_ring_reserve(&cs->ring, (int32_t)getpid(), &t);
	if (!slot) { /* full: not captured, nobody waits (as a context's link) */
		cs->mads_missed++;
		return;
	}
	memcpy(slot->data, pkt, len);
	clock_gettime(CLOCK_REALTIME, &ts);
	slot->stamp = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (sib_ring_publish(&cs->ring, slot, t, (int32_t)getpid(), (uint32_t)len,
			     SIB_SLOT_F_ICRC | SIB_SLOT_F_VCRC) > 0)
		sib_ring_wake(&cs->ring);
	cs->mads++;
}

/* The capture sessions of a connection end with it: disarm, forget. */
void sibd_link_client_gone(struct sibd *d, const struct sibd_client *c)
{
	init_caps();
	for (int i = 0; i < CAP_SESSIONS; i++) {
		if (caps[i].fd < 0 || caps[i].owner != c)
			continue;
		for (uint32_t dev = 0; dev < SIB_MAX_DEVICES; dev++)
			for (uint32_t p = 0; p < SIB_MAX_PORTS; p++)
				if (ports[dev][p].cap == caps[i].word)
					set_cap(d, dev, p, 0);
		sibd_log("capture %#x ended (%llu MADs, %llu missed)", caps[i].word,
			 (unsigned long long)caps[i].mads, (unsigned long long)caps[i].mads_missed);
		if (caps[i].base)
			munmap(caps[i].base, SIB_RING_BYTES);
		caps[i].base = NULL;
		close(caps[i].fd);
		caps[i].fd = -1;
		caps[i].owner = NULL;
	}
}

static void port_faults(struct sibd *d, uint32_t dev, uint32_t port, void *arg)
{
	const struct sib_faults_cfg *cfg = arg;
	struct sib_shm_link_port *lp = &d->shm->link[dev][port];
	struct port_rec *r = &ports[dev][port];
	uint32_t seq = r->faults_seq;
	bool on = cfg && (cfg->loss > 0 || cfg->dup > 0 || cfg->reorder > 0 || cfg->corrupt > 0 ||
			  cfg->delay_us || cfg->down);

	r->faults = on;
	if (on)
		r->cfg = *cfg;
	/* Seqlock: odd while writing; never 0 again once set. */
	r->faults_seq = (seq | 1) + 1;
	atomic_store_explicit(&lp->fault_seq, seq | 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&lp->fault_seed, on ? cfg->seed : 0, memory_order_relaxed);
	atomic_store_explicit(&lp->fault_ppm[0], on ? (uint32_t)(cfg->loss * 1e6) : 0, memory_order_relaxed);
	atomic_store_explicit(&lp->fault_ppm[1], on ? (uint32_t)(cfg->dup * 1e6) : 0, memory_order_relaxed);
	atomic_store_explicit(&lp->fault_ppm[2], on ? (uint32_t)(cfg->reorder * 1e6) : 0, memory_order_relaxed);
	atomic_store_explicit(&lp->fault_ppm[3], on ? (uint32_t)(cfg->corrupt * 1e6) : 0, memory_order_relaxed);
	atomic_store_explicit(&lp->fault_delay_us, on ? cfg->delay_us : 0, memory_order_relaxed);
	atomic_store_explicit(&lp->fault_flags,
			      on ? SIB_LINK_FAULT_ACTIVE | (cfg->down ? SIB_LINK_FAULT_DOWN : 0) : 0,
			      memory_order_relaxed);
	atomic_store_explicit(&lp->fault_seq, r->faults_seq, memory_order_release);
}

void sibd_link_device_gone(struct sibd *d, uint32_t dev)
{
	if (dev >= SIB_MAX_DEVICES)
		return;
	memset(retired[dev], 0, sizeof(retired[dev])); /* a new device starts at 0 */
	for (uint32_t p = 0; p < SIB_MAX_PORTS; p++) {
		set_cap(d, dev, p, 0);
		port_faults(d, dev, p, NULL); /* seq moves on: running links drop pushed faults */
	}
}

static bool below_ppm(double p)
{
	return p > 0 && p < 1e-6;
}

int sibd_link_faults(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	struct sib_ctl_link *l = &m->u.link;
	struct sib_faults_cfg cfg;
	const char *bad;

	l->spec[sizeof(l->spec) - 1] = '\0';
	if (!for_ports(d, l, NULL, NULL))
		return -EINVAL;
	if (!strcmp(l->spec, "off") || !l->spec[0]) {
		for_ports(d, l, port_faults, NULL);
		sibd_log("faults cleared by pid %d", (int)c->pid);
		return 0;
	}
	if (sib_faults_parse(l->spec, &cfg, &bad))
		return -EINVAL;
	/* The device and port are the command's; and the map carries parts per
	 * million, so a probability below 1 ppm would silently be none. */
	if (cfg.dev[0] || cfg.port || below_ppm(cfg.loss) || below_ppm(cfg.dup) ||
	    below_ppm(cfg.reorder) || below_ppm(cfg.corrupt))
		return -EINVAL;
	for_ports(d, l, port_faults, &cfg);
	sibd_log("faults '%s' set by pid %d", l->spec, (int)c->pid);
	return 0;
}

void sibd_link_status(struct sibd *d, FILE *f)
{
	for (uint32_t dev = 0; dev < d->num_devices && dev < SIB_MAX_DEVICES; dev++)
		for (uint32_t p = 0; p < d->devs[dev].num_ports && p < SIB_MAX_PORTS; p++) {
			const struct port_rec *r = &ports[dev][p];

			if (!sibd_dev_present(d, dev) || (!r->cap && !r->faults))
				continue;
			fprintf(f, "link_port dev=%s port=%u capture=%u faults=", d->devs[dev].name, p + 1,
				r->cap ? 1 : 0);
			if (r->faults)
				fprintf(f, "seed=%llu,loss=%g,dup=%g,reorder=%g,corrupt=%g,delay_us=%u,down=%u\n",
					(unsigned long long)r->cfg.seed, r->cfg.loss, r->cfg.dup, r->cfg.reorder,
					r->cfg.corrupt, r->cfg.delay_us, r->cfg.down ? 1 : 0);
			else
				fprintf(f, "off\n");
		}
	for (uint32_t i = 0; i < SIB_MAX_INBOXES; i++) {
		const struct sib_link_stats *st;
		uint32_t dev = d->inbox[i].dev_index, flags;
		void *page;

		if (d->inbox[i].fd < 0 || !(st = map_stats(d, i, &page)))
			continue;
		flags = atomic_load_explicit(&st->flags, memory_order_relaxed);
		fprintf(f, "link inbox=%u pid=%d dev=%s capture=%u faults=%u", i,
			d->inbox[i].owner ? (int)d->inbox[i].owner->pid : 0,
			dev < d->num_devices && dev < SIB_MAX_DEVICES ? d->devs[dev].name : "?",
			!!(flags & SIB_LINK_STAT_CAPTURE), !!(flags & SIB_LINK_STAT_FAULTS));
		for (int c = 0; c < SIB_LC_MAX; c++)
			fprintf(f, " %s=%llu", sib_link_counter_name[c],
				(unsigned long long)atomic_load_explicit(&st->c[c], memory_order_relaxed));
		fputc('\n', f);
		munmap(page, SIB_INBOX_HDR_BYTES);
	}
}

/* Add what one context's link stats say for port_num into *sum: packets
 * (unicast + multicast), data words, discards; receive errors (the
 * context's, not per port) on port 1. */
static void add_stats(const struct sib_link_stats *st, uint8_t port_num, struct sib_pma_counters *sum)
{
	const _Atomic uint64_t *pc = st->port[port_num - 1];
	uint64_t v[SIB_LP_MAX];

	for (int c = 0; c < SIB_LP_MAX; c++)
		v[c] = atomic_load_explicit(&pc[c], memory_order_relaxed);
	sum->xmit_data += v[SIB_LP_XMIT_DATA];
	sum->rcv_data += v[SIB_LP_RCV_DATA];
	sum->ucast_xmit_pkts += v[SIB_LP_UCAST_XMIT];
	sum->mcast_xmit_pkts += v[SIB_LP_MCAST_XMIT];
	sum->xmit_pkts += v[SIB_LP_UCAST_XMIT] + v[SIB_LP_MCAST_XMIT];
	sum->ucast_rcv_pkts += v[SIB_LP_UCAST_RCV];
	sum->mcast_rcv_pkts += v[SIB_LP_MCAST_RCV];
	sum->rcv_pkts += v[SIB_LP_UCAST_RCV] + v[SIB_LP_MCAST_RCV];
	sum->xmit_discards += v[SIB_LP_XMIT_DISCARDS];
	if (port_num == 1)
		sum->rcv_errors += atomic_load_explicit(&st->c[SIB_LC_RX_ICRC], memory_order_relaxed) +
				   atomic_load_explicit(&st->c[SIB_LC_RX_BAD], memory_order_relaxed);
}

void sibd_link_inbox_gone(struct sibd *d, uint32_t inbox)
{
	uint32_t dev = d->inbox[inbox].dev_index;
	const struct sib_link_stats *st;
	void *page;

	if (inbox >= SIB_MAX_INBOXES || d->inbox[inbox].fd < 0 || dev >= SIB_MAX_DEVICES ||
	    !(st = map_stats(d, inbox, &page)))
		return;
	for (uint8_t p = 1; p <= SIB_MAX_PORTS; p++)
		add_stats(st, p, &retired[dev][p - 1]);
	munmap(page, SIB_INBOX_HDR_BYTES);
}

/* subnet.h: the open contexts' counters of the port, and the closed ones'. */
void sibd_data_counters(struct sibd *d, uint32_t dev_index, uint8_t port_num,
			struct sib_pma_counters *sum)
{
	struct sib_pma_counters t;

	if (dev_index >= SIB_MAX_DEVICES || port_num < 1 || port_num > SIB_MAX_PORTS)
		return;
	t = retired[dev_index][port_num - 1];
	for (uint32_t i = 0; i < SIB_MAX_INBOXES; i++) {
		const struct sib_link_stats *st;
		void *page;

		if (d->inbox[i].fd < 0 || d->inbox[i].dev_index != dev_index ||
		    !(st = map_stats(d, i, &page)))
			continue;
		add_stats(st, port_num, &t);
		munmap(page, SIB_INBOX_HDR_BYTES);
	}
	sum->xmit_data += t.xmit_data;
	sum->rcv_data += t.rcv_data;
	sum->xmit_pkts += t.xmit_pkts;
	sum->rcv_pkts += t.rcv_pkts;
	sum->ucast_xmit_pkts += t.ucast_xmit_pkts;
	sum->ucast_rcv_pkts += t.ucast_rcv_pkts;
	sum->mcast_xmit_pkts += t.mcast_xmit_pkts;
	sum->mcast_rcv_pkts += t.mcast_rcv_pkts;
	sum->xmit_discards += t.xmit_discards;
	sum->rcv_errors += t.rcv_errors;
}
