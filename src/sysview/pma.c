// SPDX-License-Identifier: MIT
/*
 * ports/<p>/counters/ of the system view: what the kernel's sysfs.c
 * show_pma_counter prints, read the way it reads them, from the port's PMA
 * (IBA 1.4 vol 1 16.1: PerfMgmt class 0x04 on QP1), but through softib's
 * libibumad.so.3 (its public API: a PerfMgmt agent on the port, Gets sent to
 * the port's own LID) instead of the driver's process_mad.  ClassPortInfo's
 * CapabilityMask bit 9 (PortCountersExtended, 16.1.2 table 209) picks the
 * kernel's counter set: the 64-bit data and packet counters and the four
 * unicast/multicast ones from PortCountersExtended (16.1.4.6), the rest
 * from PortCounters (16.1.3.5).  Values are the raw counters, decimal; data
 * counters in the PMA's units of 4 octets, as the kernel prints them.
 * Queried at most once a second per port and only on an ACTIVE port with a
 * LID; until the PMA has answered once there is no counters/ directory.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/umad.h>

#include "sysview/sysview_int.h"

#define PERF_CLASS      0x04
#define PERF_VERSION    1
#define METHOD_GET      0x01
#define ATTR_CPI        0x0001
#define ATTR_PC         0x0012
#define ATTR_PCX        0x001d
#define CAP_EXT_WIDTH   (1u << 9)
#define GSI_QKEY        0x80010000u
#define MAD_LEN         256
#define PMA_DATA        64   /* 24-byte common header + 40 reserved */
#define TIMEOUT_MS      200
#define PERIOD_MS       1000

/* One counter file: where in which attribute, how wide (bits). */
struct counter {
	const char *name;
	bool ext;        /* PortCountersExtended (in the extended set) */
	uint8_t width;
	uint16_t bit;    /* offset in the attribute */
};

/* The error counters of PortCounters, in both sets below (sysfs.c). */
#define PC_ERROR_COUNTERS \
	{ "symbol_error", 0, 16, 32 }, { "link_error_recovery", 0, 8, 48 }, \
	{ "link_downed", 0, 8, 56 }, { "port_rcv_errors", 0, 16, 64 }, \
	{ "port_rcv_remote_physical_errors", 0, 16, 80 }, \
	{ "port_rcv_switch_relay_errors", 0, 16, 96 }, { "port_xmit_discards", 0, 16, 112 }, \
	{ "port_xmit_constraint_errors", 0, 8, 128 }, { "port_rcv_constraint_errors", 0, 8, 136 }, \
	{ "local_link_integrity_errors", 0, 4, 152 }, \
	{ "excessive_buffer_overrun_errors", 0, 4, 156 }, { "VL15_dropped", 0, 16, 176 }

/* sysfs.c pma_attrs (no PortCountersExtended) ... */
static const struct counter pc_set[] = {
	PC_ERROR_COUNTERS,
	{ "port_xmit_data", 0, 32, 192 }, { "port_rcv_data", 0, 32, 224 },
	{ "port_xmit_packets", 0, 32, 256 }, { "port_rcv_packets", 0, 32, 288 },
	{ "port_xmit_wait", 0, 32, 320 },
};

/* ... and pma_attrs_ext (ClassPortInfo says PortCountersExtended). */
static const struct counter pcx_set[] = {
	PC_ERROR_COUNTERS,
	{ "port_xmit_data", 1, 64, 64 }, { "port_rcv_data", 1, 64, 128 },
	{ "port_xmit_packets", 1, 64, 192 }, { "port_xmit_wait", 0, 32, 320 },
	{ "port_rcv_packets", 1, 64, 256 }, { "unicast_rcv_packets", 1, 64, 384 },
	{ "unicast_xmit_packets", 1, 64, 320 }, { "multicast_rcv_packets", 1, 64, 512 },
	{ "multicast_xmit_packets", 1, 64, 448 },
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void sv_pma_close(struct sv_pma *m)
{
	if (m->fd >= 0) {
		umad_unregister(m->fd, m->agent);
		umad_close_port(m->fd);
	}
	m->fd = m->agent = -1;
}

static int pma_open(struct sv_pma *m, const char *dev, uint8_t port)
{
	if (m->fd >= 0)
		return 0;
	m->fd = umad_open_port(dev, port);
	if (m->fd < 0)
		return m->fd;
	m->agent = umad_register(m->fd, PERF_CLASS, PERF_VERSION, 0, NULL);
	if (m->agent < 0) {
		int err = m->agent;

		umad_close_port(m->fd);
		m->fd = -1;
		return err;
	}
	m->tid = (uint32_t)getpid() << 12;
	return 0;
}

/* A Get of attr (PortSelect = port) to lid; the answer's 256 bytes into
 * out.  0, -ETIMEDOUT, -EIO (a MAD status), or umad's -errno. */
static int pma_get(struct sv_pma *m, uint16_t lid, uint8_t port, uint16_t attr, uint8_t *out)
{
	uint8_t *u = calloc(1, umad_size() + MAD_LEN), *mad;
	uint32_t tid = ++m->tid;
	uint64_t deadline;
	int len, ret;

	if (!u)
		return -ENOMEM;
	mad = umad_get_mad(u);
	mad[0] = 1; /* BaseVersion */
	mad[1] = PERF_CLASS;
	mad[2] = PERF_VERSION;
	mad[3] = METHOD_GET;
	mad[12] = (uint8_t)(tid >> 24);
	mad[13] = (uint8_t)(tid >> 16);
	mad[14] = (uint8_t)(tid >> 8);
	mad[15] = (uint8_t)tid;
	mad[16] = (uint8_t)(attr >> 8);
	mad[17] = (uint8_t)attr;
	if (attr != ATTR_CPI)
		mad[PMA_DATA + 1] = port; /* PortSelect */
	umad_set_addr(u, lid, 1, 0, GSI_QKEY);
	ret = umad_send(m->fd, m->agent, u, MAD_LEN, TIMEOUT_MS, 1);
	deadline = now_ms() + 3 * TIMEOUT_MS;
	while (ret >= 0) {
		uint64_t t = now_ms();

		if (t >= deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		len = MAD_LEN;
		ret = umad_recv(m->fd, u, &len, (int)(deadline - t));
		if (ret == -EINTR || ret == -EAGAIN) {
			ret = 0;
			continue;
		}
		if (ret < 0)
			break;
		if (umad_status(u)) { /* our send timed out */
			ret = -ETIMEDOUT;
			break;
		}
		mad = umad_get_mad(u);
		if (len < PMA_DATA + 48 || mad[1] != PERF_CLASS || !(mad[3] & 0x80) ||
		    ((uint32_t)mad[12] << 24 | (uint32_t)mad[13] << 16 |
		     (uint32_t)mad[14] << 8 | mad[15]) != tid)
			continue; /* not our answer: drop */
		ret = mad[4] || mad[5] ? -EIO : 0;
		if (!ret) {
			memset(out, 0, MAD_LEN);
			memcpy(out, mad, (size_t)len < MAD_LEN ? (size_t)len : MAD_LEN);
		}
		break;
	}
	free(u);
	return ret < 0 ? ret : 0;
}

/* show_pma_counter's value of c from the attribute's MAD. */
static uint64_t counter_of(const struct counter *c, const uint8_t *mad)
{
	const uint8_t *p = mad + PMA_DATA + c->bit / 8;
	uint64_t v = 0;

	switch (c->width) {
	case 4:
		return (p[0] >> (4 - c->bit % 8)) & 0xf;
	case 8:
		return p[0];
	default:
		for (int i = 0; i < c->width / 8; i++)
			v = v << 8 | p[i];
		return v;
	}
}

static void query(struct sv_dev *d, struct sv_port *p, uint16_t lid)
{
	struct sv_pma *m = &p->pma;
	uint8_t cpi[MAD_LEN];

	if (pma_open(m, d->name, p->num))
		return;
	if (m->ext < 0) {
		if (pma_get(m, lid, p->num, ATTR_CPI, cpi))
			return;
		/* ClassPortInfo.CapabilityMask: bytes 2-3 of the attribute. */
		m->ext = ((cpi[PMA_DATA + 2] << 8 | cpi[PMA_DATA + 3]) & CAP_EXT_WIDTH) ? 1 : 0;
	}
	if (pma_get(m, lid, p->num, ATTR_PC, m->pc))
		return;
	if (m->ext && pma_get(m, lid, p->num, ATTR_PCX, m->pcx))
		return;
	m->have = true;
}

void sv_pma_counters(struct sib_sysview *v, struct sv_dev *d, struct sv_port *p,
		     const struct ibv_port_attr *pa)
{
	struct sv_pma *m = &p->pma;
	const struct counter *set = m->ext > 0 ? pcx_set : pc_set;
	size_t n = m->ext > 0 ? sizeof(pcx_set) / sizeof(pcx_set[0]) : sizeof(pc_set) / sizeof(pc_set[0]);
	uint64_t t = now_ms();
	char dir[160], val[32];

	if (pa->state == IBV_PORT_ACTIVE && pa->lid && (!m->last_ms || t - m->last_ms >= PERIOD_MS)) {
		m->last_ms = t;
		query(d, p, pa->lid);
		set = m->ext > 0 ? pcx_set : pc_set;
		n = m->ext > 0 ? sizeof(pcx_set) / sizeof(pcx_set[0]) : sizeof(pc_set) / sizeof(pc_set[0]);
	}
	if (!m->have)
		return;
	snprintf(dir, sizeof(dir), "sys/class/infiniband/%s/ports/%u/counters", d->name, p->num);
	sv_dir(&v->tree, "%s", dir);
	for (size_t i = 0; i < n; i++) {
		snprintf(val, sizeof(val), "%llu\n",
			 (unsigned long long)counter_of(&set[i], set[i].ext ? m->pcx : m->pc));
		sv_file(&v->tree, val, "%s/%s", dir, set[i].name);
	}
}
