// SPDX-License-Identifier: MIT
/*
 * libibumad's CA and port queries (umad_get_cas_names, _ca, _port,
 * _ca_portguids, _issm_path, the device list), answered live by softibd's
 * MGMT_QUERY instead of sysfs (docs/umad.md).  Semantics and errno values
 * are rdma-core v44 libibumad's: CA/port resolution for a NULL name or
 * port 0, -ENODEV when resolution fails, -ENOENT/-EIO for a named CA or
 * port that does not exist.  One short control connection per query; no
 * global state, so no locks.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ctl.h"
#include "umad/umad_priv.h"

#define PORT_ACTIVE    4 /* PortInfo:PortState (IBA 14.2.5.6) */
#define PHYS_DISABLED  3 /* PortInfo:PortPhysicalState */
#define PHYS_LINKUP    5
#define NODE_SWITCH    2

int sib_umad_query(struct sib_ctl_mgmt_query *q)
{
	static bool warned;
	struct sib_ctl_msg m;
	char why[SIB_CTL_WHY_MAX];
	int fd, ret;

	fd = sib_ctl_open_why(true, why, sizeof(why));
	if (fd < 0) {
		if (!warned || sib_umad_debug_level)
			UMAD_WARN("softib: %s", why);
		warned = true;
		return fd;
	}
	memset(&m, 0, sizeof(m));
	m.hdr.op = SIB_CTL_MGMT_QUERY;
	q->abi_version = SIB_ABI_VERSION;
	m.u.mgmt = *q;
	ret = sib_ctl_call(fd, &m, NULL);
	close(fd);
	if (ret)
		return ret;
	if (m.hdr.status)
		return -m.hdr.status;
	*q = m.u.mgmt;
	return 0;
}

/* Copy a name that must fit a CA name field; false if it does not. */
static bool set_name(char dst[UMAD_CA_NAME_LEN], const char *src)
{
	size_t n = strlen(src);

	if (n >= UMAD_CA_NAME_LEN)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

static int query_port(const char *ca, int portnum, struct sib_mgmt_port *p)
{
	struct sib_ctl_mgmt_query q = { .what = SIB_MGMT_PORT };
	int ret;

	if (!set_name(q.ca_name, ca) || portnum <= 0)
		return -ENODEV;
	q.port_num = (uint32_t)portnum;
	ret = sib_umad_query(&q);
	if (!ret)
		*p = q.port;
	return ret;
}

/* Port record -> umad_port_t; allocates pkeys.  0 or -ENOMEM. */
static int fill_port(const char *ca, int portnum, const struct sib_mgmt_port *p, umad_port_t *out)
{
	unsigned int n = p->num_pkeys ? p->num_pkeys : 1;

	memset(out, 0, sizeof(*out));
	set_name(out->ca_name, ca);
	out->portnum = portnum;
	out->base_lid = p->base_lid;
	out->lmc = p->lmc;
	out->sm_lid = p->sm_lid;
	out->sm_sl = p->sm_sl;
	out->state = p->state;
	out->phys_state = p->phys_state;
	out->rate = p->rate;
	out->capmask = htobe32(p->capmask);
	out->gid_prefix = htobe64(p->gid_prefix);
	out->port_guid = htobe64(p->port_guid);
	if (n > SIB_MGMT_PKEYS)
		n = SIB_MGMT_PKEYS;
	out->pkeys = calloc(n, sizeof(out->pkeys[0]));
	if (!out->pkeys)
		return -ENOMEM;
	memcpy(out->pkeys, p->pkeys, n * sizeof(out->pkeys[0]));
	out->pkeys_size = n;
	strcpy(out->link_layer, "InfiniBand");
	return 0;
}

static void release_ports(umad_ca_t *ca)
{
	int i;

	for (i = 0; i < UMAD_CA_MAX_PORTS; i++) {
		if (!ca->ports[i])
			continue;
		free(ca->ports[i]->pkeys);
		free(ca->ports[i]);
		ca->ports[i] = NULL;
	}
}

/* umad_get_ca on a name already resolved: -ENOENT if softibd has no such
 * CA (sysfs: no node_type file), -EIO for a port it cannot describe. */
static int get_ca(const char *name, umad_ca_t *ca)
{
	struct sib_ctl_mgmt_query q = { .what = SIB_MGMT_CA };
	struct sib_mgmt_port p;
	uint32_t i;
	int ret;

	memset(ca, 0, sizeof(*ca));
	if (!set_name(ca->ca_name, name) || !set_name(q.ca_name, name))
		return -ENOENT;
	ret = sib_umad_query(&q);
	if (ret)
		return ret == -ENODEV ? -ENOENT : ret;
	if (q.count >= UMAD_CA_MAX_PORTS)
		return -EIO; /* libibumad: a port directory outside 0..9 */
	ca->node_type = q.node_type;
	ca->node_guid = htobe64(q.node_guid);
	ca->system_guid = htobe64(q.sys_image_guid);
	memcpy(ca->fw_ver, q.fw_ver, sizeof(ca->fw_ver) - 1);
	memcpy(ca->hw_ver, q.hw_ver, sizeof(ca->hw_ver) - 1);
	memcpy(ca->ca_type, q.ca_type, sizeof(ca->ca_type) - 1);
	for (i = 1; i <= q.count; i++) {
		ca->ports[i] = calloc(1, sizeof(*ca->ports[i]));
		ret = ca->ports[i] ? query_port(name, (int)i, &p) : -ENOMEM;
		if (!ret)
			ret = fill_port(name, (int)i, &p, ca->ports[i]);
		if (ret) {
			release_ports(ca);
			return ret == -ENOMEM ? ret : -EIO;
		}
		ca->numports = (int)i;
	}
	return 0;
}

/* The best port of CA name (libibumad's rule): *port > 0 checks that
 * port: 1 ACTIVE, 0 not Disabled, -1 otherwise; *port 0 picks the first
 * ACTIVE port (1), else the first LinkUp one (0), else the first not
 * Disabled (0), else -1.  A switch always gives port 0. */
static int best_port(const char *name, int *port)
{
	umad_ca_t ca;
	int i, up = -1, ret = -1;

	if (get_ca(name, &ca) < 0)
		return -1;
	if (ca.node_type == NODE_SWITCH) {
		*port = 0;
		ret = 1;
	} else if (*port > 0) {
		if (*port <= ca.numports && *port < UMAD_CA_MAX_PORTS && ca.ports[*port])
			ret = ca.ports[*port]->state == PORT_ACTIVE ? 1 :
			      ca.ports[*port]->phys_state != PHYS_DISABLED ? 0 : -1;
	} else {
		for (i = 1; i <= ca.numports && ret < 0; i++) {
			if (ca.ports[i]->state == PORT_ACTIVE) {
				*port = i;
				ret = 1;
			} else if (up < 0 && ca.ports[i]->phys_state == PHYS_LINKUP) {
				up = i;
			}
		}
		for (i = 1; i <= ca.numports && ret < 0 && up < 0; i++)
			if (ca.ports[i]->phys_state != PHYS_DISABLED)
				up = i;
		if (ret < 0 && up > 0) {
			*port = up;
			ret = 0;
		}
	}
	release_ports(&ca);
	return ret;
}

int sib_umad_resolve(const char *ca_name, int *port, char out[UMAD_CA_NAME_LEN])
{
	struct sib_ctl_mgmt_query q = { .what = SIB_MGMT_CAS };
	int fallback = -1, fallback_port = 0, p;
	uint32_t i;

	if (ca_name) {
		if (!set_name(out, ca_name)) { /* cut, as libibumad's strncpy: never found */
			memcpy(out, ca_name, UMAD_CA_NAME_LEN - 1);
			out[UMAD_CA_NAME_LEN - 1] = '\0';
		}
		if (!port || *port)
			return 0;
		return best_port(ca_name, port) < 0 ? -ENODEV : 0;
	}
	if (sib_umad_query(&q) || q.count > SIB_MGMT_MAX_CAS)
		return -ENODEV;
	for (i = 0; i < q.count; i++) {
		int t;

		q.names[i][SIB_MGMT_NAME_LEN - 1] = '\0';
		p = port ? *port : 0;
		t = best_port(q.names[i], &p);
		if (t < 0)
			continue;
		if (t > 0) {
			if (port)
				*port = p;
			return set_name(out, q.names[i]) ? 0 : -ENODEV;
		}
		if (fallback < 0) {
			fallback = (int)i;
			fallback_port = p;
		}
	}
	if (fallback < 0)
		return -ENODEV; /* libibumad would try "mthca0" port 1, which fails later */
	if (port)
		*port = fallback_port;
	return set_name(out, q.names[fallback]) ? 0 : -ENODEV;
}

/* Up to max CA names (softibd's verbs devices, in device order); the
 * count copied.  No softibd: 0 (a message on stderr once). */
UMAD_EXPORT int umad_get_cas_names(char cas[][UMAD_CA_NAME_LEN], int max)
{
	struct sib_ctl_mgmt_query q = { .what = SIB_MGMT_CAS };
	uint32_t i;
	int n = 0;

	if (sib_umad_query(&q))
		return 0;
	for (i = 0; i < q.count && i < SIB_MGMT_MAX_CAS && n < max; i++) {
		memcpy(cas[n], q.names[i], UMAD_CA_NAME_LEN);
		cas[n++][UMAD_CA_NAME_LEN - 1] = '\0';
	}
	return n;
}

/* The CA list as a malloc'd chain (IBUMAD_1.1), NULL if none or on error
 * (errno: ENOMEM, or the query's error). */
UMAD_EXPORT struct umad_device_node *umad_get_ca_device_list(void)
{
	struct sib_ctl_mgmt_query q = { .what = SIB_MGMT_CAS };
	struct umad_device_node *head = NULL, **tail = &head, *n;
	uint32_t i;
	int ret;

	ret = sib_umad_query(&q);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	for (i = 0; i < q.count && i < SIB_MGMT_MAX_CAS; i++) {
		q.names[i][SIB_MGMT_NAME_LEN - 1] = '\0';
		n = calloc(1, sizeof(*n));
		if (n)
			n->ca_name = strdup(q.names[i]);
		if (!n || !n->ca_name) {
			free(n);
			umad_free_ca_device_list(head);
			errno = ENOMEM;
			return NULL;
		}
		*tail = n;
		tail = &n->next;
	}
	return head;
}

UMAD_EXPORT void umad_free_ca_device_list(struct umad_device_node *head)
{
	struct umad_device_node *n;

	while (head) {
		n = head->next;
		free((char *)head->ca_name);
		free(head);
		head = n;
	}
}

static int cmp_node(const void *a, const void *b)
{
	const struct umad_device_node *x = *(struct umad_device_node *const *)a;
	const struct umad_device_node *y = *(struct umad_device_node *const *)b;

	return strcmp(x->ca_name, y->ca_name);
}

/* Sort the list by CA name (IBUMAD_1.2); size 0: count it.  0, or
 * non-zero (errno untouched) on a bad list or no memory. */
UMAD_EXPORT int umad_sort_ca_device_list(struct umad_device_node **head, size_t size)
{
	struct umad_device_node **v, *n;
	size_t i, count = 0;

	if (!head)
		return -EINVAL;
	for (n = *head; n; n = n->next)
		count++;
	if (size == 0)
		size = count;
	if (size != count)
		return -EINVAL;
	if (count < 2)
		return 0;
	v = malloc(count * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0, n = *head; n; n = n->next)
		v[i++] = n;
	qsort(v, count, sizeof(*v), cmp_node);
	for (i = 0; i + 1 < count; i++)
		v[i]->next = v[i + 1];
	v[count - 1]->next = NULL;
	*head = v[0];
	free(v);
	return 0;
}

/* The CA (NULL: resolved) with its ports (ports[1..numports]); release
 * with umad_release_ca.  0, -ENODEV (resolution failed), -ENOENT (no such
 * CA), -EIO, -ENOMEM. */
UMAD_EXPORT int umad_get_ca(const char *ca_name, umad_ca_t *ca)
{
	char name[UMAD_CA_NAME_LEN];

	if (sib_umad_resolve(ca_name, NULL, name))
		return -ENODEV;
	return get_ca(name, ca);
}

UMAD_EXPORT int umad_release_ca(umad_ca_t *ca)
{
	if (!ca)
		return -ENODEV;
	release_ports(ca);
	return 0;
}

/* One port (CA NULL and/or port 0: resolved); release with
 * umad_release_port.  0, -ENODEV (resolution failed), -EIO (no such CA
 * or port: libibumad's sysfs read failing), -ENOMEM. */
UMAD_EXPORT int umad_get_port(const char *ca_name, int portnum, umad_port_t *port)
{
	char name[UMAD_CA_NAME_LEN];
	struct sib_mgmt_port p;
	int ret;

	if (!port || sib_umad_resolve(ca_name, &portnum, name))
		return -ENODEV;
	ret = query_port(name, portnum, &p);
	if (ret)
		return ret == -ENOMEM ? ret : -EIO;
	return fill_port(name, portnum, &p, port) ? -EIO : 0;
}

UMAD_EXPORT int umad_release_port(umad_port_t *port)
{
	if (!port)
		return -ENODEV;
	free(port->pkeys);
	port->pkeys = NULL;
	port->pkeys_size = 0;
	return 0;
}

/* Port GUIDs (network order) of the CA, [0] for port 0 (0 on a CA): the
 * count numports + 1; -ENODEV, -1 (no such CA), -ENOMEM (max too small). */
UMAD_EXPORT int umad_get_ca_portguids(const char *ca_name, __be64 *portguids, int max)
{
	char name[UMAD_CA_NAME_LEN];
	umad_ca_t ca;
	int i;

	if (sib_umad_resolve(ca_name, NULL, name))
		return -ENODEV;
	if (get_ca(name, &ca) < 0)
		return -1;
	if (portguids) {
		if (ca.numports + 1 > max) {
			release_ports(&ca);
			return -ENOMEM;
		}
		for (i = 0; i <= ca.numports; i++)
			portguids[i] = ca.ports[i] ? ca.ports[i]->port_guid : 0;
	}
	release_ports(&ca);
	return ca.numports + 1;
}

/* The ISSM path of the port: a FIFO softibd creates next to its socket;
 * holding it open sets PortInfo:CapabilityMask.IsSM (docs/umad.md).
 * 0, -ENODEV (resolution failed), -EINVAL (no such port). */
UMAD_EXPORT int umad_get_issm_path(const char *ca_name, int portnum, char path[], int max)
{
	struct sib_ctl_mgmt_query q = { .what = SIB_MGMT_ISSM };
	char name[UMAD_CA_NAME_LEN];

	if (sib_umad_resolve(ca_name, &portnum, name))
		return -ENODEV;
	memcpy(q.ca_name, name, sizeof(name));
	q.port_num = (uint32_t)portnum;
	if (portnum <= 0 || sib_umad_query(&q))
		return -EINVAL;
	if (max > 0)
		snprintf(path, (size_t)max, "%s", q.path);
	return 0;
}
