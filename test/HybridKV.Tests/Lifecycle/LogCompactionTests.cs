using HybridKV.Checkpoints;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Lifecycle;

/// <summary>
/// Compaction of the log on the device (issue 18): live records are copied forward, superseded ones and tombstones go
/// with their segments, deleted keys leave no index entry, and nothing changes value, before or after recovery.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class LogCompactionTests : IDisposable
{
    private const int Keys = 4_000;
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    /// <summary>16 pages of 4 KiB in memory, 64 KiB segment files, no automatic compaction.</summary>
    private static StoreSettings Manual(string directory) =>
        StoreOnDevice.Settings(directory) with { LogCompactionRatio = 0 };

    private static Dictionary<long, long> Churn(
        HybridKV.Sessions.Session<long, long, long, long, CountContext?, CountFunctions> session, int rounds) =>
        Lifecycle.Churn.Run(session, Keys, rounds, deleteEvery: 7);

    private static void AssertMatches(
        HybridKV.Sessions.Session<long, long, long, long, CountContext?, CountFunctions> session,
        Dictionary<long, long> model) => Lifecycle.Churn.AssertMatches(session, Keys, model);

    [Fact]
    public async Task Compaction_keeps_every_live_value_drops_the_rest_and_deletes_the_segments_below_it()
    {
        string directory = _directory.NewSubdirectory();
        using var store = StoreOnDevice.Create(Manual(directory));
        using var session = store.NewSession();
        Dictionary<long, long> model = Churn(session, rounds: 6);
        long head = store.HeadAddress;
        long pageMask = StoreOnDevice.PageSize - 1;

        CompactionResult result = await store.CompactAsync(head);

        Assert.Equal(head & ~pageMask, result.UntilAddress);
        Assert.Equal(result.UntilAddress, store.BeginAddress);
        Assert.True(result.RecordsCopied < result.RecordsExamined / 2,
            $"copied {result.RecordsCopied} of {result.RecordsExamined}: most records were superseded");
        Assert.True(result.RecordsCopied > 0, "some live records were on the device");
        AssertNoSegmentBelow(directory, store.BeginAddress);
        AssertMatches(session, model);
    }

    [Fact]
    public async Task Deleted_keys_leave_no_record_and_no_index_entry_after_compaction()
    {
        string directory = _directory.NewSubdirectory();
        using var store = StoreOnDevice.Create(Manual(directory));
        using var session = store.NewSession();
        for (long k = 0; k < Keys; k++)
        {
            session.Upsert(k, k);
        }

        for (long k = 0; k < Keys; k++)
        {
            Assert.NotEqual(Status.Error, session.DeleteNow(k));
        }

        // Push every record and tombstone of those keys onto the device with keys far away.
        long deletedUntil = store.TailAddress;
        long filler = 1_000_000;
        while (store.HeadAddress < deletedUntil)
        {
            session.Upsert(filler, filler);
            filler++;
        }

        long until = store.HeadAddress;
        CompactionResult result = await store.CompactAsync(until);

        Assert.True(result.TombstonesDropped > 0, "no tombstone was dropped");
        Assert.True(result.IndexEntriesReclaimed > 0, "no index entry was reclaimed");
        // No entry leads below the begin address, and no record of a deleted key is left anywhere in the log.
        store.Engine.Index.ForEachEntry((_, entry) => Assert.True(
            entry.Address >= store.BeginAddress || entry.Address == HybridKV.Index.HashIndex.TentativeRecordAddress,
            $"an entry still points at {entry.Address}, below the begin address {store.BeginAddress}"));
        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal(Status.NotFound, session.ReadNow(k).Status);
        }

        for (long k = filler - 10; k < filler; k++)
        {
            Assert.Equal((Status.Ok, k), session.ReadNow(k));
        }
    }

    [Fact]
    public async Task Entries_left_below_a_begin_address_moved_by_hand_go_at_the_next_compaction()
    {
        string directory = _directory.NewSubdirectory();
        using var store = StoreOnDevice.Create(Manual(directory));
        using var session = store.NewSession();
        long filler = 1_000_000;
        void FillUntilHeadPasses(long address)
        {
            while (store.HeadAddress <= address)
            {
                session.Upsert(filler, filler);
                filler++;
            }
        }

        // A compaction that drops nothing: the index owes no sweep after it.
        FillUntilHeadPasses(store.TailAddress);
        Assert.Equal(0, (await store.CompactAsync(store.HeadAddress)).TombstonesDropped);

        for (long k = 0; k < Keys; k++)
        {
            session.Upsert(k, k);
        }

        FillUntilHeadPasses(store.TailAddress);
        await store.ShiftBeginAddressAsync(store.HeadAddress & ~(StoreOnDevice.PageSize - 1));
        Assert.Equal(Status.NotFound, session.ReadNow(0).Status);
        FillUntilHeadPasses(store.TailAddress);

        CompactionResult result = await store.CompactAsync(store.HeadAddress);

        Assert.Equal(0, result.TombstonesDropped);
        Assert.True(result.IndexEntriesReclaimed >= Keys / 2, $"{result.IndexEntriesReclaimed} entries reclaimed");
        store.Engine.Index.ForEachEntry((_, entry) => Assert.True(
            entry.Address >= store.BeginAddress || entry.Address == HybridKV.Index.HashIndex.TentativeRecordAddress,
            $"an entry still points at {entry.Address}, below the begin address {store.BeginAddress}"));
    }

    [Fact]
    public async Task A_compacted_store_recovers_the_same_data_from_checkpoints_before_and_after_compaction()
    {
        string directory = _directory.NewSubdirectory();
        Guid before;
        Dictionary<long, long> model;
        using (var store = StoreOnDevice.Create(Manual(directory) with { CheckpointsToKeep = 0 }))
        using (var session = store.NewSession())
        {
            model = Churn(session, rounds: 4);
            before = await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
            await store.CompactAsync(store.HeadAddress);
            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
        }

        using (var store = StoreOnDevice.Create(Manual(directory)))
        {
            RecoveryResult? recovered = await store.RecoverAsync();
            Assert.NotNull(recovered);
            Assert.NotEqual(before, recovered.Token);
            using var session = store.NewSession();
            AssertMatches(session, model);
        }
    }

    [Fact]
    public async Task Compaction_over_a_deleted_segment_file_fails_naming_it_and_drops_nothing()
    {
        string directory = _directory.NewSubdirectory();
        var store = StoreOnDevice.Create(Manual(directory));
        using (var session = store.NewSession())
        {
            Churn(session, rounds: 3);
        }

        await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
        store.Dispose();
        Assert.True(store.FlushedUntilAddress > 2L << 16, "the log does not reach past the second segment");
        File.Delete(Path.Combine(directory, "log", "hlog.1"));

        using var reopened = StoreOnDevice.Create(Manual(directory));
        await reopened.RecoverAsync();
        long begin = reopened.BeginAddress;
        var error = await Assert.ThrowsAsync<CorruptLogException>(() => reopened.CompactAsync(reopened.HeadAddress));

        Assert.Contains("hlog.1", error.Message, StringComparison.Ordinal);
        Assert.Equal(begin, reopened.BeginAddress);
        Assert.Contains(0L, LogFiles.SegmentNumbers(Path.Combine(directory, "log")));
    }

    [Fact]
    public async Task Automatic_compaction_runs_by_policy_and_its_segments_go_once_no_kept_checkpoint_needs_them()
    {
        // Keys * 32 bytes live (128 KB) in 256 KiB of memory, written 25 times over with a full fold-over checkpoint
        // after each round (so each round appends every key again: 3.2 MB of log), and compaction by policy. What the
        // disk holds at its peak depends on how fast compaction runs against the writer: the runner measures that
        // (ycsb --scenario soak); this checks what the policy and retention do.
        string directory = _directory.NewSubdirectory();
        var logs = new CollectingLoggerFactory();
        var settings = StoreOnDevice.Settings(directory) with
        {
            MemorySizeBytes = 1L << 18,
            LogCompactionRatio = 2,
            LogCompactionMinBytes = 256 << 10,
            LoggerFactory = logs,
        };
        using var store = StoreOnDevice.Create(settings);
        using var session = store.NewSession();
        long liveBytes = Keys * (long)HybridKV.Log.LogRecord<long, long>.FixedSize;
        var model = new Dictionary<long, long>();
        const int Rounds = 25;
        for (int round = 1; round <= Rounds; round++)
        {
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal(Status.Ok, session.Upsert(k, round * 1_000_000L + k));
                model[k] = round * 1_000_000L + k;
            }

            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
        }

        // The policy was due from 256 KiB on, at every page turn since: its first compaction completes.
        Assert.True(SpinWait.SpinUntil(() => store.LogCompaction!.Compactions > 0, TimeSpan.FromMinutes(1)),
            "no automatic compaction ran");
        await store.CompactAsync(store.BeginAddress);
        Assert.DoesNotContain(logs.Entries, entry => entry.EventId == 12);
        Assert.True(store.BeginAddress > 0, "the begin address never moved");

        // Three more checkpoints record at least this begin address; retention then lets the older segments go (a
        // compaction the policy starts meanwhile may move the begin address further).
        long begin = store.BeginAddress;
        for (int i = 0; i < 3; i++)
        {
            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
        }

        AssertNoSegmentBelow(directory, begin);
        Assert.True(LogDirectoryBytes(directory) < Rounds * liveBytes,
            $"the log's files hold {LogDirectoryBytes(directory)} bytes: all {Rounds * liveBytes} written");
        AssertMatches(session, model);
    }

    /// <summary>Every segment file (64 KiB) lying wholly below <paramref name="begin"/> was deleted.</summary>
    private static void AssertNoSegmentBelow(string directory, long begin) =>
        Assert.All(LogFiles.SegmentNumbers(Path.Combine(directory, "log")), segment => Assert.True(
            (segment + 1) << 16 > begin, $"segment {segment} lies wholly below the begin address {begin} and was kept"));

    private static long LogDirectoryBytes(string directory) =>
        new DirectoryInfo(Path.Combine(directory, "log")).GetFiles("hlog.*").Sum(file => file.Length);

    [Fact]
    public async Task Byte_sequence_keys_and_values_compact_by_lookup_and_keep_every_live_value()
    {
        // Variable-length keys take the lookup path: each record traced from the index, chains followed on the device.
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = VarLen.ByteStores.OnDevice(directory) with { LogCompactionRatio = 0, LogSegmentSizeBits = 16 };
        using var store = VarLen.ByteStores.Create(settings);
        using var session = store.NewSession();
        var model = new Dictionary<string, byte[]>();
        for (int round = 0; round < 4; round++)
        {
            for (int k = 0; k < 400; k++)
            {
                string key = $"key:{k}";
                byte[] value = VarLen.ByteStores.Bytes(20 + ((k * 7 + round * 13) % 200), (round * 1000) + k);
                Assert.Equal(Status.Ok, session.Upsert(key, value));
                model[key] = value;
            }
        }

        for (int k = 0; k < 400; k += 3)
        {
            Assert.True(VarLen.ByteStores.DeleteNow(session, System.Text.Encoding.UTF8.GetBytes($"key:{k}")));
            model.Remove($"key:{k}");
        }

        CompactionResult result = await store.CompactAsync(store.HeadAddress);

        Assert.True(result.RecordsExamined > 400 && result.UntilAddress == store.BeginAddress,
            $"{result.RecordsExamined} records examined up to {result.UntilAddress}");
        for (int k = 0; k < 400; k++)
        {
            string key = $"key:{k}";
            byte[]? read = VarLen.ByteStores.ReadBytes(session, System.Text.Encoding.UTF8.GetBytes(key));
            Assert.Equal(model.GetValueOrDefault(key), read);
        }
    }

    [Fact]
    public async Task Log_only_checkpoints_after_compaction_recover_although_their_full_checkpoints_log_was_deleted()
    {
        // A full checkpoint, then compaction and log-only checkpoints: once the full one is kept only for its index,
        // the segments below the log-only checkpoints' begin address go, and the newest still recovers exactly.
        string directory = _directory.NewSubdirectory();
        Dictionary<long, long> model;
        long begin;
        using (var store = StoreOnDevice.Create(Manual(directory) with { CheckpointsToKeep = 2 }))
        using (var session = store.NewSession())
        {
            model = Churn(session, rounds: 3);
            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
            model = Churn(session, rounds: 3);
            await store.CompactAsync(store.HeadAddress);
            begin = store.BeginAddress;
            await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.FoldOver);
            await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.FoldOver);
            AssertNoSegmentBelow(directory, begin);
        }

        using (var store = StoreOnDevice.Create(Manual(directory)))
        {
            RecoveryResult? recovered = await store.RecoverAsync();
            Assert.NotNull(recovered);
            Assert.Equal(begin, store.BeginAddress);
            using var session = store.NewSession();
            AssertMatches(session, model);
        }
    }
}
