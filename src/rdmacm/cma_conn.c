/* SPDX-License-Identifier: MIT */
/*
 * librdmacm's connection calls: bind, address and route resolution,
 * listen, connect, accept, reject, disconnect, establish, notify, options,
 * ports, ECE and multicast (rdma-core v44 librdmacm/cma.c semantics; the
 * man pages rdma_bind_addr .. rdma_leave_multicast).  Each is one softibd
 * command (common/sib_ctl_cm.h); a synchronous id then blocks for its event.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <infiniband/ib.h>

#include "rdmacm/cma_priv.h"

#define CMA_PDATA_CONNECT_TCP 56u   /* man rdma_connect: REQ 92 - CMA header 36 */
#define CMA_PDATA_CONNECT_UDP 180u  /* SIDR_REQ 216 - 36 */
#define CMA_PDATA_ACCEPT_RC   196u  /* REP */
#define CMA_PDATA_ACCEPT_UD   136u  /* SIDR_REP */
#define CMA_PDATA_REJECT      148u  /* REJ */
#define CMA_PDATA_DREQ        220u
#define CMA_REJ_CONSUMER      28u   /* IBA 12.6.7.2 Consumer Reject */
#define CMA_REJ_VENDOR_OPTION 35u   /* Vendor option not supported (rdma_reject_ece) */

static int set_errno(int e)
{
	errno = e;
	return -1;
}

static int put_addr(uint8_t *dst, uint16_t *len, const struct sockaddr *sa)
{
	socklen_t l = cma_addrlen(sa);

	if (!l || l > SIB_CM_ADDR_LEN)
		return set_errno(EINVAL);
	memcpy(dst, sa, l);
	*len = (uint16_t)l;
	return 0;
}

RDMACM_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *p = (struct cma_id *)id;
	struct sib_ctl_cm c;

	if (!id || !addr)
		return set_errno(EINVAL);
	cma_id_cmd(p, &c, SIB_CM_CMD_BIND);
	if (put_addr(c.src_addr, &c.src_len, addr))
		return -1;
	if (cma_call(&c, NULL))
		return -1;
	cma_apply_query(p, &c);
	return 0;
}

/*
 * The source address the caller's own IP routing picks for dst, port 0:
 * the kernel's rdma_resolve_ip fills an unbound id's source with
 * ip_route_output_key's saddr, in the caller's network namespace, which
 * softibd cannot see; a connected UDP socket asks the same routing here.
 * false for AF_IB, multicast, or no route.
 */
static bool routed_src(const struct sockaddr *dst, struct sockaddr_storage *out)
{
	struct sockaddr_storage d;
	socklen_t len = cma_addrlen(dst);
	bool ok = false;
	int fd;

	if (dst->sa_family == AF_INET) {
		if (IN_MULTICAST(ntohl(((const struct sockaddr_in *)dst)->sin_addr.s_addr)))
			return false;
	} else if (dst->sa_family == AF_INET6) {
		if (IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)dst)->sin6_addr))
			return false;
	} else {
		return false;
	}
	memcpy(&d, dst, len);
	if (d.ss_family == AF_INET)
		((struct sockaddr_in *)&d)->sin_port = htons(9); /* any non-zero port */
	else
		((struct sockaddr_in6 *)&d)->sin6_port = htons(9);
	fd = socket(d.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	memset(out, 0, sizeof(*out));
	if (!connect(fd, (struct sockaddr *)&d, len) &&
	    !getsockname(fd, (struct sockaddr *)out, &len) && out->ss_family == d.ss_family) {
		if (out->ss_family == AF_INET)
			((struct sockaddr_in *)out)->sin_port = 0;
		else
			((struct sockaddr_in6 *)out)->sin6_port = 0;
		ok = true;
	}
	close(fd);
	return ok;
}

static int resolve_addr_cmd(struct cma_id *p, const struct sockaddr *src, const struct sockaddr *dst,
			    int timeout_ms)
{
	struct sib_ctl_cm c;

	cma_id_cmd(p, &c, SIB_CM_CMD_RESOLVE_ADDR);
	if (src && src->sa_family && put_addr(c.src_addr, &c.src_len, src))
		return -1;
	if (put_addr(c.dst_addr, &c.dst_len, dst))
		return -1;
	c.timeout_ms = (uint32_t)timeout_ms;
	return cma_call(&c, NULL);
}

/*
 * rdma_resolve_addr (man page): without a source address, the one the
 * caller's routing picks for the destination (routed_src), so that
 * rdma_get_local_addr names it after ADDR_RESOLVED as on Linux and the
 * port owning it is the source port (a process in a network namespace
 * whose IPoIB interface has softib1's address resolves from softib1); a
 * routed address that no port owns (EADDRNOTAVAIL) falls back to none:
 * softibd's table then picks the port (docs/rdmacm.md "Addresses").
 */
RDMACM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				    struct sockaddr *dst_addr, int timeout_ms)
{
	struct cma_id *p = (struct cma_id *)id;
	struct sockaddr_storage r;
	int ret;

	if (!id || !dst_addr || timeout_ms < 0)
		return set_errno(EINVAL);
	if ((!src_addr || !src_addr->sa_family) && routed_src(dst_addr, &r)) {
		ret = resolve_addr_cmd(p, (struct sockaddr *)&r, dst_addr, timeout_ms);
		if (ret && errno == EADDRNOTAVAIL)
			ret = resolve_addr_cmd(p, NULL, dst_addr, timeout_ms);
	} else {
		ret = resolve_addr_cmd(p, src_addr, dst_addr, timeout_ms);
	}
	if (ret)
		return -1;
	/* rdma_get_peer_addr works before the event, as with rdma-core */
	memset(&id->route.addr.dst_storage, 0, sizeof(id->route.addr.dst_storage));
	memcpy(&id->route.addr.dst_storage, dst_addr, cma_addrlen(dst_addr));
	return cma_complete(p);
}

RDMACM_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *p = (struct cma_id *)id;
	struct sib_ctl_cm c;

	if (!id || timeout_ms < 0)
		return set_errno(EINVAL);
	cma_id_cmd(p, &c, SIB_CM_CMD_RESOLVE_ROUTE);
	c.timeout_ms = (uint32_t)timeout_ms;
	if (cma_call(&c, NULL))
		return -1;
	return cma_complete(p);
}

RDMACM_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id *p = (struct cma_id *)id;
	struct sib_ctl_cm c;

	if (!id)
		return set_errno(EINVAL);
	cma_id_cmd(p, &c, SIB_CM_CMD_LISTEN);
	c.backlog = backlog > 0 ? (uint32_t)backlog : 0;
	if (cma_call(&c, NULL))
		return -1;
	(void)cma_query(p); /* the bound address (a wildcard attaches no device) */
	return 0;
}

/* rdma_conn_param -> the wire form (depths already checked). */
void cma_conn_to_wire(struct sib_cm_conn *w, const struct rdma_conn_param *prm)
{
	memset(w, 0, sizeof(*w));
	if (!prm)
		return;
	w->qp_num = prm->qp_num & 0xffffff;
	w->responder_resources = prm->responder_resources;
	w->initiator_depth = prm->initiator_depth;
	w->flow_control = prm->flow_control;
	w->retry_count = prm->retry_count & 7;
	w->rnr_retry_count = prm->rnr_retry_count & 7;
	w->srq = prm->srq;
}

static int put_pdata(struct sib_ctl_cm *c, const void *data, size_t len, size_t max)
{
	if (len > max || (len && !data))
		return set_errno(EINVAL);
	if (len)
		memcpy(c->pdata, data, len);
	c->pdata_len = (uint32_t)len;
	return 0;
}

/* rdma-core ucma_valid_param: depths within the device's limits (0xff: the limit). */
static int valid_param(struct cma_id *p, const struct rdma_conn_param *prm)
{
	if (!p->dev)
		return set_errno(EINVAL);
	if (prm->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	    prm->initiator_depth > p->dev->max_init_depth)
		return set_errno(EINVAL);
	if (prm->responder_resources != RDMA_MAX_RESP_RES &&
	    prm->responder_resources > p->dev->max_resp_res)
		return set_errno(EINVAL);
	return 0;
}

RDMACM_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *p = (struct cma_id *)id;
	struct rdma_conn_param prm = { 0 };
	size_t max;
	struct sib_ctl_cm c;

	if (!id)
		return set_errno(EINVAL);
	if (conn_param)
		prm = *conn_param;
	if (id->qp_type == IBV_QPT_UD) {
		max = CMA_PDATA_CONNECT_UDP;
	} else {
		max = CMA_PDATA_CONNECT_TCP;
		if (valid_param(p, &prm))
			return -1;
		if (prm.initiator_depth == RDMA_MAX_INIT_DEPTH)
			prm.initiator_depth = p->dev->max_init_depth;
		if (prm.responder_resources == RDMA_MAX_RESP_RES)
			prm.responder_resources = p->dev->max_resp_res;
	}
	if (id->qp)
		prm.qp_num = id->qp->qp_num;
	prm.srq = id->srq ? 1 : prm.srq;
	cma_id_cmd(p, &c, SIB_CM_CMD_CONNECT);
	cma_conn_to_wire(&c.conn, &prm);
	c.conn.qp_type = id->qp ? id->qp->qp_type : id->qp_type;
	if (put_pdata(&c, prm.private_data, prm.private_data_len, max))
		return -1;
	p->initiator_depth = prm.initiator_depth;
	p->responder_resources = prm.responder_resources;
	p->connect_error = false;
	if (cma_call(&c, NULL))
		return -1;
	return cma_complete(p);
}

static uint32_t ud_qkey(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (id->qp && !ibv_query_qp(id->qp, &attr, IBV_QP_QKEY, &init))
		return attr.qkey;
	return CMA_UDP_QKEY;
}

/*
 * rdma_accept (man page): RC: the QP to RTR and RTS with rdma_init_qp_attr's
 * values before softibd sends the REP; a synchronous id waits for
 * ESTABLISHED.  UD: a SIDR_REP with the QP's number and Q_Key, no event.
 */
RDMACM_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *p = (struct cma_id *)id;
	struct rdma_conn_param prm = { 0 };
	struct sib_ctl_cm c;
	bool ud;

	if (!id)
		return set_errno(EINVAL);
	ud = id->qp_type == IBV_QPT_UD;
	if (conn_param) {
		prm = *conn_param;
		if (!ud && valid_param(p, &prm))
			return -1;
	} else {
		prm.initiator_depth = RDMA_MAX_INIT_DEPTH;
		prm.responder_resources = RDMA_MAX_RESP_RES;
	}
	if (!ud && p->dev) {
		if (prm.initiator_depth == RDMA_MAX_INIT_DEPTH)
			prm.initiator_depth = p->initiator_depth < p->dev->max_init_depth ?
					      p->initiator_depth : p->dev->max_init_depth;
		if (prm.responder_resources == RDMA_MAX_RESP_RES)
			prm.responder_resources = p->responder_resources < p->dev->max_resp_res ?
						  p->responder_resources : p->dev->max_resp_res;
	}
	if (!ud && id->qp) {
		if (cma_modify_qp_rtr(p, prm.responder_resources) ||
		    cma_modify_qp_rts(p, prm.initiator_depth))
			goto err;
	}
	if (id->qp)
		prm.qp_num = id->qp->qp_num;
	prm.srq = id->srq ? 1 : prm.srq;
	cma_id_cmd(p, &c, SIB_CM_CMD_ACCEPT);
	cma_conn_to_wire(&c.conn, &prm);
	c.conn.qp_type = id->qp ? id->qp->qp_type : id->qp_type;
	if (ud)
		c.conn.qkey = ud_qkey(id);
	if (put_pdata(&c, prm.private_data, prm.private_data_len,
		      ud ? CMA_PDATA_ACCEPT_UD : CMA_PDATA_ACCEPT_RC))
		goto err;
	if (cma_call(&c, NULL))
		goto err;
	if (ud)
		return 0;
	return cma_complete(p);
err:
	if (!ud) {
		int e = errno;

		(void)cma_modify_qp_err(p);
		errno = e;
	}
	return -1;
}

static int cma_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len, uint32_t reason)
{
	struct cma_id *p = (struct cma_id *)id;
	struct sib_ctl_cm c;

	if (!id)
		return set_errno(EINVAL);
	cma_id_cmd(p, &c, SIB_CM_CMD_REJECT);
	c.reason = reason;
	if (put_pdata(&c, pdata, len, CMA_PDATA_REJECT))
		return -1;
	return cma_call(&c, NULL);
}

RDMACM_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	return cma_reject(id, private_data, private_data_len, 0);
}

/* rdma_reject_ece: REJ reason 35, vendor option not supported (rdma-core). */
RDMACM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
				  uint8_t private_data_len)
{
	return cma_reject(id, private_data, private_data_len, CMA_REJ_VENDOR_OPTION);
}

RDMACM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct sib_ctl_cm c;

	if (!id)
		return set_errno(EINVAL);
	cma_id_cmd((struct cma_id *)id, &c, SIB_CM_CMD_NOTIFY);
	c.event = (uint32_t)event;
	return cma_call(&c, NULL);
}

/* rdma_disconnect: the QP to ERR (IB), then the DREQ (or DREP). */
RDMACM_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id *p = (struct cma_id *)id;
	struct sib_ctl_cm c;

	if (!id)
		return set_errno(EINVAL);
	if (id->qp && cma_modify_qp_err(p))
		return -1;
	cma_id_cmd(p, &c, SIB_CM_CMD_DISCONNECT);
	if (cma_call(&c, NULL))
		return -1;
	return cma_complete(p);
}

/* rdma_establish: the RTU of an id that got CONNECT_RESPONSE without a QP. */
RDMACM_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	if (!id || id->qp)
		return set_errno(EINVAL);
	return cma_process_conn_resp((struct cma_id *)id);
}

RDMACM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
				  void *optval, size_t optlen)
{
	struct sib_ctl_cm c;

	if (!id || (optlen && !optval))
		return set_errno(EINVAL);
	cma_id_cmd((struct cma_id *)id, &c, SIB_CM_CMD_SET_OPTION);
	c.level = (uint32_t)level;
	c.optname = (uint32_t)optname;
	if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
		/* struct ibv_path_data (72 bytes) does not fit optval: it
		 * travels as the struct sib_cm_path of its path record */
		const struct ibv_path_data *pd = optval;
		struct sib_cm_path w = { 0 };

		if (optlen < sizeof(*pd) || optlen % sizeof(*pd))
			return set_errno(EINVAL);
		memcpy(w.dgid, pd->path.dgid.raw, 16);
		memcpy(w.sgid, pd->path.sgid.raw, 16);
		w.dlid = be16toh(pd->path.dlid);
		w.slid = be16toh(pd->path.slid);
		w.pkey = be16toh(pd->path.pkey);
		w.sl = be16toh(pd->path.qosclass_sl) & 0xf;
		w.mtu = pd->path.mtu & 0x3f;
		w.rate = pd->path.rate & 0x3f;
		w.packet_life_time = pd->path.packetlifetime & 0x3f;
		w.hop_limit = (uint8_t)be32toh(pd->path.flowlabel_hoplimit);
		w.flow_label = be32toh(pd->path.flowlabel_hoplimit) >> 8;
		w.traffic_class = pd->path.tclass;
		w.reversible = !!(be32toh(pd->path.reversible_numpath) & 0x80);
		w.numb_path = 1;
		memcpy(c.optval, &w, sizeof(w));
		c.optlen = sizeof(w);
	} else {
		if (optlen > sizeof(c.optval))
			return set_errno(EINVAL);
		memcpy(c.optval, optval, optlen);
		c.optlen = (uint32_t)optlen;
	}
	return cma_call(&c, NULL);
}

/* rdma_get_request: the next CONNECT_REQUEST of a synchronous listener,
 * with the QP rdma_create_ep asked for. */
RDMACM_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cma_id *p = (struct cma_id *)listen;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr attr;

	if (!listen || !id)
		return set_errno(EINVAL);
	if (!p->sync)
		return set_errno(EINVAL);
	if (p->id.event) {
		rdma_ack_cm_event(p->id.event);
		p->id.event = NULL;
	}
	if (rdma_get_cm_event(p->id.channel, &ev))
		return -1;
	if (ev->status) {
		int e = ev->status < 0 ? -ev->status : ev->status;

		rdma_ack_cm_event(ev);
		return set_errno(e);
	}
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(ev);
		return set_errno(EINVAL);
	}
	if (p->qp_init_attr) {
		attr = *p->qp_init_attr;
		if (rdma_create_qp(ev->id, p->id.pd, &attr)) {
			int e = errno;
			struct rdma_cm_id *nid = ev->id;

			rdma_ack_cm_event(ev);
			rdma_destroy_id(nid);
			return set_errno(e);
		}
	}
	*id = ev->id;
	(*id)->event = ev;
	return 0;
}

static uint16_t addr_port(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)sa)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	case AF_IB:
		return htobe16((uint16_t)be64toh(((const struct sockaddr_ib *)sa)->sib_sid));
	default:
		return 0;
	}
}

RDMACM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id ? addr_port(&id->route.addr.src_addr) : 0;
}

RDMACM_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id ? addr_port(&id->route.addr.dst_addr) : 0;
}

RDMACM_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned)event < sizeof(names) / sizeof(names[0]))
		return names[event];
	return "UNKNOWN EVENT";
}

/* ---- ECE (a device without ECE: rdma-core keeps the local value, the
 * remote one stays zero) ---------------------------------------------- */

RDMACM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct cma_id *p = (struct cma_id *)id;

	if (!id || id->qp || !ece || !ece->vendor_id || ece->comp_mask)
		return set_errno(EINVAL);
	p->local_ece = *ece;
	return 0;
}

RDMACM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || id->qp || !ece)
		return set_errno(EINVAL);
	memset(ece, 0, sizeof(*ece));
	return 0;
}

/* ---- multicast: softibd joins through the SA (JOIN_MCAST); the QP is
 * attached on the JOIN event (cma_event.c) and detached before LEAVE ---- */

RDMACM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_attr,
					 void *context)
{
	struct cma_id *p = (struct cma_id *)id;
	struct sib_ctl_cm c;
	struct cma_mc *mc;
	uint32_t flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;

	if (!id || !mc_attr || !mc_attr->addr)
		return set_errno(EINVAL);
	if (mc_attr->comp_mask & ~(RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS))
		return set_errno(ENOTSUP);
	if (!(mc_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS))
		return set_errno(EINVAL);
	if (mc_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) {
		if (mc_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
			return set_errno(EINVAL);
		flags = mc_attr->join_flags;
	}
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -1;
	mc->context = context;
	mc->addr_len = cma_addrlen(mc_attr->addr);
	if (!mc->addr_len || mc->addr_len > sizeof(mc->addr)) {
		free(mc);
		return set_errno(EINVAL);
	}
	memcpy(&mc->addr, mc_attr->addr, mc->addr_len);
	mc->join_flags = flags;
	/* listed first: the group's event may come before the answer */
	pthread_mutex_lock(&p->mut);
	mc->next = p->mc_list;
	p->mc_list = mc;
	pthread_mutex_unlock(&p->mut);
	cma_id_cmd(p, &c, SIB_CM_CMD_JOIN_MCAST);
	c.uid = (uint64_t)(uintptr_t)mc; /* the group's cookie, echoed in its events */
	(void)put_addr(c.dst_addr, &c.dst_len, mc_attr->addr);
	c.join_flags = flags;
	if (cma_call(&c, NULL)) {
		int e = errno;
		struct cma_mc **pp;

		pthread_mutex_lock(&p->mut);
		for (pp = &p->mc_list; *pp; pp = &(*pp)->next)
			if (*pp == mc) {
				*pp = mc->next;
				break;
			}
		pthread_mutex_unlock(&p->mut);
		free(mc);
		return set_errno(e);
	}
	return cma_complete(p);
}

RDMACM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = addr,
	};

	return rdma_join_multicast_ex(id, &attr, context);
}

RDMACM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *p = (struct cma_id *)id;
	struct cma_mc **pp, *mc = NULL;
	struct sib_ctl_cm c;
	socklen_t len;

	if (!id || !addr)
		return set_errno(EINVAL);
	len = cma_addrlen(addr);
	pthread_mutex_lock(&p->mut);
	for (pp = &p->mc_list; *pp; pp = &(*pp)->next)
		if ((*pp)->addr_len == len && !memcmp(&(*pp)->addr, addr, len)) {
			mc = *pp;
			*pp = mc->next;
			break;
		}
	pthread_mutex_unlock(&p->mut);
	if (!mc)
		return set_errno(EADDRNOTAVAIL);
	if (id->qp && mc->attached)
		(void)ibv_detach_mcast(id->qp, &mc->mgid, mc->mlid);
	cma_id_cmd(p, &c, SIB_CM_CMD_LEAVE_MCAST);
	(void)put_addr(c.dst_addr, &c.dst_len, addr);
	if (cma_call(&c, NULL)) {
		int e = errno;

		free(mc);
		return set_errno(e);
	}
	free(mc);
	return 0;
}
