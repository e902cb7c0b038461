/*
 * The least a Redis client can do per GET, as a reference for
 * scripts/compare-redis-benchmark.py: what a client's system-call pattern costs on this
 * machine, apart from any client's own code.
 *
 *     cc -O2 -o minimal-get-client scripts/minimal-get-client.c
 *     [REDIS_PASSWORD=...] minimal-get-client HOST PORT CONNECTIONS SECONDS PATTERN
 *
 * One thread (as redis-benchmark's default), CONNECTIONS sockets, one GET of
 * `key:__rand_int__` in database 0 in flight on each (the key redis-benchmark -t get
 * reads), for SECONDS. PATTERN is how it waits:
 *
 *   plain  every socket registered once with epoll (EPOLLIN); a reply is read when
 *          epoll_wait reports it and the next GET is sent at once: one sendto, one
 *          epoll_wait and one recvfrom per GET at one connection, the fewest a client
 *          that sleeps between replies can make.
 *   ae     redis-benchmark's own pattern (its ae event loop with hiredis, as strace shows
 *          it for redis-benchmark 7.0 at one client): after each reply the socket is
 *          taken out of epoll and put back for EPOLLOUT, the GET is sent when
 *          epoll_wait reports it writable, and the socket is taken out and put back for
 *          EPOLLIN: five epoll_ctl, two epoll_wait, one sendto and one recvfrom per GET.
 *   poll   as plain, but epoll_wait never sleeps (a zero timeout): the thread polls its
 *          sockets and uses its core whole, as metabench's client threads under
 *          --busy-poll do, so a reply finds it running.
 *
 * Prints one line of JSON: calls, seconds, and the process's user+system CPU time per
 * call (getrusage), the figures the comparison prints for redis-benchmark.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTIONS 4096

static const char GET[] = "*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n";

struct conn {
    int fd;
    char buf[4096];
    size_t len;
};

static void fail(const char *what) {
    fprintf(stderr, "minimal-get-client: %s\n", what);
    exit(1);
}

static void die(const char *what) {
    fprintf(stderr, "minimal-get-client: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double cpu(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec * 1e-6;
}

/* Bytes of the first complete reply in buf (a simple string, error, integer or bulk
 * string), 0 if it is not complete yet. */
static size_t reply_len(const char *buf, size_t len) {
    const char *eol = memchr(buf, '\n', len);
    if (!eol) return 0;
    size_t head = (size_t)(eol - buf) + 1;
    if (buf[0] != '$') return head;
    long n = strtol(buf + 1, NULL, 10);
    if (n < 0) return head;
    size_t total = head + (size_t)n + 2;
    return len >= total ? total : 0;
}

static void send_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) continue;
            die("send");
        }
        data += n;
        len -= (size_t)n;
    }
}

/* Reads what the socket has into the connection's buffer: the bytes read, 0 if the read
 * would block. A reply that does not fit the buffer, a closed connection or an error ends
 * the run. */
static size_t receive(struct conn *c) {
    if (c->len == sizeof c->buf) fail("a reply larger than the client's 4096-byte buffer");
    ssize_t n = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n < 0) die("recv");
    if (n == 0) fail("the server closed the connection");
    return (size_t)n;
}

/* A blocking request and its reply, before the timed loop. */
static void setup_command(struct conn *c, const char *cmd) {
    send_all(c->fd, cmd, strlen(cmd));
    c->len = 0;
    size_t r;
    while (!(r = reply_len(c->buf, c->len))) {
        c->len += receive(c);
    }
    if (c->buf[0] == '-') {
        fprintf(stderr, "minimal-get-client: %.*s\n", (int)(r - 2), c->buf);
        exit(1);
    }
    c->len = 0;
}

static void ctl(int ep, int op, int fd, unsigned events, int index) {
    struct epoll_event ev = {.events = events, .data.u32 = (unsigned)index};
    if (epoll_ctl(ep, op, fd, &ev) < 0) die("epoll_ctl");
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: [REDIS_PASSWORD=...] minimal-get-client HOST PORT CONNECTIONS SECONDS plain|ae|poll\n");
        return 2;
    }
    int conns = atoi(argv[3]);
    double seconds = atof(argv[4]);
    int ae = strcmp(argv[5], "ae") == 0, poll = strcmp(argv[5], "poll") == 0;
    if (conns < 1 || conns > MAX_CONNECTIONS || seconds <= 0 || (!ae && !poll && strcmp(argv[5], "plain") != 0)) {
        fprintf(stderr, "minimal-get-client: bad connections, seconds or pattern\n");
        return 2;
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
        fprintf(stderr, "minimal-get-client: %s is not an IPv4 address\n", argv[1]);
        return 2;
    }
    /* From the environment, not the command line, where any process could read it. */
    const char *password = getenv("REDIS_PASSWORD");
    static struct conn c[MAX_CONNECTIONS];
    int ep = epoll_create1(0);
    if (ep < 0) die("epoll_create1");
    for (int i = 0; i < conns; i++) {
        c[i].fd = socket(AF_INET, SOCK_STREAM, 0);
        if (c[i].fd < 0) die("socket");
        if (connect(c[i].fd, (struct sockaddr *)&addr, sizeof addr) < 0) die("connect");
        int one = 1;
        setsockopt(c[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (password && *password) {
            char auth[512];
            if (strlen(password) > 400) fail("REDIS_PASSWORD is longer than 400 bytes");
            snprintf(auth, sizeof auth, "*2\r\n$4\r\nAUTH\r\n$%zu\r\n%s\r\n", strlen(password), password);
            setup_command(&c[i], auth);
        }
        setup_command(&c[i], "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n");
    }
    double cpu0 = cpu(), t0 = now(), end = t0 + seconds;
    long calls = 0;
    for (int i = 0; i < conns; i++) {
        if (ae) {
            ctl(ep, EPOLL_CTL_ADD, c[i].fd, EPOLLOUT, i);
        } else {
            ctl(ep, EPOLL_CTL_ADD, c[i].fd, EPOLLIN, i);
            send_all(c[i].fd, GET, sizeof GET - 1);
        }
    }
    struct epoll_event evs[256];
    while (now() < end) {
        int n = epoll_wait(ep, evs, 256, poll ? 0 : 1000);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        for (int k = 0; k < n; k++) {
            struct conn *x = &c[evs[k].data.u32];
            int i = (int)evs[k].data.u32;
            if (ae && (evs[k].events & EPOLLOUT)) {
                send_all(x->fd, GET, sizeof GET - 1);
                ctl(ep, EPOLL_CTL_DEL, x->fd, 0, i);
                ctl(ep, EPOLL_CTL_ADD, x->fd, EPOLLIN, i);
                continue;
            }
            size_t got = receive(x);
            if (!got) continue;
            x->len += got;
            size_t r = reply_len(x->buf, x->len);
            if (!r) continue;
            memmove(x->buf, x->buf + r, x->len - r);
            x->len -= r;
            calls++;
            if (ae) {
                ctl(ep, EPOLL_CTL_MOD, x->fd, EPOLLIN, i);
                ctl(ep, EPOLL_CTL_DEL, x->fd, 0, i);
                ctl(ep, EPOLL_CTL_ADD, x->fd, EPOLLOUT, i);
            } else {
                send_all(x->fd, GET, sizeof GET - 1);
            }
        }
    }
    double elapsed = now() - t0, used = cpu() - cpu0;
    printf("{\"calls\": %ld, \"seconds\": %.6f, \"cpu_us_per_call\": %.3f}\n", calls, elapsed,
           calls ? used * 1e6 / calls : 0.0);
    return 0;
}
