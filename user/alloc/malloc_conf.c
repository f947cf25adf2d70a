/*
 * Allocator settings, linked into shmbpf and the engine benchmarks together
 * with a static jemalloc (CMake option SHMBPF_JEMALLOC).
 *
 * A table of 100,000 segments touches tens of megabytes of fresh memory at
 * start-up. With 4 KiB pages that is one page fault per page, and in a
 * virtual machine that traps to the hypervisor a fault costs several
 * microseconds: docs/BENCHMARKS.md (finding 14) measured a fifth of `shmbpf
 * ls`'s time in faults. Transparent huge pages make it one fault per 2 MiB.
 * "always" here only asks for them (madvise); the system setting
 * /sys/kernel/mm/transparent_hugepage/enabled = never still wins, and so
 * does `serve`, which turns them off for itself: a daemon starts once and
 * keeps its tables for days, and partly used huge pages made its resident
 * memory a third larger (finding 27, user/live/memory.hpp).
 */
const char *malloc_conf = "thp:always";
