// SPDX-License-Identifier: MIT
/*
 * Read-only views of the fabric map (fabric_view.h): attach and validate,
 * bounded seqlock reads of port attributes (IBA 14.2.5.6 PortInfo as the
 * daemon publishes it).  Never writes the map; every loop is bounded by a
 * constant, whatever the map holds.  No locks.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/fabric_view.h"
#include "common/sib_ctl.h"

struct sib_fabric_view sib_fview;

int sib_fabric_check(const struct sib_fabric_shm *map, size_t size, uint32_t *num_devices)
{
	uint32_t n;

	if (size < sizeof(*map) || map->magic != SIB_SHM_MAGIC ||
	    map->abi_version != SIB_ABI_VERSION || map->size != size)
		return -EPROTO;
	n = map->num_devices;
	if (num_devices)
		*num_devices = n < SIB_MAX_DEVICES ? n : SIB_MAX_DEVICES;
	return 0;
}

int sib_fabric_view_attach(struct sib_fabric_view *v, int fd, size_t size)
{
	void *p;
	int ret;

	memset(v, 0, sizeof(*v));
	if (size < sizeof(struct sib_fabric_shm))
		return -EPROTO;
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	ret = sib_fabric_check(p, size, &v->num_devices);
	if (ret) {
		munmap(p, size);
		return ret;
	}
	v->map = p;
	v->size = size;
	return 0;
}

void sib_fabric_view_refresh(struct sib_fabric_view *v)
{
	uint32_t n;

	if (!v->map)
		return;
	n = atomic_load_explicit(&v->map->num_devices, memory_order_acquire);
	if (n > SIB_MAX_DEVICES)
		n = SIB_MAX_DEVICES;
	if (n > __atomic_load_n(&v->num_devices, __ATOMIC_RELAXED))
		__atomic_store_n(&v->num_devices, n, __ATOMIC_RELEASE);
}

void sib_fabric_view_detach(struct sib_fabric_view *v)
{
	if (v->map)
		munmap((void *)v->map, v->size);
	v->map = NULL;
	v->size = 0;
	v->num_devices = 0;
}

const struct sib_shm_device *sib_fabric_view_dev(const struct sib_fabric_view *v, uint32_t dev)
{
	return v->map && dev < v->num_devices ? &v->map->devs[dev] : NULL;
}

struct sib_port_counters *sib_fabric_view_cntr(struct sib_fabric_view *v, uint32_t dev,
					       uint8_t port_num)
{
	if (dev >= SIB_MAX_DEVICES || port_num < 1 || port_num > SIB_MAX_PORTS)
		return NULL;
	return &v->cntr[dev][port_num - 1];
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

int sib_fabric_port_read(const struct sib_fabric_shm *map, uint32_t num_devices, uint32_t dev,
			 uint8_t port_num, struct sib_shm_port *out)
{
	const struct sib_shm_port *p;
	struct timespec nap = { 0, SIB_SEQ_SLEEP_US * 1000L };
	uint32_t seq;
	int i;

	if (num_devices > SIB_MAX_DEVICES)
		num_devices = SIB_MAX_DEVICES;
	if (!map || dev >= num_devices || port_num < 1 ||
	    port_num > sib_fabric_num_ports(&map->devs[dev]))
		return -EINVAL;
	p = &map->devs[dev].ports[port_num - 1];
	for (i = 0; i < SIB_SEQ_TRIES; i++) {
		seq = atomic_load_explicit(&map->port_seq, memory_order_acquire);
		if (!(seq & 1)) {
			memcpy(out, (const void *)p, sizeof(*out));
			atomic_thread_fence(memory_order_acquire);
			if (seq == atomic_load_explicit(&map->port_seq, memory_order_relaxed))
				return 0;
		}
		if (i < SIB_SEQ_SPIN)
			cpu_relax();
		else
			nanosleep(&nap, NULL);
	}
	return -EAGAIN;
}
