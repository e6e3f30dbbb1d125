// SPDX-License-Identifier: MIT
/*
 * libibumad's MAD transport: umad_open_port .. umad_get_fd.  It runs on
 * MAI channels (include/softib/mai.h), whose client functions come with
 * softibd's MAD layer; until they are in this build, opening a port fails
 * with -EIO as libibumad does when /dev/infiniband/umadN cannot be opened,
 * and the functions that need an open port fail as on a bad fd.
 */
#include <errno.h>
#include <poll.h>

#include "umad/umad_priv.h"

UMAD_EXPORT int umad_open_port(const char *ca_name, int portnum)
{
	char name[UMAD_CA_NAME_LEN];

	if (sib_umad_resolve(ca_name, &portnum, name))
		return -ENODEV;
	UMAD_DEBUG("%s port %d: no MAI channels in this build", name, portnum);
	return -EIO;
}

UMAD_EXPORT int umad_close_port(int portid)
{
	return -EBADF;
}

UMAD_EXPORT int umad_send(int portid, int agentid, void *umad, int length, int timeout_ms,
			  int retries)
{
	errno = EBADF;
	return -EIO;
}

UMAD_EXPORT int umad_recv(int portid, void *umad, int *length, int timeout_ms)
{
	errno = EBADF;
	return -EBADF;
}

UMAD_EXPORT int umad_poll(int portid, int timeout_ms)
{
	return -EIO;
}

UMAD_EXPORT int umad_get_fd(int portid)
{
	return portid;
}

UMAD_EXPORT int umad_register(int portid, int mgmt_class, int mgmt_version, uint8_t rmpp_version,
			      long method_mask[16 / sizeof(long)])
{
	return -EPERM;
}

UMAD_EXPORT int umad_register_oui(int portid, int mgmt_class, uint8_t rmpp_version, uint8_t oui[3],
				  long method_mask[16 / sizeof(long)])
{
	if (mgmt_class < 0x30 || mgmt_class > 0x4f)
		return -EINVAL;
	return -EPERM;
}

UMAD_EXPORT int umad_register2(int port_fd, struct umad_reg_attr *attr, uint32_t *agent_id)
{
	if (!attr || !agent_id)
		return EINVAL;
	if (attr->mgmt_class >= 0x30 && attr->mgmt_class <= 0x4f &&
	    ((attr->oui & 0xffffff) == 0 || (attr->oui >> 24) != 0))
		return EINVAL;
	return EBADF;
}

UMAD_EXPORT int umad_unregister(int portid, int agentid)
{
	errno = EBADF;
	return -1;
}
