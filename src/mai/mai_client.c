// SPDX-License-Identifier: MIT
/*
 * The MAI channel functions of include/softib/mai.h over softibd's control
 * socket (docs/mai.md "Channels"): a channel = one control connection + the
 * SOCK_SEQPACKET fd softibd passes (the handle).  Library code (PIC, in
 * libibumad.so.3): no signal handlers, CLOEXEC, bounded waits.  Locks: a list
 * mutex (never over I/O), one per channel's control round trips; atfork-safe.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/ctl.h"
#include "iba/mad.h"
#include "softib/mai.h"

#define REQ_TRAILER 8 /* mai_send_req: timeout_ms, retries, big-endian u32 each */

struct mai_chan {
	struct mai_chan *next;
	int fd;			/* the handle */
	int ctl;		/* its control connection */
	uint32_t num;		/* softibd's channel number */
	uint8_t qp;
	bool priv;
	pthread_mutex_t lock;	/* round trips on ctl */
};

static pthread_mutex_t chans_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mai_chan *chans;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void)
{
	pthread_mutex_init(&chans_lock, NULL);
	for (struct mai_chan *c = chans; c; c = c->next)
		pthread_mutex_init(&c->lock, NULL);
}

static void atfork_prepare(void)
{
	pthread_mutex_lock(&chans_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&chans_lock);
}

static void register_atfork(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* The channel of handle fd, or NULL.  Called with chans_lock held. */
static struct mai_chan *find(int fd)
{
	for (struct mai_chan *c = chans; c; c = c->next)
		if (c->fd == fd)
			return c;
	return NULL;
}

/* Copies what sends need of channel fd: 0 or -EBADF. */
static int chan_info(int fd, uint8_t *qp, bool *priv)
{
	struct mai_chan *c;
	int ret = -EBADF;

	pthread_mutex_lock(&chans_lock);
	c = find(fd);
	if (c) {
		*qp = c->qp;
		*priv = c->priv;
		ret = 0;
	}
	pthread_mutex_unlock(&chans_lock);
	return ret;
}

int mai_open(const char *dev, uint8_t port, uint8_t qp)
{
	struct sib_ctl_msg msg = { .hdr.op = SIB_CTL_MAI_OPEN };
	struct mai_chan *c;
	int ctl, fd = -1, ret;

	pthread_once(&atfork_once, register_atfork);
	if (!dev || strlen(dev) >= sizeof(msg.u.mai_open.dev) || qp > 1 || port == 0)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	ctl = sib_ctl_open(true);
	if (ctl < 0) {
		free(c);
		return ctl;
	}
	msg.u.mai_open.abi_version = SIB_ABI_VERSION;
	strcpy(msg.u.mai_open.dev, dev);
	msg.u.mai_open.port = port;
	msg.u.mai_open.qp = qp;
	ret = sib_ctl_call(ctl, &msg, &fd);
	if (!ret && msg.hdr.status)
		ret = -msg.hdr.status;
	if (!ret && fd < 0)
		ret = -EPROTO;
	if (ret) {
		if (fd >= 0)
			close(fd);
		close(ctl);
		free(c);
		return ret;
	}
	c->fd = fd;
	c->ctl = ctl;
	c->num = msg.u.mai_open.chan;
	c->qp = qp;
	c->priv = msg.u.mai_open.flags & SIB_MAI_F_PRIV;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_lock(&chans_lock);
	c->next = chans;
	chans = c;
	pthread_mutex_unlock(&chans_lock);
	return fd;
}

int mai_close(int chan)
{
	struct mai_chan **pp, *c = NULL;

	pthread_mutex_lock(&chans_lock);
	for (pp = &chans; *pp; pp = &(*pp)->next)
		if ((*pp)->fd == chan) {
			c = *pp;
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&chans_lock);
	if (!c)
		return -EBADF;
	pthread_mutex_lock(&c->lock); /* a filter call in flight ends first */
	pthread_mutex_unlock(&c->lock);
	/* Closing the control connection ends the channel and its filters. */
	close(c->ctl);
	close(c->fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return 0;
}

/* One MAI_FILTER round trip on channel fd's control connection. */
static int filter_call(int chan, struct sib_ctl_msg *msg)
{
	struct mai_chan *c;
	int ret;

	pthread_mutex_lock(&chans_lock);
	c = find(chan);
	if (!c) {
		pthread_mutex_unlock(&chans_lock);
		return -EBADF;
	}
	/* c->lock is taken before the list lock goes: mai_close unlinks c,
	 * then waits for c->lock before freeing it. */
	pthread_mutex_lock(&c->lock);
	pthread_mutex_unlock(&chans_lock);
	msg->u.mai_filter.chan = c->num;
	ret = sib_ctl_call(c->ctl, msg, NULL);
	pthread_mutex_unlock(&c->lock);
	if (!ret && msg->hdr.status)
		ret = -msg->hdr.status;
	return ret;
}

int mai_filter_create(int chan, mai_filter_t *f)
{
	struct sib_ctl_msg msg = { .hdr.op = SIB_CTL_MAI_FILTER };
	int n, ret;

	if (mai_filter_check(f))
		return -EINVAL;
	n = mai_mfstream(f, msg.u.mai_filter.fstream, sizeof(msg.u.mai_filter.fstream));
	if (n < 0)
		return n;
	msg.u.mai_filter.op = SIB_MAI_FILTER_CREATE;
	msg.u.mai_filter.len = (uint32_t)n;
	ret = filter_call(chan, &msg);
	if (!ret)
		f->handle = msg.u.mai_filter.handle;
	return ret;
}

int mai_filter_delete(int chan, uint32_t handle)
{
	struct sib_ctl_msg msg = { .hdr.op = SIB_CTL_MAI_FILTER };

	msg.u.mai_filter.op = SIB_MAI_FILTER_DELETE;
	msg.u.mai_filter.handle = handle;
	return filter_call(chan, &msg);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static int send_msg(int chan, const mai_mad_t *m, bool req, uint32_t timeout_ms, uint32_t retries)
{
	uint8_t buf[MAI_MSTREAM_SIZE + REQ_TRAILER];
	uint8_t qp;
	bool priv;
	size_t len;
	ssize_t w;
	int n, ret;

	ret = chan_info(chan, &qp, &priv);
	if (ret)
		return ret;
	if (mai_mad_check(m) || m->type == MAI_TYPE_TIMEOUT || m->qp != qp)
		return -EINVAL;
	/* RAW and the CM's class need privilege (softibd drops them too) */
	if ((m->type == MAI_TYPE_RAW || (m->type == MAI_TYPE_MAD && m->mgmt_class == MAD_MGMT_CLASS_CM)) &&
	    !priv)
		return -EPERM;
	n = mai_mmstream(m, buf, sizeof(buf));
	if (n < 0)
		return n;
	len = (size_t)n;
	if (req) {
		put_be32(buf + len, timeout_ms);
		put_be32(buf + len + 4, retries);
		len += REQ_TRAILER;
	}
	do
		w = send(chan, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return errno == EPIPE ? -ECONNRESET : errno == ENOBUFS ? -EAGAIN : -errno;
	return (size_t)w == len ? 0 : -EIO;
}

int mai_send(int chan, const mai_mad_t *m)
{
	return send_msg(chan, m, false, 0, 0);
}

int mai_send_req(int chan, const mai_mad_t *m, uint32_t timeout_ms, uint32_t retries)
{
	if (!m || m->type != MAI_TYPE_MAD || (m->method & 0x80) || m->method == 0x07)
		return -EINVAL; /* a MAD request: no R bit, not TrapRepress (IBA 13.4.5) */
	if (!timeout_ms)
		return send_msg(chan, m, false, 0, 0);
	return send_msg(chan, m, true, timeout_ms, retries);
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int mai_recv(int chan, mai_mad_t *m, int timeout_ms)
{
	uint8_t buf[MAI_MSTREAM_SIZE + 1];
	struct pollfd pfd = { .fd = chan, .events = POLLIN };
	long long end = timeout_ms > 0 ? mono_ms() + timeout_ms : 0;
	uint8_t qp;
	bool priv;
	ssize_t n;
	int ret;

	if (!m)
		return -EINVAL;
	ret = chan_info(chan, &qp, &priv);
	if (ret)
		return ret;
	for (;;) {
		int wait = timeout_ms < 0 ? -1 : 0;

		if (timeout_ms > 0) {
			long long left = end - mono_ms();

			wait = left > 0 ? (int)left : 0;
		}
		ret = poll(&pfd, 1, wait);
		if (ret < 0)
			return -errno;
		if (ret == 0)
			return -ETIMEDOUT;
		n = recv(chan, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue; /* another thread took it */
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		if (n != MAI_MSTREAM_SIZE || mai_rmstream(buf, (size_t)n, m) != MAI_MSTREAM_SIZE)
			return -EBADMSG;
		return 0;
	}
}
