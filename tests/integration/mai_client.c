// SPDX-License-Identifier: MIT
/*
 * A MAI client written against include/softib/mai.h alone (issue 7 "a test
 * client written against mai.h alone"): nothing of softib's but that
 * header and libsib_mai.  `mai_client priv` (root or CAP_NET_ADMIN): a
 * directed-route SMInfo Get from softib0's QP0 to an agent on softib1's
 * QP0 through the switch, the answer back by TID, a RAW send accepted.
 * `mai_client unpriv`: QP0 refused (-EACCES), RAW refused (-EPERM), QP1
 * usable (a Get nobody takes answered 0x000C) and OOB.  Prints one line per step; exit 0 when all hold.
 * Test code: single-threaded, every wait bounded.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <softib/mai.h>

static int failed;

#define CHECK(cond, ...)                                                 \
	do {                                                             \
		if (cond) {                                              \
			printf("ok: " __VA_ARGS__);                      \
		} else {                                                 \
			printf("FAIL (%s:%d): ", __FILE__, __LINE__);    \
			printf(__VA_ARGS__);                             \
			failed = 1;                                      \
		}                                                        \
		putchar('\n');                                           \
	} while (0)

static void mad(mai_mad_t *m, uint8_t qp, uint8_t cls, uint8_t method, uint16_t attr)
{
	memset(m, 0, sizeof(*m));
	m->type = MAI_TYPE_MAD;
	m->qp = qp;
	m->remote_qpn = qp;
	m->remote_qkey = qp ? 0x80010000u : 0;
	m->data_len = MAI_MAD_DATA_SIZE;
	m->base_version = 1;
	m->mgmt_class = cls;
	m->class_version = 1;
	m->method = method;
	m->attr_id = attr;
	m->tid = 0x1122334455ull;
}

static int priv(void)
{
	int sm = mai_open("softib0", 1, 0), ag = mai_open("softib1", 1, 0), ret;
	mai_filter_t f;
	mai_mad_t m, r;

	CHECK(sm >= 0 && ag >= 0, "QP0 channels open (%d, %d)", sm, ag);
	if (sm < 0 || ag < 0)
		return 1;
	memset(&f, 0, sizeof(f));
	f.flags = MAI_F_CONSUME;
	f.match = MAI_M_CLASS | MAI_M_METHOD | MAI_M_ATTR;
	f.mgmt_class = 0x81;
	f.method = 0x01;
	f.attr_id = 0x0020; /* SMInfo */
	CHECK(mai_filter_create(ag, &f) == 0 && f.handle, "filter %u", f.handle);

	/* DR: HopCount 2, InitialPath 0,1,2 (CA port 1, switch port 2), permissive LIDs */
	mad(&m, 0, 0x81, 0x01, 0x0020);
	m.class_specific = 2;
	memset(m.data + 8, 0xFF, 4);
	m.data[104 + 1] = 1;
	m.data[104 + 2] = 2;
	CHECK(mai_send_req(sm, &m, 1000, 1) == 0, "DR SMInfo Get sent");
	ret = mai_recv(ag, &r, 3000);
	CHECK(ret == 0 && r.attr_id == 0x0020 && r.class_specific == (3 << 8 | 2),
	      "agent got it at the end of the path (%d, hop %#x)", ret, r.class_specific);
	CHECK((r.tid & 0xFFFFFFFFFFull) == m.tid && (r.tid >> MAI_TID_CHAN_SHIFT) != 0,
	      "TID %#llx: channel in bits 63..40", (unsigned long long)r.tid);
	r.method = 0x81;
	r.status = 0x8000; /* D bit */
	CHECK(mai_send(ag, &r) == 0, "GetResp sent");
	ret = mai_recv(sm, &m, 3000);
	CHECK(ret == 0 && m.type == MAI_TYPE_MAD && m.method == 0x81 && m.tid == r.tid &&
	      m.class_specific == 2, "SM got the response (%d, type %u, hop %#x)", ret, m.type,
	      m.class_specific);

	mad(&m, 1, 0x03, 0x01, 0x0011);
	m.type = MAI_TYPE_RAW;
	int qp1 = mai_open("softib0", 1, 1);

	CHECK(qp1 >= 0 && mai_send(qp1, &m) == 0, "RAW accepted from a privileged channel");
	mai_close(qp1);
	CHECK(mai_close(sm) == 0 && mai_close(ag) == 0, "closed");
	return failed;
}

static int unpriv(void)
{
	int a, b, ret;
	mai_filter_t f;
	mai_mad_t m, r;

	ret = mai_open("softib0", 1, 0);
	CHECK(ret == -EACCES, "QP0 refused: %d", ret);
	a = mai_open("softib0", 1, 1);
	b = mai_open("softib0", 1, 1);
	CHECK(a >= 0 && b >= 0, "QP1 channels open (%d, %d)", a, b);
	if (a < 0 || b < 0)
		return 1;
	mad(&m, 1, 0x03, 0x01, 0x0011);
	m.type = MAI_TYPE_RAW;
	ret = mai_send(a, &m);
	CHECK(ret == -EPERM, "RAW refused: %d", ret);
	m.type = MAI_TYPE_MAD;
	m.lrh.dlid = 2; /* a LID the built-in SM gave; nobody serves the SA there */
	CHECK(mai_send(a, &m) == 0, "a GMP may be sent");
	ret = mai_recv(a, &r, 3000);
	CHECK(ret == 0 && r.method == 0x81 && r.status == 0x000C && (r.tid & 0xFFFFFFFFFFull) == m.tid,
	      "Get nobody takes: GetResp 0x000C (%d, method %#x, status %#x)", ret, r.method,
	      r.status);

	/* the CM's class (0x07) is softibd's CM's: neither sent nor read
	 * without privilege, and no filter may leave the class open */
	mad(&m, 1, 0x07, 0x03, 0x0010);
	ret = mai_send(a, &m);
	CHECK(ret == -EPERM, "a CM MAD refused: %d", ret);
	memset(&f, 0, sizeof(f));
	f.match = MAI_M_CLASS;
	f.mgmt_class = 0x07;
	ret = mai_filter_create(b, &f);
	CHECK(ret == -EACCES, "a CM filter refused: %d", ret);
	memset(&f, 0, sizeof(f));
	f.match = MAI_M_PORT;
	f.port = 1;
	ret = mai_filter_create(b, &f);
	CHECK(ret == -EACCES, "a filter of every class refused: %d", ret);

	memset(&f, 0, sizeof(f));
	f.match = MAI_M_CLASS;
	f.mgmt_class = 0x32;
	CHECK(mai_filter_create(b, &f) == 0, "filter");
	memset(&m, 0, sizeof(m));
	m.type = MAI_TYPE_OOB;
	m.qp = 1;
	m.base_version = 1;
	m.mgmt_class = 0x32;
	m.data_len = 3;
	memcpy(m.data, "abc", 3);
	CHECK(mai_send(a, &m) == 0, "OOB sent");
	ret = mai_recv(b, &r, 3000);
	CHECK(ret == 0 && r.type == MAI_TYPE_OOB && r.data_len == 3 && !memcmp(r.data, "abc", 3),
	      "OOB wrapped back (%d)", ret);
	CHECK(mai_recv(a, &r, 50) == -ETIMEDOUT, "nothing for the sender");
	mai_close(a);
	mai_close(b);
	return failed;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "priv"))
		return priv();
	if (argc == 2 && !strcmp(argv[1], "unpriv"))
		return unpriv();
	fprintf(stderr, "usage: mai_client priv|unpriv\n");
	return 2;
}
