/* SPDX-License-Identifier: MIT */
/*
 * Events softibd pushes to this process (docs/events.md), turned into verbs
 * async events of the contexts they concern: PORT_ERR, PORT_ACTIVE,
 * LID_CHANGE, SM_CHANGE and DEVICE_FATAL (IBA 11.6.3, rdma-core's
 * ibv_get_async_event).  One reader thread per process, blocked in recv;
 * never from inside a verb (seed 004).  Plus the data path's one-load check
 * that a port passes packets.
 */
#ifndef SIB_HCA_EVENTS_H
#define SIB_HCA_EVENTS_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/sib_shm.h"

struct sib_context;
struct sib_ctl_event;
extern struct sib_fabric_shm *sib_fabric;

/* What a context last told its user about its ports (under events.c's lock). */
struct sib_ctx_events {
	struct sib_context *next;           /* contexts of this process (events.c) */
	_Atomic int fatal;                  /* DEVICE_FATAL raised: verbs give EIO */
	uint8_t state[SIB_MAX_PORTS];       /* enum ibv_port_state */
	uint8_t lmc[SIB_MAX_PORTS];
	uint16_t lid[SIB_MAX_PORTS], sm_lid[SIB_MAX_PORTS];
};

/*
 * Register a context opened on a device (ibv_open_device, after its engine
 * started): its ports' current state becomes the baseline, and the reader
 * thread and its connection (SUBSCRIBE) start with the first context.
 * 0 or a positive errno.
 */
int sib_events_attach(struct sib_context *ctx);
/* Unregister it (ibv_close_device, before its engine stops); no event reaches it after. */
void sib_events_detach(struct sib_context *ctx);
/* True once the context got DEVICE_FATAL: control verbs fail with EIO (rdma-core). */
bool sib_ctx_fatal(struct sib_context *ctx);
/*
 * Apply one pushed event to every registered context it concerns (the
 * reader thread; exposed for tests of the dispatch).  Caller holds nothing.
 */
void sib_events_dispatch(const struct sib_ctl_event *ev);

/*
 * Data path: does port_num (1-based) of device dev_index, generation
 * dev_gen, pass packets?  Only an ACTIVE port of a still registered device
 * does (a downed port drops what it would send or receive: the link is
 * down).  Two relaxed loads of one cache line; no syscall, no lock.
 */
static inline bool sib_port_passes(uint32_t dev_index, uint32_t dev_gen, unsigned int port_num)
{
	const struct sib_shm_device *sd = &sib_fabric->devs[dev_index];

	if (port_num - 1u >= SIB_MAX_PORTS)
		return false;
	return atomic_load_explicit(&sd->gen, memory_order_relaxed) == dev_gen &&
	       __atomic_load_n(&sd->ports[port_num - 1].state, __ATOMIC_RELAXED) == IBV_PORT_ACTIVE;
}

#endif
