/* SPDX-License-Identifier: MIT */
/*
 * `softib run [OPTIONS] -- CMD ARGS...` (runcmd.c): CMD with softib as the
 * machine's RDMA stack; the namespace path of its system view (runns.c).
 */
#ifndef SOFTIB_TOOLS_RUNCMD_H
#define SOFTIB_TOOLS_RUNCMD_H

#include <stdbool.h>
#include <stddef.h>

/* The command: argv after "run".  Returns CMD's exit status (128+signal
 * if it was killed), 1 on errors, 2 on usage errors. */
int sib_tool_run(const char *sock, int argc, char **argv);

/*
 * Enter a private mount namespace (with a user namespace first when not
 * root, and a network namespace when net) and put the system view that
 * lives under root in place: tmpfs over /dev and /sys/class with the
 * original entries bound or linked back, the view's subtrees bound over
 * /dev/infiniband, /sys/class/infiniband{,_verbs,_mad,_ucma} and
 * /sys/class/misc/rdma_cm.  Changes the calling process's namespaces.
 * 0, or -errno with why (a line for the user) filled.
 */
int sib_run_ns_setup(const char *root, bool net, char *why, size_t len);

/* sib_run_ns_setup in a child that exits: would it work here?  0, or
 * -EPERM with why filled. */
int sib_run_ns_probe(const char *root, bool net, char *why, size_t len);

#endif
