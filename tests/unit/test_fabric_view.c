// SPDX-License-Identifier: MIT
/*
 * Client-side views of the fabric map (src/common/fabric_view.c) over maps
 * built here in private memory: validation and clamping of what the map
 * claims, and the bounded seqlock reader, which must give up with EAGAIN
 * on a seq stuck odd and never return a torn copy while a writer runs.
 * No daemon, no processes; the writer thread is joined before each test ends.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fabric_view.h"
#include "common/sib_ctl.h"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* A valid map of two 1-port devices, as softibd would publish it. */
static struct sib_fabric_shm *new_map(void)
{
	struct sib_fabric_shm *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	m->magic = SIB_SHM_MAGIC;
	m->abi_version = SIB_ABI_VERSION;
	m->size = sizeof(*m);
	m->num_devices = 2;
	for (int i = 0; i < 2; i++) {
		m->devs[i].num_ports = 1;
		m->devs[i].ports[0].lid = (uint16_t)(2 + i);
		m->devs[i].ports[0].sm_lid = 1;
	}
	return m;
}

static void test_check(void **state)
{
	struct sib_fabric_shm *m = new_map();
	uint32_t n = 99;

	assert_int_equal(sib_fabric_check(m, sizeof(*m), &n), 0);
	assert_int_equal(n, 2);
	m->num_devices = 0xffffffff; /* clamped, never trusted as an index */
	assert_int_equal(sib_fabric_check(m, sizeof(*m), &n), 0);
	assert_int_equal(n, SIB_MAX_DEVICES);
	assert_int_equal(sib_fabric_check(m, sizeof(*m) - 1, &n), -EPROTO);
	m->size = 4096;
	assert_int_equal(sib_fabric_check(m, sizeof(*m), &n), -EPROTO);
	m->size = sizeof(*m);
	m->abi_version++;
	assert_int_equal(sib_fabric_check(m, sizeof(*m), &n), -EPROTO);
	m->abi_version--;
	m->magic = 0;
	assert_int_equal(sib_fabric_check(m, sizeof(*m), &n), -EPROTO);
	free(m);
}

static void test_port_read(void **state)
{
	struct sib_fabric_shm *m = new_map();
	struct sib_shm_port p;

	assert_int_equal(sib_fabric_port_read(m, 2, 1, 1, &p), 0);
	assert_int_equal(p.lid, 3);
	assert_int_equal(sib_fabric_port_read(m, 2, 2, 1, &p), -EINVAL); /* no device 2 */
	assert_int_equal(sib_fabric_port_read(m, 2, 0, 0, &p), -EINVAL);
	assert_int_equal(sib_fabric_port_read(m, 2, 0, 2, &p), -EINVAL);
	assert_int_equal(sib_fabric_port_read(NULL, 2, 0, 1, &p), -EINVAL);
	/* a device claiming 255 ports has SIB_MAX_PORTS */
	m->devs[0].num_ports = 255;
	assert_int_equal(sib_fabric_num_ports(&m->devs[0]), SIB_MAX_PORTS);
	assert_int_equal(sib_fabric_port_read(m, 2, 0, SIB_MAX_PORTS, &p), 0);
	assert_int_equal(sib_fabric_port_read(m, 2, 0, SIB_MAX_PORTS + 1, &p), -EINVAL);
	/* an out-of-range device count is clamped, not used as an index */
	assert_int_equal(sib_fabric_port_read(m, 0xffffffff, SIB_MAX_DEVICES, 1, &p), -EINVAL);
	free(m);
}

/* A seq stuck odd (a writer that died mid-update): EAGAIN, in bounded time. */
static void test_seq_stuck_odd(void **state)
{
	struct sib_fabric_shm *m = new_map();
	struct sib_shm_port p;
	long long t0;

	atomic_store(&m->port_seq, 7);
	t0 = now_ms();
	assert_int_equal(sib_fabric_port_read(m, 2, 0, 1, &p), -EAGAIN);
	assert_true(now_ms() - t0 < 2000);
	atomic_store(&m->port_seq, 8);
	assert_int_equal(sib_fabric_port_read(m, 2, 0, 1, &p), 0);
	free(m);
}

struct writer {
	struct sib_fabric_shm *m;
	atomic_bool stop;
	unsigned long rounds;
};

/* The daemon's writer protocol: odd, update lid and sm_lid together, even. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct sib_shm_port *p = &w->m->devs[0].ports[0];
	uint32_t seq = 0;
	uint16_t v = 0;

	while (!atomic_load(&w->stop)) {
		atomic_store_explicit(&w->m->port_seq, ++seq, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		v++;
		*(volatile uint16_t *)&p->lid = v;
		*(volatile uint16_t *)&p->sm_lid = v;
		atomic_store_explicit(&w->m->port_seq, ++seq, memory_order_release);
		w->rounds++;
	}
	return NULL;
}

/* Under a writer that never stops: copies are consistent or EAGAIN, never torn. */
static void test_seq_concurrent(void **state)
{
	struct writer w = { .m = new_map() };
	struct sib_shm_port p;
	int ok = 0, again = 0, rc;
	pthread_t t;
	long long end;

	w.m->devs[0].ports[0].lid = w.m->devs[0].ports[0].sm_lid = 0; /* the writer's v */
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	end = now_ms() + 300;
	while (now_ms() < end) {
		rc = sib_fabric_port_read(w.m, 2, 0, 1, &p);
		if (rc == -EAGAIN) {
			again++;
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(p.lid, p.sm_lid);
		ok++;
	}
	atomic_store(&w.stop, true);
	pthread_join(t, NULL);
	assert_true(w.rounds > 0);
	assert_true(ok > 0 || again > 0);
	free(w.m);
}

/* A real memfd: attach maps it read-only, validated; detach unmaps. */
static void test_attach(void **state)
{
	struct sib_fabric_shm *m = new_map();
	struct sib_fabric_view v;
	int fd = memfd_create("view", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, m, sizeof(*m)), (ssize_t)sizeof(*m));
	assert_int_equal(sib_fabric_view_attach(&v, fd, sizeof(*m)), 0);
	assert_int_equal(v.num_devices, 2);
	assert_non_null(sib_fabric_view_dev(&v, 1));
	assert_null(sib_fabric_view_dev(&v, 2));
	assert_non_null(sib_fabric_view_cntr(&v, 1, 1));
	assert_null(sib_fabric_view_cntr(&v, 1, 0));
	assert_null(sib_fabric_view_cntr(&v, SIB_MAX_DEVICES, 1));
	sib_fabric_view_detach(&v);
	assert_null(v.map);
	assert_int_equal(sib_fabric_view_attach(&v, fd, 4096), -EPROTO);
	assert_null(v.map);
	close(fd);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_port_read),
		cmocka_unit_test(test_seq_stuck_odd),
		cmocka_unit_test(test_seq_concurrent),
		cmocka_unit_test(test_attach),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
