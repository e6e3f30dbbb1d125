/* SPDX-License-Identifier: MIT */
/*
 * Inside direct placement (direct.h, docs/transport.md "Direct
 * placement"): what its four files share.  direct_reg.c moves registered
 * pages onto memfds and keeps them right across fork; direct.c owns each
 * context's export table (the owner's side); direct_peer.c keeps the
 * engine's cache of peers' tables and MR mappings (the requester's side);
 * direct_place.c places a WQE's data through them.  Private to src/hca.
 */
#ifndef SIB_HCA_DIRECT_INT_H
#define SIB_HCA_DIRECT_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hca/direct.h"

#define DX_PEERS 8                 /* peers' tables a context keeps mapped */
#define DX_MAPS  64                /* peers' MR memfds a context keeps mapped */
#define DX_REVOKE_WAIT_NS 5000000000ull /* as destroy waits for its users (qp.c) */
#define DX_MAP_MAX (4ull << 30)    /* longest peer MR window mapped (address space) */

/* ---- the registry of pages on memfds (direct_reg.c) ---- */

/* ---- /proc/self/maps, without malloc (also in a fork child) ---- */

struct maps_line {
	uintptr_t lo, hi;
	uint64_t off;                  /* file offset of lo */
	char perms[5];
	unsigned long ino;
	char path[64];
};

struct maps_reader {
	int fd;
	char buf[4096];
	size_t len, pos;
};


/*
 * A range of pages moved onto a memfd (page `start` at offset 0).  The
 * process keeps no fd of it (docs/threat-model.md): softibd holds it under
 * `id` (DX_PUT), peers get it from there (DX_GET), and the process knows
 * the memfd by its inode in /proc/self/maps.  refs counts the MRs on it;
 * at 0 the pages stay on the memfd (they are the application's memory
 * now, see region_put) and the region stays here so that a later reg_mr
 * over them shares it, until no mapping of the memfd is left
 * (region_prune, which tells softibd to drop its fd).
 */
struct sib_dx_region {
	uintptr_t start, end;
	uint32_t id;                   /* softibd's name of its memfd (never 0) */
	unsigned long ino;
	unsigned int refs;
	bool mapped;                   /* region_prune's mark */
	struct sib_dx_region *next;
};

extern pthread_mutex_t sib_dx_lock;      /* the registry and sib_dx_ctxs */
extern struct sib_dx *sib_dx_ctxs;       /* contexts with an export table */
/* Every context of the process, direct placement on or off: their engines
 * write the process's memory (receives, READ responses, atomics), so a
 * registration moving pages holds them all off (sib_dx_region_get). */
extern struct sib_dx *sib_dx_all;
extern unsigned int sib_dx_fork_gen;     /* MRs inherited by a fork child are not ours */
extern pthread_once_t sib_dx_once;

/* The fork handlers, once per process (direct_reg.c). */
void sib_dx_init_once(void);
/* The region over [s, e) with one more MR on it, its pages moved onto a
 * memfd if they were not; NULL when they cannot be (sib_dx_lock held). */
struct sib_dx_region *sib_dx_region_get(uintptr_t s, uintptr_t e);
/* Forget the regions none of whose memfd is mapped any more (sib_dx_lock
 * held). */
void sib_dx_region_prune(void);
/* One MR less on r (sib_dx_lock held). */
void sib_dx_region_put(struct sib_dx_region *r);
/* In a fork child (sib_dx_lock held): every context's tables become the
 * child's own (direct.c). */
void sib_dx_child_ctxs(void);

/* ---- the export table (direct.c) and the peer cache (direct_peer.c) ---- */

struct sib_dx_peer {
	uint32_t inbox, gen;
	bool none;                     /* looked, exports nothing usable */
	const uint8_t *tab;            /* SIB_DX_BYTES, read-only */
	_Atomic uint64_t *cnt;         /* SIB_DX_CNT_BYTES, read-write */
	uint64_t used;
};

/* A peer MR's window: [off, off + (dhi - dlo)) of its memfd (region fd,
 * softibd's name) rounded out to pages, mapped at base (len bytes); at =
 * base + skew + (va - dlo).  Used only while the entry still says exactly
 * fd, off, dlo, dhi (and seq).  base NULL: that entry could not be mapped
 * (softibd refused, a bad file): remembered so that the next WQE does not
 * ask softibd again. */
struct sib_dx_map {
	uint32_t inbox, gen, idx, seq;
	int32_t fd;
	uint64_t off, dlo, dhi;        /* the entry the map was made from */
	uint8_t *base;
	size_t len, skew;
	bool rw;
	uint64_t used;
};

struct sib_dx {
	bool on;                       /* SOFTIB_DIRECT is not 0, and softibd keeps our tables */
	uint8_t *tab;                  /* our export table (read-write) */
	_Atomic uint64_t *cnt;         /* our in-flight counters (seq << 32 | count) */
	uint64_t tick;
	uint64_t placed, refused;      /* WQEs placed; tries that went to packets */
	struct sib_dx_peer peers[DX_PEERS];
	struct sib_dx_map maps[DX_MAPS];
	struct sib_dx *next;           /* sib_dx_ctxs, under sib_dx_lock */
	pthread_mutex_t *progress;     /* the context's progress_lock */
	struct sib_dx *next_all;       /* sib_dx_all, under sib_dx_lock */
};

/* ---- the peer cache (direct_peer.c; the engine's, progress_lock) ---- */

/* A memfd of a peer from softibd (DX_GET of kind, id; the right: our QP
 * qp towards QPN qpn of the context of inbox, gen): the fd, -1 if refused
 * or not a file we can use (sealed against shrinking, of a size no
 * smaller than min and, if exact, equal to it); *size its size. */
int sib_dx_fetch(const struct sib_qp *qp, uint32_t inbox, uint32_t gen, uint32_t kind, uint32_t id,
		 int oflags, size_t min, bool exact, size_t *size);
/* Unmap a peer's tables / an MR window and forget the slot. */
void sib_dx_peer_drop(struct sib_dx_peer *p);
void sib_dx_map_drop(struct sib_dx_map *m);
/* Forget peer p, with its MR windows (its owner exited or lied). */
void sib_dx_peer_forget(struct sib_dx *dx, struct sib_dx_peer *p);
/* Forget whatever is cached of inbox (its generation moved on). */
void sib_dx_inbox_forget(struct sib_dx *dx, uint32_t inbox);
/* The export tables of the context at (inbox, gen), mapped at the first
 * use (fetched from softibd on the right of qp, towards qp->dest_qpn);
 * NULL when it exports nothing usable. */
struct sib_dx_peer *sib_dx_peer_get(struct sib_dx *dx, const struct sib_qp *qp, uint32_t inbox,
				    uint32_t gen);
/* Entry idx of p's table, read under its seqlock into *v; false if torn,
 * unwritten or invalid. */
bool sib_dx_ent_read(const struct sib_dx_peer *p, uint32_t idx, struct sib_dx_ent *v);
/* Drop p's windows of entry idx made from a generation before seq. */
void sib_dx_maps_stale(struct sib_dx *dx, const struct sib_dx_peer *p, uint32_t idx, uint32_t seq);
/* A window on the MR of entry *v (read-write if rw), mapped at the first
 * use; NULL when it cannot be. */
struct sib_dx_map *sib_dx_map_get(struct sib_dx *dx, const struct sib_qp *qp, struct sib_dx_peer *p,
				  uint32_t idx, const struct sib_dx_ent *v, bool rw);

#endif /* SIB_HCA_DIRECT_INT_H */
