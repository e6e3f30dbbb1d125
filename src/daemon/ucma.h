/* SPDX-License-Identifier: MIT */
/*
 * softibd's ucma (ucma.c; docs/rdmacm.md): the SIB_CTL_CM commands of
 * common/sib_ctl_cm.h run on the subnet's rdma_cm (subnet/cma.h), event
 * channels (socketpairs softibd writes SIB_CTL_CM_EVENT messages to), ids
 * as handles of their connection, budgets, cleanup when a connection or a
 * channel closes.  Plays the kernel's drivers/infiniband/core/ucma.c.
 * Single-threaded (the event loop).
 */
#ifndef SIB_DAEMON_UCMA_H
#define SIB_DAEMON_UCMA_H

#include <stdint.h>
#include <stdio.h>

struct sibd;
struct sibd_client;
struct sibd_proc;
struct sib_ctl_msg;

#define SIBD_UCMA_IDS_MAX       4096   /* ids in all; a process's quota is --client-share of it */
#define SIBD_UCMA_CHANS_MAX     1024   /* channels (an fd each), if the fd limit allows */
#define SIBD_UCMA_QUEUE_MAX     1024   /* events waiting in softibd per channel before new
                                        * CONNECT_REQUESTs for it are rejected (others are
                                        * never dropped: each id has a bounded number) */

/* Start (after the subnet is loaded): the rdma_cm context and the
 * channels' epoll fd.  0 or -errno. */
int sibd_ucma_init(struct sibd *d);
void sibd_ucma_fini(struct sibd *d);
/* The fd the event loop polls for every channel, or -1. */
int sibd_ucma_poll_fd(const struct sibd *d);
/* Its readiness: flush channels that take output again, reap closed ones. */
void sibd_ucma_event(struct sibd *d);
/* The rdma_cm's timers (route queries, the CM's) and events: call every
 * loop turn; returns the wait (ms, -1 none) shortened to the next deadline. */
int sibd_ucma_timeout(struct sibd *d, int timeout);
void sibd_ucma_timers(struct sibd *d);
/* Deliver the rdma_cm's queued events (after a routed MAD or a command). */
void sibd_ucma_dispatch(struct sibd *d);
/* Device dev_index is unregistered (before its node goes): its ids get
 * DEVICE_REMOVAL. */
void sibd_ucma_device_gone(struct sibd *d, uint32_t dev_index);
/* Connection c closes: its ids (connected ones send DREQ, handshakes REJ)
 * and channels go. */
void sibd_ucma_client_gone(struct sibd *d, struct sibd_client *c);
/* The SIB_CTL_CM command. */
int sibd_cmd_cm(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd);
/* The IPADDR command (sib_ctl.h): a CA port's IP addresses in the
 * rdma_cm's table. */
int sibd_cmd_ipaddr(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd);
/* Budget counts of process p (all if NULL): ids, channels. */
uint32_t sibd_ucma_ids_of(const struct sibd *d, const struct sibd_proc *p);
uint32_t sibd_ucma_chans_of(const struct sibd *d, const struct sibd_proc *p);
/* "ucma" and "rdma_cm" lines of the status report. */
void sibd_ucma_status(struct sibd *d, FILE *f);

#endif
