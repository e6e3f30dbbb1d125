/* SPDX-License-Identifier: MIT */
/*
 * The system view (docs/clients.md "The system view"): a directory tree
 * under a caller's ROOT that mirrors what the Linux kernel's RDMA core puts
 * in sysfs and /dev for softib's devices (drivers/infiniband/core/sysfs.c,
 * user_mad.c, uverbs_main.c, ucma.c), kept live from softib's own
 * libibverbs.so.1 (public API only: ibv_get_device_list, ibv_open_device,
 * ibv_query_device, ibv_query_port, ibv_query_gid(_ex), ibv_query_pkey,
 * ibv_read_sysfs_file, async events) and its libibumad.so.3 (the port
 * counters: PortCounters and PortCountersExtended Gets to the port's PMA).
 * `softib run` mounts ROOT's subtrees over /sys/class and /dev/infiniband,
 * or redirects those paths to ROOT with its interposer.
 *
 * Every file is written atomically (a dot-named temporary in the same
 * directory, renamed over the old one) and only when its value changed, so
 * readers in other processes never see half a value.  Modes are sysfs's:
 * 0444 files, 0755 directories.  Not thread-safe: one thread calls all of
 * these on one view.
 */
#ifndef SIB_SYSVIEW_H
#define SIB_SYSVIEW_H

#include <stdbool.h>
#include <stdint.h>

struct sib_sysview;

/*
 * Build the tree under root (an existing directory, normally empty): opens
 * every device softib's libibverbs lists (a softibd must be reachable as for
 * any verbs program) and writes every file.  NULL with errno set: ENOENT or
 * ENOTDIR (root), ENOMEM, or the errno of a failed mkdir/write under root.
 * No device is not an error: the class directories are made empty.
 */
struct sib_sysview *sib_sysview_create(const char *root);

/*
 * Name ifname as the network interface of port `port` of device `dev`:
 * ROOT/sys/class/infiniband/<dev>/device/net/<ifname>/ (dev_port, type,
 * addr_len, and ifindex, mtu, operstate when the interface is visible in
 * this process's network namespace), as the kernel's ipoib driver shows an
 * IPoIB interface.  A later call for the same port replaces the name; NULL
 * or "" removes it.  Kept across refreshes and a device's remove and re-add.
 * 0, -EINVAL (bad name or port), -ENODEV (no such device), or a write's
 * -errno.
 */
int sib_sysview_set_netdev(struct sib_sysview *v, const char *dev, uint8_t port, const char *ifname);

/*
 * An fd that polls readable (POLLIN) when one of the opened devices has a
 * pending async event (port active/error, LID, SM, GID, P_Key change, client
 * reregister, device fatal = removed).  Call sib_sysview_refresh then.  The
 * view owns it: do not read or close it.
 */
int sib_sysview_fd(const struct sib_sysview *v);

/*
 * Consume the pending async events (non-blocking), then bring the whole tree
 * up to date: devices added (`softib device add`) or removed, port and GID
 * and P_Key tables, port counters.  Rewrites only the files whose value
 * changed.  Call it on POLLIN of sib_sysview_fd and about once a second.
 * 0, or the first -errno of a failed write (the rest is still done).
 */
int sib_sysview_refresh(struct sib_sysview *v);

/*
 * Close every device, the fd and the PMA ports; with remove_tree, delete
 * every file, symlink and directory the view made under root (not root
 * itself, nor anything someone else put there).  NULL is a no-op.
 */
void sib_sysview_destroy(struct sib_sysview *v, bool remove_tree);

#endif
