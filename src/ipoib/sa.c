// SPDX-License-Identifier: MIT
/*
 * The IPoIB ULP's SA client (sa.h) over libibumad: one request at a time,
 * sent with umad's timeout and retries, the answer matched by the low 32
 * bits of its TID (umad stamps the high ones) and its method.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/umad.h>

#include "ipoib/sa.h"

#define GSI_QKEY 0x80010000

int ipoib_sa_open(struct ipoib_sa *sa, const char *dev, int port)
{
	memset(sa, 0, sizeof(*sa));
	sa->fd = -1;
	sa->timeout_ms = 1000;
	sa->retries = 3;
	sa->tid = (uint32_t)time(NULL) ^ (uint32_t)getpid() << 12;
	if (umad_init() < 0)
		return -EIO;
	sa->fd = umad_open_port(dev, port);
	if (sa->fd < 0)
		return sa->fd;
	sa->agent = umad_register(sa->fd, SA_CLASS, SA_CLASS_VERSION, 1, NULL);
	if (sa->agent < 0) {
		int err = sa->agent;

		umad_close_port(sa->fd);
		sa->fd = -1;
		return err;
	}
	return 0;
}

void ipoib_sa_close(struct ipoib_sa *sa)
{
	if (sa->fd >= 0) {
		umad_unregister(sa->fd, sa->agent);
		umad_close_port(sa->fd);
	}
	sa->fd = -1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Send mad (256 bytes) and wait for the answer with the same TID into it. */
static int transact(struct ipoib_sa *sa, uint16_t sm_lid, uint8_t sm_sl,
		    uint8_t *mad, uint16_t *mad_status)
{
	size_t sz = umad_size() + SA_MAD_LEN;
	uint8_t *u = calloc(1, sz), *m;
	uint64_t tid, deadline;
	uint16_t status, attr;
	uint8_t method;
	int len, ret;
	uint32_t want = (uint32_t)mad[12] << 24 | (uint32_t)mad[13] << 16 | (uint32_t)mad[14] << 8 | mad[15];

	if (!u)
		return -ENOMEM;
	memcpy(umad_get_mad(u), mad, SA_MAD_LEN);
	umad_set_addr(u, sm_lid, 1, sm_sl, GSI_QKEY);
	ret = umad_send(sa->fd, sa->agent, u, SA_MAD_LEN, sa->timeout_ms, sa->retries);
	if (ret < 0)
		goto out;
	deadline = now_ms() + (uint64_t)sa->timeout_ms * (sa->retries + 2);
	for (;;) {
		uint64_t t = now_ms();

		if (t >= deadline) {
			ret = -ETIMEDOUT;
			goto out;
		}
		len = SA_MAD_LEN;
		ret = umad_recv(sa->fd, u, &len, (int)(deadline - t));
		if (ret < 0) {
			if (ret == -EINTR || ret == -EAGAIN)
				continue;
			goto out;
		}
		m = umad_get_mad(u);
		if (umad_status(u)) {	/* our send timed out */
			ret = -ETIMEDOUT;
			goto out;
		}
		if (len < SA_DATA_OFF ||
		    ipoib_sa_mad_parse(m, (size_t)len, &method, &status, &attr, &tid) ||
		    (uint32_t)tid != want ||
		    !(method & 0x80))
			continue;	/* not ours: drop */
		memset(mad, 0, SA_MAD_LEN);
		memcpy(mad, m, (size_t)len < SA_MAD_LEN ? (size_t)len : SA_MAD_LEN);
		*mad_status = status;
		ret = status ? -EIO : 0;
		goto out;
	}
out:
	free(u);
	return ret;
}

int ipoib_sa_mcm(struct ipoib_sa *sa, uint16_t sm_lid, uint8_t sm_sl, uint8_t method,
		 uint64_t comp_mask, const struct ipoib_mcm *req, struct ipoib_mcm *resp,
		 uint16_t *mad_status)
{
	uint8_t mad[SA_MAD_LEN];
	int ret;

	*mad_status = 0;
	ipoib_sa_mad_init(mad, method, SA_ATTR_MCMEMBER, ++sa->tid, comp_mask);
	ipoib_mcm_encode(req, mad + SA_DATA_OFF);
	ret = transact(sa, sm_lid, sm_sl, mad, mad_status);
	if (!ret && resp)
		ipoib_mcm_decode(mad + SA_DATA_OFF, resp);
	return ret;
}

int ipoib_sa_path(struct ipoib_sa *sa, uint16_t sm_lid, uint8_t sm_sl,
		  const uint8_t sgid[16], const uint8_t dgid[16], uint16_t pkey,
		  struct ipoib_path *out, uint16_t *mad_status)
{
	struct ipoib_path req = { .pkey = pkey, .reversible = 1, .numb_path = 1 };
	uint8_t mad[SA_MAD_LEN];
	int ret;

	*mad_status = 0;
	memcpy(req.sgid, sgid, 16);
	memcpy(req.dgid, dgid, 16);
	ipoib_sa_mad_init(mad, SA_METHOD_GET, SA_ATTR_PATH, ++sa->tid,
			  PR_COMP_DGID | PR_COMP_SGID | PR_COMP_PKEY |
			  PR_COMP_REVERSIBLE | PR_COMP_NUMB_PATH);
	ipoib_path_encode(&req, mad + SA_DATA_OFF);
	ret = transact(sa, sm_lid, sm_sl, mad, mad_status);
	if (!ret)
		ipoib_path_decode(mad + SA_DATA_OFF, out);
	return ret;
}
