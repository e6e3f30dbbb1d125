// SPDX-License-Identifier: MIT
/*
 * no_userns [--] CMD ARGS...: run CMD where no namespace can be made, as in a
 * default Docker container (whose seccomp profile refuses these calls to a
 * process without CAP_SYS_ADMIN) or on a CI runner that restricts
 * unprivileged user namespaces: a seccomp filter (libseccomp) makes
 * unshare(2), setns(2) and mount(2) fail with EPERM, clone(2) with any
 * CLONE_NEW* flag fail with EPERM, and clone3(2) fail with ENOSYS (so that
 * glibc falls back to clone, whose flags a filter can see).  The filter is
 * inherited by every child and survives execve (no_new_privs is set).
 * Exits 127 if CMD cannot be run, 1 if the filter cannot be installed.
 */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CLONE_NEW_ANY (CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID | \
		       CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP)

int main(int argc, char **argv)
{
	scmp_filter_ctx f;
	int i = 1, ret;

	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc) {
		fputs("usage: no_userns [--] CMD [ARGS...]\n", stderr);
		return 2;
	}
	if (!(f = seccomp_init(SCMP_ACT_ALLOW))) {
		fputs("no_userns: seccomp_init failed\n", stderr);
		return 1;
	}
	ret = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0);
	ret = ret ?: seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 0);
	ret = ret ?: seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mount), 0);
	ret = ret ?: seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	for (unsigned int b = 0; b < 32 && !ret; b++) /* one rule per CLONE_NEW* flag */
		if (CLONE_NEW_ANY & (1u << b))
			ret = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
					       SCMP_A0(SCMP_CMP_MASKED_EQ, 1u << b, 1u << b));
	ret = ret ?: seccomp_load(f);
	seccomp_release(f);
	if (ret) {
		fprintf(stderr, "no_userns: installing the filter: %s\n", strerror(-ret));
		return 1;
	}
	execvp(argv[i], argv + i);
	fprintf(stderr, "no_userns: %s: %s\n", argv[i], strerror(errno));
	return 127;
}
