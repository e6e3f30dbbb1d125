// SPDX-License-Identifier: MIT
/*
 * The fabric map (sib_shm.h) and the fabric-wide resources recorded in it:
 * port attributes as the SMA reports them (IBA 14.2.5.6 PortInfo), the LID
 * map, inboxes and QP numbers.  The authoritative state is in struct sibd;
 * this file is softibd's only writer of the map and never reads it back
 * (DESIGN principle 6).  The map is sealed F_SEAL_FUTURE_WRITE before a
 * client can have it.  Words that clients read while they change (qp_owner,
 * qp_xrcd, inbox gen) are stored with release; ports under the seqlock port_seq.
 * Every loop is bounded by a table size.  Single-threaded; no locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/linkcfg.h"
#include "daemon/softibd.h"

/* Port attributes come from the SMA's PortInfo (sma_publish.c); the
 * defaults of a powered fabric are subnet.c's. */

int sibd_fabric_load(struct sibd *d)
{
	char err[256];
	int ret;

	/* a freshly powered fabric; in the default mode the subnet's own SM
	 * brings it up through the SMAs, as OpenSM would with --sm external */
	ret = sib_subnet_load(d->sn, d->topology, err, sizeof(err));
	if (ret == -EINVAL)
		sibd_log("topology: %s", err);
	return ret;
}

/* Copy a string into a fixed field, cut to fit, NUL-terminated. */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/*
 * Describe CA node n as the private devs[nd]: its ports as the SMA reports
 * them.  devs[nd].gen is left to the caller; nothing is published.
 */
void sibd_map_set_device(struct sibd *d, uint32_t nd, struct sib_fab_node *n)
{
	struct sib_shm_device *dev = &d->devs[nd];
	unsigned int pn;

	d->dev_node[nd] = n;
	copy_str(dev->name, sizeof(dev->name), n->dev_name);
	copy_str(dev->node_desc, sizeof(dev->node_desc), n->desc);
	dev->node_guid = n->node_guid;
	dev->sys_image_guid = n->sys_image_guid;
	dev->vendor_id = n->vendor_id;
	dev->vendor_part_id = n->device_id;
	dev->hw_ver = 0;
	dev->num_ports = n->num_ports;
	memset(dev->ports, 0, sizeof(dev->ports));
	for (pn = 1; pn <= n->num_ports; pn++)
		sibd_sma_port_to_shm(&dev->ports[pn - 1], &n->ports[pn]);
}

/* Build the private devs[] from the fabric, all registered.  0 or -EINVAL (too big). */
static int map_fill(struct sibd *d)
{
	unsigned int i, fabric_only = 0;
	struct sib_fab_node *n;
	uint32_t nd = 0;

	for (i = 0; (n = sib_subnet_node(d->sn, i)); i++) {
		if (n->type != SIB_NODE_CA)
			continue;
		/* CAs past the verbs limits are in the fabric (SMA, PMA,
		 * routing) without a verbs device */
		if (nd == SIB_MAX_DEVICES || n->num_ports > SIB_MAX_PORTS) {
			fabric_only++;
			continue;
		}
		sibd_map_set_device(d, nd, n);
		d->devs[nd].gen = 1; /* registered */
		nd++;
	}
	d->num_devices = nd;
	if (fabric_only)
		sibd_log("topology: %u CAs are fabric-only nodes (no verbs device): more than "
			 "%d CAs or more than %d ports", fabric_only, SIB_MAX_DEVICES, SIB_MAX_PORTS);
	return 0;
}

/*
 * The seqlock port_seq around writes of ports[] and lid_map[]: a reader that
 * overlaps sees an odd or changed port_seq and tries again (a bounded number
 * of times, fabric_view.h).  The count is kept privately (d->port_seq).
 */
void sibd_map_write_begin(struct sibd *d)
{
	atomic_store_explicit(&d->shm->port_seq, ++d->port_seq, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

void sibd_map_write_end(struct sibd *d)
{
	atomic_store_explicit(&d->shm->port_seq, ++d->port_seq, memory_order_release);
}

/* Copy the private devs[idx] into the map, all but gen.  Inside write_begin/end. */
void sibd_map_put_device(struct sibd *d, uint32_t idx)
{
	struct sib_shm_device *dst = &d->shm->devs[idx];
	const struct sib_shm_device *src = &d->devs[idx];

	memcpy(dst, src, offsetof(struct sib_shm_device, gen));
	memcpy(dst->ports, src->ports, sizeof(dst->ports));
}

/* lid_map[lid .. lid + n - 1] = entry (0: unrouted), clipped to unicast.  Inside begin/end. */
void sibd_map_put_lids(struct sibd *d, uint32_t lid, uint32_t n, uint16_t entry)
{
	uint32_t l;

	for (l = lid; l && l < lid + n && l < SIB_UNICAST_LIDS; l++)
		atomic_store_explicit(&d->shm->lid_map[l], entry, memory_order_relaxed);
}

/* Route (or unroute) every LID of devs[idx]'s ports, as the private state has them. */
void sibd_map_put_routes(struct sibd *d, uint32_t idx, bool route)
{
	const struct sib_shm_device *dev = &d->devs[idx];
	const struct sib_shm_port *p;
	unsigned int pn;

	for (pn = 1; pn <= dev->num_ports && pn <= SIB_MAX_PORTS; pn++) {
		p = &dev->ports[pn - 1];
		sibd_map_put_lids(d, p->lid, 1u << p->lmc, route ? SIB_LIDM_MAKE(idx, pn) : 0);
	}
}

/*
 * Publish devs[idx].gen and num_devices (release): a reader that sees the
 * gen odd sees the slot filled (put it before), one that sees it even skips it.
 */
void sibd_map_publish_gen(struct sibd *d, uint32_t idx)
{
	atomic_store_explicit(&d->shm->devs[idx].gen, d->devs[idx].gen, memory_order_release);
	atomic_store_explicit(&d->shm->num_devices, d->num_devices, memory_order_release);
}

/* Publish one device: its attributes and ports under the seqlock. */
void sibd_map_publish_device(struct sibd *d, uint32_t idx)
{
	sibd_map_write_begin(d);
	sibd_map_put_device(d, idx);
	sibd_map_write_end(d);
}

/* Publish every device, its LID routes and its generation (at start). */
void sibd_map_publish_ports(struct sibd *d)
{
	uint32_t i;

	sibd_map_write_begin(d);
	for (i = 0; i < d->num_devices; i++) {
		sibd_map_put_device(d, i);
		if (d->devs[i].gen & 1)
			sibd_map_put_routes(d, i, true);
	}
	sibd_map_write_end(d);
	for (i = 0; i < d->num_devices; i++)
		sibd_map_publish_gen(d, i);
}

/* A memfd of size bytes that can still be sealed; -errno on failure. */
static int new_memfd(const char *name, size_t size)
{
	int fd, err;

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

int sibd_sealed_memfd(const char *name, size_t size)
{
	int fd = new_memfd(name, size), err;

	if (fd >= 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

/*
 * Seal the fabric memfd for clients: no writable mapping or write(2) from
 * now on (F_SEAL_FUTURE_WRITE, Linux 5.1), no resize, no seal removal.  Our
 * mapping, made before, stays writable.  0 or -errno.
 */
static int seal_read_only(int fd)
{
	const int want = F_SEAL_FUTURE_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	int got;

	if (fcntl(fd, F_ADD_SEALS, want) < 0)
		return -errno;
	got = fcntl(fd, F_GET_SEALS);
	if (got < 0)
		return -errno;
	return (got & want) == want ? 0 : -ENOTSUP;
}

int sibd_map_create(struct sibd *d)
{
	size_t size = sizeof(struct sib_fabric_shm);
	void *p;
	int ret, i;

	for (i = 0; i < SIB_MAX_INBOXES; i++)
		d->inbox[i].fd = -1;
	memset(d->qpn_bits, 0, sizeof(d->qpn_bits));
	d->qpn_next = 2;
	d->shm_fd = new_memfd("softib-fabric", size);
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
	d->shm_size = size;
	ret = seal_read_only(d->shm_fd);
	if (ret) {
		sibd_log("fabric map: cannot seal it read-only for clients "
			 "(F_SEAL_FUTURE_WRITE needs Linux 5.1): %s", strerror(-ret));
		sibd_map_destroy(d);
		return ret;
	}
	d->shm->magic = SIB_SHM_MAGIC;
	d->shm->abi_version = SIB_ABI_VERSION;
	d->shm->size = (uint32_t)size;
	d->shm->daemon_pid = (uint64_t)getpid();
	atomic_store_explicit(&d->shm->route_gen, d->route_gen, memory_order_release); /* route.c */
	ret = map_fill(d);
	if (ret) {
		sibd_map_destroy(d);
		return ret;
	}
	sibd_map_publish_ports(d);
	return 0;
}

void sibd_map_destroy(struct sibd *d)
{
	int i;

	if (d->shm) {
		for (i = 0; i < SIB_MAX_INBOXES; i++)
			if (d->inbox[i].fd >= 0)
				sibd_inbox_free(d, i);
		munmap(d->shm, d->shm_size);
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
	struct sibd_inbox *ib;
	char name[32];
	uint32_t i, n;
	int fd;

	for (n = 0, i = d->inbox_next; n < SIB_MAX_INBOXES; n++, i = (i + 1) % SIB_MAX_INBOXES)
		if (d->inbox[i].fd < 0)
			break;
	if (n == SIB_MAX_INBOXES)
		return -ENOSPC;
	snprintf(name, sizeof(name), "softib-inbox-%u", i);
	fd = sibd_sealed_memfd(name, SIB_INBOX_BYTES);
	if (fd < 0) {
		sibd_log("inbox %u: memfd: %s", i, strerror(-fd));
		return fd;
	}
	ib = &d->inbox[i];
	ib->fd = fd;
	ib->owner = owner;
	ib->dev_index = dev_index;
	ib->gen++; /* odd: live */
	desc = &d->shm->inboxes[i];
	desc->pid = owner->pid;
	desc->dev_index = dev_index;
	atomic_store_explicit(&desc->gen, ib->gen, memory_order_release);
	d->inboxes_used++;
	d->inbox_next = (i + 1) % SIB_MAX_INBOXES;
	*inbox = i;
	return 0;
}

/* Retire an inbox: its gen turns even, so peers holding the old gen see it gone. */
void sibd_inbox_free(struct sibd *d, uint32_t inbox)
{
	struct sib_shm_inbox_desc *desc = &d->shm->inboxes[inbox];
	struct sibd_inbox *ib = &d->inbox[inbox];

	sibd_link_inbox_gone(d, inbox); /* its PMA counts stay (linkcfg.c) */
	sibd_pairs_inbox_gone(d, inbox);
	ib->gen++; /* even: gone */
	atomic_store_explicit(&desc->gen, ib->gen, memory_order_release);
	desc->pid = 0;
	close(ib->fd);
	ib->fd = -1;
	ib->owner = NULL;
	d->inboxes_used--;
}

uint32_t sibd_inbox_gen(const struct sibd *d, uint32_t inbox)
{
	return d->inbox[inbox].gen;
}

static bool qpn_taken(const struct sibd *d, uint32_t q)
{
	return d->qpn_bits[q / 64] >> (q % 64) & 1;
}

/*
 * Give out a QPN in 2..SIB_MAX_QPN-1 (0 and 1 are QP0 and QP1), unique
 * fabric-wide, next-fit so that a freed QPN is reused as late as possible,
 * and publish its owner and, for an XRC_RECV QP, its domain number xrcd
 * (0: another QP type).  The allocation is the private bitmap; the scan
 * visits each QPN at most once.  0 or -ENOSPC (all given out).
 */
int sibd_qpn_alloc(struct sibd *d, uint32_t inbox, uint32_t dev_index, uint32_t xrcd, uint32_t *qpn)
{
	uint32_t q = d->qpn_next, n;

	for (n = 0; n < SIB_MAX_QPN - 2 && qpn_taken(d, q); n++)
		q = q + 1 < SIB_MAX_QPN ? q + 1 : 2;
	if (n == SIB_MAX_QPN - 2)
		return -ENOSPC;
	d->qpn_bits[q / 64] |= 1ull << (q % 64);
	atomic_store_explicit(&d->shm->qp_xrcd[q], xrcd, memory_order_relaxed);
	/* Release: a peer that reads this word sees the inbox it names live,
	 * and the QP's domain. */
	atomic_store_explicit(&d->shm->qp_owner[q],
			      SIB_QPO_MAKE(inbox, sibd_inbox_gen(d, inbox), dev_index),
			      memory_order_release);
	d->qpns_used++;
	d->qpn_next = q + 1 < SIB_MAX_QPN ? q + 1 : 2;
	*qpn = q;
	return 0;
}

void sibd_qpn_free(struct sibd *d, uint32_t qpn)
{
	if (qpn < 2 || qpn >= SIB_MAX_QPN || !qpn_taken(d, qpn))
		abort(); /* a bug in softibd: QPNs come from our own records only */
	d->qpn_bits[qpn / 64] &= ~(1ull << (qpn % 64));
	atomic_store_explicit(&d->shm->qp_owner[qpn], 0, memory_order_release);
	atomic_store_explicit(&d->shm->qp_xrcd[qpn], 0, memory_order_release);
	d->qpns_used--;
}
