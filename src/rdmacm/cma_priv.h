/* SPDX-License-Identifier: MIT */
/*
 * softib's librdmacm.so.1 (docs/rdmacm.md): what its files share.  The
 * library plays rdma-core v44's librdmacm over softibd's rdma_cm commands
 * (common/sib_ctl_cm.h) instead of /dev/infiniband/rdma_cm: ids and event
 * channels are softibd handles; QPs, CQs and PDs are verbs objects of
 * softib's libibverbs, used through its public API only.
 */
#ifndef SIB_RDMACM_PRIV_H
#define SIB_RDMACM_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "common/sib_ctl.h"

#define RDMACM_EXPORT __attribute__((visibility("default")))

/* The layouts the installed clients were compiled against (research/rdmacm.md §1). */
_Static_assert(sizeof(struct rdma_cm_id) == 416, "rdma_cm_id is ABI");
_Static_assert(sizeof(struct rdma_cm_event) == 80, "rdma_cm_event is ABI");
_Static_assert(sizeof(struct rdma_event_channel) == 4, "rdma_event_channel is ABI");

/* The UDP port space's Q_Key (linux cma.c RDMA_UDP_QKEY). */
#define CMA_UDP_QKEY 0x01234567u
/* rdma_create_ep's address and route timeout (rdma-core cma.c). */
#define CMA_EP_TIMEOUT_MS 2000

/* One verbs device as the library uses it: opened on first use, with
 * rdma-core's per-device default PD (id->pd). */
struct cma_device {
	struct ibv_device *ibdev;
	struct ibv_context *ctx;      /* NULL until opened */
	struct ibv_pd *pd;            /* the default PD, allocated on first need */
	char name[IBV_SYSFS_NAME_MAX];
	uint8_t max_init_depth;       /* ibv_device_attr.max_qp_init_rd_atom */
	uint8_t max_resp_res;         /* ibv_device_attr.max_qp_rd_atom */
	int max_qp_wr, max_cqe;
};

/* An event channel: rdma_event_channel first (the user's pointer). */
struct cma_channel {
	struct rdma_event_channel ch; /* fd: the SIB_CM_CMD_CHANNEL_OPEN socket */
	uint32_t handle;              /* softibd's channel handle */
};

/* A multicast membership of an id (rdma_join_multicast). */
struct cma_mc {
	struct cma_mc *next;
	void *context;
	struct sockaddr_storage addr;
	socklen_t addr_len;
	union ibv_gid mgid;
	uint16_t mlid;
	uint32_t join_flags;          /* enum rdma_cm_mc_join_flags */
	bool attached;
};

/* An id: rdma_cm_id first (the user's pointer). */
struct cma_id {
	struct rdma_cm_id id;
	struct cma_id *next, *prev;   /* the library's list of live ids */
	struct cma_device *dev;
	uint32_t handle;              /* softibd's id handle */
	bool sync;                    /* channel NULL: a private channel, blocking calls */
	bool connect_error;           /* CONNECT_RESPONSE failed: later REJECTED/DISCONNECTED dropped */
	pthread_mutex_t mut;
	pthread_cond_t cond;
	uint32_t events_delivered;    /* events handed to the user for this id */
	uint32_t events_completed;    /* ... and acknowledged (or dropped inside) */
	uint8_t initiator_depth;      /* CONNECT_REQUEST's, the defaults of rdma_accept */
	uint8_t responder_resources;
	struct ibv_qp_init_attr *qp_init_attr; /* rdma_create_ep on a passive id */
	struct ibv_ece local_ece;
	struct cma_mc *mc_list;
};

/* What rdma_get_cm_event hands out: rdma_cm_event first. */
struct cma_event {
	struct rdma_cm_event event;
	struct cma_id *id_priv;       /* whose events_completed the ack counts */
	struct cma_mc *mc;
	uint8_t private_data[SIB_CM_PDATA_MAX];
};

/* cma.c */
int cma_init(void);                                  /* 0 or -1, errno ENODEV, ... */
int cma_call(struct sib_ctl_cm *c, int *recv_fd);    /* 0 or -1 with errno (the daemon's or transport's) */
struct cma_device *cma_dev_from_map(uint32_t dev_index, uint32_t dev_gen);
int cma_dev_open(struct cma_device *d);              /* 0 or -1/errno */
struct ibv_pd *cma_dev_pd(struct cma_device *d);
void cma_id_set_dev(struct cma_id *p, struct cma_device *d, uint8_t port_num);
void cma_apply_query(struct cma_id *p, const struct sib_ctl_cm *c);
int cma_query(struct cma_id *p);                     /* QUERY into p->id.route: 0 or -1 */
struct cma_id *cma_alloc_id(struct rdma_event_channel *ch, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qp_type);
void cma_free_id(struct cma_id *p);
void cma_id_insert(struct cma_id *p);
struct cma_id *cma_id_lookup_deliver(uint32_t handle, uint64_t uid);
void cma_id_cmd(const struct cma_id *p, struct sib_ctl_cm *c, uint32_t cmd);
int cma_complete(struct cma_id *p);                  /* sync ids: wait for the event */
void cma_complete_event(struct cma_id *p);
int cma_migrate(struct cma_id *p, struct rdma_event_channel *ch);
bool cma_channel_was_closed(int fd);
socklen_t cma_addrlen(const struct sockaddr *sa);
void cma_conn_to_wire(struct sib_cm_conn *w, const struct rdma_conn_param *p);

/* cma_qp.c */
int cma_modify_qp_rtr(struct cma_id *p, uint8_t resp_res);
int cma_modify_qp_rts(struct cma_id *p, uint8_t init_depth);
int cma_modify_qp_err(struct cma_id *p);
int cma_init_qp_attr(struct cma_id *p, struct ibv_qp_attr *attr, int *mask);
void cma_ah_from_wire(struct ibv_ah_attr *ah, const struct sib_cm_ah *w);

/* cma_event.c */
int cma_process_conn_resp(struct cma_id *p);

#endif
