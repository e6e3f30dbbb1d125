/* SPDX-License-Identifier: MIT */
/*
 * Test helpers: MADs as mai_mad_t built from mai.h alone (IBA 13.4.2
 * common header, 14.2.1.2 DR SMP layout: data[] is MAD byte 24 on).
 * Header-only, test code only.
 */
#ifndef SIB_TESTS_MAD_BUILD_H
#define SIB_TESTS_MAD_BUILD_H

#include <string.h>

#include "softib/mai.h"

#define MAD_GET		0x01
#define MAD_SET		0x02
#define MAD_GET_RESP	0x81
#define MAD_NODEINFO	0x0011
#define MAD_PORTINFO	0x0015
#define MAD_SMINFO	0x0020
#define MAD_DR_SLID	(32 - 24)	/* data[] offsets of the DR fields */
#define MAD_DR_DLID	(34 - 24)
#define MAD_IPATH	(128 - 24)
#define MAD_RPATH	(192 - 24)

/* A GMP request of class cls on QP1 to LID dlid, QP1. */
static inline void mad_gmp(mai_mad_t *m, uint8_t cls, uint8_t method, uint16_t attr, uint16_t dlid)
{
	memset(m, 0, sizeof(*m));
	m->type = MAI_TYPE_MAD;
	m->qp = 1;
	m->remote_qpn = 1;
	m->remote_qkey = 0x80010000u;
	m->data_len = MAI_MAD_DATA_SIZE;
	m->lrh.dlid = dlid;
	m->base_version = 1;
	m->mgmt_class = cls;
	m->class_version = cls == 0x03 ? 2 : 1;
	m->method = method;
	m->attr_id = attr;
	m->tid = 0x42;
}

/* A DR SMP (class 0x81) on QP0 with HopCount hops and InitialPath path[0..hops],
 * DrSLID = DrDLID = permissive. */
static inline void mad_dr(mai_mad_t *m, uint8_t method, uint16_t attr, const uint8_t *path,
			  uint8_t hops)
{
	memset(m, 0, sizeof(*m));
	m->type = MAI_TYPE_MAD;
	m->qp = 0;
	m->data_len = MAI_MAD_DATA_SIZE;
	m->lrh.dlid = 0xFFFF;
	m->lrh.slid = 0xFFFF;
	m->base_version = 1;
	m->mgmt_class = 0x81;
	m->class_version = 1;
	m->method = method;
	m->attr_id = attr;
	m->class_specific = hops; /* HopPointer 0 */
	m->tid = 0x77;
	m->data[MAD_DR_SLID] = m->data[MAD_DR_SLID + 1] = 0xFF;
	m->data[MAD_DR_DLID] = m->data[MAD_DR_DLID + 1] = 0xFF;
	for (unsigned i = 0; i <= hops && i < 64; i++)
		m->data[MAD_IPATH + i] = path[i];
}

#endif
