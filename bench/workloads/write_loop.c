/* Workload 6, unrelated writes: a 64-byte pwrite at offset 0 of one file on
 * a disk filesystem (ext4 on the bench machine), so only the page cache is
 * touched. shmbpf watches every write for the ENOSPC of a full tmpfs
 * (docs/EVENTS.md, nospace): this is what that costs a program that writes. */
#include "bench_common.h"

#include <fcntl.h>
#include <sys/vfs.h>

#define TMPFS_MAGIC 0x01021994

static void op(void *ctx, long i)
{
	static const char buf[64] = "shmbpf";

	(void)i;
	if (pwrite(*(int *)ctx, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
		bench_die("pwrite");
}

int main(int argc, char **argv)
{
	struct bench_args a = bench_parse(argc, argv, 200000);
	char own[64];
	const char *path = a.arg;
	struct statfs sfs;
	int fd;

	if (!path) {
		snprintf(own, sizeof(own), "/var/tmp/shmbpf-bench-write-%d", (int)getpid());
		path = own;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		bench_die(path);
	if (fstatfs(fd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC)
		fprintf(stderr, "workload: warning: %s is on tmpfs, not an unrelated filesystem\n",
			path);
	bench_run(&a, op, &fd);
	close(fd);
	if (path == own)
		unlink(own);
	return 0;
}
