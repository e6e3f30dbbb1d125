/* SPDX-License-Identifier: MIT */
/*
 * rpoll and rselect (man rsocket): rsockets and ordinary fds together.
 * An rsocket's readiness comes from its state, its CQ (drained here) and
 * its cm channel; before sleeping rpoll spins for a moment (rdma-core's
 * polling_time), then arms every CQ and sleeps in poll() on the
 * completion channels, the cm channels and the caller's other fds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "rdmacm/cma_priv.h"
#include "rdmacm/rs_priv.h"

#define RPOLL_SPIN_NS 20000
#define RPOLL_STACK   16

short rs_revents(struct rsocket *rs, short events)
{
	short r = 0;

	switch (rs->state) {
	case RS_LISTENING:
		if (rs->backlog_cnt)
			r |= POLLIN;
		break;
	case RS_CONNECTED:
		if (rs_can_recv(rs))
			r |= POLLIN;
		if (rs_can_send(rs))
			r |= POLLOUT;
		if (rs->disconnected && rs->rhead == rs->rtail)
			r |= POLLHUP;
		break;
	case RS_ERROR:
		r |= POLLERR | POLLIN | POLLOUT;
		break;
	default:
		break;
	}
	return (short)(r & (events | POLLERR | POLLHUP));
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One look at every entry: rsockets progressed, the other fds polled
 * with timeout 0.  The number of entries with revents. */
static int look(struct pollfd *fds, nfds_t nfds, const bool *is_rs)
{
	int n = 0;
	nfds_t i;

	for (i = 0; i < nfds; i++) {
		struct rsocket *rs;

		fds[i].revents = 0;
		if (fds[i].fd < 0)
			continue;
		if (is_rs[i]) {
			rs = rs_get(fds[i].fd);
			if (!rs) {
				fds[i].revents = POLLNVAL;
			} else {
				/* the CM's events first: data and the peer's
				 * DREQ travel apart, and what the peer had
				 * acknowledged before it disconnected is in our CQ
				 * by the time its DISCONNECTED is read, so polling
				 * the CQ after it never shows a hang-up with data
				 * still to come (rstream -T a exited 16, POLLHUP,
				 * under load in CI) */
				rs_cm_progress(rs);
				rs_progress(rs);
				fds[i].revents = rs_revents(rs, fds[i].events);
				rs_put(rs);
			}
		} else {
			struct pollfd p = fds[i];

			if (poll(&p, 1, 0) > 0)
				fds[i].revents = p.revents;
		}
		if (fds[i].revents)
			n++;
	}
	return n;
}

/* Arm every rsocket and list what to sleep on; -1 when something became
 * ready while arming (look again). */
static int arm_all(struct pollfd *fds, nfds_t nfds, const bool *is_rs, struct pollfd *w)
{
	int n = 0;
	nfds_t i;

	for (i = 0; i < nfds; i++) {
		struct rsocket *rs;

		if (fds[i].fd < 0)
			continue;
		if (!is_rs[i]) {
			w[n++] = (struct pollfd){ .fd = fds[i].fd, .events = fds[i].events };
			continue;
		}
		rs = rs_get(fds[i].fd);
		if (!rs)
			return -1;
		rs_arm(rs);
		if (rs_progress(rs) > 0 || rs_revents(rs, fds[i].events)) {
			rs_put(rs);
			return -1;
		}
		w[n++] = (struct pollfd){ .fd = rs->ch->fd, .events = POLLIN };
		if (rs->cch)
			w[n++] = (struct pollfd){ .fd = rs->cch->fd, .events = POLLIN };
		rs_put(rs);
	}
	return n;
}

static void drain_events(struct pollfd *fds, nfds_t nfds, const bool *is_rs)
{
	nfds_t i;

	for (i = 0; i < nfds; i++) {
		struct rsocket *rs;

		if (fds[i].fd < 0 || !is_rs[i])
			continue;
		rs = rs_get(fds[i].fd);
		if (rs) {
			rs_get_cq_events(rs);
			rs_put(rs);
		}
	}
}

RDMACM_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	bool st_rs[RPOLL_STACK], *is_rs = st_rs;
	struct pollfd st_w[RPOLL_STACK * 2], *w = st_w;
	uint64_t start = mono_ns();
	int e = errno, n = -1;
	nfds_t i;

	if (nfds > RPOLL_STACK) {
		is_rs = calloc(nfds, sizeof(*is_rs));
		w = calloc(nfds * 2, sizeof(*w));
		if (!is_rs || !w) {
			free(is_rs == st_rs ? NULL : is_rs);
			free(w == st_w ? NULL : w);
			return rs_set_err(ENOMEM);
		}
	}
	for (i = 0; i < nfds; i++)
		is_rs[i] = rs_lookup_exists(fds[i].fd);
	for (;;) {
		uint64_t el = mono_ns() - start;
		int cnt, rest = -1;

		n = look(fds, nfds, is_rs);
		if (n || timeout == 0)
			break;
		if (timeout > 0) {
			if (el / 1000000u >= (uint64_t)timeout)
				break;
			rest = timeout - (int)(el / 1000000u);
		}
		if (el < RPOLL_SPIN_NS)
			continue;
		cnt = arm_all(fds, nfds, is_rs, w);
		if (cnt < 0)
			continue;
		if (poll(w, (nfds_t)cnt, rest) < 0 && errno == EINTR) {
			n = -1;
			e = EINTR;
			break;
		}
		drain_events(fds, nfds, is_rs);
	}
	if (is_rs != st_rs)
		free(is_rs);
	if (w != st_w)
		free(w);
	errno = e;
	return n;
}

RDMACM_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			  struct timeval *timeout)
{
	struct pollfd *fds;
	int i, n = 0, r, to = -1;
	nfds_t cnt = 0;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return rs_set_err(EINVAL);
	if (timeout)
		to = (int)(timeout->tv_sec * 1000 + (timeout->tv_usec + 999) / 1000);
	fds = calloc(nfds ? (size_t)nfds : 1, sizeof(*fds));
	if (!fds)
		return rs_set_err(ENOMEM);
	for (i = 0; i < nfds; i++) {
		short ev = 0;

		if (readfds && FD_ISSET(i, readfds))
			ev |= POLLIN;
		if (writefds && FD_ISSET(i, writefds))
			ev |= POLLOUT;
		if (exceptfds && FD_ISSET(i, exceptfds))
			ev |= POLLPRI;
		if (ev)
			fds[cnt++] = (struct pollfd){ .fd = i, .events = ev };
	}
	r = rpoll(fds, cnt, to);
	if (r < 0) {
		free(fds);
		return -1;
	}
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	for (i = 0; i < (int)cnt; i++) {
		short re = fds[i].revents;

		if (readfds && (fds[i].events & POLLIN) && (re & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(fds[i].fd, readfds);
			n++;
		}
		if (writefds && (fds[i].events & POLLOUT) && (re & (POLLOUT | POLLERR))) {
			FD_SET(fds[i].fd, writefds);
			n++;
		}
		if (exceptfds && (fds[i].events & POLLPRI) && (re & POLLPRI)) {
			FD_SET(fds[i].fd, exceptfds);
			n++;
		}
	}
	free(fds);
	return n;
}
