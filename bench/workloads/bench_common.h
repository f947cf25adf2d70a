/* Shared by the workload programs: argument parsing, the timed loop and the
 * one result line the driver (bench/run) parses. */
#ifndef SHMBPF_BENCH_COMMON_H
#define SHMBPF_BENCH_COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

struct bench_args {
	long iters;	 /* -n: fixed number of operations */
	double seconds;	 /* -t: run for this long instead (throughput) */
	long warmup;	 /* -w: untimed operations first */
	const char *arg; /* -a: workload-specific (a path, a size) */
	int mmap;	 /* -m: shm cycle with mmap + touch + munmap */
	int keep;	 /* -k: shm cycle without unlink, a new name each time */
	int children;	 /* -p K:BLOCKS: K children take turns (bench_paired) */
	long blocks;
};

static inline void bench_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-n ITERS | -t SECONDS] [-w WARMUP] [-a ARG] [-m] [-k] [-p K:BLOCKS]\n"
		"prints: ops=N elapsed_ns=T ns_per_op=X cpu_ns_per_op=Y\n"
		"with -p: K child pids, then after a line on stdin, per block of -n ITERS:\n"
		"        block=B child=C ns_per_op=X\n",
		prog);
	exit(2);
}

static inline struct bench_args bench_parse(int argc, char **argv, long default_iters)
{
	struct bench_args a = {.iters = default_iters, .warmup = 1000};
	int c;

	while ((c = getopt(argc, argv, "n:t:w:a:mkp:h")) != -1) {
		switch (c) {
		case 'n':
			a.iters = strtol(optarg, NULL, 10);
			break;
		case 't':
			a.seconds = strtod(optarg, NULL);
			break;
		case 'w':
			a.warmup = strtol(optarg, NULL, 10);
			break;
		case 'a':
			a.arg = optarg;
			break;
		case 'm':
			a.mmap = 1;
			break;
		case 'k':
			a.keep = 1;
			break;
		case 'p':
			if (sscanf(optarg, "%d:%ld", &a.children, &a.blocks) != 2 ||
			    a.children < 1 || a.children > 8 || a.blocks < 1)
				bench_usage(argv[0]);
			break;
		default:
			bench_usage(argv[0]);
		}
	}
	if ((a.iters <= 0 && a.seconds <= 0) || (a.children && a.seconds > 0))
		bench_usage(argv[0]);
	return a;
}

static inline void bench_die(const char *what)
{
	fprintf(stderr, "workload: %s: %s\n", what, strerror(errno));
	exit(1);
}

static inline long long bench_now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * The unrelated workloads' file: -a PATH, else /var/tmp/shmbpf-bench-<stem>-<pid>
 * (into own, removed by bench_unrelated_done), opened for writing and
 * created if need be. Warns when it is on tmpfs, where a tracer would
 * report it rather than pass it by.
 */
#define BENCH_TMPFS_MAGIC 0x01021994

static inline int bench_unrelated_file(const struct bench_args *a, const char *stem, char *own,
				       size_t own_size, const char **path)
{
	struct statfs sfs;
	int fd;

	*path = a->arg;
	if (!*path) {
		snprintf(own, own_size, "/var/tmp/shmbpf-bench-%s-%d", stem, (int)getpid());
		*path = own;
	}
	fd = open(*path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		bench_die(*path);
	if (fstatfs(fd, &sfs) == 0 && sfs.f_type == BENCH_TMPFS_MAGIC)
		fprintf(stderr, "workload: warning: %s is on tmpfs, not an unrelated filesystem\n",
			*path);
	return fd;
}

static inline void bench_unrelated_done(const char *path, const char *own)
{
	if (path == own)
		unlink(own);
}

/* The segment every workload makes: -a SIZE bytes (default 16 KiB), its
 * pages touched with -m. */
struct bench_seg {
	size_t size;
	long page;
	int touch;
};

static inline struct bench_seg bench_seg_of(const struct bench_args *a)
{
	struct bench_seg s = {.size = 16 << 10, .page = sysconf(_SC_PAGESIZE), .touch = a->mmap};

	if (a->arg)
		s.size = strtoul(a->arg, NULL, 0);
	return s;
}

/* Writes one byte per page of a mapping of the segment, with -m. */
static inline void bench_touch(char *m, const struct bench_seg *s)
{
	if (!s->touch)
		return;
	for (size_t off = 0; off < s->size; off += (size_t)s->page)
		m[off] = 1;
}

/* With -m: maps the file behind fd, touches every page, unmaps it. */
static inline void bench_map_touch(int fd, const struct bench_seg *s)
{
	char *m;

	if (!s->touch)
		return;
	m = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		bench_die("mmap");
	bench_touch(m, s);
	munmap(m, s->size);
}

/*
 * Runs op(ctx, i) after the warm-up, either iters times or until the time is
 * up (checking the clock every 64 operations), and prints the result line.
 * CPU time is this process's user + system time: under a tracer it includes
 * the BPF programs that run in the workload's syscalls.
 */
static inline void bench_run(const struct bench_args *a, void (*op)(void *ctx, long i), void *ctx)
{
	long long start, end, cpu0, cpu1;
	long i, n = 0;

	for (i = 0; i < a->warmup; i++)
		op(ctx, i);
	cpu0 = bench_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	start = bench_now_ns(CLOCK_MONOTONIC);
	if (a->seconds > 0) {
		long long stop = start + (long long)(a->seconds * 1e9);

		for (;;) {
			for (int k = 0; k < 64; k++)
				op(ctx, a->warmup + n++);
			if (bench_now_ns(CLOCK_MONOTONIC) >= stop)
				break;
		}
	} else {
		for (n = 0; n < a->iters; n++)
			op(ctx, a->warmup + n);
	}
	end = bench_now_ns(CLOCK_MONOTONIC);
	cpu1 = bench_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	printf("ops=%ld elapsed_ns=%lld ns_per_op=%.1f cpu_ns_per_op=%.1f\n", n, end - start,
	       (double)(end - start) / (double)n, (double)(cpu1 - cpu0) / (double)n);
	fflush(stdout);
}

/*
 * With -p K:BLOCKS: K child processes take turns, one at a time, each
 * running a block of -n operations, for BLOCKS rounds (each round in a
 * rotated order), after one untimed round of -w operations each. A tracer
 * that looks at one process alone (engine_host --pid, floor_host --pid)
 * can then be timed beside another on the same machine at the same
 * moment: a slow spell of this VM's vCPUs, which can last seconds and
 * cost half again, then falls on every child's blocks alike (bench.py,
 * section "paired"). The children's pids are printed first, one per line;
 * they start when a line is read on stdin. Each child calls init(ctx)
 * first, then prints "block=B child=C ns_per_op=X" per block.
 */
static inline void bench_paired(const struct bench_args *a, void (*init)(void *ctx),
				void (*op)(void *ctx, long i), void *ctx)
{
	int go[8][2], done[8][2];
	pid_t pids[8];
	char line[64];
	long long ns;

	for (int c = 0; c < a->children; c++) {
		if (pipe(go[c]) || pipe(done[c]))
			bench_die("pipe");
		fflush(stdout); /* a child's exit must not print the pids again */
		pids[c] = fork();
		if (pids[c] < 0)
			bench_die("fork");
		if (pids[c] == 0) {
			long i = 0, n;
			char cmd;

			/* Only its own ends: the parent's reads then see the end
			 * of a child that died, and a child sees the parent's. */
			for (int k = 0; k < c; k++) {
				close(go[k][1]);
				close(done[k][0]);
			}
			close(go[c][1]);
			close(done[c][0]);
			init(ctx);
			while (read(go[c][0], &cmd, 1) == 1 && cmd != 'q') {
				long long start = bench_now_ns(CLOCK_MONOTONIC);

				for (n = cmd == 'w' ? a->warmup : a->iters; n > 0; n--)
					op(ctx, i++);
				ns = bench_now_ns(CLOCK_MONOTONIC) - start;
				if (write(done[c][1], &ns, sizeof(ns)) != sizeof(ns))
					_exit(1);
			}
			_exit(0);
		}
		close(go[c][0]);
		close(done[c][1]);
		printf("%d\n", (int)pids[c]);
	}
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		bench_die("stdin");
	for (long b = -1; b < a->blocks; b++) {
		for (int j = 0; j < a->children; j++) {
			int c = (int)((b + 1 + j) % a->children);

			if (write(go[c][1], b < 0 ? "w" : "g", 1) != 1 ||
			    read(done[c][0], &ns, sizeof(ns)) != sizeof(ns))
				bench_die("child");
			if (b >= 0)
				printf("block=%ld child=%d ns_per_op=%.1f\n", b, c,
				       (double)ns / (double)a->iters);
		}
	}
	for (int c = 0; c < a->children; c++) {
		if (write(go[c][1], "q", 1) != 1 || waitpid(pids[c], NULL, 0) < 0)
			bench_die("child");
	}
	fflush(stdout);
}

#endif /* SHMBPF_BENCH_COMMON_H */
