#!/usr/bin/env python3
"""A model of the _wgmma_pp kernel's synchronisation (src/cuda/kernels/gemm_ws.cuh and the
generator's _pp branch in src/cuda/codegen/gemm/gemm_kernel.cpp), run under random
interleavings: one producer filling a ring of STAGES stages with the block's T tiles of K
K-tiles each, in order; two consumer warpgroups, warpgroup q % 2 taking tile q; per stage a full
and an empty mbarrier waited on by phase parity; named barriers passing the turn (tile q's
multiply starts once tile q - 1's has ended).

Checked for every T, K and STAGES up to small bounds: no deadlock, every read sees the ring
iteration it expects, the producer never overwrites a stage a warpgroup still reads. The same
model without the turns must fail (a warpgroup skipping the other's stages can pass a parity wait
a full round early), so the model can tell the two apart."""
import random
import sys


class MBarrier:
    def __init__(self, count):
        self.count, self.pending, self.phase = count, count, 0

    def arrive(self):
        self.pending -= 1
        if self.pending == 0:
            self.phase, self.pending = self.phase + 1, self.count

    def completed(self, parity):  # mbarrier.try_wait.parity
        return (self.phase & 1) != parity


class NamedBarrier:  # bar.sync by one warpgroup, bar.arrive by the other
    def __init__(self):
        self.arrived, self.generation = 0, 0

    def arrive(self):
        self.arrived += 1
        if self.arrived == 2:
            self.arrived, self.generation = 0, self.generation + 1


class Violation(Exception):
    pass


def run(tiles, k_tiles, stages, seed, turns=True):
    rng = random.Random(seed)
    full = [MBarrier(1) for _ in range(stages)]
    empty = [MBarrier(1) for _ in range(stages)]
    data, reading = [None] * stages, [None] * stages
    turn = [NamedBarrier(), NamedBarrier()]  # turn[g]: warpgroup g waits on it

    def producer():
        for it in range(tiles * k_tiles):
            s = it % stages
            if it >= stages:
                while not empty[s].completed((it // stages - 1) & 1):
                    yield "wait"
            if reading[s] is not None:
                raise Violation(f"stage {s} overwritten at iteration {it} while read")
            data[s] = it
            yield "step"
            full[s].arrive()
            yield "step"

    def consumer(g):
        for q in range(g, tiles, 2):
            if turns and q > 0:
                generation = turn[g].generation
                turn[g].arrive()
                while turn[g].generation == generation:
                    yield "wait"
            previous = None
            for kt in range(k_tiles):
                it = q * k_tiles + kt
                s = it % stages
                while not full[s].completed((it // stages) & 1):
                    yield "wait"
                if data[s] != it:
                    raise Violation(f"warpgroup {g} read iteration {data[s]} for {it}")
                reading[s] = it
                yield "step"
                if previous is not None:  # wgmma wait<1>: the stage before is released
                    reading[previous] = None
                    empty[previous].arrive()
                    yield "step"
                previous = s
            if previous is not None:
                reading[previous] = None
                empty[previous].arrive()
            if turns and q + 1 < tiles:
                turn[1 - g].arrive()
            for _ in range(rng.randint(0, 5)):  # the epilogue
                yield "step"

    live = {"producer": producer(), "wg0": consumer(0), "wg1": consumer(1)}
    idle = 0
    while live:
        name = rng.choice(sorted(live))
        try:
            idle = idle + 1 if next(live[name]) == "wait" else 0
        except StopIteration:
            del live[name]
            idle = 0
        if idle > 20000:
            raise Violation(f"deadlock: {sorted(live)} waiting")


def main():
    runs = 0
    for tiles in range(1, 9):
        for k_tiles in range(0, 7):
            for stages in range(3, 7):
                for seed in range(25):
                    run(tiles, k_tiles, stages, seed)
                    runs += 1
    caught = 0
    for seed in range(50):
        try:
            run(4, 3, 3, seed, turns=False)
        except Violation:
            caught += 1
    if caught == 0:
        print("the model without turns passed: it cannot tell a broken protocol apart")
        return 1
    print(f"ping-pong protocol: {runs} interleavings pass; without turns {caught} of 50 fail")
    return 0


if __name__ == "__main__":
    sys.exit(main())
