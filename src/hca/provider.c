/* SPDX-License-Identifier: MIT */
/*
 * The software HCA as a provider: its one const ops table (the shape of
 * rdma-core's verbs_context_ops, sorted), devices and contexts, PDs, MRs
 * (IBA 10.6: register, reregister, deregister; keys index << 8 | key byte,
 * STYLE 6.8), the device and port queries, and the async event records
 * (what uverbs does for a real provider).  It never calls the layer above;
 * the host hooks come in through sib_hca_set_host.  Locking: objects live
 * in objtabs (hca.h); dereg/rereg wait for MR references through the
 * table and never take the progress lock.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fabric_view.h"
#include "hca/direct.h"
#include "hca/memlock.h"
#include "hca/mw.h"
#include "hca/srq.h"
#include "hca/transport.h"

#define SIB_DESTROY_WAIT_NS 5000000000ull

const struct sib_hca_host *sib_host;

void sib_hca_set_host(const struct sib_hca_host *host)
{
	sib_host = host;
}

/* ---- devices and contexts ---- */

/* CPUs the system may run (sysconf _SC_NPROCESSORS_CONF), at least 1. */
static int sib_num_comp_vectors(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	return n < 1 ? 1 : n > 65536 ? 65536 : (int)n;
}

static struct ibv_device *sib_alloc_device(uint32_t index, uint32_t gen)
{
	struct sib_device *d = calloc(1, sizeof(*d));

	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	d->index = index;
	d->gen = gen;
	d->ibv.node_type = IBV_NODE_CA;
	d->ibv.transport_type = IBV_TRANSPORT_IB;
	return &d->ibv;
}

static uint32_t sib_device_index(struct ibv_device *device)
{
	return ((struct sib_device *)device)->index;
}

static uint32_t sib_device_gen(struct ibv_device *device)
{
	return ((struct sib_device *)device)->gen;
}

static struct ibv_context *sib_alloc_context(struct ibv_device *device,
					     const struct sib_hca_attach *at)
{
	struct sib_context *ctx;
	struct ibv_context *c;
	const char *v = getenv("SOFTIB_VCRC"), *ic = getenv("SOFTIB_ICRC");
	int pfd[2], rc;

	if (!sib_host || !sib_fabric) {
		errno = ENODEV;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	c = &ctx->vctx.context;
	ctx->dev = (struct sib_device *)device;
	ctx->dev_handle = at->dev_handle;
	ctx->inbox_idx = at->inbox_idx;
	ctx->inbox_gen = at->inbox_gen;
	ctx->inbox_base = at->inbox_base;
	ctx->inbox_size = SIB_INBOX_BYTES;
	sib_ring_attach(&ctx->inbox, at->inbox_base);
	ctx->vcrc = v && *v == '1';
	ctx->icrc = ic && *ic == '1';
	ctx->pid = getpid();
	rc = sib_key_seed(ctx);
	if (rc)
		fprintf(stderr, "softib: getrandom failed (%s): memory keys are guessable\n", strerror(rc));
	c->device = device;
	/* One per configured CPU, as rxe (num_possible_cpus): UCX 1.13 passes a
	 * CPU id as comp_vector (the lowest of the worker's CPU mask, 0 by
	 * default; later UCX takes it modulo num_comp_vectors).  create_cq
	 * rejects comp_vector >= this with EINVAL (ib_uverbs_create_cq). */
	c->num_comp_vectors = sib_num_comp_vectors();
	pthread_mutex_init(&c->mutex, NULL);
	pthread_mutex_init(&ctx->progress_lock, NULL);
	pthread_mutex_init(&ctx->mcast_lock, NULL);

	rc = sib_objtab_init(&ctx->qps, "qp", 2, SIB_MAX_QPN);
	if (rc)
		goto err_free;
	rc = sib_objtab_init(&ctx->mrs, "mr", 1, SIB_MR_DIR * SIB_MR_PAGE);
	if (rc)
		goto err_qps;
	rc = sib_objtab_init(&ctx->srqs, "srq", 1, SIB_MAX_SRQ);
	if (rc)
		goto err_mrs;
	rc = sib_mw_ctx_init(ctx);
	if (rc)
		goto err_mrs;
	if (pipe2(pfd, O_CLOEXEC)) {
		rc = errno;
		goto err_mws;
	}
	c->async_fd = pfd[0];
	ctx->async_wfd = pfd[1];
	(void)fcntl(ctx->async_wfd, F_SETFL, O_NONBLOCK);
	/* Direct placement (direct.c): off, not failed, if its memfds cannot
	 * be made; everything goes through packets then. */
	rc = sib_dx_ctx_init(ctx);
	if (rc && !ctx->dx)
		goto err_pipe;
	rc = sib_engine_start(ctx);
	if (rc)
		goto err_pipe;
	rc = sib_events_attach(ctx); /* pushed port and device events (events.c) */
	if (rc)
		goto err_engine;
	return c;
err_engine:
	sib_engine_stop(ctx);
err_pipe:
	sib_dx_ctx_fini(ctx);
	close(pfd[0]);
	close(pfd[1]);
err_mws:
	sib_mw_ctx_fini(ctx);
err_mrs:
	sib_objtab_fini(&ctx->srqs);
	sib_objtab_fini(&ctx->mrs);
err_qps:
	sib_objtab_fini(&ctx->qps);
err_free:
	free(ctx);
	errno = rc;
	return NULL;
}

static void sib_free_context(struct ibv_context *context)
{
	struct sib_context *ctx = to_sctx(context);

	sib_events_detach(ctx); /* no event reaches it from now on */
	sib_engine_stop(ctx);
	if (getenv("SOFTIB_STATS")) {
		fprintf(stderr, "softib %s: rx_drop:", ctx->dev->ibv.name);
		for (unsigned int i = 0; i < SIB_RX_DROP_COUNT; i++)
			fprintf(stderr, " %s=%llu", sib_rx_drop_name(i), (unsigned long long)ctx->rx_drop[i]);
		fprintf(stderr,
			" tx_no_dest=%llu tx_ring_full=%llu rx_skipped_slots=%llu inbox_dropped=%llu "
			"ack_timeouts=%llu rnr_naks=%llu seq_naks=%llu port_down_drops=%llu ud_hoq_drops=%llu "
			"engine_sleeps=%llu spin_caught=%llu spin_quiet=%llu spin_busy=%llu\n",
			(unsigned long long)ctx->tx_no_dest, (unsigned long long)ctx->tx_ring_full,
			(unsigned long long)ctx->rx_skipped_slots,
			(unsigned long long)atomic_load(&ctx->inbox.hdr->dropped),
			(unsigned long long)ctx->ack_timeouts, (unsigned long long)ctx->rnr_naks,
			(unsigned long long)ctx->seq_naks, (unsigned long long)ctx->port_down_drops,
			(unsigned long long)ctx->ud_hoq_drops, (unsigned long long)ctx->eng.sleeps,
			(unsigned long long)ctx->eng.spin_caught, (unsigned long long)ctx->eng.spin_quiet,
			(unsigned long long)ctx->eng.spin_busy);
	}
	close(context->async_fd);
	close(ctx->async_wfd);
	sib_dx_ctx_fini(ctx);
	sib_objtab_fini(&ctx->qps);
	sib_objtab_fini(&ctx->mrs);
	sib_mw_ctx_fini(ctx);
	sib_mcast_ctx_fini(ctx);
	sib_xfwd_ctx_fini(ctx);
	sib_objtab_fini(&ctx->srqs);
	free(ctx);
}

static uint32_t sib_dev_handle(struct ibv_context *context)
{
	return to_sctx(context)->dev_handle;
}

static void sib_app_blocking(struct ibv_context *context, int delta)
{
	struct sib_context *ctx = to_sctx(context);

	/* Blocking: let the engine sleep on the inbox futex (woken by
	 * packets) instead of napping. */
	atomic_fetch_add(&ctx->eng.app_blocked, delta);
	if (delta > 0)
		sib_engine_kick(ctx);
}

/* ---- async events: one sib_async_rec per event on a pipe ---- */

void sib_async_event(struct sib_context *ctx, enum ibv_event_type type, uint32_t id, uint32_t gen)
{
	struct sib_async_rec r = { .type = type, .id = id, .gen = gen };

	/* Non-blocking: a consumer that never reads loses events, not progress. */
	if (write(ctx->async_wfd, &r, sizeof(r)) != sizeof(r))
		return;
}

static bool sib_async_decode(struct ibv_context *context, const struct sib_async_rec *r,
			     struct ibv_async_event *event)
{
	struct sib_context *ctx = to_sctx(context);

	memset(event, 0, sizeof(*event));
	event->event_type = r->type;
	if (sib_is_qp_event(r->type)) {
		uint64_t h;
		struct sib_qp *qp = sib_objtab_get_index(&ctx->qps, r->id, &h);

		if (!qp)
			return false; /* the QP was destroyed: drop its event */
		if (qp->obj_handle == r->gen)
			atomic_fetch_add(&qp->events_reported, 1);
		else
			qp = NULL;    /* a later QP with the same QPN */
		sib_objtab_put(&ctx->qps, h);
		if (!qp)
			return false;
		event->element.qp = &qp->ibv.qp_base;
	} else if (r->type == IBV_EVENT_CQ_ERR) {
		struct sib_cq *cq = sib_cq_async_deliver(r->id, r->gen);

		if (!cq)
			return false;
		event->element.cq = (struct ibv_cq *)&cq->ibv;
	} else if (r->type == IBV_EVENT_SRQ_LIMIT_REACHED || r->type == IBV_EVENT_SRQ_ERR) {
		struct sib_srq *srq = sib_srq_async_deliver(ctx, r->id, r->gen);

		if (!srq)
			return false;
		event->element.srq = &srq->ibv;
	} else {
		event->element.port_num = (int)r->id;
	}
	return true;
}

/* ---- protection domains ---- */

static struct ibv_pd *sib_alloc_pd(struct ibv_context *context)
{
	struct sib_context *ctx = to_sctx(context);
	struct sib_pd *pd = calloc(1, sizeof(*pd));
	int rc;

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	rc = sib_host->obj_create(ctx->dev_handle, SIB_OBJ_PD, 0, &pd->ibv.handle, NULL);
	if (rc) {
		free(pd);
		errno = rc;
		return NULL;
	}
	pd->ibv.context = context;
	return &pd->ibv;
}

/* EBUSY while MRs or QPs use it (the kernel's rule in rdma-core's stack). */
static int sib_dealloc_pd(struct ibv_pd *ibpd)
{
	struct sib_pd *pd = (struct sib_pd *)ibpd;

	if (atomic_load(&pd->usecnt))
		return EBUSY;
	sib_host->obj_destroy(pd->ibv.handle);
	free(pd);
	return 0;
}

/* ---- memory regions ---- */

struct sib_mr *sib_mr_get(struct sib_context *ctx, uint32_t key, uint64_t *handle)
{
	struct sib_mr *mr = sib_objtab_get_index(&ctx->mrs, key >> 8, handle);

	/* (1) index live, (2) key byte matches */
	if (mr && mr->ibv.lkey != key) {
		sib_objtab_put(&ctx->mrs, *handle);
		mr = NULL;
	}
	return mr;
}

/* ib_uverbs_reg_mr's rules, then the MR; iova is what remote peers address. */
static struct ibv_mr *sib_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
				 uint64_t iova, int access_in)
{
	struct sib_context *ctx = to_sctx(ibpd->context);
	struct sib_pd *pd = (struct sib_pd *)ibpd;
	unsigned int access = (unsigned int)access_in & ~IBV_ACCESS_OPTIONAL_RANGE;
	struct sib_mr *mr;
	uint64_t h;
	int rc;

	rc = sib_mr_access_check(access);
	if (!rc && (access & IBV_ACCESS_ON_DEMAND))
		rc = EOPNOTSUPP; /* no ODP (device caps say so) */
	if (!rc && (length == 0 || (uint64_t)length > UINT64_MAX - iova))
		rc = EINVAL;
	if (rc) {
		errno = rc;
		return NULL;
	}
	rc = sib_memlock_pin(addr, length); /* ib_umem_get: ENOMEM past RLIMIT_MEMLOCK */
	if (rc) {
		errno = rc;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		rc = ENOMEM;
		goto err_unpin;
	}
	rc = sib_host->obj_create(ctx->dev_handle, SIB_OBJ_MR, 0, &mr->handle, NULL);
	if (rc)
		goto err_free;
	rc = sib_objtab_reserve(&ctx->mrs, &h);
	if (rc) {
		rc = rc == ENOSPC ? ENOMEM : rc;
		goto err_obj;
	}
	mr->tab_handle = h;
	mr->ibv.context = ibpd->context;
	mr->ibv.pd = ibpd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	mr->ibv.handle = mr->handle;
	/* The key byte changes on every registration, so a stale key for a
	 * reused index fails the (2) key check. */
	mr->ibv.lkey = mr->ibv.rkey = SIB_OBJTAB_INDEX(h) << 8 | sib_key_byte(ctx);
	mr->range.pd = ibpd->handle;
	mr->range.iova = iova;
	mr->range.length = length;
	mr->range.access = access;
	atomic_fetch_add(&pd->usecnt, 1);
	sib_dx_mr_attach(ctx, mr); /* pages onto a memfd, export entry (direct.c) */
	sib_objtab_publish(&ctx->mrs, h, mr);
	return &mr->ibv;
err_obj:
	sib_host->obj_destroy(mr->handle);
err_free:
	free(mr);
err_unpin:
	sib_memlock_unpin(addr, length);
	errno = rc;
	return NULL;
}

/*
 * IBA 10.6 (memory registration): after deregistration returns, the region's keys
 * are invalid and no access through them happens.  The MR leaves the table
 * (its generation moves, so every lookup and every responder that kept it
 * between packets sees it gone), then dereg waits, bounded, until the last
 * in-flight user put its reference, poking the engine so that a responder
 * holding it notices now rather than at its next packet.
 */
static int sib_dereg_mr(struct ibv_mr *ibmr)
{
	struct sib_context *ctx = to_sctx(ibmr->context);
	struct sib_mr *mr = to_smr(ibmr);
	int rc = sib_objtab_unpublish(&ctx->mrs, mr->tab_handle);

	if (rc == ENOENT)
		return EINVAL; /* not ours (a stale MR) */
	sib_dx_mr_revoke(ctx, mr); /* no peer copies into it from here on */
	/* ETIMEDOUT: a user never let go: the MR is unreachable all the same,
	 * so finish the deregistration and leak only its memory (the slot
	 * stays retired; an EBUSY here would pin the PD forever). */
	rc = sib_objtab_wait(&ctx->mrs, mr->tab_handle, SIB_DESTROY_WAIT_NS, sib_engine_poke, ctx);
	if (!rc)
		sib_objtab_release(&ctx->mrs, mr->tab_handle);
	if (!rc) /* (a user that never let go keeps the pages shared) */
		sib_dx_mr_detach(mr); /* one MR less on its memfd pages */
	atomic_fetch_sub(&((struct sib_pd *)ibmr->pd)->usecnt, 1);
	sib_memlock_unpin(ibmr->addr, ibmr->length);
	sib_host->obj_destroy(mr->handle);
	if (!rc)
		free(mr);
	return 0;
}

/*
 * ib_uverbs_rereg_mr's rules and the provider's part of ibv_rereg_mr:
 * flags 0 EINVAL, flags outside TRANSLATION | PD | ACCESS EOPNOTSUPP;
 * CHANGE_ACCESS: ib_check_mr_access (EINVAL; ON_DEMAND EOPNOTSUPP, no ODP);
 * CHANGE_PD: a PD of the MR's context, else EINVAL; CHANGE_TRANSLATION:
 * [addr, addr + length) non-empty and not wrapping, else EINVAL, and the
 * iova becomes addr (libibverbs passes hca_va = addr).  Everything is
 * checked before anything changes: on failure the MR is as it was.
 * The L_Key and R_Key stay the same (as rxe, and mlx5 when it can rewrite
 * the mkey in place): the index and key byte keep naming this MR, so the
 * application need not send peers a new R_Key.  A memory window bound to
 * the MR stays bound; an access through it must still fall inside the
 * MR's new range (mw.c).
 *
 * No packet uses the old translation, access or PD once rereg returns:
 * the MR is taken out of the table (its generation moves), rereg waits
 * until every in-flight user put its reference (the per-packet lookups
 * and copies, and a responder that kept the MR for a WRITE or READ under
 * way, which sees the generation moved and lets go), changes the range
 * while nobody can see it, and publishes the same MR again under a new
 * generation.  A WRITE or READ that spans the rereg fails its next packet
 * with an R_Key violation; a request arriving during the rereg itself
 * finds no MR and fails the same way, as on an HCA that revokes a key
 * while it rewrites it.  The range needs no lock of its own: it changes
 * only while no reference exists.  EBUSY (MR unchanged) if a user never
 * lets go within the destroy bound.  The PD's usecnt moves with
 * CHANGE_PD (new +1 first, then old -1, as uverbs).
 */
static int sib_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd, void *addr,
			size_t length, int access_in)
{
	struct sib_context *ctx = to_sctx(ibmr->context);
	struct sib_mr *mr = to_smr(ibmr);
	struct sib_pd *old_pd = (struct sib_pd *)ibmr->pd, *new_pd = NULL;
	struct sib_mr_range r = mr->range;
	uint64_t h = mr->tab_handle;
	unsigned int access;
	int rc;

	if (!flags)
		return EINVAL;
	if ((unsigned int)flags & ~(unsigned int)IBV_REREG_MR_FLAGS_SUPPORTED)
		return EOPNOTSUPP;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
		access = (unsigned int)access_in & ~IBV_ACCESS_OPTIONAL_RANGE;
		rc = sib_mr_access_check(access);
		if (!rc && (access & IBV_ACCESS_ON_DEMAND))
			rc = EOPNOTSUPP;
		if (rc)
			return rc;
		r.access = access;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		if (!ibpd || ibpd->context != ibmr->context)
			return EINVAL;
		new_pd = (struct sib_pd *)ibpd;
		r.pd = ibpd->handle;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		if (!length || (uint64_t)length > UINT64_MAX - (uintptr_t)addr)
			return EINVAL;
		r.iova = (uintptr_t)addr;
		r.length = length;
	}
	/* a new translation pins its pages before the old ones go, as the
	 * kernel's rereg builds the new umem first */
	rc = flags & IBV_REREG_MR_CHANGE_TRANSLATION ? sib_memlock_pin(addr, length) : 0;
	if (rc)
		return rc;
	if (sib_objtab_unpublish(&ctx->mrs, h)) {
		if (flags & IBV_REREG_MR_CHANGE_TRANSLATION)
			sib_memlock_unpin(addr, length);
		return EINVAL; /* not ours (a stale MR) */
	}
	sib_dx_mr_revoke(ctx, mr); /* no peer copies into the old MR from here on */
	rc = sib_objtab_wait(&ctx->mrs, h, SIB_DESTROY_WAIT_NS, sib_engine_poke, ctx);
	if (!rc) {
		if (new_pd)
			atomic_fetch_add(&new_pd->usecnt, 1);
		mr->range = r;
		if (new_pd)
			mr->ibv.pd = ibpd;
		if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
			sib_memlock_unpin(mr->ibv.addr, mr->ibv.length);
			mr->ibv.addr = addr;
			mr->ibv.length = length;
		}
	} else if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		sib_memlock_unpin(addr, length); /* EBUSY: the MR keeps its old pages */
	}
	/* The export entry again: the new range's pages (the old ones stay
	 * on their memfd, see sib_dx_mr_detach), access and PD. */
	sib_dx_mr_attach(ctx, mr);
	sib_objtab_republish(&ctx->mrs, h, mr, &mr->tab_handle);
	if (rc)
		return EBUSY;
	if (new_pd)
		atomic_fetch_sub(&old_pd->usecnt, 1);
	return 0;
}

/* ---- queries ---- */

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
	a->max_qp = SIB_LIM_QP; /* the limits: hca.h */
	a->max_qp_wr = SIB_MAX_QP_WR;
	/* Each one true: the responder sends RNR NAKs; sys_image_guid is set;
	 * softibd pushes port events; SQD->SQD may change the port (qp.c);
	 * the receive demux counts P_Key and Q_Key violations per port
	 * (recv.c, query_port's bad_pkey_cntr / qkey_viol_cntr); modify_qp
	 * takes and checks IBV_QP_CUR_STATE where IBA allows it (qp_state.c). */
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_CHANGE_PHY_PORT |
			      IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |
			      IBV_DEVICE_CURR_QP_STATE_MOD | IBV_DEVICE_XRC; /* XRC: srq.c */
	/* Memory windows (mw.c): type 1, and type 2B (a type 2 window is
	 * checked against the QP that bound it and its PD, IBA 10.6.7.2). */
	a->device_cap_flags |= IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	a->max_mw = SIB_MW_MAX - 1;
	a->max_sge = SIB_MAX_SGE;
	a->max_sge_rd = SIB_MAX_SGE;
	a->max_cq = SIB_LIM_CQ;
	a->max_cqe = SIB_MAX_CQE;
	a->max_mr = SIB_LIM_MR;
	a->max_pd = SIB_LIM_PD;
	a->max_qp_rd_atom = SIB_MAX_RD_ATOMIC;
	a->max_res_rd_atom = SIB_MAX_RD_ATOMIC * SIB_LIM_QP;
	a->max_qp_init_rd_atom = SIB_MAX_RD_ATOMIC;
	/* CPU atomics on the target memory (atomic.c): atomic with respect to
	 * every QP, device and process on the host and to the CPU's own
	 * atomics, which is GLOB's promise and more than HCA's.  HCA is
	 * reported: true, and the value with which UCX uses device atomics
	 * (UCX < 1.16 enables them only for IBV_ATOMIC_HCA, uct/ib/base/
	 * ib_md.c; docs/transport.md "Atomics"). */
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ah = SIB_MAX_AH;
	/* softibd's limits (daemon/mcast.c); a context attaches at most 1024 */
	a->max_mcast_grp = SIB_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = SIB_MAX_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach = 1024;
	a->max_srq = SIB_LIM_SRQ;
	a->max_srq_wr = SIB_MAX_SRQ_WR;
	a->max_srq_sge = SIB_MAX_SGE;
	a->max_pkeys = SIB_PKEY_TBL_LEN;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = sib_fabric_num_ports(sd);
}

/* Fills attr_size bytes (at least the ibv_device_attr part); EINVAL for
 * input bits or a size softib does not know (rdma-core query_device_ex). */
static int sib_query_device_ex(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	if (sib_ctx_fatal(to_sctx(context)))
		return EIO; /* rdma-core after DEVICE_FATAL: the kernel answers EIO */
	memset(&a, 0, sizeof(a));
	fill_device_attr(to_sctx(context), &a.orig_attr);
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	if (attr_size > sizeof(a))
		memset((char *)attr + sizeof(a), 0, attr_size - sizeof(a));
	return 0;
}

/* The full struct ibv_port_attr: 0, EINVAL for a port the device lacks,
 * EAGAIN when softibd's seqlock never settles (common/fabric_view.h), or
 * EIO after DEVICE_FATAL (as rdma-core's kernel answers). */
static int sib_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *a)
{
	uint32_t dev = to_sctx(context)->dev->index;
	struct sib_port_counters *c;
	struct sib_shm_port p;
	int rc;

	if (sib_ctx_fatal(to_sctx(context)))
		return EIO;
	rc = -sib_fabric_port_read(sib_fview.map, sib_fview.num_devices, dev, port_num, &p);
	if (rc)
		return rc;
	c = sib_fabric_view_cntr(&sib_fview, dev, port_num);
	memset(a, 0, sizeof(*a));
	a->state = p.state;
	a->max_mtu = p.max_mtu;
	a->active_mtu = p.active_mtu;
	a->gid_tbl_len = SIB_GID_TBL_LEN;
	a->port_cap_flags = p.cap_flags;
	a->max_msg_sz = SIB_MAX_MSG_SZ;
	/* counted by this process's receive path (fabric_view.h) */
	a->bad_pkey_cntr = (uint32_t)atomic_load_explicit(&c->bad_pkey, memory_order_relaxed);
	a->qkey_viol_cntr = (uint32_t)atomic_load_explicit(&c->qkey_viol, memory_order_relaxed);
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

/* ---- the tables ---- */

const struct sib_hca_ops sib_hca_ops = {
	.alloc_mw = sib_alloc_mw,
	.alloc_pd = sib_alloc_pd,
	.attach_mcast = sib_attach_mcast,
	.close_xrcd = sib_close_xrcd,
	.create_ah = sib_create_ah,
	.bind_mw = sib_bind_mw,
	.create_cq = sib_create_cq,
	.create_cq_ex = sib_create_cq_ex,
	.create_qp = sib_create_qp,
	.create_qp_ex = sib_create_qp_ex,
	.create_srq = sib_create_srq,
	.create_srq_ex = sib_create_srq_ex,
	.dealloc_mw = sib_dealloc_mw,
	.dealloc_pd = sib_dealloc_pd,
	.dereg_mr = sib_dereg_mr,
	.destroy_ah = sib_destroy_ah,
	.destroy_cq = sib_destroy_cq,
	.destroy_qp = sib_destroy_qp,
	.detach_mcast = sib_detach_mcast,
	.destroy_srq = sib_destroy_srq,
	.free_context = sib_free_context,
	.get_srq_num = sib_get_srq_num,
	.modify_qp = sib_modify_qp,
	.modify_srq = sib_modify_srq,
	.open_xrcd = sib_open_xrcd,
	.poll_cq = sib_poll_cq,
	.post_recv = sib_post_recv,
	.post_send = sib_post_send,
	.post_srq_recv = sib_post_srq_recv,
	.query_device_ex = sib_query_device_ex,
	.query_port = sib_query_port,
	.query_qp = sib_query_qp,
	.query_srq = sib_query_srq,
	.reg_mr = sib_reg_mr,
	.req_notify_cq = sib_req_notify_cq,
	.rereg_mr = sib_rereg_mr,
	.resize_cq = sib_resize_cq,
};

const struct sib_hca_device_ops sib_hca_device_ops = {
	.alloc_device = sib_alloc_device,
	.alloc_context = sib_alloc_context,
	.async_event = sib_async_decode,
	.cq_event = sib_cq_event,
	.app_blocking = sib_app_blocking,
	.dev_handle = sib_dev_handle,
	.device_index = sib_device_index,
	.device_gen = sib_device_gen,
};
