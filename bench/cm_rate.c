// SPDX-License-Identifier: MIT
/*
 * Connections per second: N connect/accept/disconnect cycles between two
 * threads of one process, through the rdma_cm (RC QPs, the TCP port space,
 * as rdma_client/rdma_server make them: rdma_create_ep, rdma_connect,
 * rdma_accept, rdma_disconnect) or through TCP sockets on the same address,
 * for bench/cm_rate.sh to print side by side.  Each rdma_cm cycle is a real
 * REQ/REP/RTU and DREQ/DREP between the two ports' CMs in softibd.
 * Usage: cm_rate rdma|tcp ADDR PORT N   (prints "<kind> <N> <seconds> <per second>")
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

static const char *addr, *port;
static int n;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* ---- rdma_cm ---- */

static struct rdma_addrinfo *rai(int passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;

	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		die("rdma_getaddrinfo");
	return res;
}

static struct ibv_qp_init_attr qp_attr(void)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };

	a.cap.max_send_wr = a.cap.max_recv_wr = 1;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	return a;
}

static void *rdma_server(void *arg)
{
	struct rdma_cm_id *listen_id = arg, *id;

	for (int i = 0; i < n; i++) {
		/* the listener's QP attributes made the QP (rdma_create_ep) */
		if (rdma_get_request(listen_id, &id))
			die("rdma_get_request");
		if (rdma_accept(id, NULL))
			die("rdma_accept");
		/* the client disconnects first; ours answers its DREQ */
		rdma_disconnect(id);
		rdma_destroy_ep(id);
	}
	return NULL;
}

static void run_rdma(void)
{
	struct rdma_addrinfo *s = rai(1), *c = rai(0);
	struct ibv_qp_init_attr a = qp_attr();
	struct rdma_cm_id *listen_id, *id;
	pthread_t t;
	double t0;

	if (rdma_create_ep(&listen_id, s, NULL, &a) || rdma_listen(listen_id, 16))
		die("rdma listen");
	pthread_create(&t, NULL, rdma_server, listen_id);
	t0 = now();
	for (int i = 0; i < n; i++) {
		a = qp_attr();
		if (rdma_create_ep(&id, c, NULL, &a) || rdma_connect(id, NULL))
			die("rdma_connect");
		rdma_disconnect(id);
		rdma_destroy_ep(id);
	}
	pthread_join(t, NULL);
	printf("rdma_cm %d %.3f %.0f\n", n, now() - t0, n / (now() - t0));
	rdma_destroy_ep(listen_id);
	rdma_freeaddrinfo(s);
	rdma_freeaddrinfo(c);
}

/* ---- TCP ---- */

static void *tcp_server(void *arg)
{
	int ls = *(int *)arg;
	char b;

	for (int i = 0; i < n; i++) {
		int fd = accept(ls, NULL, NULL);

		if (fd < 0)
			die("accept");
		(void)!read(fd, &b, 1); /* until the client closes */
		close(fd);
	}
	return NULL;
}

static void run_tcp(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	int ls, one = 1;
	pthread_t t;
	double t0;

	if (getaddrinfo(addr, port, &hints, &res))
		die("getaddrinfo");
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, res->ai_addr, res->ai_addrlen) || listen(ls, 16))
		die("tcp listen");
	pthread_create(&t, NULL, tcp_server, &ls);
	t0 = now();
	for (int i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (connect(fd, res->ai_addr, res->ai_addrlen))
			die("connect");
		close(fd);
	}
	pthread_join(t, NULL);
	printf("tcp %d %.3f %.0f\n", n, now() - t0, n / (now() - t0));
	close(ls);
	freeaddrinfo(res);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: cm_rate rdma|tcp ADDR PORT N\n");
		return 2;
	}
	addr = argv[2];
	port = argv[3];
	n = atoi(argv[4]);
	if (!strcmp(argv[1], "rdma"))
		run_rdma();
	else
		run_tcp();
	return 0;
}
