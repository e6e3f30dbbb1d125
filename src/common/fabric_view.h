/* SPDX-License-Identifier: MIT */
/*
 * The client's read-only view of softibd's fabric map (sib_shm.h): attach and
 * validate it (magic, ABI, size; device and port counts clamped), bounded
 * seqlock snapshots of a port, and the process-private port counters.  For the
 * HCA, verbs and tools.  Must not write the map or loop unbounded over it
 * (DESIGN principle 6).  No locks: softibd is the map's only writer.
 */
#ifndef SIB_COMMON_FABRIC_VIEW_H
#define SIB_COMMON_FABRIC_VIEW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sib_shm.h"

/*
 * Tries of sib_fabric_port_read() before it gives up on a seqlock that
 * stays odd or keeps changing.  The first SIB_SEQ_SPIN tries spin; the rest
 * sleep SIB_SEQ_SLEEP_US each, so a writer preempted mid-update (softibd's
 * write section is one short copy) has about 50 ms to finish.
 */
#define SIB_SEQ_TRIES    1100
#define SIB_SEQ_SPIN     100
#define SIB_SEQ_SLEEP_US 50

/*
 * Per-port counters that IBA keeps in PortCounters (IBA 16.1.3.5:
 * PortRcvErrors class) and rdma-core reports in ibv_port_attr
 * (bad_pkey_cntr, qkey_viol_cntr).  softib counts them in the process whose
 * receive path dropped the packet: the fabric map is read-only to clients.
 */
struct sib_port_counters {
	_Atomic uint64_t bad_pkey;   /* packets dropped for a P_Key mismatch */
	_Atomic uint64_t qkey_viol;  /* datagrams dropped for a Q_Key mismatch */
};

/* A validated, read-only attachment of the fabric map. */
struct sib_fabric_view {
	const struct sib_fabric_shm *map;  /* PROT_READ: a write faults the writer */
	size_t size;                       /* bytes mapped */
	uint32_t num_devices;              /* map->num_devices, clamped to SIB_MAX_DEVICES */
	struct sib_port_counters cntr[SIB_MAX_DEVICES][SIB_MAX_PORTS]; /* process-private */
};

/*
 * The process's view: attached by the verbs library on its first HELLO,
 * never detached while the library is loaded (the HCA's data path holds
 * pointers into it).  The HCA counts its receive drops in sib_fview.cntr.
 */
extern struct sib_fabric_view sib_fview;

/*
 * Check a map of size bytes: magic, ABI version, the size it claims equals
 * size and covers struct sib_fabric_shm.  *num_devices (may be NULL) gets
 * num_devices clamped to SIB_MAX_DEVICES.  Returns 0 or -EPROTO.
 */
int sib_fabric_check(const struct sib_fabric_shm *map, size_t size, uint32_t *num_devices);

/*
 * Map the fabric memfd fd (size bytes, from HELLO) PROT_READ/MAP_SHARED
 * into *v and check it.  fd stays the caller's.  Returns 0, -EPROTO (not a
 * softib map of our ABI) or -errno of mmap.
 */
int sib_fabric_view_attach(struct sib_fabric_view *v, int fd, size_t size);

/*
 * Follow devices registered since attach (softib device add, docs/events.md):
 * num_devices from the map again, clamped.  It only grows, as softibd's
 * count of slots ever used does, so an index once valid stays valid.
 */
void sib_fabric_view_refresh(struct sib_fabric_view *v);

/* Unmap the view (no-op if not attached). */
void sib_fabric_view_detach(struct sib_fabric_view *v);

/* Device dev of the view, or NULL if dev >= v->num_devices. */
const struct sib_shm_device *sib_fabric_view_dev(const struct sib_fabric_view *v, uint32_t dev);

/* Ports of a device as the map says, clamped to SIB_MAX_PORTS. */
static inline uint8_t sib_fabric_num_ports(const struct sib_shm_device *d)
{
	return d->num_ports < SIB_MAX_PORTS ? d->num_ports : SIB_MAX_PORTS;
}

/*
 * Copy port port_num (1-based) of device dev into *out under the map's
 * seqlock port_seq, with at most SIB_SEQ_TRIES tries.  Returns 0, -EINVAL
 * (no such device or port) or -EAGAIN when no consistent copy could be had:
 * the writer (softibd) is in the middle of an update that did not finish in
 * time, a transient condition the caller may retry, as rdma-core callers do
 * with EAGAIN.  Never spins unbounded, whatever the map holds.
 */
int sib_fabric_port_read(const struct sib_fabric_shm *map, uint32_t num_devices, uint32_t dev,
			 uint8_t port_num, struct sib_shm_port *out);

/* The client-private counters of a port, or NULL if dev/port_num are out of range. */
struct sib_port_counters *sib_fabric_view_cntr(struct sib_fabric_view *v, uint32_t dev,
					       uint8_t port_num);

#endif
