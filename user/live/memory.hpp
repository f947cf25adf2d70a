// What a long-running process tells the allocator and the kernel so that
// its resident memory is what its tables hold (docs/BENCHMARKS.md, finding 27).
#pragma once

namespace shmbpf {

// No transparent huge pages for this process from now on (prctl
// PR_SET_THP_DISABLE), whatever the allocator asks for. A huge page is
// resident as a whole once one byte of it is touched, and each of the
// allocator's arenas keeps some partly used. False when the kernel refuses.
bool disable_huge_pages();

// Hands the pages the allocator keeps free back to the system. With
// jemalloc (linked into shmbpf) an arena returns its free pages only as it
// allocates again, and a worker thread's arena may not for minutes after a
// scan freed megabytes in it. Nothing with another allocator.
void release_free_memory();

} // namespace shmbpf
