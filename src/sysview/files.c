// SPDX-License-Identifier: MIT
/*
 * The files of the system view, each in the format the Linux kernel prints
 * it (docs/clients.md "The system view"): the class directories and ABI
 * versions (uverbs_main.c, user_mad.c, ucma.c: the constants of the uAPI
 * headers <rdma/ib_user_verbs.h>, <rdma/ib_user_mad.h>,
 * <rdma/rdma_user_cm.h>), a device's attributes and ports
 * (drivers/infiniband/core/sysfs.c: state_show, lid_show, rate_show,
 * phys_state_show, show_port_gid, show_port_pkey, gid attributes), the
 * uverbs, umad and issm class entries, the /dev/infiniband nodes, and an
 * IPoIB interface's directory under device/net (the kernel's ipoib: dev_port
 * = port - 1, type ARPHRD_INFINIBAND, addr_len 20).  Values come from
 * softib's libibverbs through its public API, read when written.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if_arp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rdma/ib_user_mad.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_cm.h>

#include "sysview/sysview_int.h"

/* rdma-core's libibverbs exports it in IBVERBS_1.0 and declares it in
 * <infiniband/driver.h>, which Debian does not install: read a sysfs
 * attribute of a device, answered by softib's library for its devices. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

#define CLS "sys/class"
#define IBDIR CLS "/infiniband"

/* The driver directory device/driver links to: its basename is what Open MPI
 * matches against "mlx*" (common_ucx.c): softib, never a vendor's. */
#define DRIVER_DIR "sys/bus/softib/drivers/softib"

static int filef(struct sv_tree *t, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int filef(struct sv_tree *t, const char *path, const char *fmt, ...)
{
	char val[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	return sv_file(t, val, "%s", path);
}

int sv_write_globals(struct sib_sysview *v)
{
	struct sv_tree *t = &v->tree;

	sv_dir(t, "sys");
	sv_dir(t, CLS);
	sv_dir(t, IBDIR);
	sv_dir(t, CLS "/infiniband_verbs");
	filef(t, CLS "/infiniband_verbs/abi_version", "%d\n", IB_USER_VERBS_ABI_VERSION);
	sv_dir(t, CLS "/infiniband_mad");
	filef(t, CLS "/infiniband_mad/abi_version", "%d\n", IB_USER_MAD_ABI_VERSION);
	/* librdmacm reads misc/rdma_cm first, infiniband_ucma on old kernels. */
	sv_dir(t, CLS "/misc");
	sv_dir(t, CLS "/misc/rdma_cm");
	filef(t, CLS "/misc/rdma_cm/abi_version", "%d\n", RDMA_USER_CM_ABI_VERSION);
	sv_file(t, v->dev_null, CLS "/misc/rdma_cm/dev");
	sv_dir(t, CLS "/infiniband_ucma");
	filef(t, CLS "/infiniband_ucma/abi_version", "%d\n", RDMA_USER_CM_ABI_VERSION);
	sv_dir(t, "sys/bus");
	sv_dir(t, "sys/bus/softib");
	sv_dir(t, "sys/bus/softib/drivers");
	sv_dir(t, DRIVER_DIR);
	sv_dir(t, "dev");
	sv_dir(t, "dev/infiniband");
	sv_link(t, "/dev/null", "dev/infiniband/rdma_cm");
	return t->err;
}

/* "fe80:0000:0000:0000:5eed:0000:0000:0011" (the kernel's %pI6). */
static void gid_str(char *out, size_t size, const union ibv_gid *g)
{
	const uint8_t *r = g->raw;

	snprintf(out, size, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x\n",
		 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7],
		 r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
}

/* A GUID in network order as "xxxx:xxxx:xxxx:xxxx" (node_guid_show). */
static void guid_str(char *out, size_t size, __be64 be)
{
	uint64_t g = be64toh(be);

	snprintf(out, size, "%04x:%04x:%04x:%04x\n", (unsigned)(g >> 48) & 0xffff,
		 (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
}

/* rate_show: deci-Gb/s per lane by active_speed, times the lanes. */
static void rate_str(char *out, size_t size, const struct ibv_port_attr *pa)
{
	static const struct { uint8_t speed; int rate; const char *name; } speeds[] = {
		{ 1, 25, " SDR" }, { 2, 50, " DDR" }, { 4, 100, " QDR" }, { 8, 100, " FDR10" },
		{ 16, 140, " FDR" }, { 32, 250, " EDR" }, { 64, 500, " HDR" }, { 128, 1000, " NDR" },
	};
	int rate = 25, lanes;
	const char *name = " SDR";

	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (pa->active_speed == speeds[i].speed) {
			rate = speeds[i].rate;
			name = speeds[i].name;
		}
	switch (pa->active_width) {
	case 1: lanes = 1; break;
	case 2: lanes = 4; break;
	case 4: lanes = 8; break;
	case 8: lanes = 12; break;
	case 16: lanes = 2; break;
	default: lanes = -1; break;
	}
	if (lanes < 0) {
		out[0] = '\0'; /* the kernel's read fails with EINVAL: no file */
		return;
	}
	rate *= lanes;
	snprintf(out, size, "%d%s Gb/sec (%dX%s)\n", rate / 10, rate % 10 ? ".5" : "", lanes, name);
}

static const char *state_name(int s)
{
	static const char *const n[] = { "NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER" };

	return s >= 0 && s < (int)(sizeof(n) / sizeof(n[0])) ? n[s] : "UNKNOWN";
}

static const char *phys_state_name(unsigned int s)
{
	static const char *const n[] = { "<unknown>", "Sleep", "Polling", "Disabled",
		"PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "Phy Test" };

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "<unknown>";
}

/* The GID table, its attributes and the P_Key table of one port. */
static void write_tables(struct sv_tree *t, struct sv_dev *d, uint8_t port,
			 const struct ibv_port_attr *pa, const char *pd)
{
	char val[64];

	sv_dir(t, "%s/gids", pd);
	sv_dir(t, "%s/gid_attrs", pd);
	sv_dir(t, "%s/gid_attrs/types", pd);
	sv_dir(t, "%s/gid_attrs/ndevs", pd);
	for (int i = 0; i < pa->gid_tbl_len; i++) {
		union ibv_gid gid;
		struct ibv_gid_entry e;

		if (ibv_query_gid(d->ctx, port, i, &gid))
			memset(&gid, 0, sizeof(gid)); /* show_port_gid: the zero GID */
		gid_str(val, sizeof(val), &gid);
		sv_file(t, val, "%s/gids/%d", pd, i);
		/* An empty entry's attributes read EINVAL on the kernel: no file
		 * here.  An IB GID has no netdev: ndevs/<i> reads EINVAL, never
		 * a name, so ndevs/ stays empty. */
		if (ibv_query_gid_ex(d->ctx, port, (uint32_t)i, &e, 0) == 0)
			sv_file(t, e.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2\n" : "IB/RoCE v1\n",
				"%s/gid_attrs/types/%d", pd, i);
	}
	sv_dir(t, "%s/pkeys", pd);
	for (int i = 0; i < pa->pkey_tbl_len; i++) {
		__be16 pkey;

		if (ibv_query_pkey(d->ctx, port, i, &pkey))
			continue; /* the kernel's read fails: no file */
		snprintf(val, sizeof(val), "0x%04x\n", be16toh(pkey));
		sv_file(t, val, "%s/pkeys/%d", pd, i);
	}
}

static void write_port(struct sib_sysview *v, struct sv_dev *d, struct sv_port *p)
{
	struct sv_tree *t = &v->tree;
	struct ibv_port_attr pa;
	char pd[160], val[96];

	snprintf(pd, sizeof(pd), IBDIR "/%s/ports/%u", d->name, p->num);
	if (ibv_query_port(d->ctx, p->num, &pa)) {
		sv_keep(t, pd); /* keep the last values until it answers again */
		return;
	}
	sv_dir(t, "%s", pd);
	snprintf(val, sizeof(val), "%d: %s\n", pa.state, state_name(pa.state));
	sv_file(t, val, "%s/state", pd);
	snprintf(val, sizeof(val), "%u: %s\n", pa.phys_state, phys_state_name(pa.phys_state));
	sv_file(t, val, "%s/phys_state", pd);
	rate_str(val, sizeof(val), &pa);
	if (val[0])
		sv_file(t, val, "%s/rate", pd);
	snprintf(val, sizeof(val), "0x%x\n", pa.lid);
	sv_file(t, val, "%s/lid", pd);
	snprintf(val, sizeof(val), "%d\n", pa.lmc);
	sv_file(t, val, "%s/lid_mask_count", pd);
	snprintf(val, sizeof(val), "0x%x\n", pa.sm_lid);
	sv_file(t, val, "%s/sm_lid", pd);
	snprintf(val, sizeof(val), "%d\n", pa.sm_sl);
	sv_file(t, val, "%s/sm_sl", pd);
	snprintf(val, sizeof(val), "0x%08x\n", pa.port_cap_flags);
	sv_file(t, val, "%s/cap_mask", pd);
	sv_file(t, pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet\n" :
		   pa.link_layer == IBV_LINK_LAYER_INFINIBAND ||
		   pa.link_layer == IBV_LINK_LAYER_UNSPECIFIED ? "InfiniBand\n" : "Unknown\n",
		"%s/link_layer", pd);
	write_tables(t, d, p->num, &pa, pd);
	sv_pma_counters(v, d, p, &pa);
}

/* device/: what a PCI function's directory shows and clients read. */
static void write_pci(struct sib_sysview *v, struct sv_dev *d)
{
	struct sv_tree *t = &v->tree;
	char dd[128], val[64];

	snprintf(dd, sizeof(dd), IBDIR "/%s/device", d->name);
	sv_dir(t, "%s", dd);
	/* No PCI function: the verbs IDs, which UCX falls back to as well. */
	snprintf(val, sizeof(val), "0x%04x\n", d->attr.vendor_id);
	sv_file(t, val, "%s/vendor", dd);
	snprintf(val, sizeof(val), "0x%04x\n", d->attr.vendor_part_id);
	sv_file(t, val, "%s/device", dd);
	/* A software HCA runs on every CPU and belongs to no NUMA node. */
	sv_file(t, v->local_cpus, "%s/local_cpus", dd);
	sv_file(t, "-1\n", "%s/numa_node", dd);
	sv_link(t, "../../../../bus/softib/drivers/softib", "%s/driver", dd);
	sv_dir(t, "%s/net", dd);
}

/* The device's own attributes (sysfs.c, the driver's hw_rev, hca_type,
 * board_id: softib's library answers those through ibv_read_sysfs_file). */
static void write_attrs(struct sv_tree *t, struct sv_dev *d)
{
	static const char *const drv[] = { "hca_type", "board_id", "node_desc" };
	char val[128];

	/* node_type_show: "%u: %s", the same numbers as enum ibv_node_type. */
	static const char *const types[] = { NULL, "CA", "switch", "router", "RNIC",
		"usNIC", "usNIC UDP", "unspecified" };
	const char *type = d->node_type > 0 && d->node_type < 8 ? types[d->node_type] : "<unknown>";

	snprintf(val, sizeof(val), "%d: %s\n", d->node_type, type);
	sv_file(t, val, IBDIR "/%s/node_type", d->name);
	guid_str(val, sizeof(val), d->attr.node_guid);
	sv_file(t, val, IBDIR "/%s/node_guid", d->name);
	guid_str(val, sizeof(val), d->attr.sys_image_guid);
	sv_file(t, val, IBDIR "/%s/sys_image_guid", d->name);
	snprintf(val, sizeof(val), "%.*s\n", (int)sizeof(d->attr.fw_ver), d->attr.fw_ver);
	sv_file(t, val, IBDIR "/%s/fw_ver", d->name);
	snprintf(val, sizeof(val), "%u\n", d->attr.hw_ver);
	sv_file(t, val, IBDIR "/%s/hw_rev", d->name);
	for (size_t i = 0; i < sizeof(drv) / sizeof(drv[0]); i++) {
		char buf[80];
		int n = ibv_read_sysfs_file(d->ibdev_path, drv[i], buf, sizeof(buf) - 1);

		if (n < 0)
			continue;
		buf[n] = '\0';
		/* node_desc_show prints at most 64 bytes. */
		snprintf(val, sizeof(val), "%.64s\n", buf);
		sv_file(t, val, IBDIR "/%s/%s", d->name, drv[i]);
	}
}

/* infiniband_verbs/uverbsN, infiniband_mad/umadN and issmN, and their
 * /dev/infiniband nodes (symlinks to /dev/null: a character device that
 * opens read-write; `dev` says its numbers). */
static void write_cdevs(struct sib_sysview *v, struct sv_dev *d)
{
	struct sv_tree *t = &v->tree;
	char val[96];

	sv_dir(t, CLS "/infiniband_verbs/%s", d->dev_name);
	snprintf(val, sizeof(val), "%s\n", d->name);
	sv_file(t, val, CLS "/infiniband_verbs/%s/ibdev", d->dev_name);
	/* The driver's uverbs ABI (ib_device_ops.uverbs_abi_ver): softib has
	 * no kernel driver; 1, and only rdma-core's own libibverbs reads it. */
	sv_file(t, "1\n", CLS "/infiniband_verbs/%s/abi_version", d->dev_name);
	sv_file(t, v->dev_null, CLS "/infiniband_verbs/%s/dev", d->dev_name);
	sv_link(t, "/dev/null", "dev/infiniband/%s", d->dev_name);
	for (uint8_t i = 0; i < d->nports; i++) {
		static const char *const kind[] = { "umad", "issm" };
		const struct sv_port *p = &d->ports[i];

		for (int k = 0; k < 2; k++) {
			sv_dir(t, CLS "/infiniband_mad/%s%d", kind[k], p->umad);
			snprintf(val, sizeof(val), "%s\n", d->name);
			sv_file(t, val, CLS "/infiniband_mad/%s%d/ibdev", kind[k], p->umad);
			snprintf(val, sizeof(val), "%u\n", p->num);
			sv_file(t, val, CLS "/infiniband_mad/%s%d/port", kind[k], p->umad);
			sv_file(t, v->dev_null, CLS "/infiniband_mad/%s%d/dev", kind[k], p->umad);
			sv_link(t, "/dev/null", "dev/infiniband/%s%d", kind[k], p->umad);
		}
	}
}

void sv_write_device(struct sib_sysview *v, struct sv_dev *d)
{
	struct sv_tree *t = &v->tree;

	sv_dir(t, IBDIR "/%s", d->name);
	write_attrs(t, d);
	write_pci(v, d);
	sv_dir(t, IBDIR "/%s/ports", d->name);
	for (uint8_t i = 0; i < d->nports; i++)
		write_port(v, d, &d->ports[i]);
	write_cdevs(v, d);
}

/* One value of the live interface from this namespace's sysfs, if any. */
static bool net_attr(const char *ifname, const char *attr, char *out, size_t size)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/class/net/%s/%s", ifname, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, out, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	out[n] = '\0';
	return true;
}

void sv_write_netdev(struct sib_sysview *v, const struct sv_netdev *n)
{
	static const char *const live[] = { "ifindex", "mtu", "operstate" };
	struct sv_tree *t = &v->tree;
	char nd[160], val[64];

	snprintf(nd, sizeof(nd), IBDIR "/%s/device/net/%s", n->dev, n->ifname);
	sv_dir(t, "%s", nd);
	snprintf(val, sizeof(val), "%u\n", n->port - 1u); /* ipoib: dev_port = port - 1 */
	sv_file(t, val, "%s/dev_port", nd);
	snprintf(val, sizeof(val), "%d\n", ARPHRD_INFINIBAND);
	sv_file(t, val, "%s/type", nd);
	sv_file(t, "20\n", "%s/addr_len", nd); /* INFINIBAND_ALEN */
	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
		if (net_attr(n->ifname, live[i], val, sizeof(val)))
			sv_file(t, val, "%s/%s", nd, live[i]);
}
