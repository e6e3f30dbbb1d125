// SPDX-License-Identifier: MIT
/*
 * `softib capture` and `softib fault` (docs/link.md): capture the packets of
 * programs that already run, and set a port's faults, through softibd
 * (SIB_CTL_LINK_CAPTURE / SIB_CTL_LINK_FAULTS).  The capture ring is drained
 * into a pcap file (ERF records, src/link/capture.c).  The ring's contents
 * come from any client: lengths are checked, garbage is skipped.
 * Single-threaded; the only signal handling is a stop flag.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/ctl.h"
#include "iba/iba.h"
#include "link/wrap.h"
#include "linkcmd.h"

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Connect, HELLO, map the fabric map.  Returns the socket or -1 (reported). */
static int connect_daemon(const char *path, struct sib_fabric_shm **fab, size_t *fab_size)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_HELLO };
	int fd, mfd = -1, rc;

	fd = sib_ctl_tool_connect(path, "softib");
	if (fd < 0)
		return -1;
	m.u.hello.abi_version = SIB_ABI_VERSION;
	m.u.hello.pid = getpid();
	rc = sib_ctl_call(fd, &m, &mfd);
	if (rc || m.hdr.status || mfd < 0 || m.u.hello.fabric_size < sizeof(struct sib_fabric_shm)) {
		fprintf(stderr, "softib: HELLO failed: %s\n", strerror(rc ? -rc : m.hdr.status ? m.hdr.status : EPROTO));
		goto fail;
	}
	*fab_size = m.u.hello.fabric_size;
	*fab = mmap(NULL, *fab_size, PROT_READ, MAP_SHARED, mfd, 0);
	close(mfd);
	if (*fab == MAP_FAILED) {
		fprintf(stderr, "softib: mmap of the fabric map: %s\n", strerror(errno));
		goto fail;
	}
	return fd;
fail:
	if (mfd >= 0)
		close(mfd);
	close(fd);
	return -1;
}

/* Device index by name (SIB_CTL_LINK_ALL for NULL), or -1 (reported). */
static long dev_index(const struct sib_fabric_shm *fab, const char *name)
{
	uint32_t n = fab->num_devices < SIB_MAX_DEVICES ? fab->num_devices : SIB_MAX_DEVICES;

	if (!name)
		return SIB_CTL_LINK_ALL;
	for (uint32_t i = 0; i < n; i++)
		if (!strncmp(fab->devs[i].name, name, SIB_DEV_NAME_MAX))
			return i;
	fprintf(stderr, "softib: no device %s\n", name);
	return -1;
}

static bool parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long x = strtoul(s, &end, 0);

	if (end == s || *end || x > 0xffffffffu)
		return false;
	*v = (uint32_t)x;
	return true;
}

/* Parses `-w FILE [-d DEV] [-p PORT] [-c COUNT]`; false on a usage error. */
static bool capture_parse_args(int argc, char **argv, const char **file, const char **dev,
			       uint32_t *port, uint32_t *count)
{
	for (int i = 0; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			return false;
		if (!strcmp(o, "-w"))
			*file = v;
		else if (!strcmp(o, "-d"))
			*dev = v;
		else if (!strcmp(o, "-p")) {
			if (!parse_u32(v, port))
				return false;
		} else if (!strcmp(o, "-c")) {
			if (!parse_u32(v, count))
				return false;
		} else
			return false;
		i++;
	}
	return *file != NULL;
}

/* Asks softibd to arm a capture on (di, port) and maps its ring; 0, or -1 after a message. */
static int capture_arm(int fd, long di, uint32_t port, int *cfd, void **base)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_LINK_CAPTURE };
	int err;

	m.u.link.dev_index = (uint32_t)di;
	m.u.link.port = port;
	err = sib_ctl_call(fd, &m, cfd);
	if (err || m.hdr.status) {
		err = err ? -err : m.hdr.status;
		fprintf(stderr, "softib: capture: %s\n",
			err == EBUSY ? "a capture already runs on that port (or too many captures)" :
			err == EINVAL ? "no such device or port" : strerror(err));
		return -1;
	}
	if (*cfd < 0 || m.u.link.ring_size != SIB_RING_BYTES) {
		fprintf(stderr, "softib: capture: bad reply from softibd\n");
		return -1;
	}
	*base = mmap(NULL, SIB_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, *cfd, 0);
	if (*base == MAP_FAILED) {
		fprintf(stderr, "softib: capture: mmap: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Copy the entry s to the file and release it. */
static void capture_one(struct sib_ring_rx *rx, struct sib_ring_slot *s, struct sib_capture *cap,
			uint32_t *got, uint32_t *bad)
{
	uint32_t len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
	uint32_t flags = __atomic_load_n(&s->flags, __ATOMIC_RELAXED);
	uint64_t stamp = __atomic_load_n(&s->stamp, __ATOMIC_RELAXED);
	struct timespec ts = { (time_t)(stamp / 1000000000u), (long)(stamp % 1000000000u) };

	if (len >= IBA_LRH_BYTES && len <= SIB_SLOT_DATA_BYTES &&
	    sib_capture_packet_at(cap, s->data, len, flags, &ts))
		(*got)++;
	else
		(*bad)++;
	sib_ring_release(rx, s);
}

/* Copies ring entries to the file until stopped, `count` packets, or
 * softibd hangs up.  A stop (Ctrl-C, SIGTERM) still writes what was in the
 * ring then: a packet that crossed the port before the stop is in the file. */
static void capture_run(int fd, struct sib_ring_rx *rx, struct sib_capture *cap, uint32_t count,
			uint32_t *got, uint32_t *bad)
{
	while (!stop_requested && (!count || *got < count)) {
		struct sib_ring_slot *s = sib_ring_peek(rx);

		if (s) {
			capture_one(rx, s, cap, got, bad);
			continue;
		}
		/* Idle: write out, look after the ring, and wait 1 ms on the
		 * socket (softibd going away ends the capture). */
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct timespec now;

		sib_capture_flush(cap);
		clock_gettime(CLOCK_MONOTONIC, &now);
		(void)sib_ring_check(rx, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec, NULL);
		if (poll(&pfd, 1, 1) > 0) {
			fprintf(stderr, "softib: capture: softibd closed the connection\n");
			return;
		}
	}
	/* stopped: what is published already (at most the ring's slots) */
	for (uint32_t n = 0; stop_requested && n < SIB_INBOX_SLOTS && (!count || *got < count); n++) {
		struct sib_ring_slot *s = sib_ring_peek(rx);

		if (!s)
			break;
		capture_one(rx, s, cap, got, bad);
	}
}

int sib_tool_capture(const char *sock, int argc, char **argv)
{
	const char *file = NULL, *dev = NULL;
	uint32_t port = 0, count = 0, got = 0, bad = 0;
	struct sib_fabric_shm *fab = NULL;
	struct sib_capture *cap = NULL;
	struct sib_ring_rx rx;
	size_t fab_size = 0;
	void *base = MAP_FAILED;
	int fd, cfd = -1, err, ret = 1;
	long di;

	if (!capture_parse_args(argc, argv, &file, &dev, &port, &count)) {
		fprintf(stderr, "softib: usage: softib capture -w FILE [-d DEV] [-p PORT] [-c COUNT]\n");
		return 2;
	}
	fd = connect_daemon(sock, &fab, &fab_size);
	if (fd < 0)
		return 1;
	di = dev_index(fab, dev);
	if (di < 0 || capture_arm(fd, di, port, &cfd, &base))
		goto out;
	cap = sib_capture_open(file, &err);
	if (!cap) {
		fprintf(stderr, "softib: capture: %s: %s\n", file, strerror(err));
		goto out;
	}
	sib_ring_rx_attach(&rx, base);

	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	char pbuf[16] = "every";

	if (port)
		snprintf(pbuf, sizeof(pbuf), "%u", port);
	fprintf(stderr, "softib: capturing %s, port %s, to %s%s\n", dev ? dev : "every device", pbuf,
		file, count ? "" : " (Ctrl-C stops)");
	fflush(stderr);
	capture_run(fd, &rx, cap, count, &got, &bad);
	ret = 0;
	fprintf(stderr, "softib: %u packets captured%s\n", got,
		bad ? " (some ring entries were malformed and skipped)" : "");
out:
	if (cap) {
		sib_capture_flush(cap);
		sib_capture_put(cap);
	}
	if (base != MAP_FAILED)
		munmap(base, SIB_RING_BYTES);
	if (cfd >= 0)
		close(cfd);
	if (fab)
		munmap(fab, fab_size);
	close(fd); /* softibd disarms the ports */
	return ret;
}

int sib_tool_fault(const char *sock, int argc, char **argv)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_LINK_FAULTS };
	struct sib_fabric_shm *fab = NULL;
	size_t fab_size = 0;
	uint32_t port = 0;
	int fd, err, ret = 1;
	long di;

	if (argc != 3 || (strcmp(argv[1], "all") && !parse_u32(argv[1], &port)) ||
	    strlen(argv[2]) >= sizeof(m.u.link.spec)) {
		fprintf(stderr, "softib: usage: softib fault DEV|all PORT|all SPEC|off\n");
		return 2;
	}
	fd = connect_daemon(sock, &fab, &fab_size);
	if (fd < 0)
		return 1;
	di = dev_index(fab, strcmp(argv[0], "all") ? argv[0] : NULL);
	if (di < 0)
		goto out;
	m.u.link.dev_index = (uint32_t)di;
	m.u.link.port = port;
	strcpy(m.u.link.spec, argv[2]);
	err = sib_ctl_call(fd, &m, NULL);
	if (err || m.hdr.status) {
		err = err ? -err : m.hdr.status;
		fprintf(stderr, "softib: fault: %s\n",
			err == EINVAL ? "no such port, or a malformed SPEC (docs/link.md)" : strerror(err));
		goto out;
	}
	ret = 0;
out:
	munmap(fab, fab_size);
	close(fd);
	return ret;
}
