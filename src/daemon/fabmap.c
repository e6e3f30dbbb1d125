// SPDX-License-Identifier: MIT
/*
 * The fabric map (sib_shm.h) and the fabric-wide resources recorded in it:
 * port attributes as the SMA reports them (IBA 14.2.5.6 PortInfo), the LID
 * map, inboxes and QP numbers.  This file is softibd's only writer of the map;
 * words that clients read while it changes (qp_owner, inbox gen) are stored
 * with release.  Single-threaded (the event loop); no locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/softibd.h"

#define GID_PREFIX_DEFAULT 0xfe80000000000000ull

/*
 * PortInfo:CapabilityMask of a CA port, as an HCA without an SM reports it:
 * traps, SL-to-VL mapping, SystemImageGUID, CM and client reregistration.
 * IsSM (bit 1) belongs to the port where an SM runs, set by that SM.
 */
#define CA_PORT_CAP_FLAGS \
	(IBV_PORT_TRAP_SUP | IBV_PORT_SL_MAP_SUP | IBV_PORT_SYS_IMAGE_GUID_SUP | \
	 IBV_PORT_CM_SUP | IBV_PORT_CLIENT_REG_SUP)

#define PHYS_POLLING   2 /* PortPhysicalState */
#define PHYS_LINKUP    5
#define WIDTH_1X       1 /* LinkWidthActive */
#define WIDTH_4X       2
#define SPEED_SDR      1 /* LinkSpeedActive */
#define SPEED_QDR      4
#define VLCAP_VL0_7    4 /* VLCap: 1 VL0, 2 VL0-1, 3 VL0-3, 4 VL0-7, 5 VL0-14 */
#define SUBNET_TIMEOUT 18 /* 4.096 us * 2^18 = 1.07 s */

int sibd_fabric_load(struct sibd *d)
{
	char err[256];
	int ret;

	memset(&d->fab, 0, sizeof(d->fab));
	if (d->topology)
		ret = sib_fabric_load_file(&d->fab, d->topology, err, sizeof(err));
	else
		ret = sib_fabric_parse(&d->fab, sib_fabric_default_topology(), "default",
				       err, sizeof(err));
	if (ret) {
		sibd_log("topology: %s", err);
		sib_fabric_free(&d->fab);
		return -EINVAL;
	}
	sib_fabric_assign_lids(&d->fab);
	return 0;
}

/*
 * Bring a port up as the daemon does until there is a subnet manager: every
 * linked CA port is ACTIVE at 4X QDR with MTU 4096 and the SM at LID 1; an
 * unlinked port is DOWN and Polling, without a LID.
 */
static void port_init(struct sib_shm_port *p, const struct sib_fab_port *fp)
{
	bool up = fp->peer != NULL && fp->lid != 0;

	memset(p, 0, sizeof(*p));
	p->port_guid = fp->guid;
	p->gid_prefix = GID_PREFIX_DEFAULT;
	p->max_mtu = IBV_MTU_4096;
	p->active_mtu = IBV_MTU_4096;
	p->max_vl_num = VLCAP_VL0_7;
	p->subnet_timeout = SUBNET_TIMEOUT;
	p->cap_flags = CA_PORT_CAP_FLAGS;
	p->pkey[0] = 0xffff; /* default full-member P_Key */
	if (up) {
		p->lid = fp->lid;
		p->lmc = fp->lmc;
		p->sm_lid = SIBD_SM_LID;
		p->sm_sl = 0;
		p->state = IBV_PORT_ACTIVE;
		p->phys_state = PHYS_LINKUP;
		p->active_width = WIDTH_4X;
		p->active_speed = SPEED_QDR;
	} else {
		p->state = IBV_PORT_DOWN;
		p->phys_state = PHYS_POLLING;
		p->active_width = WIDTH_1X;
		p->active_speed = SPEED_SDR;
	}
}

/* Copy a string into a fixed field, cut to fit, NUL-terminated. */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/*
 * Describe CA node n as devs[nd], its ports as the SMA reports them, and
 * route its LIDs to it in lid_map[].  devs[nd].gen is left to the caller.
 */
void sibd_map_set_device(struct sibd *d, uint32_t nd, struct sib_fab_node *n)
{
	struct sib_fabric_shm *m = d->shm;
	struct sib_shm_device *dev = &m->devs[nd];
	struct sib_shm_port *p;
	uint32_t lid, nlids;
	unsigned int pn;

	d->dev_node[nd] = n;
	copy_str(dev->name, sizeof(dev->name), n->dev_name);
	copy_str(dev->node_desc, sizeof(dev->node_desc), n->desc);
	dev->node_guid = n->node_guid;
	dev->sys_image_guid = n->sys_image_guid;
	dev->vendor_id = n->vendor_id;
	dev->vendor_part_id = n->device_id;
	dev->num_ports = n->num_ports;
	for (pn = 1; pn <= n->num_ports; pn++) {
		p = &dev->ports[pn - 1];
		port_init(p, &n->ports[pn]);
		if (!p->lid)
			continue;
		nlids = 1u << p->lmc;
		for (lid = p->lid; lid < p->lid + nlids && lid < SIB_UNICAST_LIDS; lid++)
			atomic_store_explicit(&m->lid_map[lid], SIB_LIDM_MAKE(nd, pn),
					      memory_order_relaxed);
	}
}

/* Fill devs[], ports[] and lid_map[] from the fabric.  0 or -EINVAL (too big). */
static int map_fill(struct sibd *d)
{
	struct sib_fabric_shm *m = d->shm;
	struct sib_fab_node *n;
	uint32_t nd = 0;
	unsigned int i;

	for (i = 0; i < d->fab.n_nodes; i++) {
		n = d->fab.nodes[i];
		if (n->type != SIB_NODE_CA)
			continue;
		if (nd == SIB_MAX_DEVICES) {
			sibd_log("topology: more than %d CAs", SIB_MAX_DEVICES);
			return -EINVAL;
		}
		if (n->num_ports > SIB_MAX_PORTS) {
			sibd_log("topology: CA %s has %u ports, softib supports %d",
				 n->id, n->num_ports, SIB_MAX_PORTS);
			return -EINVAL;
		}
		sibd_map_set_device(d, nd, n);
		atomic_store_explicit(&m->devs[nd].gen, 1, memory_order_relaxed); /* registered */
		nd++;
	}
	m->num_devices = nd;
	return 0;
}

/* A sealed memfd of size bytes: clients may map it but never resize it. */
static int sealed_memfd(const char *name, size_t size)
{
	int fd, err;

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

int sibd_map_create(struct sibd *d)
{
	size_t size = sizeof(struct sib_fabric_shm);
	void *p;
	int ret, i;

	for (i = 0; i < SIB_MAX_INBOXES; i++)
		d->inbox[i].fd = -1;
	d->qpn_next = 2;
	d->shm_fd = sealed_memfd("softib-fabric", size);
	if (d->shm_fd < 0) {
		sibd_log("fabric map: memfd: %s", strerror(-d->shm_fd));
		return d->shm_fd;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, d->shm_fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		sibd_log("fabric map: mmap %zu bytes: %s", size, strerror(errno));
		close(d->shm_fd);
		d->shm_fd = -1;
		return ret;
	}
	d->shm = p;
	d->shm->magic = SIB_SHM_MAGIC;
	d->shm->abi_version = SIB_ABI_VERSION;
	d->shm->size = (uint32_t)size;
	d->shm->daemon_pid = (uint64_t)getpid();
	ret = map_fill(d);
	if (ret)
		sibd_map_destroy(d);
	return ret;
}

void sibd_map_destroy(struct sibd *d)
{
	int i;

	if (d->shm) {
		for (i = 0; i < SIB_MAX_INBOXES; i++)
			if (d->inbox[i].fd >= 0)
				sibd_inbox_free(d, i);
		munmap(d->shm, sizeof(*d->shm));
	}
	if (d->shm_fd >= 0)
		close(d->shm_fd);
	d->shm = NULL;
	d->shm_fd = -1;
}

/*
 * Take the next free inbox after the last one taken (next-fit, so that an
 * index is not reused at once), create its zero-filled ring and make its gen
 * odd.  0 or -ENOSPC / -errno.
 */
int sibd_inbox_alloc(struct sibd *d, struct sibd_client *owner, uint32_t dev_index,
		     uint32_t *inbox)
{
	struct sib_shm_inbox_desc *desc;
	char name[32];
	uint32_t i, n;
	int fd;

	if (d->inboxes_used == SIB_MAX_INBOXES)
		return -ENOSPC;
	for (n = 0, i = d->inbox_next; n < SIB_MAX_INBOXES; n++, i = (i + 1) % SIB_MAX_INBOXES)
		if (d->inbox[i].fd < 0)
			break;
	snprintf(name, sizeof(name), "softib-inbox-%u", i);
	fd = sealed_memfd(name, SIB_INBOX_BYTES);
	if (fd < 0) {
		sibd_log("inbox %u: memfd: %s", i, strerror(-fd));
		return fd;
	}
	desc = &d->shm->inboxes[i];
	desc->pid = owner->pid;
	desc->dev_index = dev_index;
	atomic_store_explicit(&desc->gen, atomic_load_explicit(&desc->gen, memory_order_relaxed) + 1,
			      memory_order_release); /* odd: live */
	d->inbox[i].fd = fd;
	d->inbox[i].owner = owner;
	d->inboxes_used++;
	d->inbox_next = (i + 1) % SIB_MAX_INBOXES;
	*inbox = i;
	return 0;
}

/* Retire an inbox: its gen turns even, so peers holding the old gen see it gone. */
void sibd_inbox_free(struct sibd *d, uint32_t inbox)
{
	struct sib_shm_inbox_desc *desc = &d->shm->inboxes[inbox];

	atomic_store_explicit(&desc->gen, atomic_load_explicit(&desc->gen, memory_order_relaxed) + 1,
			      memory_order_release);
	desc->pid = 0;
	close(d->inbox[inbox].fd);
	d->inbox[inbox].fd = -1;
	d->inbox[inbox].owner = NULL;
	d->inboxes_used--;
}

uint32_t sibd_inbox_gen(const struct sibd *d, uint32_t inbox)
{
	return atomic_load_explicit(&d->shm->inboxes[inbox].gen, memory_order_relaxed);
}

/*
 * Give out a QPN in 2..SIB_MAX_QPN-1 (0 and 1 are QP0 and QP1), unique
 * fabric-wide, next-fit so that a freed QPN is reused as late as possible,
 * and publish its owner.  0 or -ENOSPC.
 */
int sibd_qpn_alloc(struct sibd *d, uint32_t inbox, uint32_t dev_index, uint32_t *qpn)
{
	_Atomic uint64_t *owner = d->shm->qp_owner;
	uint32_t q = d->qpn_next;

	if (d->qpns_used == SIB_MAX_QPN - 2)
		return -ENOSPC;
	while (atomic_load_explicit(&owner[q], memory_order_relaxed) != 0)
		q = q + 1 < SIB_MAX_QPN ? q + 1 : 2;
	/* Release: a peer that reads this word sees the inbox it names live. */
	atomic_store_explicit(&owner[q], SIB_QPO_MAKE(inbox, sibd_inbox_gen(d, inbox), dev_index),
			      memory_order_release);
	d->qpns_used++;
	d->qpn_next = q + 1 < SIB_MAX_QPN ? q + 1 : 2;
	*qpn = q;
	return 0;
}

void sibd_qpn_free(struct sibd *d, uint32_t qpn)
{
	atomic_store_explicit(&d->shm->qp_owner[qpn], 0, memory_order_release);
	d->qpns_used--;
}
