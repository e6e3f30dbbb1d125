// SPDX-License-Identifier: MIT
/*
 * Per-client budgets of softibd (docs/daemon.md "Budgets"): no one client
 * can deny service to another by holding what softibd has only so much
 * of.  A client is a process (the SO_PEERCRED pid, told apart from a later
 * process with the same pid by its start time in /proc/<pid>/stat, so a
 * reused pid never inherits another's usage); its connections share one
 * budget.  Each resource that costs softibd an fd or a fixed table slot
 * (connections, MAI channels, inboxes, XRC domains on a file, direct
 * placement's memfds given with DX_PUT) has
 *   - a maximum, from softibd's fd limit (sibd_budget_init),
 *   - a client's quota: --client-share percent of the maximum, beyond
 *     which the client is refused with EMFILE (its own "RLIMIT_NOFILE"),
 *   - a reserve at the top of the maximum that only a client holding
 *     fewer than NEWCOMER of the resource may take (ENFILE otherwise, the
 *     daemon's table being full), so that `softib status`, ibv_devinfo
 *     and perfquery still get in when others hold everything they may.
 * Usage is counted from the live objects at the moment of the request, so
 * nothing can leak from the books when a client dies.  Single-threaded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/mai_chan.h"
#include "daemon/softibd.h"
#include "daemon/ucma.h"

#define NEWCOMER      4   /* what a client holding little may still take from the reserve */
#define QUOTA_FLOOR   16  /* a share never below this (an MPI rank opens a handful) */

static const char *const res_name[SIBD_RES_NUM] = {
	[SIBD_RES_CONN] = "connections", [SIBD_RES_CHAN] = "channels",
	[SIBD_RES_INBOX] = "inboxes", [SIBD_RES_XRCD_FILE] = "xrcd_files",
	[SIBD_RES_DX_FD] = "dx_fds", [SIBD_RES_PAIR] = "pair_rings",
	[SIBD_RES_CM_CHAN] = "cm_channels", [SIBD_RES_CM_ID] = "cm_ids",
};

const char *sibd_res_name(enum sibd_res r)
{
	return res_name[r];
}

void sibd_budget_set(struct sibd *d, enum sibd_res r, uint32_t max)
{
	struct sibd_budget *b = &d->budget;
	uint32_t q;

	b->max[r] = max;
	b->reserve[r] = max / 8 > NEWCOMER ? max / 8 : (max > NEWCOMER ? NEWCOMER : max / 2);
	q = (uint32_t)((uint64_t)max * b->share / 100);
	if (q < QUOTA_FLOOR)
		q = QUOTA_FLOOR;
	if (q > max - b->reserve[r])
		q = max - b->reserve[r];
	b->quota[r] = q;
}

/* Start time of pid (clock ticks since boot, /proc/<pid>/stat field 22), 0 if unknown. */
static unsigned long long proc_start(pid_t pid)
{
	char path[64], buf[512], *p;
	unsigned long long start = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	/* after ") ": state, then fields 4..21, then starttime */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d"
			 " %*d %*d %*d %llu", &start) != 1)
		return 0;
	return start;
}

struct sibd_proc *sibd_proc_get(struct sibd *d, pid_t pid)
{
	unsigned long long start = proc_start(pid);
	struct sibd_proc *p;

	for (p = d->procs; p; p = p->next)
		if (p->pid == pid && p->start == start) {
			p->refs++;
			return p;
		}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->start = start;
	p->refs = 1;
	p->next = d->procs;
	d->procs = p;
	return p;
}

void sibd_proc_put(struct sibd *d, struct sibd_proc *p)
{
	if (!p || --p->refs)
		return;
	for (struct sibd_proc **pp = &d->procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	free(p);
}

/* What p holds of r now, counted from the live objects. */
uint32_t sibd_budget_used(const struct sibd *d, const struct sibd_proc *p, enum sibd_res r)
{
	uint32_t n = 0;

	if (r == SIBD_RES_CONN)
		return p->conns;
	if (r == SIBD_RES_CHAN)
		return sibd_mai_chans_of(d, p);
	if (r == SIBD_RES_CM_CHAN)
		return sibd_ucma_chans_of(d, p);
	if (r == SIBD_RES_CM_ID)
		return sibd_ucma_ids_of(d, p);
	for (const struct sibd_client *c = d->clients; c; c = c->next)
		if (c->proc == p)
			n += r == SIBD_RES_INBOX ? c->inboxes : r == SIBD_RES_DX_FD ? c->ndx :
			     r == SIBD_RES_PAIR ? c->pairs : c->xrcd_files;
	return n;
}

/* What softibd holds of r in all. */
static uint32_t total(const struct sibd *d, enum sibd_res r)
{
	switch (r) {
	case SIBD_RES_CONN: return d->nclients;
	case SIBD_RES_CHAN: return sibd_mai_chans_of(d, NULL);
	case SIBD_RES_INBOX: return d->inboxes_used;
	case SIBD_RES_DX_FD: return d->dx_fds;
	case SIBD_RES_PAIR: return d->pairs_fds;
	case SIBD_RES_CM_CHAN: return sibd_ucma_chans_of(d, NULL);
	case SIBD_RES_CM_ID: return sibd_ucma_ids_of(d, NULL);
	default: return d->xrcd_files;
	}
}

/* Count and say (once per client) why p was refused. */
static int refuse(struct sibd *d, struct sibd_proc *p, enum sibd_res r, int err, uint32_t mine,
		  uint32_t all)
{
	const struct sibd_budget *b = &d->budget;

	p->refused++;
	d->budget.refused[r]++;
	if (p->warned)
		return err;
	p->warned = true;
	if (err == -EMFILE)
		sibd_log("client pid %d: refused one more of %s: it holds %u, its share (--client-share "
			 "%u%% of %u); said once per client", (int)p->pid, res_name[r], mine, b->share,
			 b->max[r]);
	else
		sibd_log("client pid %d: refused one more of %s: %u of %u held, the last %u are kept "
			 "for clients that hold fewer than %u; said once per client", (int)p->pid,
			 res_name[r], all, b->max[r], b->reserve[r], NEWCOMER);
	return err;
}

int sibd_budget_take(struct sibd *d, struct sibd_proc *p, enum sibd_res r)
{
	const struct sibd_budget *b = &d->budget;
	uint32_t mine, all;
	int full = r == SIBD_RES_INBOX ? -ENOSPC : -ENFILE;

	if (!p)
		return 0; /* a caller outside the daemon's books (unit tests) */
	mine = sibd_budget_used(d, p, r);
	all = total(d, r);
	if (all >= b->max[r] || (all >= b->max[r] - b->reserve[r] && mine >= NEWCOMER))
		return refuse(d, p, r, full, mine, all);
	if (mine >= b->quota[r])
		return refuse(d, p, r, -EMFILE, mine, all);
	return 0;
}

void sibd_budget_status(const struct sibd *d, FILE *f)
{
	const struct sibd_budget *b = &d->budget;
	unsigned int r;

	for (const struct sibd_proc *p = d->procs; p; p = p->next) {
		fprintf(f, "budget pid=%d", (int)p->pid);
		for (r = 0; r < SIBD_RES_NUM; r++)
			fprintf(f, " %s=%u", res_name[r], sibd_budget_used(d, p, r));
		fprintf(f, " refused=%llu\n", (unsigned long long)p->refused);
	}
	fprintf(f, "budgets share=%u", b->share);
	for (r = 0; r < SIBD_RES_NUM; r++)
		fprintf(f, " %s=%u max_%s=%u quota_%s=%u reserve_%s=%u refused_%s=%llu", res_name[r],
			total(d, r), res_name[r], b->max[r], res_name[r], b->quota[r], res_name[r],
			b->reserve[r], res_name[r], (unsigned long long)b->refused[r]);
	fputc('\n', f);
}
