/* SPDX-License-Identifier: MIT */
/*
 * The system view's insides (sysview.h): the store of what it made under
 * root (tree.c), the devices it mirrors (sysview.c), the file writers of a
 * device and its ports (files.c) and the port counters through the PMA
 * (pma.c).
 */
#ifndef SIB_SYSVIEW_INT_H
#define SIB_SYSVIEW_INT_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* ---- tree.c: every directory, file and symlink the view made ---- */

enum sv_kind { SV_DIR, SV_FILE, SV_LINK };

struct sv_node {
	char *path;     /* relative to root */
	char *val;      /* file content or link target; NULL for a directory */
	uint32_t gen;   /* the refresh pass that last wrote or kept it */
	uint8_t kind;   /* enum sv_kind */
	bool live;      /* exists on disk now */
};

struct sv_tree {
	int root_fd;             /* O_PATH|O_DIRECTORY of root */
	struct sv_node *nodes;   /* in creation order: a parent before its children */
	size_t n, cap;
	uint32_t *hash;          /* open addressing: index + 1, 0 = empty */
	size_t hash_cap;         /* a power of two, >= 2 * cap */
	uint32_t gen;            /* the current pass */
	int err;                 /* the first -errno of this pass */
};

/* Open root (an existing directory).  0 or -errno. */
int sv_tree_init(struct sv_tree *t, const char *root);
/* Close root; with remove, unlink every live node, children first. */
void sv_tree_fini(struct sv_tree *t, bool remove);
/* A directory (0755), a file of `val` (0444, rewritten only when it
 * changed, atomically), a symlink to target.  path is printf-style,
 * relative to root; the parent directory must already be made.  Each marks
 * the node as part of this pass.  0 or -errno (also kept in t->err). */
int sv_dir(struct sv_tree *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sv_file(struct sv_tree *t, const char *val, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sv_link(struct sv_tree *t, const char *target, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Mark every live node at or under prefix as part of this pass (kept
 * although not rewritten: a device whose query failed for now). */
void sv_keep(struct sv_tree *t, const char *prefix);
/* Start a pass: err cleared, a new generation. */
void sv_pass_begin(struct sv_tree *t);
/* End a pass: remove every live node the pass did not touch, children
 * first.  Returns t->err. */
int sv_pass_end(struct sv_tree *t);

/* ---- the devices ---- */

#define SV_MAX_PORTS  8     /* ports of one device the view mirrors */
#define SV_MAX_UMAD   1024  /* umad<N> numbers (the kernel's IB_UMAD_MAX_PORTS is 256 minors per region) */

/* The port counters of one port (pma.c). */
struct sv_pma {
	int fd, agent;          /* libibumad port and PerfMgmt agent; -1 = not open */
	int ext;                /* ClassPortInfo said PortCountersExtended: 1, no: 0, unknown: -1 */
	uint32_t tid;
	uint64_t last_ms;       /* CLOCK_MONOTONIC of the last query */
	bool have;              /* values below are from a PMA answer */
	uint8_t pc[256], pcx[256]; /* the last PortCounters / PortCountersExtended MADs */
};

struct sv_port {
	uint8_t num;
	int umad;               /* umad<N>/issm<N> number */
	struct sv_pma pma;
};

struct sv_dev {
	char name[IBV_SYSFS_NAME_MAX];     /* ibv_device.name: softib0 */
	char dev_name[IBV_SYSFS_NAME_MAX]; /* ibv_device.dev_name: uverbs0 */
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
	int node_type;           /* ibv_device.node_type (enum ibv_node_type) */
	uint8_t nports;          /* mirrored ports (attr.phys_port_cnt, at most SV_MAX_PORTS) */
	bool fatal;              /* DEVICE_FATAL seen: closed at the next refresh */
	bool seen;               /* listed by this refresh's ibv_get_device_list */
	struct sv_port ports[SV_MAX_PORTS];
};

struct sv_netdev {
	char dev[IBV_SYSFS_NAME_MAX];
	uint8_t port;
	char ifname[IF_NAMESIZE];
};

struct sib_sysview {
	struct sv_tree tree;
	int epfd;               /* epoll of every open device's async fd */
	struct sv_dev **devs;   /* in the order they were found */
	size_t ndevs, devs_cap;
	struct sv_netdev *nets;
	size_t nnets;
	bool umad_used[SV_MAX_UMAD];
	char dev_null[32];      /* "MAJ:MIN" of /dev/null, what the nodes are */
	char local_cpus[1024];  /* every configured CPU as a cpumask */
};

/* files.c: the class directories and every file of one device. */
int sv_write_globals(struct sib_sysview *v);
void sv_write_device(struct sib_sysview *v, struct sv_dev *d);
void sv_write_netdev(struct sib_sysview *v, const struct sv_netdev *n);

/* pma.c: the port counters, at most once a second per port; `counters/`
 * written from the last answer (kept when the PMA does not answer). */
void sv_pma_counters(struct sib_sysview *v, struct sv_dev *d, struct sv_port *p,
		     const struct ibv_port_attr *pa);
void sv_pma_close(struct sv_pma *m);

#endif
