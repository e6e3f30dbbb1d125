// SPDX-License-Identifier: MIT
/*
 * Print, for every device the verbs library lists, its name and the
 * ibv_device.dev_name that stands for its uverbs character device
 * ("softib0 uverbs0"), one device a line.  uverbs_view.sh makes
 * /dev/infiniband/<dev_name> from it: UCX uses a device only when that
 * path is a character device it can open read-write.  Exit 1 when the
 * library lists no device.
 */
#include <stdio.h>

#include <infiniband/verbs.h>

int main(void)
{
	struct ibv_device **list;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list) {
		perror("ibv_get_device_list");
		return 1;
	}
	for (i = 0; i < n; i++)
		printf("%s %s\n", ibv_get_device_name(list[i]), list[i]->dev_name);
	ibv_free_device_list(list);
	return n > 0 ? 0 : 1;
}
