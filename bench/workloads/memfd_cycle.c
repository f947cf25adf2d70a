/* Workload 4, the memfd cycle: memfd_create, ftruncate, close. With -m the
 * memfd is also mapped and every page touched before close. -a SIZE sets
 * the size in bytes (default 16 KiB). */
#include "bench_common.h"

#include <sys/mman.h>

struct ctx {
	size_t size;
	long page;
	int touch;
};

static void op(void *p, long i)
{
	struct ctx *c = p;
	int fd;

	(void)i;
	fd = memfd_create("shmbpf-bench", MFD_CLOEXEC);
	if (fd < 0)
		bench_die("memfd_create");
	if (ftruncate(fd, (off_t)c->size) != 0)
		bench_die("ftruncate");
	if (c->touch) {
		char *m = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (m == MAP_FAILED)
			bench_die("mmap");
		for (size_t off = 0; off < c->size; off += (size_t)c->page)
			m[off] = 1;
		munmap(m, c->size);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	struct bench_args a = bench_parse(argc, argv, 50000);
	struct ctx c = {.size = 16 << 10, .page = sysconf(_SC_PAGESIZE), .touch = a.mmap};

	if (a.arg)
		c.size = strtoul(a.arg, NULL, 0);
	bench_run(&a, op, &c);
	return 0;
}
