// SPDX-License-Identifier: MIT
/*
 * The system view (sysview.h, docs/clients.md "The system view"): the
 * devices softib's libibverbs lists, each opened for its async events, the
 * umad<N> numbers the kernel would give their ports (user_mad.c: the lowest
 * free number per port, in the order the devices appear), the names of the
 * ports' IPoIB interfaces, and the refresh that rewrites the tree
 * (files.c, pma.c) and removes what is gone (tree.c: a mark-and-sweep pass).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <infiniband/umad.h>

#include "sysview/sysview.h"
#include "sysview/sysview_int.h"

/* local_cpus: every configured CPU, as the kernel prints a cpumask ("%*pb":
 * 32-bit hex words, most significant first, comma-separated, the first one
 * only as wide as its bits need: "3" for 2 CPUs, "ffffffff,ffffffff" for 64). */
static void all_cpus(char *out, size_t size)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	int words;
	size_t off = 0;

	if (n <= 0)
		n = 1;
	words = (int)((n + 31) / 32);
	for (int w = words - 1; w >= 0 && off + 12 < size; w--) {
		long bits = n - (long)w * 32;
		uint32_t mask = bits >= 32 ? 0xffffffffu : (uint32_t)((1ull << bits) - 1);
		int width = w == words - 1 ? (int)((bits >= 32 ? 32 : bits) + 3) / 4 : 8;

		off += (size_t)snprintf(out + off, size - off, "%0*x%s", width, mask, w ? "," : "\n");
	}
}

static void dev_close(struct sib_sysview *v, struct sv_dev *d)
{
	for (uint8_t i = 0; i < d->nports; i++) {
		sv_pma_close(&d->ports[i].pma);
		if (d->ports[i].umad >= 0 && d->ports[i].umad < SV_MAX_UMAD)
			v->umad_used[d->ports[i].umad] = false;
	}
	if (d->ctx) {
		epoll_ctl(v->epfd, EPOLL_CTL_DEL, d->ctx->async_fd, NULL);
		ibv_close_device(d->ctx);
	}
	free(d);
}

/* Open a listed device, number its ports.  NULL: it cannot be opened now. */
static struct sv_dev *dev_open(struct sib_sysview *v, struct ibv_device *dev)
{
	struct sv_dev *d = calloc(1, sizeof(*d));
	struct epoll_event ev = { .events = EPOLLIN };
	int fl;

	if (!d)
		return NULL;
	snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(dev));
	snprintf(d->dev_name, sizeof(d->dev_name), "%s", dev->dev_name);
	snprintf(d->ibdev_path, sizeof(d->ibdev_path), "%s", dev->ibdev_path);
	d->node_type = dev->node_type;
	/* Names become paths: nothing that could leave the tree. */
	if (!d->name[0] || strchr(d->name, '/') || d->name[0] == '.' ||
	    !d->dev_name[0] || strchr(d->dev_name, '/') || d->dev_name[0] == '.')
		goto fail;
	d->ctx = ibv_open_device(dev);
	if (!d->ctx || ibv_query_device(d->ctx, &d->attr))
		goto fail;
	fl = fcntl(d->ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(d->ctx->async_fd, F_SETFL, fl | O_NONBLOCK))
		goto fail;
	ev.data.ptr = d;
	if (epoll_ctl(v->epfd, EPOLL_CTL_ADD, d->ctx->async_fd, &ev))
		goto fail;
	d->nports = d->attr.phys_port_cnt < SV_MAX_PORTS ? d->attr.phys_port_cnt : SV_MAX_PORTS;
	for (uint8_t i = 0; i < d->nports; i++) {
		struct sv_port *p = &d->ports[i];
		int u = 0;

		p->num = (uint8_t)(i + 1);
		p->pma.fd = p->pma.agent = -1;
		p->pma.ext = -1;
		while (u < SV_MAX_UMAD && v->umad_used[u])
			u++;
		p->umad = u < SV_MAX_UMAD ? u : -1;
		if (u < SV_MAX_UMAD)
			v->umad_used[u] = true;
	}
	return d;
fail:
	if (d->ctx)
		ibv_close_device(d->ctx);
	d->ctx = NULL;
	free(d);
	return NULL;
}

/* Read every pending async event; a DEVICE_FATAL marks its device. */
static void drain_events(struct sib_sysview *v)
{
	for (size_t i = 0; i < v->ndevs; i++) {
		struct sv_dev *d = v->devs[i];
		struct ibv_async_event ev;

		while (!d->fatal && ibv_get_async_event(d->ctx, &ev) == 0) {
			if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
				d->fatal = true;
			ibv_ack_async_event(&ev);
		}
	}
}

/* Bring the device set up to date with ibv_get_device_list: close the
 * fatal and the unlisted ones, open the new ones.  0 or -errno. */
static int sync_devices(struct sib_sysview *v)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	size_t keep = 0;

	if (!list)
		return -(errno ? errno : EIO);
	for (size_t i = 0; i < v->ndevs; i++) {
		struct sv_dev *d = v->devs[i];
		bool listed = false;

		for (int j = 0; j < n; j++)
			listed |= !strcmp(ibv_get_device_name(list[j]), d->name);
		if (listed && !d->fatal)
			v->devs[keep++] = d;
		else
			dev_close(v, d);
	}
	v->ndevs = keep;
	for (int j = 0; j < n; j++) {
		bool have = false;
		struct sv_dev *d;

		for (size_t i = 0; i < v->ndevs; i++)
			have |= !strcmp(ibv_get_device_name(list[j]), v->devs[i]->name);
		if (have)
			continue;
		if (v->ndevs == v->devs_cap) {
			size_t cap = v->devs_cap ? v->devs_cap * 2 : 8;
			struct sv_dev **a = realloc(v->devs, cap * sizeof(*a));

			if (!a)
				break;
			v->devs = a;
			v->devs_cap = cap;
		}
		d = dev_open(v, list[j]);
		if (d)
			v->devs[v->ndevs++] = d;
	}
	ibv_free_device_list(list);
	return 0;
}

int sib_sysview_refresh(struct sib_sysview *v)
{
	int rc;

	if (!v)
		return -EINVAL;
	drain_events(v);
	rc = sync_devices(v);
	if (rc)
		return rc; /* no list (softibd gone?): the tree stays as it was */
	sv_pass_begin(&v->tree);
	sv_write_globals(v);
	for (size_t i = 0; i < v->ndevs; i++)
		sv_write_device(v, v->devs[i]);
	for (size_t i = 0; i < v->nnets; i++)
		for (size_t j = 0; j < v->ndevs; j++)
			if (!strcmp(v->nets[i].dev, v->devs[j]->name) &&
			    v->nets[i].port <= v->devs[j]->nports)
				sv_write_netdev(v, &v->nets[i]);
	return sv_pass_end(&v->tree);
}

struct sib_sysview *sib_sysview_create(const char *root)
{
	struct sib_sysview *v = calloc(1, sizeof(*v));
	struct stat st;
	int rc;

	if (!v) {
		errno = ENOMEM;
		return NULL;
	}
	v->epfd = -1;
	rc = sv_tree_init(&v->tree, root);
	if (rc)
		goto fail;
	v->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (v->epfd < 0) {
		rc = -errno;
		goto fail;
	}
	/* What the /dev/infiniband symlinks lead to: their `dev` numbers. */
	if (stat("/dev/null", &st) == 0)
		snprintf(v->dev_null, sizeof(v->dev_null), "%u:%u\n",
			 major(st.st_rdev), minor(st.st_rdev));
	else
		snprintf(v->dev_null, sizeof(v->dev_null), "1:3\n");
	all_cpus(v->local_cpus, sizeof(v->local_cpus));
	umad_init();
	rc = sib_sysview_refresh(v);
	if (rc)
		goto fail;
	return v;
fail:
	sib_sysview_destroy(v, true);
	errno = -rc;
	return NULL;
}

int sib_sysview_set_netdev(struct sib_sysview *v, const char *dev, uint8_t port, const char *ifname)
{
	struct sv_netdev *n = NULL;
	bool found = false, remove = !ifname || !*ifname;

	if (!v || !dev || !port)
		return -EINVAL;
	if (!remove && (strlen(ifname) >= IF_NAMESIZE || strchr(ifname, '/') ||
			!strcmp(ifname, ".") || !strcmp(ifname, "..")))
		return -EINVAL;
	for (size_t i = 0; i < v->ndevs; i++)
		if (!strcmp(v->devs[i]->name, dev)) {
			found = true;
			if (port > v->devs[i]->nports)
				return -EINVAL;
		}
	if (!found)
		return -ENODEV;
	for (size_t i = 0; i < v->nnets; i++)
		if (!strcmp(v->nets[i].dev, dev) && v->nets[i].port == port)
			n = &v->nets[i];
	if (remove) {
		if (n)
			*n = v->nets[--v->nnets];
	} else {
		if (!n) {
			struct sv_netdev *a = realloc(v->nets, (v->nnets + 1) * sizeof(*a));

			if (!a)
				return -ENOMEM;
			v->nets = a;
			n = &v->nets[v->nnets++];
			memset(n, 0, sizeof(*n));
			snprintf(n->dev, sizeof(n->dev), "%s", dev);
			n->port = port;
		}
		snprintf(n->ifname, sizeof(n->ifname), "%s", ifname);
	}
	return sib_sysview_refresh(v);
}

int sib_sysview_fd(const struct sib_sysview *v)
{
	return v ? v->epfd : -1;
}

void sib_sysview_destroy(struct sib_sysview *v, bool remove_tree)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->ndevs; i++)
		dev_close(v, v->devs[i]);
	free(v->devs);
	free(v->nets);
	if (v->epfd >= 0)
		close(v->epfd);
	sv_tree_fini(&v->tree, remove_tree);
	free(v);
}
