/* SPDX-License-Identifier: MIT */
/*
 * Capture files (docs/link.md) read back with libpcap: LINKTYPE_ERF,
 * ERF type 21 records, and in each packet the ICRC and the VCRC recomputed
 * (IBA 7.8).  Unit mode: packets sent and received through two links over
 * plain memory (no hca, no verbs), with SOFTIB_CAPTURE set; also a link
 * whose faults corrupt every packet, whose capture must then show bad
 * ICRCs; each fault of the fault wrapper on its own; a full destination
 * holding back only its own packets, and a full fault queue waiting for
 * the first due time rather than polling.  Check mode, for
 * the integration tests:
 *   test_capture --check FILE   every record valid; prints "records=N".
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "iba/iba.h"
#include "link/dest.h"
#include "link/link.h"
#include "link/wrap.h"

struct check {
	unsigned int records, icrc_bad, vcrc_bad, erf_bad;
	uint8_t first[256];            /* the first packet's bytes */
	uint32_t first_len;
};

/* Read every record of `path`, recomputing ICRC and VCRC. */
static int check_file(const char *path, struct check *ck)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *d;
	pcap_t *p = pcap_open_offline(path, err);

	memset(ck, 0, sizeof(*ck));
	if (!p) {
		fprintf(stderr, "%s: %s\n", path, err);
		return -1;
	}
	if (pcap_datalink(p) != DLT_ERF) {
		fprintf(stderr, "%s: link type %d, not ERF (197)\n", path, pcap_datalink(p));
		pcap_close(p);
		return -1;
	}
	while (pcap_next_ex(p, &h, &d) == 1) {
		uint32_t rlen, wlen, len, icrc_off;

		ck->records++;
		if (h->caplen < 16 + IBA_LRH_BYTES) {
			ck->erf_bad++;
			continue;
		}
		rlen = (uint32_t)d[10] << 8 | d[11];
		wlen = (uint32_t)d[14] << 8 | d[15];
		len = h->caplen - 16;
		if (d[8] != 21 || rlen != h->caplen || wlen != len) {
			ck->erf_bad++;
			continue;
		}
		d += 16;
		/* PktLen (LRH) counts 4-byte words from the LRH through the ICRC. */
		icrc_off = ((uint32_t)(d[2 + 2] & 0x7) << 8 | d[2 + 3]) * 4 - IBA_ICRC_BYTES;
		if (icrc_off + IBA_ICRC_BYTES + IBA_VCRC_BYTES != len) {
			ck->erf_bad++;
			continue;
		}
		uint32_t icrc = (uint32_t)d[icrc_off] | (uint32_t)d[icrc_off + 1] << 8 |
				(uint32_t)d[icrc_off + 2] << 16 | (uint32_t)d[icrc_off + 3] << 24;
		uint16_t vcrc = (uint16_t)(d[len - 2] | d[len - 1] << 8);

		ck->icrc_bad += iba_icrc(d, icrc_off) != icrc;
		ck->vcrc_bad += iba_vcrc(d, len - IBA_VCRC_BYTES) != vcrc;
		if (ck->records == 1 && len <= sizeof(ck->first)) {
			memcpy(ck->first, d, len);
			ck->first_len = len;
		}
	}
	pcap_close(p);
	return 0;
}

static struct sib_shm_device fake_dev(const char *name, uint16_t lid)
{
	struct sib_shm_device d = { .num_ports = 1 };

	snprintf(d.name, sizeof(d.name), "%s", name);
	d.ports[0].lid = lid;
	return d;
}

/* Build a SEND_ONLY (local or global) of paylen bytes into buf; VCRC
 * bytes present but zero, as the shm link leaves them by default, and the
 * ICRC computed or (!icrc) zero, to be sent without SIB_SLOT_F_ICRC. */
static uint32_t build_crc(uint8_t *buf, bool global, uint32_t psn, uint32_t paylen, bool icrc)
{
	struct iba_pkt h = { 0 };
	size_t hl, len;

	h.lrh.lnh = global ? IBA_LNH_GLOBAL : IBA_LNH_LOCAL;
	h.lrh.dlid = 2;
	h.lrh.slid = 3;
	if (global) {
		h.grh.ipver = IBA_GRH_IPVER;
		h.grh.nxthdr = IBA_GRH_NXTHDR_IBA;
		h.grh.hoplmt = 64;
		h.grh.sgid[0] = h.grh.dgid[0] = 0xfe;
	}
	h.bth.opcode = IBA_OPC_SEND_ONLY;
	h.bth.pkey = 0xffff;
	h.bth.dqpn = 0x12;
	h.bth.psn = psn;
	hl = iba_build_headers(buf, &h);
	for (uint32_t i = 0; i < paylen; i++)
		buf[hl + i] = (uint8_t)(i * 13 + psn);
	len = iba_finish(buf, hl, paylen, icrc ? 0 : IBA_NO_ICRC);
	buf[len] = buf[len + 1] = 0;
	return (uint32_t)len + IBA_VCRC_BYTES;
}

static uint32_t build(uint8_t *buf, bool global, uint32_t psn, uint32_t paylen)
{
	return build_crc(buf, global, psn, paylen, true);
}

/* What b received in traffic(): packets, those flagged SIB_SLOT_F_ICRC,
 * and those among them whose ICRC is wrong. */
static struct { unsigned int rx, flagged, icrc_bad; } got;

/* The pair ring from the link under test to receiver b (one per
 * receiver; a test's rings are reused by the next: their memory is
 * reachable from here, not leaked). */
#define TO_MAX 8
static struct {
	struct sib_link *l;
	void *base;
	struct sib_pair_tx t;
} to_tab[TO_MAX];
static unsigned int to_next;

static bool attached(const struct sib_link *l, const void *base)
{
	for (uint32_t i = 0; i < l->rx.n; i++)
		if (l->rx.q[i]->base == base)
			return true;
	return false;
}

static struct sib_pair_tx *to(struct sib_link *b)
{
	unsigned int i;

	for (i = 0; i < TO_MAX; i++)
		if (to_tab[i].l == b && to_tab[i].base && attached(b, to_tab[i].base))
			return &to_tab[i].t;
	i = to_next++ % TO_MAX;
	if (!to_tab[i].base)
		to_tab[i].base = aligned_alloc(4096, SIB_PAIR_BYTES);
	assert_non_null(to_tab[i].base);
	memset(to_tab[i].base, 0, SIB_PAIR_BYTES);
	to_tab[i].l = b;
	memset(&to_tab[i].t, 0, sizeof(to_tab[i].t));
	sib_pair_attach(&to_tab[i].t.r, to_tab[i].base);
	sib_ring_attach(&to_tab[i].t.db, b->rx.db.hdr);
	assert_true(sib_link_rx_attach(b, to_tab[i].base, 7 + i, 0));
	return &to_tab[i].t;
}

/* Fill the ring to b with empty packets (not the link's): it is full. */
static unsigned int fill(struct sib_link *b)
{
	struct sib_pair_tx *t = to(b);
	unsigned int n = 0;

	for (struct sib_ring_slot *s; (s = sib_pair_reserve(t)); n++)
		(void)sib_pair_publish(t, s, 0, 0);
	return n;
}

/* Send n packets a -> b through the links, receive them at b.  Packets 0,
 * 1 (mod 4) leave without an ICRC, as the HCA sends them on the shm link
 * by default; packets 2, 3 with one computed and flagged. */
static void traffic(struct sib_link *a, struct sib_link *b, unsigned int n)
{
	memset(&got, 0, sizeof(got));
	for (unsigned int i = 0; i < n; i++) {
		struct sib_link_tx tx;
		const uint8_t *p;
		uint32_t len, flags;
		bool icrc = i & 2;

		assert_int_equal(sib_link_reserve(a, to(b), 1, &tx), 0);
		len = build_crc(tx.data, i & 1, 100 + i, (i * 37) % 300, icrc);
		assert_int_equal(sib_link_send(a, &tx, len, icrc ? SIB_SLOT_F_ICRC : 0), 0);
		(void)sib_link_flush(a, UINT64_MAX / 2); /* anything a fault held back */
		while ((p = sib_link_recv(b, &len, &flags))) {
			got.rx++;
			if (flags & SIB_SLOT_F_ICRC) {
				got.flagged++;
				got.icrc_bad += iba_icrc(p, len - IBA_VCRC_BYTES - IBA_ICRC_BYTES) !=
						((uint32_t)p[len - 6] | (uint32_t)p[len - 5] << 8 |
						 (uint32_t)p[len - 4] << 16 | (uint32_t)p[len - 3] << 24);
			}
			sib_link_recv_done(b);
		}
	}
}

static void *inbox(void)
{
	void *p = aligned_alloc(4096, SIB_RING_BYTES);

	assert_non_null(p);
	memset(p, 0, SIB_RING_BYTES);
	return p;
}

/* Two links a (softib0) and b (softib1) over plain memory, capturing to a
 * temporary file: the device `capdev`, and faults `faults` on a only. */
struct fixture {
	char path[32];
	struct sib_shm_device da, db;
	struct sib_link a, b;
	void *ma, *mb;
};

static void fixture_open(struct fixture *f, const char *capdev, const char *faults)
{
	int fd;

	snprintf(f->path, sizeof(f->path), "/tmp/softib-capture-XXXXXX");
	fd = mkstemp(f->path);
	assert_true(fd >= 0);
	close(fd);
	f->da = fake_dev("softib0", 3);
	f->db = fake_dev("softib1", 2);
	f->ma = inbox();
	f->mb = inbox();
	setenv("SOFTIB_CAPTURE", f->path, 1);
	setenv("SOFTIB_CAPTURE_DEV", capdev, 1);
	if (faults)
		setenv("SOFTIB_FAULTS", faults, 1);
	else
		unsetenv("SOFTIB_FAULTS");
	assert_int_equal(sib_link_open(&f->a, f->ma, 1000, 0, &f->da, NULL), 0);
	unsetenv("SOFTIB_FAULTS");
	assert_int_equal(sib_link_open(&f->b, f->mb, 1001, 1, &f->db, NULL), 0);
}

/* Close both links (the file is complete then) and read it back. */
static void fixture_close(struct fixture *f, struct check *ck)
{
	sib_link_close(&f->a);
	sib_link_close(&f->b);
	unsetenv("SOFTIB_CAPTURE");
	unsetenv("SOFTIB_CAPTURE_DEV");
	assert_int_equal(check_file(f->path, ck), 0);
	unlink(f->path);
	free(f->ma);
	free(f->mb);
}

static void test_capture_roundtrip(void **state)
{
	struct fixture f;
	struct check ck;
	uint8_t want[256];

	fixture_open(&f, "softib1", NULL); /* only b: both of its directions */
	assert_false(f.a.slow);            /* not selected: the fast path */
	assert_true(f.b.slow);
	traffic(&f.a, &f.b, 20);
	/* Capture does not touch the packet itself: an unflagged ICRC is
	 * computed into the captured copy only. */
	assert_int_equal(got.rx, 20);
	assert_int_equal(got.flagged, 10);
	assert_int_equal(got.icrc_bad, 0);
	traffic(&f.b, &f.a, 5);
	assert_int_equal(atomic_load(&f.b.stats->c[SIB_LC_CAPTURED]), 25);
	fixture_close(&f, &ck);
	assert_int_equal(ck.records, 25);
	assert_int_equal(ck.erf_bad, 0);
	/* Half the packets left without an ICRC: the capture computed them. */
	assert_int_equal(ck.icrc_bad, 0);
	assert_int_equal(ck.vcrc_bad, 0);
	/* The first record is the first packet (sent without an ICRC), ICRC
	 * and VCRC filled in by the capture. */
	uint32_t len = build(want, false, 100, 0);
	uint16_t v = iba_vcrc(want, len - 2);

	want[len - 2] = (uint8_t)v;
	want[len - 1] = (uint8_t)(v >> 8);
	assert_int_equal(ck.first_len, len);
	assert_memory_equal(ck.first, want, len);
}

/* Faults corrupt after the ICRC (computed by the wrapper for the packets
 * sent without one): the capture (taken on the wire, after the faults)
 * shows every packet with a bad ICRC, and a good VCRC; the receiver gets
 * every packet flagged as carrying an ICRC, so that its check drops each. */
static void test_capture_sees_corruption(void **state)
{
	struct fixture f;
	struct check ck;

	fixture_open(&f, "softib0", "seed=5,corrupt=1");
	traffic(&f.a, &f.b, 10);
	assert_int_equal(atomic_load(&f.a.stats->c[SIB_LC_CORRUPT]), 10);
	assert_int_equal(got.rx, 10);
	assert_int_equal(got.flagged, 10);
	assert_int_equal(got.icrc_bad, 10);
	fixture_close(&f, &ck);
	assert_int_equal(ck.records, 10);
	assert_int_equal(ck.icrc_bad, 10);
	assert_int_equal(ck.vcrc_bad, 0);
}

/* Receive everything waiting at b: the PSNs in arrival order. */
static unsigned int drain(struct sib_link *b, uint32_t *psn, unsigned int max)
{
	unsigned int n = 0;
	const uint8_t *p;
	uint32_t len, flags;

	while ((p = sib_link_recv(b, &len, &flags))) {
		struct iba_pkt pkt;

		if (n < max && iba_decode(p, len, IBA_CHECK_ICRC | IBA_HAS_VCRC, &pkt) == IBA_OK)
			psn[n++] = pkt.bth.psn;
		sib_link_recv_done(b);
	}
	return n;
}

/* One packet a -> b (PSN psn), not flushed. */
static void send_one(struct sib_link *a, struct sib_link *b, uint32_t psn)
{
	struct sib_link_tx tx;

	assert_int_equal(sib_link_reserve(a, to(b), 1, &tx), 0);
	assert_int_equal(sib_link_send(a, &tx, build(tx.data, false, psn, 8), 0), 0);
}

/* Each fault on its own, at probability 1, does exactly what it says. */
static void test_each_fault(void **state)
{
	struct sib_shm_device da = fake_dev("softib0", 3), db = fake_dev("softib1", 2);
	void *ma = inbox(), *mb = inbox();
	struct sib_link a, b;
	uint32_t psn[16];

	unsetenv("SOFTIB_CAPTURE");
	assert_int_equal(sib_link_open(&b, mb, 1001, 1, &db, NULL), 0);
	assert_false(b.slow);

	/* Dropped, each by its own cause. */
	const struct { const char *spec; enum sib_link_counter c; } drops[] = {
		{ "loss=1", SIB_LC_LOSS }, { "down=1", SIB_LC_DOWN },
	};
	for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++) {
		setenv("SOFTIB_FAULTS", drops[i].spec, 1);
		assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, NULL), 0);
		send_one(&a, &b, 1);
		assert_int_equal(drain(&b, psn, 16), 0);
		assert_int_equal(atomic_load(&a.stats->c[drops[i].c]), 1);
		sib_link_close(&a);
	}

	setenv("SOFTIB_FAULTS", "dup=1", 1);
	assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, NULL), 0);
	send_one(&a, &b, 7);
	assert_int_equal(drain(&b, psn, 16), 2);
	assert_int_equal(psn[0], 7);
	assert_int_equal(psn[1], 7);
	sib_link_close(&a);

	/* Reorder: every other packet is held back behind the next one. */
	setenv("SOFTIB_FAULTS", "reorder=1", 1);
	assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, NULL), 0);
	for (uint32_t i = 1; i <= 4; i++)
		send_one(&a, &b, i);
	assert_int_equal(drain(&b, psn, 16), 4);
	assert_int_equal(psn[0], 2);
	assert_int_equal(psn[1], 1);
	assert_int_equal(psn[2], 4);
	assert_int_equal(psn[3], 3);
	/* A held packet with nothing behind it leaves after 1 ms. */
	send_one(&a, &b, 5);
	assert_int_equal(drain(&b, psn, 16), 0);
	assert_true(sib_link_flush(&a, sib_link_now_ns()) > 0);
	usleep(2000);
	(void)sib_link_flush(&a, sib_link_now_ns());
	assert_int_equal(drain(&b, psn, 16), 1);
	assert_int_equal(psn[0], 5);
	sib_link_close(&a);

	/* Delay: nothing before the due time, everything after, in order. */
	setenv("SOFTIB_FAULTS", "delay_us=20000", 1);
	assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, NULL), 0);
	uint64_t t0 = sib_link_now_ns();

	send_one(&a, &b, 1);
	send_one(&a, &b, 2);
	uint64_t due = sib_link_flush(&a, sib_link_now_ns());

	assert_true(due >= t0 + 20000000ull);
	assert_int_equal(drain(&b, psn, 16), 0);
	while (sib_link_now_ns() < due)
		usleep(1000);
	assert_int_equal(sib_link_flush(&a, sib_link_now_ns()), 0);
	assert_int_equal(drain(&b, psn, 16), 2);
	assert_int_equal(psn[0], 1);
	assert_int_equal(psn[1], 2);
	sib_link_close(&a);

	/* Only the selected port is faulted: port 2 traffic takes the fast path. */
	setenv("SOFTIB_FAULTS", "loss=1,port=2", 1);
	da.num_ports = 2;
	assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, NULL), 0);
	send_one(&a, &b, 9);
	assert_int_equal(drain(&b, psn, 16), 1);
	sib_link_close(&a);

	unsetenv("SOFTIB_FAULTS");
	sib_link_close(&b);
	free(ma);
	free(mb);
}

/* softibd writes a port's faults as `softib fault` does (linkcfg.c):
 * the seqlock moves by 2; on = false is "off". */
static void push_faults(struct sib_shm_link_port *lp, bool on, uint32_t dup_ppm)
{
	uint32_t seq = atomic_load(&lp->fault_seq);

	atomic_store(&lp->fault_seq, seq | 1);
	atomic_store(&lp->fault_ppm[1], on ? dup_ppm : 0);
	atomic_store(&lp->fault_flags, on ? SIB_LINK_FAULT_ACTIVE : 0);
	atomic_store(&lp->fault_seq, (seq | 1) + 1);
}

/* The link's housekeeping notices what softibd pushed; the engine thread
 * applies it. */
static void pushed_tick(struct sib_link *l)
{
	struct sib_link_fetch f;

	(void)sib_link_tick(l, sib_link_now_ns());
	if (!sib_link_wants_service(l))
		return;
	sib_link_fetch(l, &f);
	sib_link_apply(l, &f);
	assert_false(sib_link_wants_service(l));
}

/* sib_link_tick runs inside the application's poll and post: it only
 * notices a capture ring armed by softibd (no round trip to softibd, no
 * mmap), and leaves the work to the engine thread. */
static void test_tick_leaves_slow_work_to_engine(void **state)
{
	struct sib_shm_device da = fake_dev("softib0", 3);
	struct sib_shm_link_port cfg[SIB_MAX_PORTS];
	struct sib_link_fetch f;
	void *ma = inbox();
	struct sib_link a;

	(void)state;
	memset(cfg, 0, sizeof(cfg));
	unsetenv("SOFTIB_CAPTURE");
	unsetenv("SOFTIB_FAULTS");
	setenv("SOFTIB_SOCKET", "/nonexistent/softib.sock", 1); /* no daemon answers */
	assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, cfg), 0);
	atomic_store(&cfg[0].cap, SIB_LINK_CAP_MAKE(0, 1));
	(void)sib_link_tick(&a, sib_link_now_ns());
	assert_int_equal(a.seen_cap[0], 0);          /* not tried here */
	assert_true(sib_link_wants_service(&a));
	sib_link_fetch(&a, &f);                       /* the engine thread: tries, fails */
	assert_true(f.changed[0]);
	assert_null(f.cap_base[0]);
	sib_link_apply(&a, &f);
	assert_int_equal(a.seen_cap[0], SIB_LINK_CAP_MAKE(0, 1)); /* tried once */
	(void)sib_link_tick(&a, sib_link_now_ns());
	assert_false(sib_link_wants_service(&a));
	sib_link_close(&a);
	unsetenv("SOFTIB_SOCKET");
	free(ma);
}

/* A pushed "off" (even one from long before the program started) never
 * cancels $SOFTIB_FAULTS; an active pushed setting replaces them while it
 * lasts, and "off" brings them back. */
static void test_pushed_off_keeps_env_faults(void **state)
{
	struct sib_shm_device da = fake_dev("softib0", 3), db = fake_dev("softib1", 2);
	struct sib_shm_link_port cfg[SIB_MAX_PORTS];
	void *ma = inbox(), *mb = inbox();
	struct sib_link a, b;
	uint32_t psn[16];

	memset(cfg, 0, sizeof(cfg));
	push_faults(&cfg[0], true, 1000000);
	push_faults(&cfg[0], false, 0); /* a past `softib fault ... off` */
	unsetenv("SOFTIB_CAPTURE");
	assert_int_equal(sib_link_open(&b, mb, 1001, 1, &db, NULL), 0);
	setenv("SOFTIB_FAULTS", "loss=1", 1);
	assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, cfg), 0);
	unsetenv("SOFTIB_FAULTS");
	assert_true(a.slow);
	pushed_tick(&a);
	send_one(&a, &b, 1);
	assert_int_equal(drain(&b, psn, 16), 0);
	assert_int_equal(atomic_load(&a.stats->c[SIB_LC_LOSS]), 1);

	push_faults(&cfg[0], true, 1000000); /* dup=1 replaces loss=1 */
	pushed_tick(&a);
	send_one(&a, &b, 2);
	assert_int_equal(drain(&b, psn, 16), 2);

	push_faults(&cfg[0], false, 0);      /* off: loss=1 again */
	pushed_tick(&a);
	assert_true(a.slow);
	send_one(&a, &b, 3);
	assert_int_equal(drain(&b, psn, 16), 0);
	assert_int_equal(atomic_load(&a.stats->c[SIB_LC_LOSS]), 2);
	sib_link_close(&a);

	/* Without $SOFTIB_FAULTS, "off" leaves the fast path. */
	assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, cfg), 0);
	assert_false(a.slow);
	push_faults(&cfg[0], true, 1000000);
	pushed_tick(&a);
	assert_true(a.slow);
	push_faults(&cfg[0], false, 0);
	pushed_tick(&a);
	assert_false(a.slow);
	sib_link_close(&a);
	sib_link_close(&b);
	free(ma);
	free(mb);
}

/* Replacing or removing a port's faults loses none of the packets they
 * hold back (here: behind a full destination). */
static void test_fault_change_keeps_held_packets(void **state)
{
	struct sib_shm_device da = fake_dev("softib0", 3), db = fake_dev("softib1", 2);
	struct sib_shm_link_port cfg[SIB_MAX_PORTS];
	void *ma = inbox(), *mb = inbox();
	struct sib_link a, b;
	uint32_t psn[16], n = 0;

	(void)state;
	memset(cfg, 0, sizeof(cfg));
	unsetenv("SOFTIB_CAPTURE");
	unsetenv("SOFTIB_FAULTS");
	assert_int_equal(sib_link_open(&b, mb, 1001, 1, &db, NULL), 0);
	assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, cfg), 0);
	atomic_store(&cfg[0].fault_delay_us, 1);
	push_faults(&cfg[0], true, 0);              /* delay_us=1: faults on */
	pushed_tick(&a);
	assert_true(a.slow);
	/* b's inbox full of someone else's packets. */
	n = fill(&b);
	assert_int_equal(n, SIB_PAIR_SLOTS);
	send_one(&a, &b, 1);
	send_one(&a, &b, 2);
	push_faults(&cfg[0], true, 1000000);        /* replaced: dup=1 */
	pushed_tick(&a);
	send_one(&a, &b, 3);                         /* sent twice */
	push_faults(&cfg[0], false, 0);             /* removed */
	pushed_tick(&a);
	assert_true(a.slow);                         /* still holding packets */
	(void)drain(&b, psn, 16);                    /* the filler: not ours */
	(void)sib_link_flush(&a, sib_link_now_ns() + 1000000000ull);
	assert_int_equal(drain(&b, psn, 16), 4);
	assert_int_equal(psn[0], 1);
	assert_int_equal(psn[1], 2);
	assert_int_equal(psn[2], 3);
	assert_int_equal(psn[3], 3);
	assert_false(a.slow);                        /* drained: the fast path again */
	sib_link_close(&a);
	sib_link_close(&b);
	free(ma);
	free(mb);
}

/* A malformed SOFTIB_FAULTS fails the open with EINVAL. */
static void test_bad_fault_spec(void **state)
{
	struct sib_shm_device da = fake_dev("softib0", 3);
	struct sib_link a;
	void *ma = inbox();
	const char *bad[] = { "loss=2", "nonsense=1", "loss", "delay_us=x", "down=2", "port=9" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("SOFTIB_FAULTS", bad[i], 1);
		assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, NULL), EINVAL);
	}
	setenv("SOFTIB_FAULTS", "seed=1,loss=0,dup=0.5,reorder=0.25,corrupt=0,delay_us=10,down=0,port=1", 1);
	assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, NULL), 0);
	assert_true(a.slow);
	sib_link_close(&a);
	unsetenv("SOFTIB_FAULTS");
	free(ma);
}

/* Destination references the wrapper takes (link->dest_ref), per ring. */
static const void *ref_dest[2];
static int ref_count[2];

static void count_ref(void *dest, int delta)
{
	for (unsigned int i = 0; i < 2; i++)
		if (ref_dest[i] == dest) {
			ref_count[i] += delta;
			return;
		}
	fail_msg("a reference on an unknown destination");
}

/* Receive everything at b, appending decoded PSNs at psn[*n] (up to max). */
static void drain_into(struct sib_link *b, uint32_t *psn, unsigned int *n, unsigned int max)
{
	*n += drain(b, psn + *n, max - *n);
}

/* One destination's full inbox holds back only its own packets: packets to
 * another destination pass them, far more than the queue holds, and each
 * destination gets its packets in the order they were sent. */
static void test_full_dest_blocks_only_its_own(void **state)
{
	struct sib_shm_device da = fake_dev("softib0", 3), db = fake_dev("softib1", 2),
			      dc = fake_dev("softib2", 4);
	void *ma = inbox(), *mb = inbox(), *mc = inbox();
	struct sib_link a, b, c;
	uint32_t pb[64], pc[512];
	unsigned int nb = 0, nc = 0, filler = 0;
	uint64_t t, now;

	(void)state;
	unsetenv("SOFTIB_CAPTURE");
	assert_int_equal(sib_link_open(&b, mb, 1001, 1, &db, NULL), 0);
	assert_int_equal(sib_link_open(&c, mc, 1002, 2, &dc, NULL), 0);
	setenv("SOFTIB_FAULTS", "seed=1", 1); /* the wrapper's queue, no fault */
	assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, NULL), 0);
	unsetenv("SOFTIB_FAULTS");
	assert_true(a.slow);
	ref_dest[0] = to(&b);
	ref_dest[1] = to(&c);
	ref_count[0] = ref_count[1] = 0;
	a.dest_ref = count_ref;
	/* b's inbox full of someone else's packets. */
	filler = fill(&b);
	assert_int_equal(filler, SIB_PAIR_SLOTS);

	for (uint32_t i = 0; i < 20; i++) {
		send_one(&a, &b, 1 + i);
		send_one(&a, &c, 1000 + i);
		drain_into(&c, pc, &nc, 512);
	}
	/* 300 more to c: the queue (64) would have filled behind b's packets. */
	for (uint32_t i = 20; i < 320; i++) {
		send_one(&a, &c, 1000 + i);
		if (i % 8 == 0)
			(void)sib_link_flush(&a, sib_link_now_ns());
		drain_into(&c, pc, &nc, 512);
	}
	(void)sib_link_flush(&a, sib_link_now_ns());
	drain_into(&c, pc, &nc, 512);
	assert_int_equal(nc, 320);
	for (unsigned int i = 0; i < nc; i++)
		assert_int_equal(pc[i], 1000 + i);
	assert_int_equal(ref_count[1], 0);
	assert_int_equal(ref_count[0], 20); /* b's packets are kept, referenced */
	/* Blocked on a full inbox: come back soon (polled). */
	now = sib_link_now_ns();
	t = sib_link_flush(&a, now);
	assert_true(t > now && t <= now + 1000000);

	/* b consumes: its packets follow, in order, and let go of b. */
	(void)drain(&b, pb, 64);                    /* the filler: not ours */
	assert_int_equal(sib_link_flush(&a, sib_link_now_ns()), 0);
	drain_into(&b, pb, &nb, 64);
	assert_int_equal(nb, 20);
	for (unsigned int i = 0; i < nb; i++)
		assert_int_equal(pb[i], 1 + i);
	assert_int_equal(ref_count[0], 0);
	sib_link_close(&a);
	sib_link_close(&b);
	sib_link_close(&c);
	free(ma);
	free(mb);
	free(mc);
}

/* A sender refused by the wrapper's full queue (-ENOBUFS, not -EAGAIN) is
 * told to come back when the first held packet is due, not polled; once
 * that packet left, flush says "now". */
static void test_full_queue_waits_for_due_time(void **state)
{
	struct sib_shm_device da = fake_dev("softib0", 3), db = fake_dev("softib1", 2);
	void *ma = inbox(), *mb = inbox();
	struct sib_link a, b;
	struct sib_link_tx tx;
	uint32_t psn[64];
	unsigned int n = 0;
	uint64_t t0, now, due, t;
	int rc;

	(void)state;
	unsetenv("SOFTIB_CAPTURE");
	assert_int_equal(sib_link_open(&b, mb, 1001, 1, &db, NULL), 0);
	setenv("SOFTIB_FAULTS", "delay_us=200000", 1);
	assert_int_equal(sib_link_open(&a, ma, 1000, 0, &da, NULL), 0);
	unsetenv("SOFTIB_FAULTS");
	t0 = sib_link_now_ns();
	while ((rc = sib_link_reserve(&a, to(&b), 1, &tx)) == 0) {
		assert_int_equal(sib_link_send(&a, &tx, build(tx.data, false, n, 8), 0), 0);
		assert_true(++n <= 64);
	}
	assert_int_equal(rc, -ENOBUFS);
	now = sib_link_now_ns();
	due = sib_link_flush(&a, now);
	assert_true(due >= t0 + 200000000ull);      /* the first packet's due time */
	assert_true(due > now + 100000000ull);      /* not a 50 us poll */
	assert_int_equal(sib_link_reserve(&a, to(&b), 1, &tx), -ENOBUFS);
	/* At the due time the first packets leave, and the refused sender
	 * may try again at once. */
	assert_int_equal(sib_link_flush(&a, due), due);
	t = sib_link_flush(&a, due);
	assert_true(t > due);                       /* the next due time */
	assert_int_equal(sib_link_reserve(&a, to(&b), 1, &tx), 0);
	assert_int_equal(sib_link_send(&a, &tx, build(tx.data, false, n, 8), 0), 0);
	assert_true(drain(&b, psn, 64) >= 1);
	assert_int_equal(psn[0], 0);
	sib_link_close(&a);
	sib_link_close(&b);
	free(ma);
	free(mb);
}

/*
 * The engine thread looks at a context's ring list without the lock
 * (sib_link_rx_ready while it spins, sib_link_wait before it sleeps)
 * while a slow-path verb (modify_qp to RTR takes waiting rings) replaces
 * a ring under the lock.  The reader must never see a NULL or freed ring:
 * what is replaced stays mapped on the dead list until the engine thread
 * reaps it.  (Before, the slot past the end was cleared and the ring
 * freed at once: a NULL dereference or a use after free, which ASan
 * reports.)
 */
#define CHURN_RINGS 4
static void *churn_base[CHURN_RINGS];
static _Atomic bool churn_stop, churn_started;

static void *churn_reader(void *arg)
{
	struct sib_link *l = arg;
	uint64_t looks = 0;

	while (!atomic_load(&churn_stop)) {
		(void)sib_link_rx_ready(l);
		looks++;
		atomic_store(&churn_started, true);
	}
	return (void *)(uintptr_t)looks;
}

static void test_ring_list_churn(void **state)
{
	struct sib_shm_device db = fake_dev("softib1", 2);
	void *mb = inbox();
	struct sib_link b;
	pthread_t t;
	void *looks;

	(void)state;
	unsetenv("SOFTIB_CAPTURE");
	unsetenv("SOFTIB_FAULTS");
	assert_int_equal(sib_link_open(&b, mb, 1001, 1, &db, NULL), 0);
	for (unsigned int i = 0; i < CHURN_RINGS; i++) {
		if (!churn_base[i])
			churn_base[i] = aligned_alloc(4096, SIB_PAIR_BYTES);
		assert_non_null(churn_base[i]);
		memset(churn_base[i], 0, SIB_PAIR_HDR_BYTES);
		assert_true(sib_link_rx_attach(&b, churn_base[i], 40 + i, 0));
	}
	atomic_store(&churn_stop, false);
	atomic_store(&churn_started, false);
	assert_int_equal(pthread_create(&t, NULL, churn_reader, &b), 0);
	/* The reader looks at least once before the churn (on a loaded machine
	 * it could get no CPU during the whole loop: looks was 0). 10 s bound. */
	for (int w = 0; w < 10000 && !atomic_load(&churn_started); w++)
		usleep(1000);
	/* Replace the rings again and again (the same senders pairing anew). */
	for (unsigned int k = 0; k < 200000; k++)
		assert_true(sib_link_rx_attach(&b, churn_base[k % CHURN_RINGS], 40 + k % CHURN_RINGS, 0));
	atomic_store(&churn_stop, true);
	assert_int_equal(pthread_join(t, &looks), 0);
	assert_true((uintptr_t)looks > 0);
	assert_int_equal(b.rx.n, CHURN_RINGS);
	sib_link_close(&b); /* reaps the dead list */
	free(mb);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_roundtrip),
		cmocka_unit_test(test_capture_sees_corruption),
		cmocka_unit_test(test_bad_fault_spec),
		cmocka_unit_test(test_each_fault),
		cmocka_unit_test(test_pushed_off_keeps_env_faults),
		cmocka_unit_test(test_tick_leaves_slow_work_to_engine),
		cmocka_unit_test(test_fault_change_keeps_held_packets),
		cmocka_unit_test(test_full_dest_blocks_only_its_own),
		cmocka_unit_test(test_full_queue_waits_for_due_time),
		cmocka_unit_test(test_ring_list_churn),
	};

	if (argc == 3 && !strcmp(argv[1], "--check")) {
		struct check ck;

		if (check_file(argv[2], &ck))
			return 1;
		printf("records=%u erf_bad=%u icrc_bad=%u vcrc_bad=%u\n", ck.records, ck.erf_bad,
		       ck.icrc_bad, ck.vcrc_bad);
		return ck.records && !ck.erf_bad && !ck.icrc_bad && !ck.vcrc_bad ? 0 : 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
