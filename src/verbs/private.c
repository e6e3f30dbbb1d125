// SPDX-License-Identifier: MIT
/*
 * The IBVERBS_PRIVATE_34 exports, except ibv_query_gid_type (implemented for
 * real elsewhere: ibv_devinfo and pyverbs call it).
 *
 * Who calls these: only rdma-core's own provider libraries.  The system
 * libmlx5.so.1 (61 imports) and libefa.so.1 (21 imports) are NEEDED by
 * perftest, UCX and libfabric, are linked with BIND_NOW, and therefore
 * resolve all of their IBVERBS_PRIVATE_34 imports against softib at load
 * time.  The symbols must exist; they are reached at run time only through
 * a provider's own device, and softib never creates one:
 *
 *   - verbs_register_driver_34() is called from the providers' ELF
 *     constructors.  It is a no-op: the provider is not recorded, so it never
 *     matches or allocates a device;
 *   - libmlx5/libefa decide "is this my device?" by reading
 *     verbs_device.ops at ibv_device+664 (NULL for softib devices), so
 *     mlx5dv_* and efadv_* calls on softib objects fail inside the provider
 *     before reaching anything here.
 *
 * So every ibv_cmd_* (the kernel uverbs command marshalling layer) fails with
 * EOPNOTSUPP, using the return convention of the real function:
 *   - int ibv_cmd_* return the errno value (positive), errno untouched
 *     except where noted; ibv_cmd_poll_cq returns -1 (poll convention);
 *   - pointer-returning helpers return NULL with errno = EOPNOTSUPP;
 *   - execute_ioctl returns the errno value (it returns errno after a
 *     failed ioctl), and also sets errno;
 *   - ibv_read_ibdev_sysfs_file returns -1 with errno set, as
 *     ibv_read_sysfs_file does (ENOSYS: softib has no sysfs device
 *     directories for providers).
 *
 * Prototypes: rdma-core's driver.h, kern-abi.h and cmd_ioctl.h are not
 * installed, so the signatures below are our own declarations with the same
 * parameter count and types as rdma-core's libibverbs/driver.h of the
 * IBVERBS_PRIVATE_34 era (found with the code search; none of them is a
 * generic fallback signature).  Structure types that only exist in those
 * private headers (verbs_mr, verbs_qp, ibv_command_buffer, the
 * struct ibv_<cmd> command layouts, ...) are left incomplete: they are
 * never dereferenced here, so only "pointer" matters for the call ABI.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "verbs/export.h"

/* Most stubs below ignore every argument. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* ---- private types (opaque) ---------------------------------------- */
struct verbs_device_ops;
struct verbs_context_ops;
struct verbs_sysfs_dev;
struct verbs_mr;
struct verbs_xrcd;
struct verbs_cq;
struct verbs_srq;
struct verbs_qp;
struct verbs_dm;
struct verbs_counters;
struct verbs_flow_action;
struct ibv_command_buffer;
/* kern-abi.h command layouts (struct ibv_<verb>), opaque as well */
struct ibv_get_context;
struct ibv_query_port;
struct ibv_alloc_pd;
struct ibv_open_xrcd;
struct ibv_reg_mr;
struct ibv_rereg_mr;
struct ibv_alloc_mw;
struct ibv_create_cq;
struct ibv_create_cq_ex;
struct ibv_resize_cq;
struct ibv_modify_cq;
struct ibv_create_srq;
struct ibv_create_xsrq;
struct ibv_modify_srq;
struct ibv_query_srq;
struct ibv_create_qp;
struct ibv_create_qp_ex;
struct ibv_open_qp;
struct ibv_query_qp;
struct ibv_modify_qp;
struct ibv_modify_qp_ex;
struct ibv_create_wq;
struct ibv_modify_wq;

/* ---- data --------------------------------------------------------- */

/* rdma-core: true when RDMAV_ALLOW_DISASSOC_DESTROY is set, letting
 * providers report success for destroy calls after a device disassociate.
 * libmlx5 reads it as data.  softib devices never disassociate. */
SIB_EXPORT bool verbs_allow_disassociate_destroy = false;

/* ---- logging ------------------------------------------------------ */

/* VERBS_LOG_LEVEL is read once: unset -> silent; otherwise a message of
 * level L (1 = err ... 4 = debug) is written to stderr when L <= the value. */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static unsigned long log_level;		/* 0: logging off */

static void log_level_init(void)
{
	const char *s = secure_getenv("VERBS_LOG_LEVEL");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s)
		v = ULONG_MAX;	/* set but not a number: log everything */
	log_level = v;
}

SIB_EXPORT __attribute__((format(printf, 3, 4)))
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
	int saved_errno = errno;
	va_list ap;

	pthread_once(&log_once, log_level_init);
	if (log_level && level <= log_level && fmt) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	errno = saved_errno;
}

/* ---- provider registration and context plumbing ------------------- */

/* Called from every provider's constructor at load time.  Deliberately a
 * no-op: softib never uses rdma-core providers. */
SIB_EXPORT void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
}

SIB_EXPORT void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops)
{
}

SIB_EXPORT void verbs_uninit_context(struct verbs_context *context)
{
}

SIB_EXPORT struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SIB_EXPORT void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
					       size_t alloc_size,
					       struct verbs_context *context_offset,
					       uint32_t driver_id)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/*
 * Providers call this from their create_cq to fill the generic part of a
 * CQ they allocated.  It only touches public struct ibv_cq fields, so it is
 * implemented for real (it can only be reached through a provider context,
 * which softib never creates).
 */
SIB_EXPORT void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
			      struct ibv_comp_channel *channel, void *cq_context)
{
	cq->context = context;
	cq->channel = channel;
	cq->cq_context = cq_context;
	cq->comp_events_completed = 0;
	cq->async_events_completed = 0;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
	if (channel) {
		/* the channel counts the CQs that use it */
		pthread_mutex_lock(&context->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&context->mutex);
	}
}

/* ---- ioctl layer -------------------------------------------------- */

SIB_EXPORT int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/*
 * Sizes the on-stack command buffer of a provider: the attribute count of
 * this buffer plus those of the linked ones.  The link layout is private to
 * rdma-core, so the links are not walked; the result only sizes a buffer
 * that execute_ioctl() above rejects anyway.
 */
SIB_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
						struct ibv_command_buffer *link)
{
	return num_attrs;
}

/* ---- sysfs -------------------------------------------------------- */

SIB_EXPORT __attribute__((format(printf, 4, 5)))
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
{
	if (buf && size)
		buf[0] = '\0';
	errno = ENOSYS;
	return -1;
}

/* ---- ibv_cmd_*: the kernel command layer -------------------------- */

#define CMD_FAIL return EOPNOTSUPP

/* context and device */
SIB_EXPORT int ibv_cmd_get_context(struct verbs_context *context, struct ibv_get_context *cmd,
				   size_t cmd_size, struct ib_uverbs_get_context_resp *resp,
				   size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_query_context(struct ibv_context *ctx, struct ibv_command_buffer *driver)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_query_device_any(struct ibv_context *context,
					const struct ibv_query_device_ex_input *input,
					struct ibv_device_attr_ex *attr, size_t attr_size,
					struct ib_uverbs_ex_query_device_resp *resp,
					size_t *resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
				  struct ibv_port_attr *port_attr, struct ibv_query_port *cmd,
				  size_t cmd_size)
{
	CMD_FAIL;
}

/* PD, XRCD */
SIB_EXPORT int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
				struct ibv_alloc_pd *cmd, size_t cmd_size,
				struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_dealloc_pd(struct ibv_pd *pd)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
				 int vxrcd_size, struct ibv_xrcd_init_attr *attr,
				 struct ibv_open_xrcd *cmd, size_t cmd_size,
				 struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd)
{
	CMD_FAIL;
}

/* MR, MW, DM */
SIB_EXPORT int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
			      int access, struct verbs_mr *vmr, struct ibv_reg_mr *cmd,
			      size_t cmd_size, struct ib_uverbs_reg_mr_resp *resp,
			      size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr, size_t length,
				uint64_t hca_va, int access, struct ibv_pd *pd,
				struct ibv_rereg_mr *cmd, size_t cmd_sz,
				struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_dereg_mr(struct verbs_mr *vmr)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_query_mr(struct ibv_pd *pd, struct verbs_mr *vmr, uint32_t mr_handle)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
				 uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				     uint64_t iova, int fd, int access, struct verbs_mr *vmr)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type, struct ibv_mw *mw,
				struct ibv_alloc_mw *cmd, size_t cmd_size,
				struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_dealloc_mw(struct ibv_mw *mw)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_alloc_dm(struct ibv_context *ctx, const struct ibv_alloc_dm_attr *dm_attr,
				struct verbs_dm *dm, struct ibv_command_buffer *link)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_free_dm(struct verbs_dm *dm)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_reg_dm_mr(struct ibv_pd *pd, struct verbs_dm *dm, uint64_t offset,
				 size_t length, unsigned int access, struct verbs_mr *vmr,
				 struct ibv_command_buffer *link)
{
	CMD_FAIL;
}

/* CQ */
SIB_EXPORT int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
				 struct ibv_comp_channel *channel, int comp_vector,
				 struct ibv_cq *cq, struct ibv_create_cq *cmd, size_t cmd_size,
				 struct ib_uverbs_create_cq_resp *resp, size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_create_cq_ex(struct ibv_context *context,
				    const struct ibv_cq_init_attr_ex *cq_attr,
				    struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
				    size_t cmd_size, struct ib_uverbs_ex_create_cq_resp *resp,
				    size_t resp_size, uint32_t cmd_flags)
{
	CMD_FAIL;
}

/* poll convention: number of completions, or a negative value on error */
SIB_EXPORT int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc)
{
	errno = EOPNOTSUPP;
	return -1;
}

SIB_EXPORT int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
				 size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
				 size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_destroy_cq(struct ibv_cq *cq)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
				 struct ibv_modify_cq *cmd, size_t cmd_size)
{
	CMD_FAIL;
}

/* SRQ */
SIB_EXPORT int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
				  struct ibv_srq_init_attr *attr, struct ibv_create_srq *cmd,
				  size_t cmd_size, struct ib_uverbs_create_srq_resp *resp,
				  size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
				     struct ibv_srq_init_attr_ex *attr_ex,
				     struct ibv_create_xsrq *cmd, size_t cmd_size,
				     struct ib_uverbs_create_srq_resp *resp, size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
				  int srq_attr_mask, struct ibv_modify_srq *cmd, size_t cmd_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
				 struct ibv_query_srq *cmd, size_t cmd_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_destroy_srq(struct ibv_srq *srq)
{
	CMD_FAIL;
}

/* QP */
SIB_EXPORT int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
				 struct ibv_qp_init_attr *attr, struct ibv_create_qp *cmd,
				 size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
				 size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
				    struct ibv_qp_init_attr_ex *attr_ex,
				    struct ibv_create_qp *cmd, size_t cmd_size,
				    struct ib_uverbs_create_qp_resp *resp, size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
				     struct ibv_qp_init_attr_ex *qp_attr,
				     struct ibv_create_qp_ex *cmd, size_t cmd_size,
				     struct ib_uverbs_ex_create_qp_resp *resp, size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp, int vqp_sz,
			       struct ibv_qp_open_attr *attr, struct ibv_open_qp *cmd,
			       size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
			       size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr, int attr_mask,
				struct ibv_qp_init_attr *qp_init_attr, struct ibv_query_qp *cmd,
				size_t cmd_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
				 struct ibv_modify_qp *cmd, size_t cmd_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_modify_qp_ex(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
				    struct ibv_modify_qp_ex *cmd, size_t cmd_size,
				    struct ib_uverbs_ex_modify_qp_resp *resp, size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_destroy_qp(struct ibv_qp *qp)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
				 struct ibv_send_wr **bad_wr)
{
	if (bad_wr)
		*bad_wr = wr;
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
				 struct ibv_recv_wr **bad_wr)
{
	if (bad_wr)
		*bad_wr = wr;
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
				     struct ibv_recv_wr **bad_wr)
{
	if (bad_wr)
		*bad_wr = wr;
	CMD_FAIL;
}

/* AH and multicast */
SIB_EXPORT int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah, struct ibv_ah_attr *attr,
				 struct ib_uverbs_create_ah_resp *resp, size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_destroy_ah(struct ibv_ah *ah)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	CMD_FAIL;
}

/* flow steering and flow actions */
SIB_EXPORT int ibv_cmd_create_flow(struct ibv_qp *qp, struct ibv_flow *flow_id,
				   struct ibv_flow_attr *flow_attr, void *ucmd, size_t ucmd_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_destroy_flow(struct ibv_flow *flow_id)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_create_flow_action_esp(struct ibv_context *ctx,
					      struct ibv_flow_action_esp_attr *attr,
					      struct verbs_flow_action *flow_action,
					      struct ibv_command_buffer *driver)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_modify_flow_action_esp(struct verbs_flow_action *flow_action,
					      struct ibv_flow_action_esp_attr *attr,
					      struct ibv_command_buffer *driver)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_destroy_flow_action(struct verbs_flow_action *action)
{
	CMD_FAIL;
}

/* WQ and RSS indirection tables */
SIB_EXPORT int ibv_cmd_create_wq(struct ibv_context *context,
				 struct ibv_wq_init_attr *wq_init_attr, struct ibv_wq *wq,
				 struct ibv_create_wq *cmd, size_t cmd_size,
				 struct ib_uverbs_ex_create_wq_resp *resp, size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr,
				 struct ibv_modify_wq *cmd, size_t cmd_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_destroy_wq(struct ibv_wq *wq)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_create_rwq_ind_table(struct ibv_context *context,
					    struct ibv_rwq_ind_table_init_attr *init_attr,
					    struct ibv_rwq_ind_table *rwq_ind_table,
					    struct ib_uverbs_ex_create_rwq_ind_table_resp *resp,
					    size_t resp_size)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table *rwq_ind_table)
{
	CMD_FAIL;
}

/* counters */
SIB_EXPORT int ibv_cmd_create_counters(struct ibv_context *context,
				       struct ibv_counters_init_attr *init_attr,
				       struct verbs_counters *vcounters,
				       struct ibv_command_buffer *link)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_destroy_counters(struct verbs_counters *vcounters)
{
	CMD_FAIL;
}

SIB_EXPORT int ibv_cmd_read_counters(struct verbs_counters *vcounters, uint64_t *counters_value,
				     uint32_t ncounters, uint32_t flags,
				     struct ibv_command_buffer *link)
{
	CMD_FAIL;
}
