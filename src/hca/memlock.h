/* SPDX-License-Identifier: MIT */
/*
 * Registered memory accounted against RLIMIT_MEMLOCK, as uverbs accounts
 * pinned pages (seed 003 "Memory pinning"; the kernel's ib_umem_get): each
 * MR counts the pages its [addr, addr + length) spans, once per MR (two
 * MRs over the same pages count them twice, as the kernel's pinned_vm),
 * per process.  Past the limit, reg_mr fails with ENOMEM unless the
 * process holds CAP_IPC_LOCK.  SOFTIB_MEMLOCK=0 turns the accounting off
 * (docs/transport.md "Registered memory and RLIMIT_MEMLOCK").
 */
#ifndef SIB_HCA_MEMLOCK_H
#define SIB_HCA_MEMLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Pin the pages of [addr, addr + length): 0, or ENOMEM (over
 * RLIMIT_MEMLOCK without CAP_IPC_LOCK; said once per process on stderr). */
int sib_memlock_pin(const void *addr, size_t length);
/* Give back what sib_memlock_pin(addr, length) took. */
void sib_memlock_unpin(const void *addr, size_t length);
/* Pages pinned by this process's MRs now (0 when the accounting is off). */
uint64_t sib_memlock_pinned(void);

#endif
