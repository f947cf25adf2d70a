/* Workload 1, unrelated syscalls: open + close of one file on a disk
 * filesystem (ext4 on the bench machine). A tracer pays for these without
 * reporting anything, so this is its cost on everyone else. */
#include "bench_common.h"

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
	const char *path;

	close(bench_unrelated_file(&a, "open", own, sizeof(own), &path));
	bench_run(&a, op, (void *)path);
	bench_unrelated_done(path, own);
	return 0;
}
