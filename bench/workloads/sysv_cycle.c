/* Workload 5, the System V cycle: shmget(IPC_PRIVATE), shmat, shmdt,
 * shmctl(IPC_RMID). With -m one byte per page is touched while attached.
 * -a SIZE sets the size in bytes (default 16 KiB). */
#include "bench_common.h"

#include <sys/ipc.h>
#include <sys/shm.h>

struct ctx {
	size_t size;
	long page;
	int touch;
};

static void op(void *p, long i)
{
	struct ctx *c = p;
	int id;
	char *m;

	(void)i;
	id = shmget(IPC_PRIVATE, c->size, IPC_CREAT | 0600);
	if (id < 0)
		bench_die("shmget");
	m = shmat(id, NULL, 0);
	if (m == (void *)-1)
		bench_die("shmat");
	if (c->touch)
		for (size_t off = 0; off < c->size; off += (size_t)c->page)
			m[off] = 1;
	if (shmdt(m) != 0)
		bench_die("shmdt");
	if (shmctl(id, IPC_RMID, NULL) != 0)
		bench_die("shmctl");
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
