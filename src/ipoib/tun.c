// SPDX-License-Identifier: MIT
/*
 * The TUN bridge of an IPoIB endpoint (ipoib.h, docs/ipoib.md): opens
 * /dev/net/tun (IFF_TUN|IFF_NO_PI: each read is one IP datagram), sets the
 * interface's address, MTU (the endpoint's: group MTU - 4) and IFF_UP with
 * libnl-route-3, then moves datagrams both ways from one ppoll on the TUN fd
 * and the CQ's completion channel (the TUN is polled only while a send slot
 * is free; the device's async events for port changes; in connected mode
 * the rdma_cm event channel and the RC CQ's completion channel too; a 250 ms tick for ARP retries and expiry; no busy loop).  A pid
 * file in softib's runtime dir lets `down` stop it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>

#include "common/ctl.h"
#include "ipoib/ep.h"
#include "ipoib/ipoib.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* softib's runtime dir/ipoib-DEV-PORT.pid: 0 or -ENAMETOOLONG. */
static int pid_path(const char *dev, int port, char *buf, size_t len)
{
	char sock[256];
	int n;

	if (sib_ctl_default_path(sock, sizeof(sock)))
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "%s/ipoib-%s-%d.pid", dirname(sock), dev, port);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int tun_open(const char *name)
{
	struct ifreq ifr = { .ifr_flags = IFF_TUN | IFF_NO_PI };
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		fprintf(stderr, "softib ipoib: /dev/net/tun: %s\n", strerror(errno));
		return -1;
	}
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int err = errno;

		if (err == EPERM)
			fprintf(stderr, "softib ipoib: creating TUN interface %s needs CAP_NET_ADMIN "
				"in this network namespace: run as root, or in `unshare -rn` "
				"(docs/ipoib.md)\n", name);
		else
			fprintf(stderr, "softib ipoib: TUNSETIFF %s: %s\n", name, strerror(err));
		close(fd);
		return -1;
	}
	return fd;
}

/* Address (A.B.C.D/P), MTU and IFF_UP of ifname through libnl-route-3. */
static int link_config(const char *ifname, const char *addr, unsigned int mtu,
		       uint32_t *ip, uint32_t *mask)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct rtnl_link *link = NULL, *change = NULL;
	struct rtnl_addr *ra = NULL;
	struct nl_addr *local = NULL;
	int err = -NLE_NOMEM;

	if (!sk || (err = nl_connect(sk, NETLINK_ROUTE)) < 0)
		goto out;
	if ((err = rtnl_link_get_kernel(sk, 0, ifname, &link)) < 0)
		goto out;
	change = rtnl_link_alloc();
	if (!change)
		goto out;
	rtnl_link_set_mtu(change, mtu);
	rtnl_link_set_flags(change, IFF_UP);
	if ((err = rtnl_link_change(sk, link, change, 0)) < 0)
		goto out;
	if (addr) {
		if ((err = nl_addr_parse(addr, AF_INET, &local)) < 0)
			goto out;
		ra = rtnl_addr_alloc();
		if (!ra) {
			err = -NLE_NOMEM;
			goto out;
		}
		rtnl_addr_set_ifindex(ra, rtnl_link_get_ifindex(link));
		if ((err = rtnl_addr_set_local(ra, local)) < 0 ||
		    ((err = rtnl_addr_add(sk, ra, 0)) < 0 && err != -NLE_EXIST))
			goto out;
		memcpy(ip, nl_addr_get_binary_addr(local), 4);
		*ip = ntohl(*ip);
		unsigned int p = nl_addr_get_prefixlen(local);
		*mask = p ? ~0u << (32 - p) : 0;
	}
	err = 0;
out:
	if (err)
		fprintf(stderr, "softib ipoib: configuring %s: %s\n", ifname, nl_geterror(err));
	if (local)
		nl_addr_put(local);
	if (ra)
		rtnl_addr_put(ra);
	if (change)
		rtnl_link_put(change);
	if (link)
		rtnl_link_put(link);
	if (sk)
		nl_socket_free(sk);
	return err ? -1 : 0;
}

static void to_tun(void *arg, const uint8_t *pkt, size_t len)
{
	int fd = *(int *)arg;

	(void)!write(fd, pkt, len);	/* a full TUN queue drops, as a NIC would */
}

/* Read up to a burst of datagrams from the TUN and send them. */
static void from_tun(struct ipoib_ep *ep, int tfd, uint8_t *buf, size_t cap)
{
	for (int k = 0; k < 64 && ipoib_ep_can_send(ep); k++) {
		ssize_t n = read(tfd, buf, cap);

		if (n <= 0)
			return;
		ipoib_ep_send_ip(ep, buf, (size_t)n, now_ms());
	}
}

static int loop(struct ipoib_ep *ep, int tfd)
{
	sigset_t none;
	uint64_t next_tick = 0;
	size_t cap = 65536;
	uint8_t *buf = malloc(cap);

	if (!buf)
		return 1;
	sigemptyset(&none);
	while (!stop_flag) {
		struct pollfd pf[5] = {
			{ .fd = ipoib_ep_fd(ep), .events = POLLIN },
			{ .fd = tfd, .events = ipoib_ep_can_send(ep) ? POLLIN : 0 },
			{ .fd = ipoib_ep_async_fd(ep), .events = POLLIN },
			{ .fd = ipoib_cm_event_fd(ep), .events = POLLIN },	/* -1: ignored */
			{ .fd = ipoib_cm_comp_fd(ep), .events = POLLIN },
		};
		struct timespec to = { 0, 250 * 1000 * 1000 };
		uint64_t t;
		int n = ppoll(pf, 5, &to, &none);

		if (n < 0 && errno != EINTR) {
			perror("softib ipoib: ppoll");
			free(buf);
			return 1;
		}
		t = now_ms();
		if (n > 0 && ((pf[0].revents && ipoib_ep_poll(ep, t) < 0) ||
			      (pf[4].revents && ipoib_cm_poll(ep, t) < 0))) {
			fprintf(stderr, "softib ipoib: the CQ failed\n");
			free(buf);
			return 1;
		}
		if (n > 0 && pf[3].revents)
			ipoib_cm_events(ep, t);
		if (n > 0 && (pf[1].revents & POLLIN))
			from_tun(ep, tfd, buf, cap);
		if (n > 0 && pf[2].revents) {
			ipoib_ep_async(ep);
			next_tick = 0;	/* a rejoin at once */
			if (ep->fatal) {
				fprintf(stderr, "softib ipoib: the device is gone (softibd stopped?): "
					"the interface goes with it\n");
				free(buf);
				return 1;
			}
		}
		if (t >= next_tick) {
			ipoib_ep_tick(ep, t);
			next_tick = t + 250;
		}
	}
	free(buf);
	return 0;
}

static int write_pid(const char *path)
{
	FILE *f;
	char dir[512];

	snprintf(dir, sizeof(dir), "%s", path);
	mkdir(dirname(dir), 0700);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%d\n", (int)getpid());
	return fclose(f);
}

/* --daemon: the child runs; the parent exits with what the child reports
 * through a pipe once it is up (or failed). */
static int daemonize(int *report)
{
	int p[2];
	pid_t pid;
	char c = 1;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			c = 1;
		_exit(c);
	}
	close(p[0]);
	setsid();
	*report = p[1];
	return 0;
}

static void report_up(int *report, char status)
{
	int fd;

	if (*report < 0)
		return;
	(void)!write(*report, &status, 1);
	close(*report);
	*report = -1;
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
}

static void print_stats(const struct ipoib_ep *ep, const char *tun)
{
	const struct ipoib_stats *s = &ep->st;

	fprintf(stderr, "softib ipoib: %s down: rx %llu packets %llu bytes, tx %llu packets "
		"%llu bytes, dropped rx %llu tx %llu, arp rx %llu tx %llu, nd rx %llu tx %llu, "
		"paths %llu (%llu failed), multicast joins %llu (%llu failed), port events %llu, "
		"rejoins %llu\n",
		tun, (unsigned long long)s->rx_packets, (unsigned long long)s->rx_bytes,
		(unsigned long long)s->tx_packets, (unsigned long long)s->tx_bytes,
		(unsigned long long)s->rx_dropped, (unsigned long long)s->tx_dropped,
		(unsigned long long)s->arp_rx, (unsigned long long)s->arp_tx,
		(unsigned long long)s->nd_rx, (unsigned long long)s->nd_tx,
		(unsigned long long)s->path_queries, (unsigned long long)s->path_errors,
		(unsigned long long)s->mc_joins, (unsigned long long)s->mc_join_errors,
		(unsigned long long)s->port_events, (unsigned long long)s->rejoins);
	if (ep->cm.st.qps_created || ep->if_mtu == IPOIB_CM_MTU) {
		const struct ipoib_cm_stats *c = &ep->cm.st;

		fprintf(stderr, "softib ipoib: %s connected mode: cm connections tx %llu rx %llu, "
			"fallbacks %llu, rejected %llu, rc rx %llu packets %llu bytes, rc tx %llu "
			"packets %llu bytes, errors rx %llu tx %llu, teardowns %llu (timeouts %llu), "
			"too big %llu, qps %llu live\n", tun,
			(unsigned long long)c->tx_conns, (unsigned long long)c->rx_conns,
			(unsigned long long)c->fallbacks, (unsigned long long)c->rejected,
			(unsigned long long)c->rx_packets, (unsigned long long)c->rx_bytes,
			(unsigned long long)c->tx_packets, (unsigned long long)c->tx_bytes,
			(unsigned long long)c->rx_errors, (unsigned long long)c->tx_errors,
			(unsigned long long)c->teardowns, (unsigned long long)c->timeouts,
			(unsigned long long)c->too_big,
			(unsigned long long)ipoib_cm_live_qps(ep));
	}
}

/* The live bridge named by pid file pidf: its pid, 0 if none (no file, or
 * a process that is gone or is not softib's). */
static int bridge_pid(const char *pidf)
{
	char comm[64] = "", path[64];
	FILE *f = fopen(pidf, "r");
	int pid = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%d", &pid) != 1 || pid <= 0)
		pid = 0;
	fclose(f);
	if (!pid)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "r");
	if (!f || !fgets(comm, sizeof(comm), f) || strncmp(comm, "softib", 6))
		pid = 0;
	if (f)
		fclose(f);
	return pid;
}

/* --addr A/P into softibd's rdma_cm table for port (dev, port) while the
 * bridge runs, so that rdma_cm programs bind and resolve it (IPADDR,
 * docs/ipoib.md): true if we added it (delete it at stop); already there
 * (EEXIST) or refused: false, the bridge runs on (a warning if refused). */
static bool table_add(const struct sib_ipoib_opts *o)
{
	struct sib_ctl_ipaddr ia = { .port = (uint32_t)o->port, .op = SIB_IPADDR_ADD };
	int ret;

	if (!o->addr || sib_ctl_ipaddr_parse(o->addr, false, &ia))
		return false;
	snprintf(ia.dev, sizeof(ia.dev), "%s", o->dev);
	ret = sib_ctl_ipaddr_call(NULL, &ia, "softib ipoib");
	if (ret > 0 && ret != EEXIST)
		fprintf(stderr, "softib ipoib: %s not added to softibd's rdma_cm table: %s\n",
			o->addr, strerror(ret));
	return ret == 0;
}

static void table_del(const struct sib_ipoib_opts *o)
{
	struct sib_ctl_ipaddr ia = { .port = (uint32_t)o->port, .op = SIB_IPADDR_DEL };

	if (sib_ctl_ipaddr_parse(o->addr, false, &ia))
		return;
	snprintf(ia.dev, sizeof(ia.dev), "%s", o->dev);
	sib_ctl_ipaddr_call(NULL, &ia, "softib ipoib"); /* gone already (a `del`): fine */
}

/* Remove pidf if it still names this process (another bridge's is not ours). */
static void unlink_own_pid(const char *pidf)
{
	if (bridge_pid(pidf) == (int)getpid())
		unlink(pidf);
}

int sib_ipoib_up(const struct sib_ipoib_opts *o)
{
	static struct ipoib_ep ep;
	struct sigaction sa = { .sa_handler = on_signal };
	char pidf[512];
	sigset_t block;
	int tfd, report = -1, ret = 1;
	bool added;

	if (pid_path(o->dev, o->port, pidf, sizeof(pidf)) < 0)
		return 1;
	/* one bridge per port, as one ib0 per port: a second would take the
	 * first's pid file and leave it impossible to stop with `down` */
	if (bridge_pid(pidf) > 0) {
		fprintf(stderr, "softib ipoib: %s port %d already has an interface (pid %d, %s); "
			"`softib ipoib %s %d down` first\n", o->dev, o->port, bridge_pid(pidf), pidf,
			o->dev, o->port);
		return 1;
	}
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	tfd = tun_open(o->tun);
	if (tfd < 0)
		return 1;
	if (o->daemon && daemonize(&report) < 0) {
		perror("softib ipoib: fork");
		close(tfd);
		return 1;
	}
	if (ipoib_ep_open(&ep, o->dev, o->port, o->wait_ms) < 0)
		goto out;
	if (o->connected && ipoib_cm_open(&ep) < 0)
		goto out;
	ep.deliver = to_tun;
	snprintf(ep.ifname, sizeof(ep.ifname), "%s", o->tun);
	ep.deliver_arg = &tfd;
	if (link_config(o->tun, o->addr, ep.if_mtu, &ep.ip, &ep.prefix_mask) < 0)
		goto out;
	if (write_pid(pidf) < 0)
		fprintf(stderr, "softib ipoib: pid file %s: %s\n", pidf, strerror(errno));
	fprintf(stderr, "softib ipoib: %s up on %s port %d: %s mode, QPN 0x%06x, MTU %u, "
		"Q_Key 0x%08x, MLID 0x%04x\n", o->tun, o->dev, o->port,
		ep.cm.enabled ? "connected" : "datagram", ep.qp->qp_num, ep.if_mtu, ep.qkey,
		ep.mlid);
	added = table_add(o);
	report_up(&report, 0);
	ret = loop(&ep, tfd);
	if (added)
		table_del(o);
	ipoib_cm_close(&ep);	/* first: its counters say every QP went */
	print_stats(&ep, o->tun);
	unlink_own_pid(pidf);
out:
	report_up(&report, 1);
	ipoib_ep_close(&ep);
	close(tfd);
	return ret;
}

int sib_ipoib_down(const char *dev, int port)
{
	char pidf[512];
	int pid;

	if (pid_path(dev, port, pidf, sizeof(pidf)) < 0)
		return 1;
	if (access(pidf, F_OK) < 0) {
		fprintf(stderr, "softib ipoib: no interface up on %s port %d (%s)\n", dev, port, pidf);
		return 1;
	}
	if (!(pid = bridge_pid(pidf))) {
		fprintf(stderr, "softib ipoib: stale pid file %s (its process is gone)\n", pidf);
		unlink(pidf);
		return 1;
	}
	if (kill(pid, SIGTERM) < 0) {
		perror("softib ipoib: kill");
		return 1;
	}
	for (int i = 0; i < 100; i++) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return 0;
		usleep(100 * 1000);
	}
	fprintf(stderr, "softib ipoib: process %d did not stop in 10 s\n", pid);
	return 1;
}
