/* SPDX-License-Identifier: MIT */
/*
 * Direct placement of RDMA WRITE and READ (docs/transport.md "Direct
 * placement"): registered pages moved onto shared memfds at reg_mr, an
 * export table per context that peers map read-only, and the requester's
 * copy straight into (or out of) a peer's registered pages.  The packet
 * that follows carries no payload (SIB_SLOT_F_PLACED) and the responder
 * does every check but the copy.  Not IBA: an optimisation of the memory
 * link that keeps IBA's semantics.  Locking: the region registry has its
 * own mutex (reg/dereg/fork only); the peer cache is the engine's
 * (progress_lock); export entries are single-writer seqlocks.
 */
#ifndef SIB_HCA_DIRECT_H
#define SIB_HCA_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

struct sib_context;
struct sib_mr;
struct sib_qp;
struct sib_swqe;

#define SIB_DX_MAX_MR   65536u   /* MR key indices a context exports */
#define SIB_DX_MAGIC    0x31584453u /* "SDX1" */

/*
 * One exported MR (a seqlock: seq odd while the owner writes it, 0 never
 * written).  The iova range [dlo, dhi) lies on whole pages of the memfd
 * `fd` (the region's number under which softibd keeps it, DX_GET's id:
 * the owner keeps no fd, docs/threat-model.md) starting at byte `off` of
 * it; the rest of the MR (partial head/tail pages) has no direct path.
 * fd -1: no direct path for this MR.
 */
struct sib_dx_ent {
	_Atomic uint32_t seq;
	uint32_t rkey;
	uint64_t iova, length;       /* the MR as the responder checks it */
	uint32_t access;             /* IBV_ACCESS_* */
	uint32_t pd;                 /* PD handle (softibd's) */
	int32_t fd;
	uint32_t pad;
	uint64_t off;                /* memfd offset of dlo */
	uint64_t dlo, dhi;           /* iova range backed by the memfd */
};

/* The export table's memfd ("softib-dx-<inbox>-<gen>"): a header page, the
 * QP words (two per QPN, written by the owner of the QPN: word 0, valid |
 * access << 32 | PD handle; word 1, what its receive demux checks, recv.c:
 * connected remote QPN, DLID, P_Key index and port, path MTU, global),
 * then the MR entries.  Peers map it read-only. */
#define SIB_DX_QP_VALID  (1ull << 63)
#define SIB_DX_QP_OFF    4096u                          /* word 0 of QPN q: 8 * q */
#define SIB_DX_QPP_OFF   (SIB_DX_QP_OFF + 65536u * 8u)  /* word 1 of QPN q: 8 * q */
#define SIB_DX_ENT_OFF   (SIB_DX_QPP_OFF + 65536u * 8u)
#define SIB_DX_QPP_RQPN(w)  ((uint32_t)((w) & 0xffffff))         /* dest_qpn */
#define SIB_DX_QPP_DLID(w)  ((uint16_t)(((w) >> 24) & 0xffff))   /* ah.dlid */
#define SIB_DX_QPP_PKIX(w)  ((uint32_t)(((w) >> 40) & 0xff))     /* pkey_index */
#define SIB_DX_QPP_MTU(w)   ((uint32_t)(((w) >> 48) & 0x7))      /* enum ibv_mtu */
#define SIB_DX_QPP_PORT(w)  ((uint32_t)(((w) >> 51) & 0x3))      /* port_num */
#define SIB_DX_QPP_GLOBAL   (1ull << 53)                         /* ah.is_global */
#define SIB_DX_BYTES    (SIB_DX_ENT_OFF + SIB_DX_MAX_MR * sizeof(struct sib_dx_ent))
/* The in-flight counters' memfd ("softib-dxc-<inbox>-<gen>"): one word per
 * key index, entry seq << 32 | count, that peers increment (CAS, only while
 * its seq is the entry's) around a copy; attach stores (new seq, 0), so a
 * straggler of an older entry never touches the new count.  Peers map it
 * read-write. */
#define SIB_DX_CNT_BYTES (SIB_DX_MAX_MR * 8u)
#define SIB_DX_CHUNK     (1u << 20) /* bytes copied between two seq checks */

struct sib_dx_hdr {
	uint32_t magic;              /* SIB_DX_MAGIC */
	uint32_t max_mr;             /* SIB_DX_MAX_MR */
};

/* Context: the export table and counters (when SOFTIB_DIRECT is not 0) and
 * the peer cache.  0, or a positive errno (direct placement stays off). */
int sib_dx_ctx_init(struct sib_context *ctx);
void sib_dx_ctx_fini(struct sib_context *ctx);

/*
 * MRs.  attach: move the MR's whole pages onto a memfd (when eligible and
 * the MR allows remote access) and publish its export entry.  revoke: the
 * entry goes invalid and revoke waits (bounded, 5 s) until no peer is
 * copying into or out of it.  detach: one MR less on the pages; they stay
 * on the memfd even when none is left (the application's memory; a later
 * MR over them shares the memfd again; fork children get private copies).
 * dereg: revoke, wait for local users, detach; rereg: revoke, change,
 * detach + attach (translation) or attach.
 */
void sib_dx_mr_attach(struct sib_context *ctx, struct sib_mr *mr);
void sib_dx_mr_revoke(struct sib_context *ctx, struct sib_mr *mr);
void sib_dx_mr_detach(struct sib_mr *mr);

/* vm.max_map_count as attach sees it: 0 until the first registration
 * reads /proc/sys/vm/max_map_count.  attach gives no direct path when the
 * process's mappings are within 4 of it (tests set a lower one). */
extern unsigned long sib_dx_max_map_count;

/* The QP word of the export table: PD and access flags of an RC QP in RTR,
 * RTS or SQD, and its second word, the path (remote QPN, DLID, P_Key index,
 * port, MTU); written after every modify_qp and on entering ERR, cleared
 * otherwise and at destroy. */
void sib_dx_qp_export(struct sib_qp *qp);
void sib_dx_qp_unexport(struct sib_qp *qp);

/*
 * Requester (req.c, engine context): carry out WQE w's data movement
 * through the peer's mapping: WRITE copies the local data into the peer's
 * pages, READ copies the peer's pages into the local SGEs.  True: done,
 * send the placed packet.  False: nothing usable (the peer exports
 * nothing, the key, range, access, PD or QP does not allow it, or a local
 * SGE failed): send packets as usual.
 */
bool sib_dx_place(struct sib_qp *qp, struct sib_swqe *w, bool read);

/* Test hook (tests/unit/test_hca_direct.c): NULL, or called by a
 * requester after it counted itself in and before it copies. */
extern void (*sib_dx_park_hook)(void);

#endif /* SIB_HCA_DIRECT_H */
