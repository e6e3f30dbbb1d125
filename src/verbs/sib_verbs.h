/* SPDX-License-Identifier: MIT */
/*
 * Private interfaces between the files of the drop-in libibverbs: the
 * control-socket round trip to softibd and object bookkeeping there.
 */
#ifndef SIB_VERBS_H
#define SIB_VERBS_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sib_ctl.h"
#include "hca/provider.h"

/* The exported ibv_query_port@@IBVERBS_1.1 fills this many bytes: the
 * _compat_ibv_port_attr of old binaries, up to and including `flags`. */
#define SIB_COMPAT_PORT_ATTR_BYTES 48

/* libibverbs' sysfs helpers; driver.h (which declares them) is not installed. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

/* Connect to softibd once.  0 or a positive errno. */
int sib_lib_init(void);
/* One command/reply round trip.  Returns the reply's status (0 or errno),
 * EIO if the daemon is gone.  *recv_fd gets a passed fd or -1. */
int sib_ctl_rpc(struct sib_ctl_msg *m, int *recv_fd);
/* The same, passing pass_fd (unless -1) with the request. */
int sib_ctl_rpc_fd(struct sib_ctl_msg *m, int pass_fd, int *recv_fd);
/* Register an object with softibd (resource tracking, QPNs).  0 or errno. */
int sib_obj_create(uint32_t dev_handle, enum sib_obj_type type, uint32_t qp_type,
		   uint32_t *handle, uint32_t *qpn);
void sib_obj_destroy(uint32_t handle);

/* What verbs keeps per context, behind verbs_context.priv (rdma-core's
 * struct verbs_ex_private): the merged ops and the inbox mapping. */
struct sib_verbs_priv {
	struct sib_hca_ops ops;
	void *inbox_base;
	size_t inbox_size;
};

static inline struct sib_verbs_priv *sib_verbs_priv(struct ibv_context *context)
{
	return (struct sib_verbs_priv *)verbs_get_ctx(context)->priv;
}

/* ops.c: the context's ops (provider's, or the fallbacks). */
const struct sib_hca_ops *sib_get_ops(struct ibv_context *context);
/* Attach the provider's ops to a new context (verbs_set_ops).  0 or ENOMEM. */
int sib_verbs_set_ops(struct ibv_context *context, const struct sib_hca_ops *ops);
void sib_verbs_unset_ops(struct ibv_context *context);

#endif
