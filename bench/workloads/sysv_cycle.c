/* Workload 5, the System V cycle: shmget(IPC_PRIVATE), shmat, shmdt,
 * shmctl(IPC_RMID). With -m one byte per page is touched while attached.
 * -a SIZE sets the size in bytes (default 16 KiB). */
#include "bench_common.h"

#include <sys/ipc.h>
#include <sys/shm.h>

static void op(void *p, long i)
{
	const struct bench_seg *s = p;
	int id;
	char *m;

	(void)i;
	id = shmget(IPC_PRIVATE, s->size, IPC_CREAT | 0600);
	if (id < 0)
		bench_die("shmget");
	m = shmat(id, NULL, 0);
	if (m == (void *)-1)
		bench_die("shmat");
	bench_touch(m, s);
	if (shmdt(m) != 0)
		bench_die("shmdt");
	if (shmctl(id, IPC_RMID, NULL) != 0)
		bench_die("shmctl");
}

int main(int argc, char **argv)
{
	struct bench_args a = bench_parse(argc, argv, 50000);
	struct bench_seg s = bench_seg_of(&a);

	bench_run(&a, op, &s);
	return 0;
}
