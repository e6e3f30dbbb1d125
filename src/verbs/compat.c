// SPDX-License-Identifier: MIT
/*
 * Hidden compat entry points of libibverbs.so.1: the 33 "name@IBVERBS_1.0"
 * symbols and "ibv_register_driver@IBVERBS_1.1".
 *
 * Why they are failures, not implementations:
 *
 *   The IBVERBS_1.0 ABI is the libibverbs 1.0 interface (2006).  Its objects
 *   (struct ibv_context_1_0, ibv_pd_1_0, ibv_qp_1_0, ...) were thin wrappers
 *   around the 1.1 objects with a different layout, and it predates every
 *   client softib targets: ibverbs-utils, perftest, pyverbs, UCX, libfabric,
 *   librdmacm, libmlx5 and libefa all bind to the @@IBVERBS_1.1 (or later)
 *   defaults (docs/abi.md; research abi.md section 1.1).  A binary can only
 *   reach these symbols if it was linked against a pre-1.1 libibverbs.  They
 *   are exported only so that the export table is identical to rdma-core's.
 *
 *   ibv_register_driver@IBVERBS_1.1 is the pre-rdma-core provider
 *   registration hook.  rdma-core itself keeps it only as a dead stub; softib
 *   never loads providers, so it does nothing here either.
 *
 * Conventions (those of the 1.0/1.1 API for the same verb):
 *   - pointer-returning verbs: errno = EOPNOTSUPP, return NULL;
 *   - verbs documented as "0 or the errno value": return EOPNOTSUPP;
 *   - verbs documented as "0 or -1" (close_device, get_async_event,
 *     get_cq_event, query_gid, query_pkey): errno = EOPNOTSUPP, return -1;
 *   - void verbs: do nothing.
 *
 * The wrapper types are never dereferenced, so they stay incomplete.  The
 * implementation names (sib_compat_*) are hidden by "local: *" in the
 * version script; only the versioned aliases are exported.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "verbs/export.h"

/* The 1.0 ABI object wrappers (opaque: never dereferenced here). */
struct ibv_device_1_0;
struct ibv_context_1_0;
struct ibv_pd_1_0;
struct ibv_mr_1_0;
struct ibv_cq_1_0;
struct ibv_srq_1_0;
struct ibv_qp_1_0;
struct ibv_qp_init_attr_1_0;
struct ibv_ah_1_0;

static void *compat_fail_null(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int compat_fail_minus1(void)
{
	errno = EOPNOTSUPP;
	return -1;
}

/* Binds sib_compat_<name>_1_0 to the hidden version name@IBVERBS_1.0. */
#define SIB_COMPAT_1_0(name) SIB_SYMVER(sib_compat_##name##_1_0, #name "@IBVERBS_1.0")

/* ---- device list and context -------------------------------------- */

SIB_EXPORT struct ibv_device_1_0 **sib_compat_ibv_get_device_list_1_0(int *num_devices)
{
	if (num_devices)
		*num_devices = 0;
	return compat_fail_null();
}
SIB_COMPAT_1_0(ibv_get_device_list);

SIB_EXPORT void sib_compat_ibv_free_device_list_1_0(struct ibv_device_1_0 **list)
{
	(void)list;	/* get_device_list@1.0 never returns a list */
}
SIB_COMPAT_1_0(ibv_free_device_list);

SIB_EXPORT const char *sib_compat_ibv_get_device_name_1_0(struct ibv_device_1_0 *device)
{
	(void)device;
	return compat_fail_null();
}
SIB_COMPAT_1_0(ibv_get_device_name);

SIB_EXPORT __be64 sib_compat_ibv_get_device_guid_1_0(struct ibv_device_1_0 *device)
{
	(void)device;
	errno = EOPNOTSUPP;
	return 0;	/* the API has no error value; 0 is "no GUID" */
}
SIB_COMPAT_1_0(ibv_get_device_guid);

SIB_EXPORT struct ibv_context_1_0 *sib_compat_ibv_open_device_1_0(struct ibv_device_1_0 *device)
{
	(void)device;
	return compat_fail_null();
}
SIB_COMPAT_1_0(ibv_open_device);

SIB_EXPORT int sib_compat_ibv_close_device_1_0(struct ibv_context_1_0 *context)
{
	(void)context;
	return compat_fail_minus1();
}
SIB_COMPAT_1_0(ibv_close_device);

SIB_EXPORT int sib_compat_ibv_get_async_event_1_0(struct ibv_context_1_0 *context,
						  struct ibv_async_event *event)
{
	(void)context;
	(void)event;
	return compat_fail_minus1();
}
SIB_COMPAT_1_0(ibv_get_async_event);

SIB_EXPORT void sib_compat_ibv_ack_async_event_1_0(struct ibv_async_event *event)
{
	(void)event;
}
SIB_COMPAT_1_0(ibv_ack_async_event);

/* ---- queries ------------------------------------------------------ */

SIB_EXPORT int sib_compat_ibv_query_device_1_0(struct ibv_context_1_0 *context,
					       struct ibv_device_attr *device_attr)
{
	(void)context;
	(void)device_attr;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_query_device);

SIB_EXPORT int sib_compat_ibv_query_port_1_0(struct ibv_context_1_0 *context, uint8_t port_num,
					     struct ibv_port_attr *port_attr)
{
	(void)context;
	(void)port_num;
	(void)port_attr;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_query_port);

SIB_EXPORT int sib_compat_ibv_query_gid_1_0(struct ibv_context_1_0 *context, uint8_t port_num,
					    int index, union ibv_gid *gid)
{
	(void)context;
	(void)port_num;
	(void)index;
	(void)gid;
	return compat_fail_minus1();
}
SIB_COMPAT_1_0(ibv_query_gid);

SIB_EXPORT int sib_compat_ibv_query_pkey_1_0(struct ibv_context_1_0 *context, uint8_t port_num,
					     int index, __be16 *pkey)
{
	(void)context;
	(void)port_num;
	(void)index;
	(void)pkey;
	return compat_fail_minus1();
}
SIB_COMPAT_1_0(ibv_query_pkey);

/* ---- PD and MR ---------------------------------------------------- */

SIB_EXPORT struct ibv_pd_1_0 *sib_compat_ibv_alloc_pd_1_0(struct ibv_context_1_0 *context)
{
	(void)context;
	return compat_fail_null();
}
SIB_COMPAT_1_0(ibv_alloc_pd);

SIB_EXPORT int sib_compat_ibv_dealloc_pd_1_0(struct ibv_pd_1_0 *pd)
{
	(void)pd;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_dealloc_pd);

SIB_EXPORT struct ibv_mr_1_0 *sib_compat_ibv_reg_mr_1_0(struct ibv_pd_1_0 *pd, void *addr,
							 size_t length, int access)
{
	(void)pd;
	(void)addr;
	(void)length;
	(void)access;
	return compat_fail_null();
}
SIB_COMPAT_1_0(ibv_reg_mr);

SIB_EXPORT int sib_compat_ibv_dereg_mr_1_0(struct ibv_mr_1_0 *mr)
{
	(void)mr;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_dereg_mr);

/* ---- CQ ----------------------------------------------------------- */

SIB_EXPORT struct ibv_cq_1_0 *sib_compat_ibv_create_cq_1_0(struct ibv_context_1_0 *context,
							    int cqe, void *cq_context,
							    struct ibv_comp_channel *channel,
							    int comp_vector)
{
	(void)context;
	(void)cqe;
	(void)cq_context;
	(void)channel;
	(void)comp_vector;
	return compat_fail_null();
}
SIB_COMPAT_1_0(ibv_create_cq);

SIB_EXPORT int sib_compat_ibv_resize_cq_1_0(struct ibv_cq_1_0 *cq, int cqe)
{
	(void)cq;
	(void)cqe;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_resize_cq);

SIB_EXPORT int sib_compat_ibv_destroy_cq_1_0(struct ibv_cq_1_0 *cq)
{
	(void)cq;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_destroy_cq);

SIB_EXPORT int sib_compat_ibv_get_cq_event_1_0(struct ibv_comp_channel *channel,
					       struct ibv_cq_1_0 **cq, void **cq_context)
{
	(void)channel;
	(void)cq;
	(void)cq_context;
	return compat_fail_minus1();
}
SIB_COMPAT_1_0(ibv_get_cq_event);

SIB_EXPORT void sib_compat_ibv_ack_cq_events_1_0(struct ibv_cq_1_0 *cq, unsigned int nevents)
{
	(void)cq;
	(void)nevents;
}
SIB_COMPAT_1_0(ibv_ack_cq_events);

/* ---- SRQ ---------------------------------------------------------- */

SIB_EXPORT struct ibv_srq_1_0 *sib_compat_ibv_create_srq_1_0(struct ibv_pd_1_0 *pd,
							      struct ibv_srq_init_attr *attr)
{
	(void)pd;
	(void)attr;
	return compat_fail_null();
}
SIB_COMPAT_1_0(ibv_create_srq);

SIB_EXPORT int sib_compat_ibv_modify_srq_1_0(struct ibv_srq_1_0 *srq, struct ibv_srq_attr *attr,
					     int attr_mask)
{
	(void)srq;
	(void)attr;
	(void)attr_mask;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_modify_srq);

SIB_EXPORT int sib_compat_ibv_query_srq_1_0(struct ibv_srq_1_0 *srq, struct ibv_srq_attr *attr)
{
	(void)srq;
	(void)attr;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_query_srq);

SIB_EXPORT int sib_compat_ibv_destroy_srq_1_0(struct ibv_srq_1_0 *srq)
{
	(void)srq;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_destroy_srq);

/* ---- QP ----------------------------------------------------------- */

SIB_EXPORT struct ibv_qp_1_0 *sib_compat_ibv_create_qp_1_0(struct ibv_pd_1_0 *pd,
							    struct ibv_qp_init_attr_1_0 *attr)
{
	(void)pd;
	(void)attr;
	return compat_fail_null();
}
SIB_COMPAT_1_0(ibv_create_qp);

SIB_EXPORT int sib_compat_ibv_query_qp_1_0(struct ibv_qp_1_0 *qp, struct ibv_qp_attr *attr,
					   int attr_mask, struct ibv_qp_init_attr_1_0 *init_attr)
{
	(void)qp;
	(void)attr;
	(void)attr_mask;
	(void)init_attr;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_query_qp);

SIB_EXPORT int sib_compat_ibv_modify_qp_1_0(struct ibv_qp_1_0 *qp, struct ibv_qp_attr *attr,
					    int attr_mask)
{
	(void)qp;
	(void)attr;
	(void)attr_mask;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_modify_qp);

SIB_EXPORT int sib_compat_ibv_destroy_qp_1_0(struct ibv_qp_1_0 *qp)
{
	(void)qp;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_destroy_qp);

/* ---- AH and multicast --------------------------------------------- */

SIB_EXPORT struct ibv_ah_1_0 *sib_compat_ibv_create_ah_1_0(struct ibv_pd_1_0 *pd,
							    struct ibv_ah_attr *attr)
{
	(void)pd;
	(void)attr;
	return compat_fail_null();
}
SIB_COMPAT_1_0(ibv_create_ah);

SIB_EXPORT int sib_compat_ibv_destroy_ah_1_0(struct ibv_ah_1_0 *ah)
{
	(void)ah;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_destroy_ah);

SIB_EXPORT int sib_compat_ibv_attach_mcast_1_0(struct ibv_qp_1_0 *qp, union ibv_gid *gid,
					       uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_attach_mcast);

SIB_EXPORT int sib_compat_ibv_detach_mcast_1_0(struct ibv_qp_1_0 *qp, union ibv_gid *gid,
					       uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	return EOPNOTSUPP;
}
SIB_COMPAT_1_0(ibv_detach_mcast);

/* ---- ibv_register_driver@IBVERBS_1.1 ------------------------------ */

/* Pre-rdma-core provider hook: void ibv_register_driver(const char *name,
 * init_func).  The init function type is irrelevant since it is never
 * called. */
SIB_EXPORT void sib_compat_ibv_register_driver_1_1(const char *name, void *init_func)
{
	(void)name;
	(void)init_func;
}
SIB_SYMVER(sib_compat_ibv_register_driver_1_1, "ibv_register_driver@IBVERBS_1.1");
