/* Workload 6, unrelated writes: a 64-byte pwrite at offset 0 of one file on
 * a disk filesystem (ext4 on the bench machine), so only the page cache is
 * touched. shmbpf watches every write for the ENOSPC of a full tmpfs
 * (docs/EVENTS.md, nospace): this is what that costs a program that writes. */
#include "bench_common.h"

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
	const char *path;
	int fd = bench_unrelated_file(&a, "write", own, sizeof(own), &path);

	bench_run(&a, op, &fd);
	close(fd);
	bench_unrelated_done(path, own);
	return 0;
}
