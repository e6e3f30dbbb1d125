/* SPDX-License-Identifier: MIT */
/*
 * Completion queue producer side (IBA 11.4.2): the engine adds work
 * completions and raises the completion event when the CQ is armed.
 * Called with the context's progress lock held; takes cq->lock.
 */
#include <unistd.h>

#include "hca/hca.h"

static void cq_push(struct sib_cq *cq, struct ibv_comp_channel *ch, const struct ibv_wc *wc,
		    bool solicited);

unsigned int sib_cq_clean(struct sib_cq *cq, uint32_t qpn)
{
	uint32_t keep;

	pthread_spin_lock(&cq->lock);
	keep = cq->head;
	for (uint32_t i = cq->head; i != cq->tail; i++) {
		const struct ibv_wc *wc = &cq->wc[i & (cq->size - 1)];

		if (wc->qp_num == qpn)
			continue;
		if (keep != i)
			cq->wc[keep & (cq->size - 1)] = *wc;
		keep++;
	}
	qpn = cq->tail - keep;         /* removed */
	cq->tail = keep;
	pthread_spin_unlock(&cq->lock);
	return qpn;
}

void sib_cq_push(struct sib_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	struct ibv_comp_channel *ch = cq->ibv.channel;

	/* Seed 004: one CQ's completion handling never on two threads at once
	 * (progress_lock makes it so).  Checked on every push, without a locked
	 * instruction; counted, for tests. */
	if (atomic_load_explicit(&cq->in_handler, memory_order_relaxed))
		atomic_fetch_add_explicit(&cq->handler_overlaps, 1, memory_order_relaxed);
	atomic_store_explicit(&cq->in_handler, 1, memory_order_relaxed);
	cq_push(cq, ch, wc, solicited);
	atomic_store_explicit(&cq->in_handler, 0, memory_order_relaxed);
}

static void cq_push(struct sib_cq *cq, struct ibv_comp_channel *ch, const struct ibv_wc *wc,
		    bool solicited)
{
	int armed;

	pthread_spin_lock(&cq->lock);
	if (cq->tail - cq->head >= cq->size) {
		/* Overrun (IBA 11.4.2.1): the CQ is in error, tell the owner. */
		bool first = !cq->overflow;

		cq->overflow = true;
		pthread_spin_unlock(&cq->lock);
		if (first)
			sib_async_event(to_sctx(cq->ibv.context), IBV_EVENT_CQ_ERR, cq->reg_id, cq->reg_gen);
		return;
	}
	cq->wc[cq->tail & (cq->size - 1)] = *wc;
	cq->tail++;
	pthread_spin_unlock(&cq->lock);

	/* Pairs with req_notify_cq's store: either we see the arm, or the
	 * application's next poll sees this completion. */
	atomic_thread_fence(memory_order_seq_cst);
	armed = atomic_load_explicit(&cq->armed, memory_order_seq_cst);
	if (!armed || !ch)
		return;
	/* Solicited-only arming fires on solicited completions and errors. */
	if (armed == SIB_CQ_ARM_SOLICITED && !solicited && wc->status == IBV_WC_SUCCESS)
		return;
	if (!atomic_compare_exchange_strong(&cq->armed, &armed, 0))
		return;
	{
		struct sib_comp_rec rec = { .cq_id = cq->reg_id, .cq_gen = cq->reg_gen };
		struct sib_comp_channel *sch = (struct sib_comp_channel *)ch;

		/* Non-blocking: a full pipe already holds events to wake the reader. */
		if (write(sch->wfd, &rec, sizeof(rec)) != sizeof(rec))
			return;
	}
}
