/* SPDX-License-Identifier: MIT */
/*
 * rsockets (<rdma/rsocket.h>, rsocket .. riowrite): not implemented yet
 * (docs/rdmacm.md "Not yet").  Every function exists, because rping,
 * ucmatose and udaddy import rpoll without calling it and every client is
 * linked BIND_NOW; each fails with errno ENOSYS and says so once on stderr.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>

#include <rdma/rsocket.h>

#include "rdmacm/cma_priv.h"

static atomic_flag told = ATOMIC_FLAG_INIT;

static int nosys(const char *fn)
{
	if (!atomic_flag_test_and_set(&told))
		fprintf(stderr, "softib librdmacm: %s: rsockets are not implemented yet (ENOSYS)\n", fn);
	errno = ENOSYS;
	return -1;
}

RDMACM_EXPORT int rsocket(int domain, int type, int protocol) { return nosys(__func__); }
RDMACM_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen) { return nosys(__func__); }
RDMACM_EXPORT int rlisten(int socket, int backlog) { return nosys(__func__); }
RDMACM_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen) { return nosys(__func__); }
RDMACM_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen) { return nosys(__func__); }
RDMACM_EXPORT int rshutdown(int socket, int how) { return nosys(__func__); }
RDMACM_EXPORT int rclose(int socket) { return nosys(__func__); }
RDMACM_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags) { return nosys(__func__); }
RDMACM_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
				struct sockaddr *src_addr, socklen_t *addrlen) { return nosys(__func__); }
RDMACM_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags) { return nosys(__func__); }
RDMACM_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags) { return nosys(__func__); }
RDMACM_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			      const struct sockaddr *dest_addr, socklen_t addrlen) { return nosys(__func__); }
RDMACM_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags) { return nosys(__func__); }
RDMACM_EXPORT ssize_t rread(int socket, void *buf, size_t count) { return nosys(__func__); }
RDMACM_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt) { return nosys(__func__); }
RDMACM_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count) { return nosys(__func__); }
RDMACM_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt) { return nosys(__func__); }
RDMACM_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout) { return nosys(__func__); }
RDMACM_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			  struct timeval *timeout) { return nosys(__func__); }
RDMACM_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen) { return nosys(__func__); }
RDMACM_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen) { return nosys(__func__); }
RDMACM_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
			      socklen_t optlen) { return nosys(__func__); }
RDMACM_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
			      socklen_t *optlen) { return nosys(__func__); }
RDMACM_EXPORT int rfcntl(int socket, int cmd, ...) { return nosys(__func__); }
RDMACM_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
			   off_t offset) { return nosys(__func__); }
RDMACM_EXPORT int riounmap(int socket, void *buf, size_t len) { return nosys(__func__); }
RDMACM_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)nosys(__func__);
	return 0;
}
