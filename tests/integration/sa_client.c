// SPDX-License-Identifier: MIT
/*
 * An SA client through libibumad (softib's libibumad.so.3, or the system's
 * against a kernel): what no Debian tool does, because saquery only reads.
 *   sa_client CA PORT sr-set ID NAME LEASE   register a ServiceRecord for
 *       this port's GID (ServiceID ID, ServiceName NAME, ServiceLease LEASE
 *       seconds, P_Key 0xFFFF, ServiceData8[0] 7)
 *   sa_client CA PORT sr-delete ID NAME      delete it
 *   sa_client CA PORT ii-sub TRAP            subscribe this port to generic
 *       trap TRAP (0xFFFF: all) from every port (LIDRangeBegin 0xFFFF)
 *   sa_client CA PORT ii-wait TRAP SECONDS   subscribe, print "ready", wait
 *       at most SECONDS for a Report(Notice) of TRAP, answer it with
 *       ReportResp, print "report trap N gid G" (64-67: DataDetails' GID)
 *       or "report trap N issuer_lid L issuer_gid G" (the SMAs' traps
 *       the SM forwards), unsubscribe
 *   sa_client CA PORT pr-numb SLID DLID NUMBPATH   GetTable(PathRecord)
 *       by SLID, DLID and NumbPath: print "paths N" (the records of one
 *       segment: at LMC 0 there is at most one per pair)
 * Prints "status 0xNNNN" for each Set/Delete answer; exits 0 when the SA
 * answered 0 (and ii-wait got its Report), 1 otherwise, 77 without umad.
 * Test code: every wait bounded.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/umad.h>

#define SA_CLASS	3
#define SA_VERSION	2
#define GSI_QKEY	0x80010000u
#define HDR		56	/* common + RMPP + SA header */

static int fd = -1, agent = -1;
static uint16_t sm_lid;
static uint8_t my_gid[16];

static void put(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t get(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* Send one SA MAD (256 bytes at mad) to the SM; with resp, wait up to 5 s
 * for the answer with its TID into resp.  0 or -1. */
static int sa_send(const uint8_t *mad, uint8_t *resp)
{
	uint8_t buf[sizeof(struct ib_user_mad) + 256 + 64];
	struct ib_user_mad *u = (struct ib_user_mad *)buf;
	int len;

	memset(buf, 0, sizeof(buf));
	umad_set_addr(u, sm_lid, 1, 0, GSI_QKEY);
	memcpy(umad_get_mad(u), mad, 256);
	if (umad_send(fd, agent, u, 256, resp ? 1000 : 0, resp ? 4 : 0) < 0)
		return -1;
	for (time_t end = time(NULL) + 6; resp && time(NULL) < end;) {
		len = 256;
		if (umad_recv(fd, u, &len, 1000) < 0)
			continue;
		if (umad_status(u))
			return -1;
		if (!memcmp((uint8_t *)umad_get_mad(u) + 12, mad + 12, 4)) { /* low 32 TID bits: the library owns the rest */
			memcpy(resp, umad_get_mad(u), 256);
			return 0;
		}
	}
	return resp ? -1 : 0;
}

static void sa_hdr(uint8_t *m, uint8_t method, uint16_t attr, uint64_t tid, uint64_t mask)
{
	memset(m, 0, 256);
	m[0] = 1;
	m[1] = SA_CLASS;
	m[2] = SA_VERSION;
	m[3] = method;
	put(m + 8, tid, 8);
	put(m + 16, attr, 2);
	put(m + 48, mask, 8);
}

static int status_of(const uint8_t *r)
{
	int st = (int)get(r + 4, 2);

	printf("status 0x%04x\n", st);
	return st ? 1 : 0;
}

static int service(int argc, char **argv, int del)
{
	uint8_t m[256], r[256];

	if (argc < 6 + !del)
		return 2;
	sa_hdr(m, del ? 0x15 : 0x02, 0x0031, 0x5a0001,
	       0x1 | 0x2 | 0x4 | 0x40 | (1u << 7) | (del ? 0 : 0x10));
	put(m + HDR, strtoull(argv[4], NULL, 0), 8);
	memcpy(m + HDR + 8, my_gid, 16);
	put(m + HDR + 24, 0xFFFF, 2);
	put(m + HDR + 28, del ? 0 : strtoull(argv[6], NULL, 0), 4);
	strncpy((char *)m + HDR + 48, argv[5], 63);
	m[HDR + 112] = 7;
	if (sa_send(m, r)) {
		printf("no answer\n");
		return 1;
	}
	return status_of(r);
}

static void inform(uint8_t *m, uint16_t trap, int subscribe, uint64_t tid)
{
	sa_hdr(m, 0x02, 0x0003, tid, 0);
	put(m + HDR + 16, 0xFFFF, 2);		/* every port */
	m[HDR + 22] = 1;			/* IsGeneric */
	m[HDR + 23] = (uint8_t)subscribe;
	put(m + HDR + 24, 0xFFFF, 2);		/* every type */
	put(m + HDR + 26, trap, 2);
	put(m + HDR + 28, (subscribe ? 0 : 1) << 8 | 18, 4); /* unsubscribe: the GSI's QPN */
	put(m + HDR + 33, 0xFFFFFF, 3);
}

/* Wait for a Report of trap, answer it; 0 or -1. */
static int wait_report(uint16_t trap, int seconds)
{
	uint8_t buf[sizeof(struct ib_user_mad) + 256 + 64];
	struct ib_user_mad *u = (struct ib_user_mad *)buf;
	char gid[INET6_ADDRSTRLEN];
	int len;

	for (time_t end = time(NULL) + seconds; time(NULL) < end;) {
		uint8_t *m;

		len = 256;
		if (umad_recv(fd, u, &len, 500) < 0 || umad_status(u))
			continue;
		m = umad_get_mad(u);
		if (m[1] != SA_CLASS || m[3] != 0x06 || get(m + 16, 2) != 0x0002)
			continue;
		m[3] = 0x86; /* ReportResp: the same MAD back */
		umad_set_addr(u, ntohs(u->addr.lid), ntohl(u->addr.qpn), 0, GSI_QKEY);
		umad_send(fd, agent, u, 256, 0, 0);
		if (get(m + HDR + 4, 2) >= 64 && get(m + HDR + 4, 2) <= 67) {
			inet_ntop(AF_INET6, m + HDR + 16, gid, sizeof(gid));
			printf("report trap %u gid %s\n", (unsigned int)get(m + HDR + 4, 2), gid);
		} else {
			inet_ntop(AF_INET6, m + HDR + 64, gid, sizeof(gid));
			printf("report trap %u issuer_lid %u issuer_gid %s\n",
			       (unsigned int)get(m + HDR + 4, 2), (unsigned int)get(m + HDR + 6, 2), gid);
		}
		if (get(m + HDR + 4, 2) == trap)
			return 0;
	}
	printf("no report of trap %u\n", trap);
	return -1;
}

static int subscribe(int argc, char **argv, int wait)
{
	uint8_t m[256], r[256];
	uint16_t trap;
	int ret;

	if (argc < 5 + wait)
		return 2;
	trap = (uint16_t)strtoul(argv[4], NULL, 0);
	inform(m, trap, 1, 0x5a0002);
	if (sa_send(m, r)) {
		printf("no answer\n");
		return 1;
	}
	if ((ret = status_of(r)) || !wait)
		return ret;
	printf("ready\n");
	fflush(stdout);
	ret = wait_report(trap, atoi(argv[5]));
	inform(m, trap, 0, 0x5a0003);
	if (sa_send(m, r) || status_of(r))
		ret = -1;
	return ret ? 1 : 0;
}

/* GetTable(PathRecord) SLID DLID NumbPath: the records of the answer's
 * first segment (RMPP PayloadLength less the SA header, by
 * AttributeOffset). */
static int path_numb(int argc, char **argv)
{
	uint8_t m[256], r[256];
	uint32_t paylen;
	unsigned int off;

	if (argc < 7)
		return 2;
	sa_hdr(m, 0x12, 0x0035, 0x5a0004, 0x10 | 0x20 | 0x1000); /* DLID SLID NumbPath */
	put(m + HDR + 40, strtoul(argv[5], NULL, 0), 2);	/* DLID */
	put(m + HDR + 42, strtoul(argv[4], NULL, 0), 2);	/* SLID */
	m[HDR + 49] = (uint8_t)(strtoul(argv[6], NULL, 0) & 0x7F);
	if (sa_send(m, r)) {
		printf("no answer\n");
		return 1;
	}
	if (status_of(r))
		return 1;
	paylen = (uint32_t)get(r + 32, 4);
	off = (unsigned int)get(r + 44, 2) * 8;
	printf("paths %u\n", off && paylen > 20 ? (paylen - 20) / off : 0);
	return 0;
}

int main(int argc, char **argv)
{
	long methods[16 / sizeof(long)] = { 0 };
	umad_port_t port;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4) {
		fprintf(stderr, "usage: sa_client CA PORT sr-set|sr-delete|ii-sub|ii-wait|pr-numb ...\n");
		return 2;
	}
	if (umad_init() < 0 || umad_get_port(argv[1], atoi(argv[2]), &port) < 0) {
		fprintf(stderr, "sa_client: no umad port %s %s\n", argv[1], argv[2]);
		return 77;
	}
	sm_lid = (uint16_t)port.sm_lid;
	put(my_gid, be64toh(port.gid_prefix), 8);
	put(my_gid + 8, be64toh(port.port_guid), 8);
	umad_release_port(&port);
	methods[0] = 1L << 0x06; /* take Reports */
	if ((fd = umad_open_port(argv[1], atoi(argv[2]))) < 0 ||
	    (agent = umad_register(fd, SA_CLASS, SA_VERSION, 0, methods)) < 0) {
		fprintf(stderr, "sa_client: umad open/register: %s\n", strerror(errno));
		return 1;
	}
	if (!strcmp(argv[3], "sr-set"))
		ret = service(argc, argv, 0);
	else if (!strcmp(argv[3], "sr-delete"))
		ret = service(argc, argv, 1);
	else if (!strcmp(argv[3], "ii-sub"))
		ret = subscribe(argc, argv, 0);
	else if (!strcmp(argv[3], "ii-wait"))
		ret = subscribe(argc, argv, 1);
	else if (!strcmp(argv[3], "pr-numb"))
		ret = path_numb(argc, argv);
	else
		ret = 2;
	umad_unregister(fd, agent);
	umad_close_port(fd);
	return ret;
}
