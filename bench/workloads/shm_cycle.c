/* Workloads 2 and 3, the POSIX shm cycle: shm_open(O_CREAT | O_EXCL),
 * ftruncate, (with -m: mmap, touch every page, munmap), close, shm_unlink.
 * -a SIZE sets the segment size in bytes (default 16 KiB). With -k the
 * files are kept, each under a new name /dev/shm/shmbpf-bench-keep-PID-I
 * (the loss benchmark checks that the engine finds them all). With
 * -p K:BLOCKS, K children take turns (bench_paired). */
#include "bench_common.h"

#include <fcntl.h>

struct ctx {
	char name[64];
	int keep;
	struct bench_seg seg;
};

static void op(void *p, long i)
{
	struct ctx *c = p;
	int fd;

	if (c->keep)
		snprintf(c->name, sizeof(c->name), "/shmbpf-bench-keep-%d-%ld", (int)getpid(), i);
	fd = shm_open(c->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		bench_die("shm_open");
	if (ftruncate(fd, (off_t)c->seg.size) != 0)
		bench_die("ftruncate");
	bench_map_touch(fd, &c->seg);
	close(fd);
	if (!c->keep && shm_unlink(c->name) != 0)
		bench_die("shm_unlink");
}

/* One name per process: two producers never collide, and O_EXCL proves
 * every cycle really creates a new file. */
static void init(void *p)
{
	struct ctx *c = p;

	snprintf(c->name, sizeof(c->name), "/shmbpf-bench-%d", (int)getpid());
	shm_unlink(c->name);
}

int main(int argc, char **argv)
{
	struct bench_args a = bench_parse(argc, argv, 50000);
	struct ctx c = {.keep = a.keep, .seg = bench_seg_of(&a)};

	if (a.children) {
		bench_paired(&a, init, op, &c);
		return 0;
	}
	init(&c);
	bench_run(&a, op, &c);
	return 0;
}
