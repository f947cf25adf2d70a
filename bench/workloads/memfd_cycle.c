/* Workload 4, the memfd cycle: memfd_create, ftruncate, close. With -m the
 * memfd is also mapped and every page touched before close. -a SIZE sets
 * the size in bytes (default 16 KiB). */
#include "bench_common.h"

static void op(void *p, long i)
{
	const struct bench_seg *s = p;
	int fd;

	(void)i;
	fd = memfd_create("shmbpf-bench", MFD_CLOEXEC);
	if (fd < 0)
		bench_die("memfd_create");
	if (ftruncate(fd, (off_t)s->size) != 0)
		bench_die("ftruncate");
	bench_map_touch(fd, s);
	close(fd);
}

int main(int argc, char **argv)
{
	struct bench_args a = bench_parse(argc, argv, 50000);
	struct bench_seg s = bench_seg_of(&a);

	bench_run(&a, op, &s);
	return 0;
}
