"""Concurrency: copies release the GIL; free and reset may race with them."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import nrtpy
from nrtpy import NrtpyError, NrtpyTensor
from support import MIB, used

JOIN_TIMEOUT = 30


def run_threads(target, n, *args):
    """Start n threads of target(i, *args); return their exceptions."""
    errors: list[BaseException] = []

    def wrap(i):
        try:
            target(i, *args)
        except BaseException as e:  # reported to the test below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT)
        assert not t.is_alive(), "thread hung"
    return errors


def test_concurrent_copies_on_distinct_tensors(rt):
    n_threads, rounds = 8, 50
    barrier = threading.Barrier(n_threads)
    before = (used(0), used(1))

    def work(i):
        barrier.wait()
        core = i % 2
        shape = (64, 16 + i)
        for r in range(rounds):
            data = np.full(shape, i * 1000 + r, dtype=np.int64)
            t = NrtpyTensor.from_numpy(data, name=f"t{i}", core_id=core)
            assert t.core_id == core
            np.testing.assert_array_equal(t.numpy(), data)
            t.write_from_numpy(data + 1)
            out = np.empty(shape, np.int64)
            assert t.numpy(out=out) is out
            np.testing.assert_array_equal(out, data + 1)
            if r % 2:
                nrtpy.get_nrtpy_singleton().free_tensor(t)
                with pytest.raises(NrtpyError):
                    t.numpy()

    assert run_threads(work, n_threads) == []
    assert (used(0), used(1)) == before


def test_concurrent_copies_on_one_tensor_distinct_ranges(rt):
    n_threads = 8
    chunk = 1 << 16
    big = rt.allocate_tensor(n_threads * chunk)
    barrier = threading.Barrier(n_threads)

    def work(i):
        barrier.wait()
        for r in range(20):
            payload = bytes([(i * 31 + r) % 256]) * chunk
            rt.tensor_write(big, payload, offset=i * chunk)
            assert rt.tensor_read(big, i * chunk, chunk) == payload

    assert run_threads(work, n_threads) == []


def test_free_while_another_thread_reads(rt):
    n = 16 * MIB  # float32 elements: a 64 MiB tensor
    expected = np.arange(n, dtype=np.float32)
    before = used(0)
    t = NrtpyTensor.from_numpy(expected)
    assert used(0) == before + 4 * n
    first_read = threading.Event()
    outcomes: list[str] = []

    def reader(_):
        out = np.empty(n, np.float32)
        for _ in range(500):
            try:
                res = t.numpy(out=out)
            except NrtpyError as e:
                assert "freed" in str(e)
                outcomes.append("error")
                return
            assert res is out
            assert np.array_equal(out, expected)
            outcomes.append("ok")
            first_read.set()
        outcomes.append("never freed")

    errors: list[BaseException] = []
    th = threading.Thread(target=lambda: errors.extend(run_threads(reader, 1)), daemon=True)
    th.start()
    assert first_read.wait(JOIN_TIMEOUT)
    nrtpy.get_nrtpy_singleton().free_tensor(t)
    th.join(JOIN_TIMEOUT)
    assert not th.is_alive()
    assert errors == []
    assert outcomes[-1] == "error"
    assert outcomes[:-1] == ["ok"] * (len(outcomes) - 1)
    assert t.tensor_ref.is_freed
    assert used(0) == before


def test_free_races_many_readers(rt):
    """Many threads copy a tensor while the main thread frees it."""
    for _ in range(5):
        data = np.arange(MIB // 4, dtype=np.int32)
        t = NrtpyTensor.from_numpy(data)
        started = threading.Barrier(5)
        results: list[str] = []

        def reader(_):
            started.wait()
            for _ in range(100_000):
                try:
                    out = t.numpy()
                except NrtpyError:
                    results.append("error")
                    return
                assert np.array_equal(out, data)
            results.append("never freed")

        def freer(_):
            started.wait()
            time.sleep(0.002)
            nrtpy.get_nrtpy_singleton().free_tensor(t)

        errors = run_threads(lambda i: reader(i) if i else freer(i), 5)
        assert errors == []
        assert results == ["error"] * 4


def test_reset_while_threads_copy(fresh_runtime):
    n_threads = 4
    tensors = [
        NrtpyTensor.from_numpy(np.zeros(MIB // 8, np.float64), name=f"t{i}")
        for i in range(n_threads)
    ]
    barrier = threading.Barrier(n_threads + 1)
    progress = [0] * n_threads
    ends: list[str] = []

    def copier(i):
        t = tensors[i]
        barrier.wait()
        r = 0
        while True:
            data = np.full(MIB // 8, i * 10_000 + r, np.float64)
            try:
                t.write_from_numpy(data)
                out = t.numpy()
            except NrtpyError as e:
                assert "freed" in str(e)
                ends.append("error")
                return
            assert np.array_equal(out, data)
            progress[i] += 1
            r += 1
            if r > 100_000:
                ends.append("never reset")
                return

    results: list[BaseException] = []
    runner = threading.Thread(target=lambda: results.extend(run_threads(copier, n_threads)), daemon=True)
    runner.start()
    barrier.wait()
    deadline = time.monotonic() + JOIN_TIMEOUT
    while min(progress) < 3 and time.monotonic() < deadline:
        time.sleep(0.001)
    with pytest.warns(UserWarning, match="reset"):
        nrtpy.reset()
    runner.join(JOIN_TIMEOUT)
    assert not runner.is_alive()
    assert results == []
    assert ends == ["error"] * n_threads
    assert nrtpy._singleton._runtime is None
    assert all(t.tensor_ref.is_freed for t in tensors)
    # the process can start a new runtime afterwards
    t = NrtpyTensor.from_numpy(np.ones(3))
    np.testing.assert_array_equal(t.numpy(), np.ones(3))


def test_reset_while_threads_allocate(fresh_runtime):
    """Threads keep creating tensors while the runtime is reset under them:
    each call either works, or fails cleanly with an nrtpy error."""
    stop = threading.Event()
    counts = {"ok": 0, "error": 0}
    lock = threading.Lock()

    def worker(i):
        while not stop.is_set():
            data = np.full(1000, i, np.int32)
            try:
                t = NrtpyTensor.from_numpy(data)
                out = t.numpy()
            except nrtpy.NrtpyRuntimeError:
                with lock:
                    counts["error"] += 1
                continue
            assert np.array_equal(out, data)
            with lock:
                counts["ok"] += 1

    results: list[BaseException] = []
    runner = threading.Thread(target=lambda: results.extend(run_threads(worker, 4)), daemon=True)
    runner.start()
    for _ in range(5):
        time.sleep(0.02)
        with pytest.warns(UserWarning):
            nrtpy.reset()
    stop.set()
    runner.join(JOIN_TIMEOUT)
    assert not runner.is_alive()
    assert results == []
    assert counts["ok"] > 0


def test_singleton_started_once_under_contention(fresh_runtime):
    barrier = threading.Barrier(8)
    seen = []

    def start(_):
        barrier.wait()
        seen.append(nrtpy.get_nrtpy_singleton())

    assert run_threads(start, 8) == []
    assert len(seen) == 8
    assert all(s is seen[0] for s in seen)
