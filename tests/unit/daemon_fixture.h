/* SPDX-License-Identifier: MIT */
/*
 * A private softibd for a test program that drives the built library
 * (daemon_fixture.c): started as the cmocka group setup on a socket in a
 * fresh temporary directory (exported as SOFTIB_SOCKET, autostart off),
 * stopped by PID in the group teardown.  Every wait is bounded.
 */
#ifndef SIB_TESTS_DAEMON_FIXTURE_H
#define SIB_TESTS_DAEMON_FIXTURE_H

#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t now_ms(void);
/* The daemon's control socket (valid after start_daemon). */
const char *daemon_socket(void);
/* cmocka group setup/teardown.  The daemon also exits by itself after 30 s
 * without clients, so an aborted run leaves none behind. */
int start_daemon(void **state);
int stop_daemon(void **state);
/* The private softibd's pid (0 before start_daemon). */
int daemon_process(void);
/* For the next start_daemon: more softibd options (NULL-terminated, at most
 * 8; NULL: none) and, if nofile is not 0, its RLIMIT_NOFILE (soft and
 * hard).  A test may stop_daemon and start_daemon again with others. */
void daemon_options(const char *const *args, unsigned long nofile);

#endif
