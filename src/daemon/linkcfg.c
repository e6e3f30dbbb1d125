// SPDX-License-Identifier: MIT
/*
 * softibd and the link layer (docs/link.md): the link counters each context
 * keeps in its inbox header page (struct sib_link_stats), printed by the
 * status report.  softibd maps that page read-only for the moment it reads
 * it and trusts nothing in it: a bad magic skips the line, numbers are
 * only printed.  Single-threaded (the event loop).
 */
#include <stdio.h>
#include <sys/mman.h>

#include "daemon/linkcfg.h"
#include "daemon/softibd.h"
#include "link/link.h"

void sibd_link_status(struct sibd *d, FILE *f)
{
	for (uint32_t i = 0; i < SIB_MAX_INBOXES; i++) {
		const struct sib_shm_inbox_desc *desc = &d->shm->inboxes[i];
		const struct sib_link_stats *st;
		uint32_t dev = desc->dev_index, flags;
		void *page;

		if (d->inbox[i].fd < 0)
			continue;
		page = mmap(NULL, SIB_INBOX_HDR_BYTES, PROT_READ, MAP_SHARED, d->inbox[i].fd, 0);
		if (page == MAP_FAILED)
			continue;
		st = (const struct sib_link_stats *)((const char *)page + SIB_LINK_STATS_OFF);
		if (atomic_load_explicit(&st->magic, memory_order_acquire) == SIB_LINK_STATS_MAGIC) {
			flags = atomic_load_explicit(&st->flags, memory_order_relaxed);
			fprintf(f, "link inbox=%u pid=%d dev=%s capture=%u faults=%u", i,
				d->inbox[i].owner ? (int)d->inbox[i].owner->pid : 0,
				dev < d->shm->num_devices && dev < SIB_MAX_DEVICES ? d->shm->devs[dev].name : "?",
				!!(flags & SIB_LINK_STAT_CAPTURE), !!(flags & SIB_LINK_STAT_FAULTS));
			for (int c = 0; c < SIB_LC_MAX; c++)
				fprintf(f, " %s=%llu", sib_link_counter_name[c],
					(unsigned long long)atomic_load_explicit(&st->c[c], memory_order_relaxed));
			fputc('\n', f);
		}
		munmap(page, SIB_INBOX_HDR_BYTES);
	}
}
