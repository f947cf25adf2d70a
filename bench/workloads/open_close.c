/* Workload 1, unrelated syscalls: open + close of one file on a disk
 * filesystem (ext4 on the bench machine). A tracer pays for these without
 * reporting anything, so this is its cost on everyone else. */
#include "bench_common.h"

#include <fcntl.h>
#include <sys/vfs.h>

#define TMPFS_MAGIC 0x01021994

static void op(void *ctx, long i)
{
	int fd = open((const char *)ctx, O_RDONLY | O_CLOEXEC);

	(void)i;
	if (fd < 0)
		bench_die("open");
	close(fd);
}

int main(int argc, char **argv)
{
	struct bench_args a = bench_parse(argc, argv, 200000);
	char own[64];
	const char *path = a.arg;
	struct statfs sfs;
	int fd;

	if (!path) {
		snprintf(own, sizeof(own), "/var/tmp/shmbpf-bench-open-%d", (int)getpid());
		path = own;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		bench_die(path);
	close(fd);
	if (statfs(path, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC)
		fprintf(stderr, "workload: warning: %s is on tmpfs, not an unrelated filesystem\n",
			path);
	bench_run(&a, op, (void *)path);
	if (path == own)
		unlink(own);
	return 0;
}
