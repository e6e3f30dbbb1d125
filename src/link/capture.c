/* SPDX-License-Identifier: MIT */
/*
 * Capture wrapper's sink: every packet that crosses a selected port goes to
 * one pcap file per process, LINKTYPE_ERF (197) with ERF type 21
 * (InfiniBand) records, which tshark 4.0 decodes (LINKTYPE_INFINIBAND 247 it
 * does not; ../shared/research/iba-vectors/).  The packet is stored as on
 * the wire, LRH..ICRC then the VCRC (IBA 7.8), both computed here if the
 * link did not.  Written with libpcap.  Never called on the fast path.
 * Also the file writer of `softib capture` (tools/linkcmd.c).
 * Locking: one mutex per file (contexts of a process share it).
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "iba/iba.h"
#include "link/wrap.h"

#define ERF_TYPE_INFINIBAND 21
#define ERF_FLAG_VLEN       0x04   /* varying length record */
#define ERF_HDR_BYTES       16

struct sib_capture {
	pthread_mutex_t lock;
	pcap_t *pcap;
	pcap_dumper_t *dump;
	unsigned int refs;
	bool failed;                   /* a write failed: stop writing */
};

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sib_capture *cap_proc;   /* the process's capture (under cap_lock) */

/* "%p" in the file name becomes the PID, so that two processes started
 * with the same variable write two files. */
static int expand_path(const char *spec, char *out, size_t len)
{
	size_t o = 0;

	for (const char *p = spec; *p; p++) {
		int n;

		if (p[0] == '%' && p[1] == 'p') {
			n = snprintf(out + o, len - o, "%d", (int)getpid());
			p++;
		} else {
			n = snprintf(out + o, len - o, "%c", *p);
		}
		if (n < 0 || (size_t)n >= len - o)
			return ENAMETOOLONG;
		o += (size_t)n;
	}
	return 0;
}

static void read_sel(struct sib_capture_sel *sel)
{
	const char *dev = getenv("SOFTIB_CAPTURE_DEV"), *port = getenv("SOFTIB_CAPTURE_PORT");

	memset(sel, 0, sizeof(*sel));
	if (dev)
		snprintf(sel->dev, sizeof(sel->dev), "%s", dev);
	if (port)
		sel->port = (uint8_t)strtoul(port, NULL, 0);
}

struct sib_capture *sib_capture_open(const char *path, int *err)
{
	struct sib_capture *c = calloc(1, sizeof(*c));

	*err = 0;
	if (!c) {
		*err = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->pcap = pcap_open_dead(DLT_ERF, 65535);
	if (!c->pcap) {
		*err = ENOMEM;
		goto fail;
	}
	errno = 0;
	c->dump = pcap_dump_open(c->pcap, path);
	if (!c->dump) {
		*err = errno ? errno : EIO;
		fprintf(stderr, "softib: capture: %s\n", pcap_geterr(c->pcap));
		goto fail;
	}
	c->refs = 1;
	return c;
fail:
	if (c->pcap)
		pcap_close(c->pcap);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return NULL;
}

struct sib_capture *sib_capture_from_env(struct sib_capture_sel *sel, int *err)
{
	const char *spec = getenv("SOFTIB_CAPTURE");
	struct sib_capture *c = NULL;
	char path[4096];

	*err = 0;
	if (!spec || !*spec)
		return NULL;
	read_sel(sel);
	pthread_mutex_lock(&cap_lock);
	if (cap_proc) {
		cap_proc->refs++;
		c = cap_proc;
	} else {
		*err = expand_path(spec, path, sizeof(path));
		if (!*err)
			c = cap_proc = sib_capture_open(path, err);
	}
	pthread_mutex_unlock(&cap_lock);
	return c;
}

void sib_capture_put(struct sib_capture *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&cap_lock);
	if (--c->refs == 0) {
		pcap_dump_close(c->dump);
		pcap_close(c->pcap);
		pthread_mutex_destroy(&c->lock);
		if (cap_proc == c)
			cap_proc = NULL;
		free(c);
	}
	pthread_mutex_unlock(&cap_lock);
}

bool sib_capture_packet(struct sib_capture *c, const uint8_t *pkt, uint32_t len, uint32_t flags)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return sib_capture_packet_at(c, pkt, len, flags, &ts);
}

bool sib_capture_packet_at(struct sib_capture *c, const uint8_t *pkt, uint32_t len, uint32_t flags,
			   const struct timespec *ts)
{
	uint8_t rec[ERF_HDR_BYTES + SIB_SLOT_DATA_BYTES];
	struct pcap_pkthdr ph;
	uint64_t erf_ts;
	bool ok;

	if (len > SIB_SLOT_DATA_BYTES)
		len = SIB_SLOT_DATA_BYTES;
	/* ERF timestamp: little-endian 32.32 fixed point seconds. */
	erf_ts = (uint64_t)ts->tv_sec << 32 | (((uint64_t)ts->tv_nsec << 32) / 1000000000u);
	for (int i = 0; i < 8; i++)
		rec[i] = (uint8_t)(erf_ts >> (8 * i));
	rec[8] = ERF_TYPE_INFINIBAND;
	rec[9] = ERF_FLAG_VLEN;
	rec[10] = (uint8_t)((ERF_HDR_BYTES + len) >> 8);   /* rlen, big-endian */
	rec[11] = (uint8_t)(ERF_HDR_BYTES + len);
	rec[12] = rec[13] = 0;                              /* lctr: nothing lost */
	rec[14] = (uint8_t)(len >> 8);                      /* wlen */
	rec[15] = (uint8_t)len;
	memcpy(rec + ERF_HDR_BYTES, pkt, len);
	/* A memory link may leave the CRCs uncomputed: the record gets them
	 * (a VCRC flagged as computed is recomputed over a new ICRC). */
	flags = sib_link_fill_icrc(rec + ERF_HDR_BYTES, len, flags);
	if (!(flags & SIB_SLOT_F_VCRC) && len >= IBA_VCRC_BYTES) {
		uint16_t v = iba_vcrc(rec + ERF_HDR_BYTES, len - IBA_VCRC_BYTES);

		rec[ERF_HDR_BYTES + len - 2] = (uint8_t)v;       /* least significant byte first */
		rec[ERF_HDR_BYTES + len - 1] = (uint8_t)(v >> 8);
	}
	ph.ts.tv_sec = ts->tv_sec;
	ph.ts.tv_usec = ts->tv_nsec / 1000;
	ph.caplen = ph.len = ERF_HDR_BYTES + len;
	pthread_mutex_lock(&c->lock);
	ok = !c->failed;
	if (ok) {
		pcap_dump((u_char *)c->dump, &ph, rec);
		if (ferror(pcap_dump_file(c->dump)))
			ok = false, c->failed = true;
	}
	pthread_mutex_unlock(&c->lock);
	return ok;
}

void sib_capture_flush(struct sib_capture *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	(void)pcap_dump_flush(c->dump);
	pthread_mutex_unlock(&c->lock);
}
