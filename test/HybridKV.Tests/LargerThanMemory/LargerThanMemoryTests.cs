using FsCheck;
using FsCheck.Fluent;
using HybridKV.Devices;
using HybridKV.Log;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.LargerThanMemory;

[Trait("Category", "LargerThanMemory")]
public sealed class LargerThanMemoryTests : IDisposable
{
    private const int PreloadedKeys = 30_000;
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    /// <summary>
    /// A log at least ten times the memory budget on a real file device: random operations against a dictionary
    /// model, with keys drawn uniformly (most reads go to the device) or from a hot set (most stay in memory), so
    /// that hash chains run from memory onto the device.
    /// </summary>
    [Theory]
    [InlineData("uniform")]
    [InlineData("hot-set")]
    public void Random_operations_on_a_log_ten_times_larger_than_memory_match_a_dictionary_model(string distribution)
    {
        Gen<long> key = distribution == "uniform"
            ? Gen.Choose(0, PreloadedKeys + 99).Select(k => (long)k)
            : Gen.Frequency((9, Gen.Choose(0, 63)), (1, Gen.Choose(0, PreloadedKeys + 99))).Select(k => (long)k);
        Gen<(int Kind, long Key, long Value)> operation =
            from kind in Gen.Frequency((3, Gen.Constant(0)), (4, Gen.Constant(1)), (4, Gen.Constant(2)), (1, Gen.Constant(3)))
            from k in key
            from value in Gen.Choose(1, 1_000_000)
            select (kind, k, (long)value);

        int run = 0;
        Property property = Prop.ForAll<(int Kind, long Key, long Value)[]>(
            Arb.From(Gen.ArrayOf(operation).Select(a => a.Take(400).ToArray())),
            operations =>
            {
                using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
                using var session = store.NewSession();
                var model = new Dictionary<long, long>();
                for (long k = 0; k < PreloadedKeys; k++)
                {
                    Assert.Equal(Status.Ok, session.Upsert(k, k * 3));
                    model[k] = k * 3;
                }

                Assert.True(store.TailAddress >= 10 * StoreOnDevice.MemoryBytes, $"tail {store.TailAddress}");
                Assert.True(store.HeadAddress > store.BeginAddress, "nothing was evicted");
                Assert.True(store.Engine.Log.AllocatedFrameCount <= store.Settings.BufferPages);

                foreach ((int kind, long k, long value) in operations)
                {
                    switch (kind)
                    {
                        case 0:
                            Assert.Equal(Status.Ok, session.Upsert(k, value));
                            model[k] = value;
                            break;
                        case 1:
                            Assert.Equal(Status.Ok, session.RMWNow(k, value));
                            model[k] = model.GetValueOrDefault(k) + value;
                            break;
                        case 2:
                            AssertReads(session.ReadNow(k), model, k);
                            break;
                        default:
                            Assert.Equal(model.Remove(k) ? Status.Ok : Status.NotFound, session.DeleteNow(k));
                            break;
                    }
                }

                // Every key the sequence touched, and a sample of the rest.
                var random = new Random(run++);
                foreach (long k in operations.Select(o => o.Key).Concat(Enumerable.Range(0, 300).Select(_ =>
                             (long)random.Next(PreloadedKeys + 100))))
                {
                    AssertReads(session.ReadNow(k), model, k);
                }

                return true;
            });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(6 * TestScale.Factor), property);
    }

    /// <summary>
    /// Every key in one bucket with one of 32 tags: each hash chain holds about fifty keys' records, newest in
    /// memory and older ones on the device, so reads and updates follow other keys' records from memory onto the device.
    /// </summary>
    [Fact]
    public void Hash_chains_shared_by_many_keys_are_followed_from_memory_onto_the_device()
    {
        const int Keys = 1_500;
        var settings = StoreOnDevice.Settings(_directory.NewSubdirectory()) with { MemorySizeBytes = 1L << 13 };
        using var store = TestStores.Create(settings, HashMode.FewTagsOneBucket);
        using var session = store.NewSession();
        var model = new Dictionary<long, long>();
        var random = new Random(11);
        for (long k = 0; k < Keys; k++)
        {
            session.Upsert(k, k);
            model[k] = k;
        }

        Assert.True(store.TailAddress >= 4 * settings.MemorySizeBytes);
        for (int i = 0; i < 1_000; i++)
        {
            long key = random.Next(Keys + 40);
            switch (random.Next(3))
            {
                case 0:
                    AssertReads(session.ReadNow(key), model, key);
                    break;
                case 1:
                    Assert.Equal(Status.Ok, session.RMWNow(key, 2));
                    model[key] = model.GetValueOrDefault(key) + 2;
                    break;
                default:
                    // A delete of a key whose newest record is on the device does not read it, so it may report Ok for
                    // a key that held nothing; the reads check what it did.
                    Status deleted = session.DeleteNow(key);
                    Assert.Contains(deleted, model.Remove(key) ? new[] { Status.Ok } : new[] { Status.Ok, Status.NotFound });
                    break;
            }
        }

        for (long k = 0; k < Keys + 40; k++)
        {
            AssertReads(session.ReadNow(k), model, k);
        }
    }

    [Fact]
    public async Task Concurrent_RMW_sessions_on_a_larger_than_memory_log_keep_exact_sums()
    {
        const int Sessions = 4;
        const int Keys = 8_000;
        int rounds = 3 * TestScale.Factor;
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));

        Task[] workers = Enumerable.Range(0, Sessions).Select(id => Task.Run(() =>
        {
            using var session = store.NewSession();
            var random = new Random(id);
            for (int round = 0; round < rounds; round++)
            {
                long[] order = Enumerable.Range(0, Keys).Select(k => (long)k).OrderBy(_ => random.Next()).ToArray();
                foreach (long key in order)
                {
                    Status status = session.RMW(key, 1);
                    Assert.True(status is Status.Ok or Status.Pending, $"RMW returned {status}");
                    if (session.PendingCount > 64)
                    {
                        session.CompletePending(wait: true);
                    }
                }
            }

            Assert.True(session.CompletePending(wait: true));
        })).ToArray();
        await Task.WhenAll(workers).WaitAsync(TimeSpan.FromMinutes(5));

        Assert.True(store.TailAddress >= 10 * StoreOnDevice.MemoryBytes);
        using var reader = store.NewSession();
        for (long key = 0; key < Keys; key++)
        {
            Assert.Equal((Status.Ok, (long)Sessions * rounds), reader.ReadNow(key));
        }
    }

    [Fact]
    public void Upserts_never_read_the_device()
    {
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16)) { FailRead = _ => true };
        using (device)
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device)))
        using (var session = store.NewSession())
        {
            session.Preload();

            for (long k = 0; k < 20_000; k += 7)
            {
                Assert.Equal(Status.Ok, session.Upsert(k, -k));
            }

            Assert.Equal(0, device.ReadCount);
        }
    }

    [Fact]
    public void An_injected_read_error_completes_the_pending_operation_with_an_error_status()
    {
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16));
        using (device)
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device)))
        using (var session = store.NewSession())
        {
            session.Preload(factor: 2);

            device.FailRead = _ => true;
            Assert.Equal(Status.Error, session.ReadNow(5).Status);
            Assert.Equal(Status.Error, session.RMWNow(6, 100));

            // A delete never reads the device: it completes whatever the device does.
            Assert.Equal(Status.Ok, session.DeleteNow(7));

            // Nothing was changed by the failed operations.
            device.FailRead = null;
            Assert.Equal((Status.Ok, 10L), session.ReadNow(5));
            Assert.Equal((Status.Ok, 12L), session.ReadNow(6));
            Assert.Equal(Status.NotFound, session.ReadNow(7).Status);
        }
    }

    [Fact]
    public void An_injected_write_error_surfaces_to_the_operations_that_need_the_space_and_no_value_is_wrong()
    {
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16)) { FailWrite = r => r.Sequence >= 20 };
        using (device)
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device)))
        using (var session = store.NewSession())
        {
            long inserted = 0;
            var error = Assert.Throws<StorageDeviceException>(() =>
            {
                for (; inserted < 100_000; inserted++)
                {
                    session.Upsert(inserted, inserted + 1);
                }
            });
            Assert.Contains("device failed", error.Message, StringComparison.Ordinal);
            Assert.IsType<StorageDeviceException>(error.InnerException);

            // It keeps failing clearly rather than hanging, and every key written before reads back exactly. The
            // failing page turn may have left room that another allocator (the memory compactor) had already
            // reserved, so the next upserts may fill what is left of a page before one fails again.
            long more = 0;
            Assert.Throws<StorageDeviceException>(() =>
            {
                for (; more < 10_000; more++)
                {
                    session.Upsert(1_000_000 + more, 1);
                }
            });
            Assert.True(more < StoreOnDevice.PageSize / LogRecord<long, long>.FixedSize,
                $"{more} upserts succeeded after the write failure: more than one page of room");
            for (long k = 0; k < inserted; k++)
            {
                Assert.Equal((Status.Ok, k + 1), session.ReadNow(k));
            }
        }
    }

    [Fact]
    public async Task A_failed_flush_above_a_page_still_being_written_does_not_fail_the_operation_waiting_for_that_page()
    {
        // The first flush is held in flight; every later one fails. The page turn that needs the first page's frame
        // must wait for that flush, which will succeed, and not fail because a later page's flush did: before, it
        // threw, and whether an operation failed depended on when an eviction's epoch trigger happened to run.
        var firstFlush = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16)) { HoldWrites = firstFlush.Task };
        using (device)
        using (var store = StoreOnDevice.Create(
            StoreOnDevice.Settings(device: device) with { MemoryCompactionMaxLiveFraction = 0 }))
        using (var session = store.NewSession())
        using (new Releaser(firstFlush))
        {
            long key = 0;
            for (; device.WriteCount == 0; key++)
            {
                Assert.Equal(Status.Ok, await session.UpsertAsync(key, key + 1));
            }

            // One flush may have issued more than one page's write; all of them are held and will succeed.
            long held = device.WriteCount;
            device.HoldWrites = null;
            device.FailWrite = request => request.Sequence >= held;
            ValueTask<Status> waiting;
            while (true)
            {
                waiting = session.UpsertAsync(key, key + 1);
                if (!waiting.IsCompleted)
                {
                    break;
                }

                Assert.Equal(Status.Ok, await waiting);
                key++;
            }

            Assert.True(SpinWait.SpinUntil(() => store.Engine.Log.FlushError is not null, TimeSpan.FromMinutes(1)),
                "no later flush failed");
            firstFlush.SetResult();
            Assert.Equal(Status.Ok, await waiting.AsTask().WaitAsync(TimeSpan.FromMinutes(1)));

            // Soon a frame is held by a page whose flush failed: it can never be freed, so the store fails at once.
            long firstRefused = ++key;
            await Assert.ThrowsAsync<StorageDeviceException>(async () =>
            {
                for (; key < firstRefused + 10_000; key++)
                {
                    await session.UpsertAsync(key, key + 1);
                }
            });
            Assert.True(key - firstRefused <= held * StoreOnDevice.PageSize / LogRecord<long, long>.FixedSize,
                $"{key - firstRefused} upserts succeeded after the frame could no longer be freed");
            for (long k = 0; k < firstRefused; k++)
            {
                Assert.Equal((Status.Ok, k + 1), session.ReadNow(k));
            }
        }
    }

    /// <summary>Opens a gate when disposed, so that a failed assertion does not leave the store waiting on it.</summary>
    private sealed class Releaser(TaskCompletionSource gate) : IDisposable
    {
        public void Dispose() => gate.TrySetResult();
    }

    [Fact]
    public async Task Shifting_the_begin_address_makes_older_records_absent_and_deletes_their_segments()
    {
        string directory = _directory.NewSubdirectory();
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(directory));
        using var session = store.NewSession();
        for (long k = 0; k < PreloadedKeys; k++)
        {
            session.Upsert(k, k);
        }

        string logDirectory = Path.Combine(directory, "log");
        long newBegin = store.HeadAddress & ~((1L << 16) - 1);
        Assert.True(newBegin >= 2 << 16, "the log is too short for this test");
        Assert.Contains(0L, LogFiles.SegmentNumbers(logDirectory));
        await store.ShiftBeginAddressAsync(newBegin);

        // Flushes still running may add segments at the tail; every one below the new begin is gone, the rest stay.
        Assert.Equal(newBegin, store.BeginAddress);
        long[] segments = LogFiles.SegmentNumbers(logDirectory);
        Assert.DoesNotContain(segments, n => n < newBegin >> 16);
        Assert.Contains(newBegin >> 16, segments);
        Assert.Equal(Status.NotFound, session.ReadNow(0).Status);
        Assert.Equal((Status.Ok, PreloadedKeys - 1L), session.ReadNow(PreloadedKeys - 1));
        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => store.ShiftBeginAddressAsync(store.TailAddress));
    }

    private static void AssertReads((Status Status, long Value) read, Dictionary<long, long> model, long key)
    {
        if (model.TryGetValue(key, out long expected))
        {
            Assert.Equal((Status.Ok, expected), read);
        }
        else
        {
            Assert.Equal(Status.NotFound, read.Status);
        }
    }
}

/// <summary>Tests that measure the whole process, so they run alone.</summary>
[Trait("Category", "LargerThanMemory")]
[Collection(nameof(ProcessWideTests))]
public sealed class LargerThanMemoryProcessTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public void Dispose_releases_every_file_handle_and_page_frame()
    {
        int before = Directory.GetFiles("/proc/self/fd").Length;
        var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using (var session = store.NewSession())
        {
            for (long k = 0; k < 30_000; k++)
            {
                session.Upsert(k, k);
            }

            Assert.Equal((Status.Ok, 5L), session.ReadNow(5));
        }

        Assert.True(Directory.GetFiles("/proc/self/fd").Length > before);
        Assert.True(store.Engine.Log.AllocatedFrameCount > 0);
        store.Dispose();
        Assert.True(Directory.GetFiles("/proc/self/fd").Length <= before,
            $"{Directory.GetFiles("/proc/self/fd").Length} descriptors open after dispose, {before} before");
        Assert.Equal(0, store.Engine.Log.AllocatedFrameCount);
    }

    /// <summary>
    /// Reads that go to the device allocate nothing once the session has done it before (issue 19): the pending
    /// operation and its buffer are reused, the ring's requests are their own tasks, and the completion hands the
    /// operation on from the ring's thread; about 1.5 KB a read before. Waiting for many at once allocates nothing
    /// either: <c>CompletePending(wait: true)</c> then blocks between completions many times, and each wait made the
    /// completing thread allocate a task for the next signal and the waiter an event (46.6 bytes a read with 512 in
    /// flight, before <c>AsyncSignal.WaitBlocking</c>).
    /// </summary>
    [Theory]
    [InlineData(64)]
    [InlineData(512)]
    public void Reads_from_the_device_allocate_nothing_once_the_session_has_read_before(int readsPerWait)
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()) with
        {
            MemoryCompactionMaxLiveFraction = 0,
        });
        using var session = store.NewSession();
        const long Keys = 20_000;
        session.Preload(Keys, factor: 3);
        long output = 0;
        // One context for every read: the callbacks count the reads that went pending and check their values.
        var context = new CountContext();
        long pendingReads = 0;
        long wrong = 0;
        void ReadAll()
        {
            for (long start = 0; start < Keys / 2; start += readsPerWait)
            {
                for (long k = start; k < start + readsPerWait; k++)
                {
                    pendingReads += session.Read(k, 0, ref output, context) == Status.Pending ? 1 : 0;
                }

                // Counted, not asserted: an assertion allocates, and this is the loop being measured.
                wrong += session.CompletePending(wait: true) && context.LastStatus == Status.Ok &&
                    context.Output % 3 == 0 ? 0 : 1;
            }
        }

        AssertTheSecondRoundAllocatesNothingPerDeviceRead(store, ReadAll, minReads: Keys / 4);
        Assert.Equal(pendingReads, context.Completions);
        Assert.Equal(0, wrong);
    }

    /// <summary>
    /// Upserts that turn pages allocate nothing (issue 19): a page turn's epoch actions, its flush (the write, the
    /// device's I/O request, the completion) and the signals it sends reuse what the first pages allocated. Before,
    /// each page turn allocated about 900 bytes (closures for two trigger actions, a task and a state machine per
    /// flush, the I/O thread's work item and completion source, a task for the next page-turn signal, and the memory
    /// compactor's wait for it): with 4 MiB pages, 0.01-0.23 bytes an operation in the runner. Measured on the
    /// writer's thread, as the runner measures operations: the whole process's count takes in the tests that run
    /// beside this one (alone, it counted 0 to 17 KB in a round of 156 page turns: the runtime's own work).
    /// </summary>
    [Theory]
    [InlineData(0.0)]
    [InlineData(0.8)]
    public void Upserts_that_turn_pages_allocate_nothing_once_the_first_pages_were_flushed(double memoryCompaction)
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()) with
        {
            // With it, the memory compactor waits for every page turn: a wait with a token made the turn allocate.
            MemoryCompactionMaxLiveFraction = memoryCompaction,
            // One segment file for both rounds: a new file (its handle, its path) is not a page turn's.
            LogSegmentSizeBits = 24,
        });
        using var session = store.NewSession();
        const long Keys = 20_000;
        session.Preload(Keys);
        long tailBefore = store.Engine.Log.TailAddress;
        var rounds = new List<long>();
        // The quietest of three rounds: the pools of flushes and writes in flight, and the I/O threads' queue, grow
        // to the most the device ever had in flight (a round run beside other tests' I/O may need a few more).
        for (long factor = 2; factor <= 4; factor++)
        {
            long before = GC.GetAllocatedBytesForCurrentThread();
            session.Preload(Keys, factor);
            rounds.Add(GC.GetAllocatedBytesForCurrentThread() - before);
        }

        long pageTurns = (store.Engine.Log.TailAddress - tailBefore) / StoreOnDevice.PageSize / rounds.Count;
        Assert.True(pageTurns > 100, $"only {pageTurns} page turns a round");
        Assert.True(rounds.Min() == 0,
            $"the writer's thread allocated {string.Join(", ", rounds)} bytes in rounds of {pageTurns} page turns");
        Assert.Equal((Status.Ok, 4 * (Keys - 1)), session.ReadNow(Keys - 1));
    }

    /// <summary>
    /// Runs <paramref name="readAll"/> twice, the first to fill the session's spares, and counts what the whole process
    /// allocates during the second: at most 8 bytes a device read with io_uring (room for what timers and background
    /// threads allocate meanwhile), 512 with the thread fallback's work items.
    /// </summary>
    private static void AssertTheSecondRoundAllocatesNothingPerDeviceRead(
        HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store, Action readAll, long minReads)
    {
        readAll();
        long before = GC.GetTotalAllocatedBytes(precise: true);
        long readBefore = store.Engine.Log.Device!.BytesRead;
        readAll();
        long allocated = GC.GetTotalAllocatedBytes(precise: true) - before;

        long reads = (store.Engine.Log.Device.BytesRead - readBefore) / store.Engine.Log.Device.SectorSize;
        Assert.True(reads > minReads, $"only {reads} reads went to the device");
        bool ring = ((HybridKV.Devices.LocalFileDevice)store.Engine.Log.Device).UsesIoUring;
        Assert.Equal(IoUringSupport.Available, ring);
        long bound = ring ? 8 : 512;
        Assert.True(allocated <= bound * reads, $"{allocated} bytes allocated for {reads} reads from the device ({(double)allocated / reads:F1} a read)");
    }

    /// <summary>
    /// A device far slower than the workload: upserts must wait for frames to be flushed and evicted, blocked rather
    /// than spinning, and finish with every value intact.
    /// </summary>
    [Fact]
    public async Task When_the_workload_outruns_flushing_upserts_wait_without_spinning_and_without_deadlock()
    {
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16)) { Latency = TimeSpan.FromMilliseconds(200) };
        using (device)
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device)))
        using (var session = store.NewSession())
        {
            const int Keys = 8_000;
            var writer = Task.Run(() =>
            {
                for (long k = 0; k < Keys; k++)
                {
                    session.Upsert(k, k + 7);
                }
            });
            await writer.WaitAsync(TimeSpan.FromMinutes(3));

            // 8,000 records are 47 pages through 16 frames: from page 16 on, each page turn needs a flush that takes
            // 200 ms. A writer that waits for the flush signal tries a turn again once per flush or eviction (a few per
            // page); one that spins would try it millions of times.
            long pages = store.TailAddress / StoreOnDevice.PageSize;
            long refused = store.Engine.Log.PageTurnsRefused;
            Assert.True(refused > 0, "no page turn waited for a flush");
            Assert.True(refused < 20 * pages, $"{refused} refused page turns for {pages} pages: spinning while waiting");
            device.Latency = TimeSpan.Zero;
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal((Status.Ok, k + 7), session.ReadNow(k));
            }
        }
    }
}
