/* SPDX-License-Identifier: MIT */
/*
 * Devices and contexts of the drop-in libibverbs: the connection to softibd,
 * the device list, open/close, and every query verb (device, port, GID,
 * P_Key), plus the sysfs helpers that ibv_devinfo and librdmacm call.
 *
 * Locking: lib_lock guards the one-time connection and the device array;
 * ctl_lock serializes round trips on the control socket.  The connection
 * is the process's: a child of fork() that calls into softibd opens its
 * own (HELLO with its PID) instead of sharing the parent's socket, so that
 * replies never cross and what the child creates dies with the child.  Device objects
 * are never freed, so pointers stay stable across ibv_get_device_list calls
 * (librdmacm compares them); a device registered at run time in a reused
 * slot gets a new object (softib device add|remove, docs/events.md).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ctl.h"
#include "common/fabric_view.h"
#include "common/sib_ctl.h"
#include "verbs/export.h"
#include "verbs/sib_verbs.h"

#undef ibv_query_port

_Static_assert(sizeof(struct verbs_context) == 648, "verbs_context size (sz)");
_Static_assert(__builtin_offsetof(struct verbs_context, sz) == 312, "sz at ctx-8");
_Static_assert(__builtin_offsetof(struct verbs_context, context) == 320, "context last");
_Static_assert(sizeof(struct ibv_port_attr) == 52, "ibv_port_attr");
_Static_assert(sizeof(struct ibv_device_attr) == 232, "ibv_device_attr");
_Static_assert(sizeof(struct ibv_device_attr_ex) == 400, "ibv_device_attr_ex");
_Static_assert(sizeof(struct ibv_qp_ex) == 352, "ibv_qp_ex");
_Static_assert(sizeof(struct ibv_cq_ex) == 288, "ibv_cq_ex");

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static int ctl_fd = -1;
static bool ctl_forked;            /* a child of fork() that dropped the parent's connection */
static struct ibv_device *devices[SIB_MAX_DEVICES]; /* the newest object per slot */

/* Devices replaced in their slot: kept (contexts and applications may hold
 * them), and reachable, so that they are not leaks.  Under lib_lock. */
struct retired_device {
	struct retired_device *next;
	struct ibv_device *dev;
};
static struct retired_device *retired;

/*
 * In a child of fork(): leave the parent's connection to the parent (its
 * objects stay the parent's) and say HELLO on a new one.  The fabric map
 * and peer inboxes are shared mappings and stay.  ctl_lock held.  On
 * failure ctl_fd is -1 and calls fail with ENODEV.
 */
static void ctl_reconnect(void)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_HELLO };
	int fd, mfd = -1, rc;

	ctl_forked = false;
	fd = sib_ctl_open(false);
	if (fd < 0)
		return;
	m.u.hello.abi_version = SIB_ABI_VERSION;
	m.u.hello.pid = getpid();
	rc = sib_ctl_call(fd, &m, &mfd);
	if (mfd >= 0)
		close(mfd);
	if (rc < 0 || m.hdr.status) {
		close(fd);
		return;
	}
	ctl_fd = fd;
}

/*
 * fork(): the library's locks are taken across it, in their order (lib_lock,
 * ctl_lock), so that the child inherits none of them held by
 * a thread it does not have.  The child drops its copy of the parent's
 * connection at once (softibd sees a client die by EOF only: a child that
 * never calls verbs must not keep a dead parent's objects alive) and
 * says HELLO on its own at its first round trip.
 */
static void ctl_prepare(void)
{
	pthread_mutex_lock(&lib_lock);
	pthread_mutex_lock(&ctl_lock);
}

static void ctl_parent(void)
{
	pthread_mutex_unlock(&ctl_lock);
	pthread_mutex_unlock(&lib_lock);
}

static void ctl_child(void)
{
	if (ctl_fd >= 0) {
		close(ctl_fd);
		ctl_fd = -1;
		ctl_forked = true;
	}
	pthread_mutex_unlock(&ctl_lock);
	pthread_mutex_unlock(&lib_lock);
}

int sib_ctl_rpc(struct sib_ctl_msg *m, int *recv_fd)
{
	return sib_ctl_rpc_fd(m, -1, recv_fd);
}

int sib_ctl_rpc_fd(struct sib_ctl_msg *m, int pass_fd, int *recv_fd)
{
	int rc;

	if (recv_fd)
		*recv_fd = -1;
	pthread_mutex_lock(&ctl_lock);
	if (ctl_forked)
		ctl_reconnect();
	if (ctl_fd < 0) {
		pthread_mutex_unlock(&ctl_lock);
		return ENODEV;
	}
	rc = sib_ctl_call_fd(ctl_fd, m, pass_fd, recv_fd);
	pthread_mutex_unlock(&ctl_lock);
	if (rc < 0)
		return EIO; /* the daemon went away: like a device unplugged */
	return m->hdr.status;
}

/* CREATE_OBJ; xrcd_handle: an XRC_RECV QP's XRCD (0 for the rest). */
static int obj_create_rpc(uint32_t dev_handle, enum sib_obj_type type, uint32_t qp_type,
			  uint32_t xrcd_handle, uint32_t *handle, uint32_t *qpn)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_CREATE_OBJ };
	int rc;

	m.u.obj.type = type;
	m.u.obj.dev_handle = dev_handle;
	m.u.obj.qp_type = qp_type;
	m.u.obj.xrcd_handle = xrcd_handle;
	rc = sib_ctl_rpc(&m, NULL);
	if (rc)
		return rc;
	*handle = m.u.obj.handle;
	if (qpn)
		*qpn = m.u.obj.qpn;
	return 0;
}

int sib_obj_create(uint32_t dev_handle, enum sib_obj_type type, uint32_t qp_type,
		   uint32_t *handle, uint32_t *qpn)
{
	return obj_create_rpc(dev_handle, type, qp_type, 0, handle, qpn);
}

/* The HCA's xrc_tgt_create hook (provider.h): CREATE_OBJ naming the XRCD. */
static int verbs_xrc_tgt_create(uint32_t dev_handle, uint32_t xrcd_handle, uint32_t *handle,
				uint32_t *qpn)
{
	return obj_create_rpc(dev_handle, SIB_OBJ_QP, IBV_QPT_XRC_RECV, xrcd_handle, handle, qpn);
}

void sib_obj_destroy(uint32_t handle)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_DESTROY_OBJ };

	m.u.obj.handle = handle;
	(void)sib_ctl_rpc(&m, NULL);
}

/* softibd's multicast membership (SIB_CTL_MCAST, daemon/mcast.c). */
static int sib_mcast(uint32_t qp_handle, const uint8_t *mgid, uint16_t mlid, bool attach)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_MCAST };

	m.u.mcast.qp_handle = qp_handle;
	m.u.mcast.mlid = mlid;
	m.u.mcast.attach = attach;
	memcpy(m.u.mcast.mgid, mgid, 16);
	return sib_ctl_rpc(&m, NULL);
}

/* The HCA's route hook (provider.h): softibd's SIB_CTL_ROUTE answer for a
 * path, asked once per path and per route_gen (link/dest.c). */
static int verbs_route(struct sib_ctl_route *r)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_ROUTE };
	int rc;

	m.u.route = *r;
	rc = sib_ctl_rpc(&m, NULL);
	if (rc)
		return rc;
	*r = m.u.route;
	return 0;
}

/* The HCA's capable hook (provider.h): softibd's SIB_CTL_CAPABLE answer
 * for this process (it reads the capability itself; nothing we could say
 * would change it).  0 or EPERM (EIO: no daemon). */
static int verbs_capable(unsigned int cap)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_CAPABLE };

	m.u.capable.cap = cap;
	return sib_ctl_rpc(&m, NULL);
}

/* The HCA's dx hook (provider.h): DX_PUT with the memfd, or DX_GET and
 * the peer's memfd back (daemon/dx.c). */
static int verbs_dx(uint16_t op, const struct sib_ctl_dx *x, int pass_fd, int *recv_fd)
{
	struct sib_ctl_msg m = { .hdr.op = op };

	m.u.dx = *x;
	return sib_ctl_rpc_fd(&m, pass_fd, recv_fd);
}

/* The HCA's xrcd_open hook (provider.h): XRCD_OPEN with the file's fd. */
static int verbs_xrcd_open(uint32_t dev_handle, int fd, int oflags, uint32_t *handle, uint32_t *num)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_XRCD_OPEN };
	int rc;

	m.u.xrcd.dev_handle = dev_handle;
	m.u.xrcd.oflags = (uint32_t)oflags;
	m.u.xrcd.has_fd = fd >= 0;
	rc = sib_ctl_rpc_fd(&m, fd, NULL);
	if (rc)
		return rc;
	*handle = m.u.xrcd.handle;
	*num = m.u.xrcd.num;
	return 0;
}

/* The ibv_device names libibverbs fills from sysfs in rdma-core. */
static void init_device(struct ibv_device *d, unsigned int index)
{
	const struct sib_shm_device *sd = &sib_fabric->devs[index];

	snprintf(d->name, sizeof(d->name), "%s", sd->name);
	snprintf(d->dev_name, sizeof(d->dev_name), "uverbs%u", index);
	snprintf(d->dev_path, sizeof(d->dev_path),
		 "/sys/class/infiniband_verbs/uverbs%u", index);
	snprintf(d->ibdev_path, sizeof(d->ibdev_path),
		 "%s/class/infiniband/%s", ibv_get_sysfs_path(), sd->name);
}

/*
 * Say once per process, on stderr as rdma-core prints its warnings, why
 * there is no softib device; errno is left as err.
 */
static void warn_no_daemon(const char *why, int err)
{
	static atomic_bool said;

	if (!atomic_exchange(&said, true))
		fprintf(stderr, "libibverbs: Warning: softib: %s; no devices\n", why);
	errno = err;
}

static int verbs_pair(uint32_t dev_handle, uint32_t inbox, uint32_t gen, void **ring, void **db);
static void verbs_unpair(void *ring, void *db);
static void *verbs_accept(uint32_t dev_handle, uint32_t *from_inbox, uint32_t *from_gen);
static void verbs_unaccept(void *ring);

/*
 * A second connection to the daemon serving ours, subscribed to every
 * pushed event (docs/events.md), for the HCA's event reader.  fd or -errno.
 */
static int verbs_subscribe(void)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_SUBSCRIBE };
	int fd, rc;

	fd = sib_ctl_open(false);
	if (fd < 0)
		return fd;
	m.u.subscribe.abi_version = SIB_ABI_VERSION;
	rc = sib_ctl_call(fd, &m, NULL);
	if (rc || m.hdr.status) {
		close(fd);
		return rc ? rc : -(int)m.hdr.status;
	}
	return fd;
}

/* What the HCA gets from this library: softibd's registry, inboxes and events. */
static const struct sib_hca_host verbs_host = {
	.obj_create = sib_obj_create,
	.obj_destroy = sib_obj_destroy,
	.link = { .pair = verbs_pair, .unpair = verbs_unpair, .accept = verbs_accept,
		  .unaccept = verbs_unaccept, .route = verbs_route },
	.subscribe = verbs_subscribe,
	.mcast = sib_mcast,
	.xrcd_open = verbs_xrcd_open,
	.xrc_tgt_create = verbs_xrc_tgt_create,
	.capable = verbs_capable,
	.dx = verbs_dx,
};

/* Connect to softibd (starting it if allowed) and map the fabric.  0 or errno. */
static int lib_connect(void)
{
	static bool atfork_done;
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_HELLO };
	char why[SIB_CTL_WHY_MAX];
	int fd, mfd = -1, rc;

	fd = sib_ctl_open_why(true, why, sizeof(why));
	if (fd < 0) {
		warn_no_daemon(why, -fd);
		return -fd;
	}
	m.u.hello.abi_version = SIB_ABI_VERSION;
	m.u.hello.pid = getpid();
	rc = sib_ctl_call(fd, &m, &mfd);
	if (rc < 0 || m.hdr.status || mfd < 0) {
		rc = rc < 0 ? -rc : m.hdr.status ? m.hdr.status : EPROTO;
		if (rc == EMFILE || rc == ENFILE) /* its budget (docs/daemon.md "Budgets") */
			snprintf(why, sizeof(why), "softibd refused this process's connection: %s (%s; "
				 "see softib status)", strerror(rc), rc == EMFILE ?
				 "it holds its share, softibd --client-share" :
				 "softibd keeps the rest for new clients");
		else
			snprintf(why, sizeof(why), "HELLO to softibd failed (ABI %u; the daemon's %u): %s",
				 SIB_ABI_VERSION, m.u.hello.abi_version, strerror(rc));
		goto err;
	}
	rc = -sib_fabric_view_attach(&sib_fview, mfd, m.u.hello.fabric_size);
	close(mfd);
	mfd = -1;
	if (rc) {
		snprintf(why, sizeof(why), "fabric map of softibd: %s", strerror(rc));
		goto err;
	}
	sib_fabric = (struct sib_fabric_shm *)sib_fview.map;
	sib_hca_set_host(&verbs_host);
	if (!atfork_done) {
		(void)pthread_atfork(ctl_prepare, ctl_parent, ctl_child);
		atfork_done = true;
	}
	pthread_mutex_lock(&ctl_lock);
	ctl_fd = fd;
	pthread_mutex_unlock(&ctl_lock);
	return 0;
err:
	if (mfd >= 0)
		close(mfd);
	close(fd);
	warn_no_daemon(why, rc);
	return rc;
}

/* Make sure the library is connected.  0 or errno (ENODEV: no daemon). */
int sib_lib_init(void)
{
	int rc = 0;

	pthread_mutex_lock(&lib_lock);
	if (ctl_fd < 0 && !ctl_forked) /* a child of fork() reconnects at its first call */
		rc = lib_connect();
	pthread_mutex_unlock(&lib_lock);
	return rc;
}

/*
 * The registered devices of the map, in slot order, into list; a slot whose
 * generation changed gets a new object from the HCA (the older one is kept
 * in `retired`).  lib_lock held.  Returns how many.
 */
static unsigned int devices_scan(struct ibv_device **list)
{
	struct retired_device *r;
	struct ibv_device *d;
	unsigned int n = 0;
	uint32_t nd, gen;

	sib_fabric_view_refresh(&sib_fview);
	nd = sib_fview.num_devices;
	for (uint32_t i = 0; i < nd; i++) {
		gen = atomic_load_explicit(&sib_fabric->devs[i].gen, memory_order_acquire);
		if (!(gen & 1))
			continue; /* unregistered */
		if (!devices[i] || sib_hca_device_ops.device_gen(devices[i]) != gen) {
			r = devices[i] ? malloc(sizeof(*r)) : NULL;
			if (devices[i] && !r)
				continue;
			d = sib_hca_device_ops.alloc_device(i, gen);
			if (!d) {
				free(r);
				continue;
			}
			init_device(d, i);
			if (r) {
				r->dev = devices[i];
				r->next = retired;
				retired = r;
			}
			devices[i] = d;
		}
		list[n++] = devices[i];
	}
	return n;
}

SIB_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **list;
	unsigned int n = 0;

	list = calloc(SIB_MAX_DEVICES + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	/* No daemon and no autostart: an empty list, like a host without HCAs. */
	if (sib_lib_init() == 0) {
		pthread_mutex_lock(&lib_lock);
		n = devices_scan(list);
		pthread_mutex_unlock(&lib_lock);
	}
	if (num)
		*num = (int)n;
	return list;
}

SIB_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

SIB_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

SIB_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return htobe64(sib_fabric->devs[sib_hca_device_ops.device_index(device)].node_guid);
}

SIB_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return (int)sib_hca_device_ops.device_index(device);
}

static const struct sib_shm_device *dev_of(struct ibv_context *ctx)
{
	return &sib_fabric->devs[sib_hca_device_ops.device_index(ctx->device)];
}

static const struct sib_shm_port *get_port(struct ibv_context *ctx, uint8_t port_num)
{
	const struct sib_shm_device *sd = dev_of(ctx);

	if (port_num < 1 || port_num > sib_fabric_num_ports(sd))
		return NULL;
	return &sd->ports[port_num - 1];
}

/* A consistent copy of a port: 0, EINVAL (no such port) or EAGAIN (fabric_view.h). */
static int read_port(struct ibv_context *ctx, uint8_t port_num, struct sib_shm_port *out)
{
	return -sib_fabric_port_read(sib_fview.map, sib_fview.num_devices,
				     sib_hca_device_ops.device_index(ctx->device), port_num, out);
}

/* GID index 0 is the port's GID (subnet prefix, port GUID); indexes
 * 1..SIB_GID_TBL_LEN-1 exist and are empty (all zero), as on a real port
 * whose SM assigned no alias GIDs.  EINVAL past the table or port. */
static int gid_of(struct ibv_context *context, uint8_t port_num, unsigned int index, union ibv_gid *gid)
{
	struct sib_shm_port p;

	if (index >= SIB_GID_TBL_LEN || read_port(context, port_num, &p))
		return EINVAL;
	if (index) {
		memset(gid, 0, sizeof(*gid));
		return 0;
	}
	gid->global.subnet_prefix = htobe64(p.gid_prefix);
	gid->global.interface_id = htobe64(p.port_guid);
	return 0;
}

/* ibv_query_gid returns -1 on a bad port or index (rdma-core verbs.c). */
SIB_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	if (index < 0 || gid_of(context, port_num, (unsigned int)index, gid))
		return -1;
	return 0;
}

SIB_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
				 struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;

	if (flags || entry_size < sizeof(e) || port_num > 255)
		return EINVAL;
	memset(&e, 0, sizeof(e));
	/* An empty entry has no GID attributes: ENODATA (rdma-core). */
	if (gid_of(context, (uint8_t)port_num, gid_index, &e.gid) || gid_index)
		return ENODATA;
	e.gid_index = gid_index;
	e.port_num = port_num;
	e.gid_type = IBV_GID_TYPE_IB;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

SIB_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
					size_t max_entries, uint32_t flags, size_t entry_size)
{
	const struct sib_shm_device *sd = dev_of(context);
	size_t n = 0;

	if (flags || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	for (unsigned int port = 1; port <= sib_fabric_num_ports(sd); port++) {
		for (unsigned int i = 0; i < SIB_GID_TBL_LEN; i++) {
			struct ibv_gid_entry e;

			if (_ibv_query_gid_ex(context, port, i, &e, 0, sizeof(e)))
				continue; /* an empty entry */
			if (n >= max_entries)
				return -EINVAL;
			memcpy((char *)entries + n * entry_size, &e, sizeof(e));
			n++;
		}
	}
	return (ssize_t)n;
}

/* rdma-core driver.h: 0 = IB/RoCE v1, 1 = RoCE v2. */
SIB_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				  unsigned int index, int *type)
{
	union ibv_gid gid;

	if (gid_of(context, port_num, index, &gid)) {
		errno = EINVAL;
		return -1;
	}
	*type = 0;
	return 0;
}

SIB_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	const struct sib_shm_port *sp = get_port(context, port_num);

	if (!sp || index < 0 || index >= SIB_PKEY_TBL_LEN)
		return -1;
	*pkey = htobe16(sp->pkey[index]);
	return 0;
}

SIB_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	const struct sib_shm_port *sp = get_port(context, port_num);

	if (!sp) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < SIB_PKEY_TBL_LEN; i++)
		if (sp->pkey[i] == be16toh(pkey))
			return i;
	errno = ENOENT;
	return -1;
}

/* ---- sysfs: real files, except our own devices' attributes ---- */

SIB_EXPORT const char *ibv_get_sysfs_path(void)
{
	const char *env = getenv("SYSFS_PATH");

	return env && *env ? env : "/sys";
}

/* Synthesize <ibdev_path>/<file> for a softib device.  Length or -1. */
static int synth_sysfs(const char *dir, const char *file, char *buf, size_t size)
{
	char val[128];
	struct ibv_device *d = NULL;

	if (!sib_fabric)
		return -1;
	pthread_mutex_lock(&lib_lock);
	for (unsigned int i = 0; i < SIB_MAX_DEVICES; i++)
		if (devices[i] && !strcmp(dir, devices[i]->ibdev_path))
			d = devices[i];
	pthread_mutex_unlock(&lib_lock);
	if (!d)
		return -1;
	uint32_t index = sib_hca_device_ops.device_index(d);
	const struct sib_shm_device *sd = &sib_fabric->devs[index];
	uint64_t g = sd->node_guid;

	if (!strcmp(file, "board_id"))
		snprintf(val, sizeof(val), "SOFTIB_%04x", index);
	else if (!strcmp(file, "fw_ver"))
		snprintf(val, sizeof(val), "%s", SIB_FW_VERSION);
	else if (!strcmp(file, "hca_type"))
		snprintf(val, sizeof(val), "softib");
	else if (!strcmp(file, "hw_rev"))
		snprintf(val, sizeof(val), "%u", sd->hw_ver);
	else if (!strcmp(file, "node_type"))
		snprintf(val, sizeof(val), "1: CA");
	else if (!strcmp(file, "node_desc"))
		snprintf(val, sizeof(val), "%s", sd->node_desc);
	else if (!strcmp(file, "node_guid") || !strcmp(file, "sys_image_guid")) {
		if (file[0] == 's')
			g = sd->sys_image_guid;
		snprintf(val, sizeof(val), "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
			 (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
	} else
		return -1;
	size_t len = strlen(val);
	if (len > size)
		len = size;
	memcpy(buf, val, len);
	if (len < size)
		buf[len] = '\0';
	return (int)len;
}

/* rdma-core semantics: read up to size bytes, strip one trailing newline,
 * NUL-terminate if room; returns the length or -1 with errno set. */
SIB_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char *path;
	int fd, len;

	len = synth_sysfs(dir, file, buf, size);
	if (len >= 0)
		return len;
	if (asprintf(&path, "%s/%s", dir, file) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -1;
	len = (int)read(fd, buf, size);
	close(fd);
	if (len > 0) {
		if ((size_t)len < size)
			buf[len] = '\0';
		if (buf[len - 1] == '\n')
			buf[--len] = '\0';
	}
	return len;
}

/* ---- peers ---- */

/* A memfd of `size` bytes from a reply, mapped, the fd closed at once
 * (nothing of softib stays reachable through /proc/<pid>/fd); NULL when
 * it is not that size. */
static void *map_reply_fd(int fd, size_t size)
{
	struct stat st;
	void *base = MAP_FAILED;

	if (fstat(fd, &st) == 0 && (size_t)st.st_size == size)
		base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return base == MAP_FAILED ? NULL : base;
}

/* The link's pair hook (link/dest.h): softibd's PAIR_OPEN from our
 * context to (inbox, gen), then GET_INBOX for the receiver's doorbell
 * page.  Called by the engine thread or a slow-path verb. */
static int verbs_pair(uint32_t dev_handle, uint32_t inbox, uint32_t gen, void **ring, void **db)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_PAIR_OPEN };
	int fd, rc;

	*ring = *db = NULL;
	if (inbox >= SIB_MAX_INBOXES)
		return EINVAL;
	m.u.pair.dev_handle = dev_handle;
	m.u.pair.inbox = inbox;
	m.u.pair.inbox_gen = gen;
	rc = sib_ctl_rpc(&m, &fd);
	if (rc || fd < 0)
		return rc ? rc : EPROTO;
	if (!(*ring = map_reply_fd(fd, SIB_PAIR_BYTES)))
		return ENOMEM;
	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_GET_INBOX;
	m.u.get_inbox.inbox = inbox;
	m.u.get_inbox.inbox_gen = gen;
	m.u.get_inbox.dev_handle = dev_handle;
	rc = sib_ctl_rpc(&m, &fd);
	if (!rc && fd >= 0 && !(*db = map_reply_fd(fd, SIB_INBOX_BYTES)))
		rc = ENOMEM;
	if (rc || !*db) {
		munmap(*ring, SIB_PAIR_BYTES);
		*ring = NULL;
		return rc ? rc : EPROTO;
	}
	return 0;
}

static void verbs_unpair(void *ring, void *db)
{
	munmap(ring, SIB_PAIR_BYTES);
	if (db)
		munmap(db, SIB_INBOX_BYTES);
}

/* The link's accept hook: softibd's PAIR_ACCEPT, mapped; NULL when none. */
static void *verbs_accept(uint32_t dev_handle, uint32_t *from_inbox, uint32_t *from_gen)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_PAIR_ACCEPT };
	int fd;

	m.u.pair.dev_handle = dev_handle;
	if (sib_ctl_rpc(&m, &fd) || fd < 0)
		return NULL;
	*from_inbox = m.u.pair.inbox;
	*from_gen = m.u.pair.inbox_gen;
	return map_reply_fd(fd, SIB_PAIR_BYTES);
}

static void verbs_unaccept(void *ring)
{
	munmap(ring, SIB_PAIR_BYTES);
}

/* ---- open and close ---- */

/*
 * ibv_context.cmd_fd: a real fd of the context's own, not the connection to
 * softibd (docs/abi.md "cmd_fd").  A sealed, empty memfd "softib-cmd": dup,
 * poll (always ready, as the kernel's uverbs file, which has no poll op),
 * fcntl and close by the program touch nothing of the library's; it reads
 * EOF and takes no write (EPERM).  ibv_close_device closes it, as rdma-core
 * closes its cmd_fd.  The fd, or -errno.
 */
static int cmd_fd_open(void)
{
	int fd = memfd_create("softib-cmd", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

SIB_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_OPEN_DEVICE };
	struct sib_hca_attach at = { 0 };
	struct ibv_context *ctx = NULL;
	size_t size;
	int fd, rc;

	rc = sib_lib_init();
	if (rc) {
		errno = rc;
		return NULL;
	}
	m.u.open.dev_index = sib_hca_device_ops.device_index(device);
	m.u.open.dev_gen = sib_hca_device_ops.device_gen(device); /* never another CA in the slot */
	rc = sib_ctl_rpc(&m, &fd);
	if (rc || fd < 0) {
		errno = rc ? rc : EPROTO;
		return NULL;
	}
	size = m.u.open.inbox_size;
	if (size < SIB_INBOX_BYTES) {
		rc = EPROTO;
		goto err_close;
	}
	at.dev_handle = m.u.open.handle;
	at.inbox_idx = m.u.open.inbox;
	at.inbox_gen = m.u.open.inbox_gen;
	at.inbox_base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	fd = -1;
	if (at.inbox_base == MAP_FAILED) {
		rc = errno;
		goto err_close;
	}
	ctx = sib_hca_device_ops.alloc_context(device, &at);
	if (!ctx) {
		rc = errno;
		goto err_unmap;
	}
	rc = sib_verbs_set_ops(ctx, &sib_hca_ops);
	if (rc)
		goto err_free;
	ctx->cmd_fd = cmd_fd_open();
	if (ctx->cmd_fd < 0) {
		rc = -ctx->cmd_fd;
		sib_verbs_unset_ops(ctx);
		goto err_free;
	}
	sib_verbs_priv(ctx)->inbox_base = at.inbox_base;
	sib_verbs_priv(ctx)->inbox_size = size;
	return ctx;

err_free:
	sib_hca_ops.free_context(ctx);
err_unmap:
	munmap(at.inbox_base, size);
err_close:
	if (fd >= 0)
		close(fd);
	m.hdr.op = SIB_CTL_CLOSE_DEVICE;
	m.u.handle = m.u.open.handle;
	(void)sib_ctl_rpc(&m, NULL);
	errno = rc;
	return NULL;
}

SIB_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_CLOSE_DEVICE };
	struct sib_verbs_priv *priv = sib_verbs_priv(context);
	void *base = priv->inbox_base;
	size_t size = priv->inbox_size;
	int cmd_fd = context->cmd_fd;

	m.u.handle = sib_hca_device_ops.dev_handle(context);
	sib_verbs_unset_ops(context);
	sib_hca_ops.free_context(context);
	(void)sib_ctl_rpc(&m, NULL);
	munmap(base, size);
	if (cmd_fd >= 0)
		close(cmd_fd);
	return 0;
}
