"""PyTorch workload for shmbpf's end-to-end tests.

A torch.multiprocessing Pool whose workers each build tensors of a known
size and return them; the parent keeps every tensor alive, prints one JSON
line describing itself, and waits until its stdin closes. With the
file_system strategy each returned storage is a /dev/shm/torch_<worker
pid>_<rand>_<n> file the parent maps; with file_descriptor it is an
unlinked file whose fd was passed to the parent.
"""

import argparse
import json
import os
import sys

import torch
import torch.multiprocessing as mp


def make_tensor(job):
    index, numel = job
    # Non-zero data: every page of the shared storage gets written.
    return os.getpid(), torch.full((numel,), float(index + 1), dtype=torch.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strategy", required=True, choices=["file_system", "file_descriptor"])
    ap.add_argument("--tensors", type=int, default=8)
    ap.add_argument("--numel", type=int, required=True)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    mp.set_sharing_strategy(args.strategy)
    pool = mp.Pool(args.workers)
    jobs = [(i, args.numel) for i in range(args.tensors)]
    results = pool.map(make_tensor, jobs, chunksize=1)
    kept = [t for _, t in results]
    for i, t in enumerate(kept):
        if not t.is_shared() or float(t[0]) != float(i + 1) or t.numel() != args.numel:
            print(json.dumps({"error": "tensor %d arrived wrong" % i}), flush=True)
            return 1

    print(json.dumps({
        "parent": os.getpid(),
        "workers": sorted({pid for pid, _ in results}),
        "pool": sorted(p.pid for p in pool._pool),
        "tensors": len(kept),
        "tensor_bytes": kept[0].element_size() * args.numel,
        "strategy": mp.get_sharing_strategy(),
    }), flush=True)

    sys.stdin.read()  # until the test closes our stdin (or kills us)
    pool.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
