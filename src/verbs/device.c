/* SPDX-License-Identifier: MIT */
/*
 * Devices and contexts of the drop-in libibverbs: the connection to softibd,
 * the device list, open/close, and every query verb (device, port, GID,
 * P_Key), plus the sysfs helpers that ibv_devinfo and librdmacm call.
 *
 * Locking: lib_lock guards the one-time connection and the device array;
 * ctl_lock serializes round trips on the control socket.  Device objects
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
#include <unistd.h>

#include "common/ctl.h"
#include "common/sib_ctl.h"
#include "hca/hca.h"
#include "verbs/export.h"
#include "verbs/sib_verbs.h"

#undef ibv_query_port

_Static_assert(__builtin_offsetof(struct sib_device, verbs_ops) == 664, "verbs_device.ops at +664");
_Static_assert(sizeof(struct sib_device) >= 712, "device objects are at least verbs_device");
_Static_assert(sizeof(struct verbs_context) == 648, "verbs_context size (sz)");
_Static_assert(__builtin_offsetof(struct verbs_context, sz) == 312, "sz at ctx-8");
_Static_assert(__builtin_offsetof(struct verbs_context, context) == 320, "context last");
_Static_assert(sizeof(struct ibv_port_attr) == 52, "ibv_port_attr");
_Static_assert(sizeof(struct ibv_device_attr) == 232, "ibv_device_attr");
_Static_assert(sizeof(struct ibv_device_attr_ex) == 400, "ibv_device_attr_ex");
_Static_assert(sizeof(struct ibv_qp_ex) == 352, "ibv_qp_ex");
_Static_assert(sizeof(struct ibv_cq_ex) == 288, "ibv_cq_ex");

/* The exported ibv_query_port@@IBVERBS_1.1 fills this many bytes: the
 * _compat_ibv_port_attr of old binaries, up to and including `flags`. */
#define SIB_COMPAT_PORT_ATTR_BYTES 48

struct sib_fabric_shm *sib_fabric;

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static int ctl_fd = -1;
static size_t fabric_size;
static struct sib_device *devices[SIB_MAX_DEVICES]; /* the newest object per slot */

/* Peer inbox mappings, by inbox index (slow path fills, data path reads).
 * A mapping and its sib_ring are never changed or freed once handed out:
 * engines of other contexts may hold the pointer.  A new generation of an
 * index gets a new mapping (the old one stays; it is bounded by how often
 * peers come and go, and writes into a retired inbox harm no one). */
static struct {
	uint32_t gen;
	struct sib_ring *ring;
} peers[SIB_MAX_INBOXES];
static pthread_mutex_t peers_lock = PTHREAD_MUTEX_INITIALIZER;

int sib_ctl_rpc(struct sib_ctl_msg *m, int *recv_fd)
{
	int rc;

	if (recv_fd)
		*recv_fd = -1;
	pthread_mutex_lock(&ctl_lock);
	if (ctl_fd < 0) {
		pthread_mutex_unlock(&ctl_lock);
		return ENODEV;
	}
	rc = sib_ctl_call(ctl_fd, m, recv_fd);
	pthread_mutex_unlock(&ctl_lock);
	if (rc < 0)
		return EIO; /* the daemon went away: like a device unplugged */
	return m->hdr.status;
}

int sib_obj_create(uint32_t dev_handle, enum sib_obj_type type, uint32_t qp_type,
		   uint32_t *handle, uint32_t *qpn)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_CREATE_OBJ };
	int rc;

	m.u.obj.type = type;
	m.u.obj.dev_handle = dev_handle;
	m.u.obj.qp_type = qp_type;
	rc = sib_ctl_rpc(&m, NULL);
	if (rc)
		return rc;
	*handle = m.u.obj.handle;
	if (qpn)
		*qpn = m.u.obj.qpn;
	return 0;
}

void sib_obj_destroy(uint32_t handle)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_DESTROY_OBJ };

	m.u.obj.handle = handle;
	(void)sib_ctl_rpc(&m, NULL);
}

static void init_device(struct sib_device *d, unsigned int index, uint32_t gen)
{
	const struct sib_shm_device *sd = &sib_fabric->devs[index];

	memset(d, 0, sizeof(*d));
	d->index = index;
	d->gen = gen;
	d->ibv.node_type = IBV_NODE_CA;
	d->ibv.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->ibv.name, sizeof(d->ibv.name), "%s", sd->name);
	snprintf(d->ibv.dev_name, sizeof(d->ibv.dev_name), "uverbs%u", index);
	snprintf(d->ibv.dev_path, sizeof(d->ibv.dev_path),
		 "/sys/class/infiniband_verbs/uverbs%u", index);
	snprintf(d->ibv.ibdev_path, sizeof(d->ibv.ibdev_path),
		 "%s/class/infiniband/%s", ibv_get_sysfs_path(), sd->name);
}

/* Connect to softibd (starting it if allowed) and map the fabric.  0 or errno. */
static int lib_connect(void)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_HELLO };
	int fd, mfd = -1, rc;
	void *map;

	fd = sib_ctl_open(true);
	if (fd < 0)
		return -fd;
	m.u.hello.abi_version = SIB_ABI_VERSION;
	m.u.hello.pid = getpid();
	rc = sib_ctl_call(fd, &m, &mfd);
	if (rc < 0 || m.hdr.status || mfd < 0) {
		rc = rc < 0 ? -rc : m.hdr.status ? m.hdr.status : EPROTO;
		goto err;
	}
	map = mmap(NULL, m.u.hello.fabric_size, PROT_READ, MAP_SHARED, mfd, 0);
	close(mfd);
	mfd = -1;
	if (map == MAP_FAILED) {
		rc = errno;
		goto err;
	}
	sib_fabric = map;
	fabric_size = m.u.hello.fabric_size;
	if (sib_fabric->magic != SIB_SHM_MAGIC || sib_fabric->abi_version != SIB_ABI_VERSION) {
		munmap(map, fabric_size);
		sib_fabric = NULL;
		rc = EPROTO;
		goto err;
	}
	pthread_mutex_lock(&ctl_lock);
	ctl_fd = fd;
	pthread_mutex_unlock(&ctl_lock);
	return 0;
err:
	if (mfd >= 0)
		close(mfd);
	close(fd);
	return rc;
}

/* Make sure the library is connected.  0 or errno (ENODEV: no daemon). */
int sib_lib_init(void)
{
	int rc = 0;

	pthread_mutex_lock(&lib_lock);
	if (ctl_fd < 0)
		rc = lib_connect();
	pthread_mutex_unlock(&lib_lock);
	return rc;
}

/*
 * The registered devices of the map, in slot order, into list; a slot whose
 * generation changed gets a new object (the older stays reachable: contexts
 * and applications may hold it).  lib_lock held.  Returns how many.
 */
static unsigned int devices_scan(struct ibv_device **list)
{
	uint32_t nd = atomic_load_explicit(&sib_fabric->num_devices, memory_order_acquire);
	struct sib_device *d;
	unsigned int n = 0;
	uint32_t gen;

	for (uint32_t i = 0; i < nd && i < SIB_MAX_DEVICES; i++) {
		gen = atomic_load_explicit(&sib_fabric->devs[i].gen, memory_order_acquire);
		if (!(gen & 1))
			continue; /* unregistered */
		if (!devices[i] || devices[i]->gen != gen) {
			d = calloc(1, sizeof(*d));
			if (!d)
				continue;
			init_device(d, i, gen);
			d->older = devices[i];
			devices[i] = d;
		}
		list[n++] = &devices[i]->ibv;
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
	struct sib_device *d = (struct sib_device *)device;

	return htobe64(sib_fabric->devs[d->index].node_guid);
}

SIB_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return (int)((struct sib_device *)device)->index;
}

static const struct sib_shm_port *get_port(struct ibv_context *ctx, uint8_t port_num)
{
	const struct sib_shm_device *sd = &sib_fabric->devs[to_sctx(ctx)->dev->index];

	if (port_num < 1 || port_num > sd->num_ports)
		return NULL;
	return &sd->ports[port_num - 1];
}

/* Read a port under the fabric seqlock. */
static void read_port(const struct sib_shm_port *p, struct sib_shm_port *out)
{
	uint32_t seq;

	do {
		seq = atomic_load_explicit(&sib_fabric->port_seq, memory_order_acquire);
		memcpy(out, (const void *)p, sizeof(*out));
		atomic_thread_fence(memory_order_acquire);
	} while ((seq & 1) || seq != atomic_load_explicit(&sib_fabric->port_seq, memory_order_relaxed));
}

static void fill_device_attr(struct sib_context *ctx, struct ibv_device_attr *a)
{
	const struct sib_shm_device *sd = &sib_fabric->devs[ctx->dev->index];

	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", SIB_FW_VERSION);
	a->node_guid = htobe64(sd->node_guid);
	a->sys_image_guid = htobe64(sd->sys_image_guid);
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = sd->vendor_id;
	a->vendor_part_id = sd->vendor_part_id;
	a->hw_ver = sd->hw_ver;
	a->max_qp = SIB_MAX_QPN - 2;
	a->max_qp_wr = SIB_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_CHANGE_PHY_PORT;
	a->max_sge = SIB_MAX_SGE;
	a->max_sge_rd = SIB_MAX_SGE;
	a->max_cq = 1 << 16;
	a->max_cqe = SIB_MAX_CQE;
	a->max_mr = SIB_MR_DIR * SIB_MR_PAGE - 1;
	a->max_pd = 1 << 16;
	a->max_qp_rd_atom = SIB_MAX_RD_ATOMIC;
	a->max_res_rd_atom = SIB_MAX_RD_ATOMIC * (SIB_MAX_QPN - 2);
	a->max_qp_init_rd_atom = SIB_MAX_RD_ATOMIC;
	a->atomic_cap = IBV_ATOMIC_NONE;
	a->max_pkeys = SIB_PKEY_TBL_LEN;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = sd->num_ports;
}

SIB_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	if (sib_ctx_fatal(to_sctx(context)))
		return EIO; /* rdma-core after DEVICE_FATAL: the kernel answers EIO */
	fill_device_attr(to_sctx(context), device_attr);
	return 0;
}

static int sib_query_device_ex(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	fill_device_attr(to_sctx(context), &a.orig_attr);
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	if (attr_size > sizeof(a))
		memset((char *)attr + sizeof(a), 0, attr_size - sizeof(a));
	return 0;
}

static int fill_port_attr(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *a)
{
	const struct sib_shm_port *sp = get_port(context, port_num);
	struct sib_shm_port p;

	if (!sp)
		return EINVAL;
	read_port(sp, &p);
	memset(a, 0, sizeof(*a));
	a->state = p.state;
	a->max_mtu = p.max_mtu;
	a->active_mtu = p.active_mtu;
	a->gid_tbl_len = SIB_GID_TBL_LEN;
	a->port_cap_flags = p.cap_flags;
	a->max_msg_sz = SIB_MAX_MSG_SZ;
	a->bad_pkey_cntr = (uint32_t)p.bad_pkey_cntr;
	a->qkey_viol_cntr = (uint32_t)p.qkey_viol_cntr;
	a->pkey_tbl_len = SIB_PKEY_TBL_LEN;
	a->lid = p.lid;
	a->sm_lid = p.sm_lid;
	a->lmc = p.lmc;
	a->max_vl_num = p.max_vl_num;
	a->sm_sl = p.sm_sl;
	a->subnet_timeout = p.subnet_timeout;
	a->init_type_reply = p.init_type_reply;
	a->active_width = p.active_width;
	a->active_speed = p.active_speed;
	a->phys_state = p.phys_state;
	a->link_layer = IBV_LINK_LAYER_INFINIBAND;
	return 0;
}

/* vctx->query_port: the inline ibv_query_port of verbs.h passes its own size. */
static int sib_query_port(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr, size_t port_attr_len)
{
	struct ibv_port_attr a;
	int rc = sib_ctx_fatal(to_sctx(context)) ? EIO : fill_port_attr(context, port_num, &a);

	if (rc)
		return rc;
	memcpy(port_attr, &a, port_attr_len < sizeof(a) ? port_attr_len : sizeof(a));
	return 0;
}

/* ibv_query_port@@IBVERBS_1.1: old binaries pass the 48-byte compat struct. */
SIB_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			      struct _compat_ibv_port_attr *port_attr)
{
	return sib_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
			      SIB_COMPAT_PORT_ATTR_BYTES);
}

static int gid_of(struct ibv_context *context, uint8_t port_num, unsigned int index, union ibv_gid *gid)
{
	const struct sib_shm_port *sp = get_port(context, port_num);
	struct sib_shm_port p;

	if (!sp || index >= SIB_GID_TBL_LEN)
		return EINVAL;
	read_port(sp, &p);
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
	if (gid_of(context, (uint8_t)port_num, gid_index, &e.gid))
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
	const struct sib_shm_device *sd = &sib_fabric->devs[to_sctx(context)->dev->index];
	size_t n = 0;

	if (flags || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	for (unsigned int port = 1; port <= sd->num_ports; port++) {
		for (unsigned int i = 0; i < SIB_GID_TBL_LEN; i++) {
			if (n >= max_entries)
				return -EINVAL;
			if (_ibv_query_gid_ex(context, port, i,
					      (struct ibv_gid_entry *)((char *)entries + n * entry_size),
					      0, entry_size) == 0)
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
	struct sib_device *d = NULL;

	if (!sib_fabric)
		return -1;
	pthread_mutex_lock(&lib_lock);
	for (unsigned int i = 0; i < SIB_MAX_DEVICES; i++)
		if (devices[i] && !strcmp(dir, devices[i]->ibv.ibdev_path))
			d = devices[i];
	pthread_mutex_unlock(&lib_lock);
	if (!d)
		return -1;
	const struct sib_shm_device *sd = &sib_fabric->devs[d->index];
	uint64_t g = sd->node_guid;

	if (!strcmp(file, "board_id"))
		snprintf(val, sizeof(val), "SOFTIB_%04x", d->index);
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

struct sib_ring *sib_peer_ring(uint32_t inbox, uint32_t gen)
{
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_GET_INBOX };
	struct sib_ring *r = NULL;
	void *base;
	int fd;

	if (inbox >= SIB_MAX_INBOXES)
		return NULL;
	pthread_mutex_lock(&peers_lock);
	if (peers[inbox].ring && peers[inbox].gen == gen) {
		r = peers[inbox].ring;
		goto out;
	}
	m.u.get_inbox.inbox = inbox;
	m.u.get_inbox.inbox_gen = gen;
	if (sib_ctl_rpc(&m, &fd) || fd < 0)
		goto out;
	base = mmap(NULL, SIB_INBOX_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		goto out;
	r = malloc(sizeof(*r));
	if (!r) {
		munmap(base, SIB_INBOX_BYTES);
		goto out;
	}
	sib_ring_attach(r, base);
	peers[inbox].gen = gen;
	peers[inbox].ring = r;
out:
	pthread_mutex_unlock(&peers_lock);
	return r;
}

/* ---- open and close ---- */

SIB_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct sib_device *d = (struct sib_device *)device;
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_OPEN_DEVICE };
	struct sib_context *ctx;
	int fd, rc;

	rc = sib_lib_init();
	if (rc) {
		errno = rc;
		return NULL;
	}
	m.u.open.dev_index = d->index;
	m.u.open.dev_gen = d->gen;
	rc = sib_ctl_rpc(&m, &fd);
	if (rc || fd < 0) {
		errno = rc ? rc : EPROTO;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		rc = ENOMEM;
		goto err_close;
	}
	ctx->dev = d;
	ctx->dev_handle = m.u.open.handle;
	ctx->inbox_idx = m.u.open.inbox;
	ctx->inbox_gen = m.u.open.inbox_gen;
	ctx->inbox_size = m.u.open.inbox_size;
	ctx->inbox_base = mmap(NULL, ctx->inbox_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	fd = -1;
	if (ctx->inbox_base == MAP_FAILED) {
		rc = errno;
		goto err_free;
	}
	sib_ring_attach(&ctx->inbox, ctx->inbox_base);
	rc = sib_context_init(ctx);
	if (rc)
		goto err_unmap;
	rc = sib_events_attach(ctx);
	if (rc) {
		sib_context_fini(ctx);
		goto err_unmap;
	}
	return &ctx->vctx.context;

err_unmap:
	munmap(ctx->inbox_base, ctx->inbox_size);
err_free:
	free(ctx);
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
	struct sib_context *ctx = to_sctx(context);
	struct sib_ctl_msg m = { .hdr.op = SIB_CTL_CLOSE_DEVICE };

	sib_events_detach(ctx);
	sib_context_fini(ctx);
	m.u.handle = ctx->dev_handle;
	(void)sib_ctl_rpc(&m, NULL);
	munmap(ctx->inbox_base, ctx->inbox_size);
	free(ctx);
	return 0;
}

void sib_device_ops_init(struct sib_context *ctx)
{
	ctx->vctx.query_port = sib_query_port;
	ctx->vctx.query_device_ex = sib_query_device_ex;
	ctx->vctx.context.ops._compat_query_device = ibv_query_device;
	ctx->vctx.context.ops._compat_query_port = ibv_query_port;
}
