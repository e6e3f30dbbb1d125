/* SPDX-License-Identifier: MIT */
/*
 * The IPoIB ULP's SA client, on the public libibumad API (rdma-core
 * umad.h), as the kernel's ib_sa does for ipoib: MCMemberRecord joins and
 * leaves (SubnAdmSet / SubnAdmDelete, IBA 1.4 vol 1, 15.2.5.17) and
 * PathRecord queries by DGID (SubnAdmGet, 15.2.5.16), to the SM's LID on
 * QP1 with the GSI Q_Key.  Synchronous, each wait bounded.
 */
#ifndef SOFTIB_IPOIB_SA_H
#define SOFTIB_IPOIB_SA_H

#include <stdint.h>

#include "ipoib/wire.h"

struct ipoib_sa {
	int fd;			/* umad port id */
	int agent;		/* SA class agent */
	uint32_t tid;
	int timeout_ms;		/* per try */
	int retries;
};

/* Open umad on (dev, port) and register an SA agent: 0 or -errno. */
int ipoib_sa_open(struct ipoib_sa *sa, const char *dev, int port);
void ipoib_sa_close(struct ipoib_sa *sa);

/* SubnAdmSet (join) or SubnAdmDelete (leave) of req with comp_mask, to the
 * SM at sm_lid/sm_sl; *resp gets the SA's record.  0, -ETIMEDOUT, -EIO (a
 * MAD status other than 0: *mad_status), -errno. */
int ipoib_sa_mcm(struct ipoib_sa *sa, uint16_t sm_lid, uint8_t sm_sl, uint8_t method,
		 uint64_t comp_mask, const struct ipoib_mcm *req, struct ipoib_mcm *resp,
		 uint16_t *mad_status);

/* SubnAdmGet PathRecord sgid -> dgid in partition pkey (reversible, one
 * path): 0 and *out, or as ipoib_sa_mcm. */
int ipoib_sa_path(struct ipoib_sa *sa, uint16_t sm_lid, uint8_t sm_sl,
		  const uint8_t sgid[16], const uint8_t dgid[16], uint16_t pkey,
		  struct ipoib_path *out, uint16_t *mad_status);

#endif
