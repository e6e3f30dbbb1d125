/* SPDX-License-Identifier: MIT */
/*
 * Private interfaces between the files of the drop-in libibverbs: the
 * control-socket round trip to softibd and object bookkeeping there.
 */
#ifndef SIB_VERBS_H
#define SIB_VERBS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/sib_ctl.h"
#include "hca/hca.h"

#define SIB_FW_VERSION "0.1.0"

/* libibverbs' sysfs helpers; driver.h (which declares them) is not installed. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

/* Connect to softibd once.  0 or a positive errno. */
int sib_lib_init(void);
/* One command/reply round trip.  Returns the reply's status (0 or errno),
 * EIO if the daemon is gone.  *recv_fd gets a passed fd or -1. */
int sib_ctl_rpc(struct sib_ctl_msg *m, int *recv_fd);
/* Register an object with softibd (resource tracking, QPNs).  0 or errno. */
int sib_obj_create(uint32_t dev_handle, enum sib_obj_type type, uint32_t qp_type,
		   uint32_t *handle, uint32_t *qpn);
void sib_obj_destroy(uint32_t handle);

/* cq.c: the CQ an event record names, counting the delivery; NULL if gone. */
struct sib_cq *sib_cq_deliver(uint32_t id, uint32_t gen, bool async);

/* Context setup done after the inbox is mapped (verbs.c).  0 or errno. */
int sib_context_init(struct sib_context *ctx);
void sib_context_fini(struct sib_context *ctx);
void sib_device_ops_init(struct sib_context *ctx);

#endif
