/* SPDX-License-Identifier: MIT */
/*
 * The software HCA as a provider: everything the layer above (src/verbs,
 * or a test) may call.  sib_hca_ops has the shape of rdma-core's
 * `struct verbs_context_ops` (libibverbs/driver.h: same member names and
 * signatures, sorted, only the ops softib implements; dereg_mr takes an
 * ibv_mr because verbs_mr is private to rdma-core).  sib_hca_device_ops
 * stands for verbs_device_ops plus what the kernel's uverbs does for a real
 * provider: allocating devices and contexts, resolving event records.
 * The HCA never calls the layer above: what it needs from outside (the
 * fabric map, softibd's object registry, peer inboxes) comes in through
 * `sib_fabric` (common/sib_shm.h) and struct sib_hca_host.
 */
#ifndef SIB_HCA_PROVIDER_H
#define SIB_HCA_PROVIDER_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sib_ctl.h"
#include "link/dest.h"

struct sib_ring;

/* Async events about a QP (element.qp of struct ibv_async_event), as
 * opposed to a CQ, SRQ, port or the device (rdma-core verbs.h). */
static inline bool sib_is_qp_event(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return true;
	default:
		return false;
	}
}

/* Keep sorted (as rdma-core's verbs_context_ops).  NULL: not implemented;
 * the layer above substitutes a fallback that fails the documented way. */
struct sib_hca_ops {
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	/* ibv_attach_mcast / ibv_detach_mcast: 0 or errno (EINVAL: not UD, not
	 * a multicast GID or LID, or not attached) */
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	/* ibv_create_ah(3): NULL and errno (EINVAL bad port or SGID index) */
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel, int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd, struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dereg_mr)(struct ibv_mr *mr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
	int (*destroy_srq)(struct ibv_srq *srq);
	void (*free_context)(struct ibv_context *context);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask);
	struct ibv_qp *(*open_qp)(struct ibv_context *context, struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			struct ibv_qp_init_attr *init_attr);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	/* rdma-core's rereg_mr (takes the ibv_mr, as dereg_mr): 0 or an errno
	 * value; on failure the MR is unchanged. */
	int (*rereg_mr)(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
};

/*
 * What the HCA needs from its host (the verbs library talks to softibd;
 * a test fakes it).  Set once per process with sib_hca_set_host before the
 * first context.  Each hook may be called from any thread; none is on the
 * data path (the link resolves a peer once and keeps the mapping).
 */
struct sib_hca_host {
	/* Register an object (resource tracking; QPs get a QPN).  0 or errno. */
	int (*obj_create)(uint32_t dev_handle, enum sib_obj_type type, uint32_t qp_type,
			  uint32_t *handle, uint32_t *qpn);
	void (*obj_destroy)(uint32_t handle);
	/* What the link asks to find peers (link/dest.h): map a peer's
	 * inbox, and softibd's route answers.  Called by the engine thread
	 * or a slow-path verb, never on the data path. */
	struct sib_link_resolver link;
	/* A new connection on which softibd pushes events (SUBSCRIBE done,
	 * docs/events.md): its fd, or -errno.  NULL: no pushed events (a test
	 * host); contexts then only see the events their own engine raises. */
	int (*subscribe)(void);
	/* Attach (true) or detach QP object qp_handle to/from the multicast
	 * group (mgid, mlid) in softibd's membership.  0 or errno.  NULL: no
	 * multicast (a test host); the verbs then fail with EOPNOTSUPP. */
	int (*mcast)(uint32_t qp_handle, const uint8_t *mgid, uint16_t mlid, bool attach);
	/* XRC (srq.c): open the XRC domain of file `fd` on the device (fd -1:
	 * a new private one) with ibv_open_xrcd's oflags; softibd numbers
	 * domains per device and counts openers.  *handle (closed with
	 * obj_destroy) and the domain's *num.  0 or errno (EAGAIN: none and no
	 * O_CREAT; EINVAL: one exists and O_EXCL).  NULL: no XRC. */
	int (*xrcd_open)(uint32_t dev_handle, int fd, int oflags, uint32_t *handle, uint32_t *num);
	/* XRC (qp.c): obj_create for an XRC_RECV QP in the domain of the
	 * XRCD opened as xrcd_handle (xrcd_open's *handle, same device
	 * handle); softibd checks that and publishes the QP's domain in the
	 * fabric map (qp_xrcd[]), the proof xrc_fwd.c trusts.  *handle, *qpn;
	 * 0 or errno (EBADF: not such an XRCD).  NULL with xrcd_open NULL. */
	int (*xrc_tgt_create)(uint32_t dev_handle, uint32_t xrcd_handle, uint32_t *handle,
			      uint32_t *qpn);
	/* Privilege (softibd's SIB_CTL_CAPABLE, common/sib_ctl.h): 0 if the
	 * calling process holds capability cap (linux/capability.h CAP_*) as
	 * softibd reads it, else an errno.  Asked where the kernel asks
	 * capable(): CAP_NET_RAW for a controlled Q_Key (qp.c).  NULL: never
	 * (a test host). */
	int (*capable)(unsigned int cap);
	/* Direct placement's broker (softibd's DX_PUT and DX_GET,
	 * common/sib_ctl.h; docs/transport.md "Direct placement"): op
	 * SIB_CTL_DX_PUT gives pass_fd (drop: none) to softibd, which keeps it
	 * so that this process need not; SIB_CTL_DX_GET asks for a peer's,
	 * returned in *recv_fd (the caller closes it).  0 or errno (EPERM: no
	 * QP towards that peer; EMFILE/ENFILE: softibd's budget).  Slow path
	 * (context setup, reg_mr, the engine's peer cache).  NULL: no broker,
	 * no direct placement. */
	int (*dx)(uint16_t op, const struct sib_ctl_dx *x, int pass_fd, int *recv_fd);
};

void sib_hca_set_host(const struct sib_hca_host *host);

/* An opened device context's link to the fabric: its inbox, mapped by the
 * caller (softibd's OPEN_DEVICE, or test memory), and softibd's handle. */
struct sib_hca_attach {
	uint32_t dev_handle;
	uint32_t inbox_idx, inbox_gen;
	void *inbox_base;               /* SIB_INBOX_BYTES, stays the caller's */
};

/*
 * Event records on context->async_fd and on completion channel fds (the
 * part the kernel plays for a real provider).  They name objects by id and
 * generation, never by pointer: an object destroyed while its events wait
 * in the pipe is skipped when they are read (rdma-core discards them too).
 */
struct sib_comp_rec {
	uint32_t cq_id, cq_gen;
};
struct sib_async_rec {
	uint32_t type;                 /* enum ibv_event_type */
	uint32_t id;                   /* QPN, CQ table index, or port number */
	uint32_t gen;                  /* QP object handle, CQ table generation */
	uint32_t pad;
};

/* A completion channel: verbs creates it, the HCA writes sib_comp_rec
 * records to wfd when an armed CQ gets a completion. */
struct sib_comp_channel {
	struct ibv_comp_channel ibv;
	int wfd;                       /* write end of the event pipe */
	uint32_t handle;
};

struct sib_hca_device_ops {
	/* A device object for fabric map device `index` registered with
	 * generation `gen` (odd; devs[index].gen, docs/events.md) (verbs_device
	 * layout, research/abi.md 2.5); the caller fills the ibv_device names.
	 * NULL and errno on failure.  Devices are never freed. */
	struct ibv_device *(*alloc_device)(uint32_t index, uint32_t gen);
	/* A context on an attached inbox; the engine thread runs.  The caller
	 * then sets the verbs bookkeeping (ops, abi_compat).  NULL and errno. */
	struct ibv_context *(*alloc_context)(struct ibv_device *device,
					     const struct sib_hca_attach *attach);
	/* Resolve an async record: fills event and counts the delivery
	 * (destroy waits for the acks).  False: the object is gone, skip it. */
	bool (*async_event)(struct ibv_context *context, const struct sib_async_rec *rec,
			    struct ibv_async_event *event);
	/* Resolve a completion record to its CQ, counting the delivery; NULL if
	 * the CQ is gone. */
	struct ibv_cq *(*cq_event)(const struct sib_comp_rec *rec);
	/* The application is about to block (+1) in ibv_get_cq_event, or is
	 * back (-1): the engine stops napping and serves the inbox itself. */
	void (*app_blocking)(struct ibv_context *context, int delta);
	/* softibd's OPEN_DEVICE handle of a context (for CLOSE_DEVICE). */
	uint32_t (*dev_handle)(struct ibv_context *context);
	/* The fabric map device index of a device. */
	uint32_t (*device_index)(struct ibv_device *device);
	/* The registration generation a device was allocated for. */
	uint32_t (*device_gen)(struct ibv_device *device);
};

extern const struct sib_hca_ops sib_hca_ops;
extern const struct sib_hca_device_ops sib_hca_device_ops;

#endif
