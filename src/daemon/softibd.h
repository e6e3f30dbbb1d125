/* SPDX-License-Identifier: MIT */
/*
 * softibd internals shared by its files: the daemon state (struct sibd), the
 * per-connection context (struct sibd_client), and the prototypes between
 * softibd.c (process, socket, event loop), fabmap.c (the fabric map and the
 * fabric-wide resources in it), client.c (commands) and status.c.
 * Single-threaded: everything here belongs to the event loop; no locks.
 */
#ifndef SIB_DAEMON_SOFTIBD_H
#define SIB_DAEMON_SOFTIBD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/un.h>

#include "common/sib_ctl.h"
#include "common/sib_shm.h"
#include "daemon/handle.h"
#include "subnet/subnet_api.h"
#include "softib/mai.h"

#define SIBD_MAX_CLIENTS   1024    /* connections; more are refused */
#define SIBD_CLIENT_SHARE  25      /* a client's quota of each budget, percent (--client-share) */
#define SIBD_XRCD_FILES_MAX 4096   /* XRC domains on files (an fd each), if the fd limit allows */
#define SIBD_MAX_HANDLES   SIB_CTL_MAX_HANDLES /* devices + objects per connection; then ENOMEM */
#define SIBD_OBJ_DEVICE    0       /* sibd_obj.type of an OPEN_DEVICE handle */

#define SIBD_DX_FDS_MAX    65536   /* direct placement's memfds (dx.c), if the fd limit allows */
#define SIBD_PAIR_FDS_MAX  16384   /* pair rings waiting for their receiver (pair.c), likewise */

struct sibd_out;
struct sibd_dxfd;
struct mai_mad;

/* budget.c: what softibd holds for clients, each with a maximum, a
 * client's quota and a reserve for newcomers (docs/daemon.md "Budgets"). */
enum sibd_res {
	SIBD_RES_CONN,                  /* connections: a socket and a queued reply fd each */
	SIBD_RES_CHAN,                  /* MAI channels: a socketpair end each */
	SIBD_RES_INBOX,                 /* OPEN_DEVICE inboxes: a memfd each */
	SIBD_RES_XRCD_FILE,             /* XRC domains on a file: the file's fd each */
	SIBD_RES_DX_FD,                 /* direct placement's memfds (DX_PUT, dx.c): an fd each */
	SIBD_RES_PAIR,                  /* pair rings not taken by their receiver yet (pair.c),
	                                 * charged to the sender's process: an fd each */
	SIBD_RES_CM_CHAN,               /* rdma_cm event channels (ucma.c): a socketpair end each */
	SIBD_RES_CM_ID,                 /* rdma_cm ids (ucma.c): a table slot each */
	SIBD_RES_NUM,
};

struct sibd_budget {
	unsigned int share;             /* --client-share: a client's quota, percent of max */
	uint32_t max[SIBD_RES_NUM];
	uint32_t quota[SIBD_RES_NUM];   /* one client's most; one more is EMFILE */
	uint32_t reserve[SIBD_RES_NUM]; /* the last ones: only for clients holding little */
	uint64_t refused[SIBD_RES_NUM];
};

/* A client process: every connection it made (SO_PEERCRED pid) shares one budget. */
struct sibd_proc {
	struct sibd_proc *next;
	pid_t pid;
	unsigned long long start;       /* /proc/<pid>/stat starttime: tells a reused pid apart */
	uint32_t refs;                  /* its connections */
	uint32_t conns;                 /* the same, counted for the budget */
	uint64_t refused;               /* requests refused for its budget */
	bool warned;                    /* said so in the log */
};

/* A connection's subscription to pushed events (events.c owns it). */
struct sibd_ev_sub {
	bool on;                        /* SUBSCRIBE seen */
	uint32_t mask;                  /* 1 << SIB_EV_* wanted */
	uint32_t seq;                   /* hdr.seq of the last event queued */
	uint32_t lost;                  /* dropped since the last OVERFLOW marker */
	uint64_t dropped;               /* dropped in all */
};

/* One connection: one context, as one open of /dev/infiniband/uverbsN. */
struct sibd_client {
	struct sibd_client *prev, *next;
	int fd;
	pid_t pid;                      /* SO_PEERCRED at accept */
	struct sibd_proc *proc;         /* its process's budget (budget.c) */
	uint32_t inboxes;               /* inboxes it holds (open, not unregistered devices) */
	uint32_t xrcd_files;            /* its XRCD handles opened on a file */
	bool hello;                     /* a HELLO with our ABI was seen */
	bool dead;                      /* release once the current event is done */
	struct sib_htable ht;           /* handles -> struct sibd_obj */
	uint32_t count[SIB_OBJ_TYPE_MAX]; /* [SIBD_OBJ_DEVICE] = open devices */
	int in_fd;                      /* an fd passed with the command being run, or -1 */
	struct sibd_out *out_head, *out_tail; /* replies the socket did not take yet */
	uint32_t out_len;               /* messages in that queue */
	struct sibd_ev_sub ev;          /* pushed events (events.c) */
	struct sibd_dxfd *dx;           /* memfds it gave with DX_PUT (dx.c) */
	uint32_t ndx, dx_cap;           /* used and allocated entries of dx */
	uint32_t pairs;                 /* pair rings it made that wait for their receiver */
};

/*
 * A fabric-wide inbox slot.  This is the authoritative record; fabmap.c
 * copies gen, pid and dev_index into shm->inboxes[i] and never reads them back.
 */
struct sibd_inbox {
	int fd;                         /* memfd, -1 = free */
	struct sibd_client *owner;
	uint32_t gen;                   /* odd = live; bumped on open and close */
	uint32_t dev_index;
};

struct sibd_counters {
	uint64_t commands;
	uint64_t bad_commands;          /* EINVAL, EPROTO, EBADF, ENODEV replies */
	uint64_t connections;
	uint64_t refused;               /* other uid, or too many clients */
	uint64_t events;                /* events queued to subscribers */
	uint64_t events_dropped;        /* not queued: the subscriber was too slow */
	uint64_t devices_added, devices_removed, port_changes;
	uint64_t mcast_quota;           /* attaches refused: a connection's share is used */
	uint64_t dx_refused;            /* DX_GETs refused: the asker had no right (EPERM) */
	uint64_t dx_given;              /* DX_GETs answered with an fd */
};

struct sibd {
	/* configuration */
	const char *topology;           /* file, NULL = embedded default */
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	long long idle_ms;              /* < 0: never idle out */

	/*
	 * The fabric and its authoritative state, private to softibd: devices
	 * and port attributes, inboxes, QPN allocation.  The shared map is
	 * written from these (fabmap.c is its only writer) and never read back:
	 * nothing a client does to the map can change what softibd believes.
	 */
	struct sib_subnet *sn;          /* the managed fabric (src/subnet; opaque, used
	                                   through subnet_api.h): sibd_subnet_attach */
	bool sm_external;               /* --sm external, given to sn when it is made */
	struct sib_fab_node *dev_node[SIB_MAX_DEVICES]; /* devs[i] -> its node */
	uint32_t num_devices;
	struct sib_shm_device devs[SIB_MAX_DEVICES];
	struct sibd_inbox inbox[SIB_MAX_INBOXES];
	uint32_t inbox_next, inboxes_used;
	struct sibd_pair *pairs;        /* [sender][receiver] inboxes (pair.c) */
	uint32_t pairs_pending[SIB_MAX_INBOXES]; /* per receiver: rings not taken */
	uint32_t pairs_fds;             /* fds softibd holds for them */
	uint64_t pairs_made, pairs_refused;
	bool pass_owned;                /* the command's pass_fd is closed after its reply */
	uint64_t qpn_bits[SIB_MAX_QPN / 64]; /* bit q set = QPN q given out */
	uint32_t qpn_next, qpns_used;
	uint32_t port_seq;              /* the map's seqlock count we last stored */
	struct sibd_mcast *mcast;       /* multicast groups (mcast.c), NULL until the first attach */

	/* the shared map: sealed F_SEAL_FUTURE_WRITE, so only our mapping writes */
	int shm_fd;
	size_t shm_size;
	struct sib_fabric_shm *shm;

	/* event loop (softibd.c) */
	int lock_fd, listen_fd, ep_fd, sig_fd;
	int reserve_fd;                 /* /dev/null, given up to refuse a connection at EMFILE */
	long long accept_resume_ms;     /* accepting paused until then (EMFILE, no reserve); 0 = not */
	bool fd_warned;                 /* logged running out of fds since the last accept */
	struct sibd_client *clients, *clients_tail;
	unsigned int nclients;
	struct sibd_proc *procs;        /* client processes (budget.c) */
	struct sibd_budget budget;
	long long start_ms, idle_since_ms;
	bool stop;
	struct sibd_counters ctr;

	/* XRC domains (xrcd.c) */
	struct sibd_xrcd *xrcds;
	uint32_t xrcd_next;             /* the last domain number handed out */
	uint32_t xrcd_files;            /* domains on a file: each holds its fd */
	uint32_t dx_fds;                /* direct placement's memfds held (dx.c) */

	/* MADs: MAI channels and the MAD router (mai_chan.c, mad_router.c) */
	struct sibd_mai *mai;
	struct sibd_issm *issm;         /* ISSM FIFOs (issm.c) */
	struct sibd_ucma *ucma;         /* the rdma_cm's channels and ids (ucma.c) */
#define SIBD_CM_IPS_MAX 64
	const char *cm_ips[SIBD_CM_IPS_MAX]; /* --ip DEV:PORT=ADDR[/PREFIX] (ucma.c) */
	unsigned int ncm_ips;

	/* routes of the data path (route.c) */
	uint32_t route_gen;             /* the map's route_gen, as last stored */
};

/* xrcd.c: XRC domains, one per device and file, counted by opener handles.
 * open: the domain of file fd (st_dev, st_ino) on device dev_index, or a
 * new private one for fd -1: *num, a reference taken; -EAGAIN (none and no
 * O_CREAT), -EINVAL (one and O_EXCL), -EBADF, -ENOMEM, -ENOSPC.  hold:
 * one more reference on a live domain (an XRC_RECV QP's, so that its
 * number is not reused while the QP publishes it).  put: drop one
 * reference; the last frees the domain. */
struct sibd_xrcd;
#define SIBD_XRCD_PER_CONN 256 /* open domain handles per connection: -ENOSPC beyond */
int sibd_xrcd_open(struct sibd *d, uint32_t dev_index, int fd, uint32_t oflags, uint32_t *num);
void sibd_xrcd_hold(struct sibd *d, uint32_t dev_index, uint32_t num);
void sibd_xrcd_put(struct sibd *d, uint32_t dev_index, uint32_t num);

/* subnet_host.c: softibd as the subnet's host (subnet/subnet_api.h):
 * makes d->sn with its table registered and d->sm_external given, before
 * the fabric is loaded.  0 or -ENOMEM. */
int sibd_subnet_attach(struct sibd *d);

/* sma_publish.c: port pn of n changed (SIB_CHG_* in what), old_lid/old_lmc
 * its LID range before: if n is a verbs device, its private devs[] port
 * and the map (LID map, ports under the seqlock) are rewritten from the
 * PortInfo and subscribers hear LID_CHANGE, SM_CHANGE or PORT_CHANGE (the
 * verbs library raises IBV_EVENT_LID_CHANGE, SM_CHANGE,
 * PORT_ACTIVE/PORT_ERR).  Before the map exists (start) only the private
 * state changes. */
void sibd_sma_publish(struct sibd *d, struct sib_fab_node *n, uint8_t pn, unsigned int what,
		      uint16_t old_lid, uint8_t old_lmc);
/* The verbs device slot of node n, or -1 (a switch, a fabric-only CA). */
int sibd_sma_dev_index(const struct sibd *d, const struct sib_fab_node *n);
/* The verbs map's view of CA port fp, from its PortInfo (fabmap.c calls it). */
struct sib_shm_port;
void sibd_sma_port_to_shm(struct sib_shm_port *p, const struct sib_fab_port *fp);
/* route.c: forwarding changed (an LFT, MFT, LID or port state): the map's
 * route_gen moves so that cached paths are resolved again. */
void sibd_route_changed(struct sibd *d);
/* linkcfg.c: data-path counters the clients' contexts keep for CA port
 * port_num of verbs device dev_index (their link stats in the inbox header
 * page), added into *sum (packets, data in 4-byte words, discards,
 * errors).  Numbers a client wrote: only ever added up and reported, never
 * acted on. */
void sibd_data_counters(struct sibd *d, uint32_t dev_index, uint8_t port_num,
			struct sib_pma_counters *sum);

/* budget.c.  budget_set: maximum max of r, its quota and reserve from
 * budget.share.  proc_get: the process of pid, a reference taken (NULL:
 * out of memory); proc_put drops it.  budget_take: may p hold one more of
 * r?  0, -EMFILE (its quota), -ENFILE (softibd's maximum, or its reserve
 * while p holds enough; inboxes: -ENOSPC), counted and logged once per
 * process; p NULL: 0.  The caller then creates the object, which counts
 * from then on.  budget_used: what p holds of r now. */
void sibd_budget_set(struct sibd *d, enum sibd_res r, uint32_t max);
const char *sibd_res_name(enum sibd_res r);
struct sibd_proc *sibd_proc_get(struct sibd *d, pid_t pid);
void sibd_proc_put(struct sibd *d, struct sibd_proc *p);
int sibd_budget_take(struct sibd *d, struct sibd_proc *p, enum sibd_res r);
uint32_t sibd_budget_used(const struct sibd *d, const struct sibd_proc *p, enum sibd_res r);
void sibd_budget_status(const struct sibd *d, FILE *f);

/* softibd.c */
void sibd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
long long sibd_now_ms(void);

/* fabmap.c */
int sibd_fabric_load(struct sibd *d);
int sibd_map_create(struct sibd *d);
void sibd_map_publish_ports(struct sibd *d);
void sibd_map_destroy(struct sibd *d);
/* Private state only: devs[nd] (all but gen) and dev_node[nd] from CA node n. */
void sibd_map_set_device(struct sibd *d, uint32_t nd, struct sib_fab_node *n);
/*
 * Writers of the map from the private state (never read back).  put_*
 * go between write_begin and write_end (the seqlock port_seq);
 * publish_device is one such section for devs[idx]; publish_gen stores
 * devs[idx].gen and num_devices with release, after the slot is filled.
 */
void sibd_map_write_begin(struct sibd *d);
void sibd_map_write_end(struct sibd *d);
void sibd_map_put_device(struct sibd *d, uint32_t idx);
void sibd_map_put_lids(struct sibd *d, uint32_t lid, uint32_t n, uint16_t entry);
void sibd_map_put_routes(struct sibd *d, uint32_t idx, bool route);
void sibd_map_publish_device(struct sibd *d, uint32_t idx);
void sibd_map_publish_gen(struct sibd *d, uint32_t idx);
int sibd_inbox_alloc(struct sibd *d, struct sibd_client *owner, uint32_t dev_index,
		     uint32_t *inbox);
void sibd_inbox_free(struct sibd *d, uint32_t inbox);
uint32_t sibd_inbox_gen(const struct sibd *d, uint32_t inbox);
int sibd_qpn_alloc(struct sibd *d, uint32_t inbox, uint32_t dev_index, uint32_t xrcd, uint32_t *qpn);
void sibd_qpn_free(struct sibd *d, uint32_t qpn);

/* client.c */
#define SIBD_REPLIED 1 /* a command handler's return: it sent its replies itself */
/* A new connection of process p (its reference passes to the client). */
struct sibd_client *sibd_client_new(struct sibd *d, int fd, struct sibd_proc *p);
void sibd_client_event(struct sibd *d, struct sibd_client *c, uint32_t events);
void sibd_client_release(struct sibd *d, struct sibd_client *c);

void sibd_client_send(struct sibd *d, struct sibd_client *c, const struct sib_ctl_msg *m,
		      int pass_fd);
void sibd_client_device_gone(struct sibd *d, struct sibd_client *c, uint32_t dev_index);

/* events.c: pushed events (docs/events.md) */
int sibd_cmd_subscribe(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
		       int *pass_fd);
void sibd_event_push(struct sibd *d, const struct sib_ctl_event *ev);
/* c's output queue drained: send the OVERFLOW marker of events it lost
 * since the last one, if any (the last event may have been dropped). */
void sibd_event_drained(struct sibd *d, struct sibd_client *c);
void sibd_event_fill(struct sibd *d, struct sib_ctl_event *ev, enum sib_event_type type,
		     uint32_t dev_index, uint8_t port_num);
void sibd_event_port(struct sibd *d, enum sib_event_type type, uint32_t dev_index,
		     uint8_t port_num);

/* registry.c: devices and ports at run time */
bool sibd_dev_present(const struct sibd *d, uint32_t dev_index);
int sibd_cmd_device_add(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			int *pass_fd);
int sibd_cmd_device_remove(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			   int *pass_fd);
int sibd_cmd_port_set(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
		      int *pass_fd);

/* client.c: a UD/RC/... QP of c by handle: its enum ibv_qp_type and the
 * inbox of its device context.  0, -EBADF (not c's QP) or -EIO (device gone). */
int sibd_qp_info(struct sibd_client *c, uint32_t handle, uint32_t *qp_type, uint32_t *inbox);
/* Is qpn a QP of a connection of process p?  0 and its device in *dev,
 * or -ENOENT (ucma.c: CONNECT/ACCEPT name the caller's own QP). */
int sibd_proc_qpn(struct sibd *d, const struct sibd_proc *p, uint32_t qpn, uint32_t *dev);
/* The inbox of c's device context `handle`: 0, -EBADF (not c's device)
 * or -EIO (the device was removed). */
int sibd_dev_inbox(struct sibd_client *c, uint32_t handle, uint32_t *inbox);

/* fabmap.c: a zero-filled memfd of size bytes that clients may map and
 * write (inbox pages, pair rings, capture rings) but never resize
 * (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), close-on-exec.  The fd, or
 * -errno. */
int sibd_sealed_memfd(const char *name, size_t size);

/* Pair rings (pair.c, src/link/pair.h).  init: 0 or -ENOMEM. */
int sibd_pairs_init(struct sibd *d);
void sibd_pairs_fini(struct sibd *d);
/* Context `inbox` closed: every pair it was in goes (fds closed). */
void sibd_pairs_inbox_gone(struct sibd *d, uint32_t inbox);
int sibd_cmd_pair_open(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd);
int sibd_cmd_pair_accept(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd);
/* May c's context dev_handle map the page of context (r, rgen)?  Only if
 * it is paired with it as its sender: 0, -EPERM, -ESTALE, -EBADF, -EIO. */
int sibd_pair_check_doorbell(struct sibd *d, struct sibd_client *c, uint32_t dev_handle, uint32_t r,
			     uint32_t rgen);

/* dx.c: direct placement's memfds, kept for their owners and handed to
 * peers that hold the right (common/sib_ctl.h DX_PUT, DX_GET;
 * docs/daemon.md "Direct placement's memfds"). */
int sibd_cmd_dx_put(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd);
int sibd_cmd_dx_get(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd);
/* The memfds c gave for the context of inbox (its device closed or
 * removed) go; inbox UINT32_MAX: all of c's (the connection closes). */
void sibd_dx_release(struct sibd *d, struct sibd_client *c, uint32_t inbox);

/* mcast.c: multicast groups (docs/daemon.md) */
int sibd_cmd_mcast(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd);
/* The QP's attachments end (destroyed, or its connection closed). */
void sibd_mcast_qp_gone(struct sibd *d, struct sibd_client *c, uint32_t qp_handle);
/* Groups with members; *attachments: QPs attached in all. */
uint32_t sibd_mcast_groups(const struct sibd *d, uint32_t *attachments);
void sibd_mcast_fini(struct sibd *d);

/* mgmt_query.c: MGMT_QUERY, libibumad's CA and port attributes (docs/umad.md) */
int sibd_cmd_mgmt_query(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			int *pass_fd);
/* The ISSM FIFO path of device dev port `port`: 0 or -ENAMETOOLONG. */
int sibd_issm_path(const struct sibd *d, const char *dev, uint32_t port, char *buf, size_t len);

/* issm.c: holding a port's ISSM FIFO open sets its IsSM (docs/umad.md).
 * init: the inotify fd (0 or -errno); fd: it, for the event loop; event:
 * read it; ensure: the FIFO at path of (dev_index, port) exists and is
 * watched (0, -ENOSPC, -errno of mkfifo/inotify); device_gone: the
 * device's FIFOs unwatched and removed (a device added again gets new
 * ones); fini: FIFOs removed. */
int sibd_issm_init(struct sibd *d);
void sibd_issm_device_gone(struct sibd *d, uint32_t dev_index);
int sibd_issm_fd(const struct sibd *d);
void sibd_issm_event(struct sibd *d);
int sibd_issm_ensure(struct sibd *d, uint32_t dev_index, uint8_t port, const char *path);
void sibd_issm_fini(struct sibd *d);

/* route.c: the data path's routes (SIB_CTL_ROUTE, docs/subnet.md;
 * sibd_route_changed is declared in sma.h).  route_answer: fill r
 * (dev_index, port, dlid in) as SIB_CTL_ROUTE answers; 0 or -EINVAL (no
 * such present device or port). */
int sibd_route_answer(struct sibd *d, struct sib_ctl_route *r);
int sibd_cmd_route(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd);
/* PORT_SET down|up naming a switch by its topology id ("S-..."): the link
 * of that switch port goes down or comes back through the port state
 * machine (sma.h), a cable pulled in the middle of paths.  0, -ENODEV (no
 * such switch), -EINVAL (port, or not down/up), -ENOLINK (no link). */
int sibd_port_set_switch(struct sibd *d, const struct sib_ctl_dev_cmd *dc);

/* peer.c: the privileges of the process at the other end of a connection
 * (docs/threat-model.md "Privilege") */
struct sibd_peer_cred {
	uid_t uid;                      /* SO_PEERCRED */
	pid_t pid;                      /* SO_PEERCRED: the process that connected */
	uint64_t cap_eff;               /* its effective capabilities now (bit =
	                                 * linux/capability.h CAP_*), 0 if that
	                                 * process is gone or in another user ns */
};
/* Fill *pc for control connection fd.  0 or -errno (not a socket). */
int sibd_peer_cred(int fd, struct sibd_peer_cred *pc);
/* Has the peer of fd capability cap (0..63) in its effective set now, as
 * the kernel's capable() would answer it?  False on any doubt. */
bool sibd_peer_capable(int fd, unsigned int cap);

/* status.c */
int sibd_status_text(struct sibd *d, char **text, size_t *len);

#endif
