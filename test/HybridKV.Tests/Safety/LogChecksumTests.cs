using HybridKV.Checkpoints;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using Microsoft.Extensions.Logging;

namespace HybridKV.Tests.Safety;

/// <summary>
/// Checksums on the log (issue 17, item 4): every record carries one, written when it goes to the device and verified
/// on every read from it and during recovery. Damaged, missing or truncated bytes are an error naming the address and
/// the file, never a value and never an absent key.
/// </summary>
[Trait("Category", "Safety")]
public sealed class LogChecksumTests : IDisposable
{
    private const long Keys = 20_000;
    private const long Factor = 10;

    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task A_damaged_record_on_the_device_reads_as_an_error_naming_its_address_and_file_never_as_a_value()
    {
        string directory = await WriteStoreAsync();
        string segment = Path.Combine(directory, "log", "hlog.1");
        using (var file = new FileStream(segment, FileMode.Open, FileAccess.ReadWrite))
        {
            // One flipped byte every 1,000: keys, values and headers alike.
            for (long offset = 500; offset < file.Length; offset += 1000)
            {
                file.Position = offset;
                int b = file.ReadByte();
                file.Position = offset;
                file.WriteByte((byte)(b ^ 0x5A));
            }
        }

        var logs = new CollectingLoggerFactory();
        using var store = TestStores.Create(StoreOnDevice.Settings(directory) with { LoggerFactory = logs });
        Assert.NotNull(await store.RecoverAsync());
        using var session = store.NewSession();
        int errors = await ReadEveryKeyAsync(session, segment);
        Assert.True(errors >= 10, $"only {errors} keys hit the damage");
        Assert.Contains(logs.Entries, e => e.EventId == 9 && e.Message.Contains(segment, StringComparison.Ordinal));

        // The blocking methods report the same record as Status.Error to the completion callback.
        long damagedKey = await FirstDamagedKeyAsync(session);
        var context = new CountContext();
        long output = 0;
        Assert.Equal(Status.Pending, session.Read(damagedKey, 0, ref output, context));
        session.CompletePending(wait: true);
        Assert.Equal(Status.Error, context.LastStatus);
    }

    [Fact]
    public async Task A_missing_segment_file_is_an_error_naming_the_file_not_an_absent_key()
    {
        string directory = await WriteStoreAsync();
        string segment = Path.Combine(directory, "log", "hlog.1");
        File.Delete(segment);

        using var store = TestStores.Create(StoreOnDevice.Settings(directory));
        Assert.NotNull(await store.RecoverAsync());
        using var session = store.NewSession();
        var error = await Assert.ThrowsAsync<CorruptLogException>(async () => await session.ReadAsync(3000));
        Assert.Contains(segment, error.Message, StringComparison.Ordinal);
        Assert.Contains("missing or shorter", error.Message, StringComparison.Ordinal);
        Assert.True(error.Address > 0);
        Assert.True(await ReadEveryKeyAsync(session, segment) >= 1000);
    }

    [Fact]
    public async Task A_truncated_segment_file_is_an_error_not_an_absent_key()
    {
        string directory = await WriteStoreAsync();
        string segment = Path.Combine(directory, "log", "hlog.1");
        using (var file = new FileStream(segment, FileMode.Open, FileAccess.ReadWrite))
        {
            file.SetLength(file.Length / 2);
        }

        using var store = TestStores.Create(StoreOnDevice.Settings(directory));
        Assert.NotNull(await store.RecoverAsync());
        using var session = store.NewSession();
        Assert.True(await ReadEveryKeyAsync(session, segment) >= 500);
    }

    [Fact]
    public async Task Recovery_stops_at_a_damaged_record_in_the_log_it_replays_naming_the_address_and_file()
    {
        string directory = _directory.NewSubdirectory();
        using (var store = TestStores.Create(StoreOnDevice.Settings(directory)))
        {
            // The index comes from this empty full checkpoint: recovery replays all the log after it.
            await store.TakeCheckpointAsync(CheckpointKind.Full);
            using (var session = store.NewSession())
            {
                session.Preload(Keys, Factor);
            }

            await store.TakeCheckpointAsync(CheckpointKind.LogOnly);
        }

        string segment = Path.Combine(directory, "log", "hlog.2");
        using (var file = new FileStream(segment, FileMode.Open, FileAccess.ReadWrite))
        {
            file.Position = 12_345;
            int b = file.ReadByte();
            file.Position = 12_345;
            file.WriteByte((byte)(b ^ 1));
        }

        using var recovering = TestStores.Create(StoreOnDevice.Settings(directory));
        var error = await Assert.ThrowsAsync<CorruptLogException>(() => recovering.RecoverAsync());
        Assert.Contains(segment, error.Message, StringComparison.Ordinal);
        Assert.InRange(error.Address, (2L << 16) + 12_345 - 64, (2L << 16) + 12_345);
        Assert.Throws<InvalidOperationException>(() => recovering.NewSession());
    }

    [Fact]
    public async Task A_damaged_newest_checkpoint_falls_back_to_the_previous_one_with_a_warning()
    {
        string directory = _directory.NewSubdirectory();
        Guid newest;
        using (var store = TestStores.Create(StoreOnDevice.Settings(directory)))
        {
            using (var session = store.NewSession())
            {
                session.Upsert(1, 10);
                await store.TakeCheckpointAsync(CheckpointKind.Full);
                session.Upsert(1, 20);
            }

            newest = await store.TakeCheckpointAsync(CheckpointKind.Full);
        }

        string index = Path.Combine(directory, "checkpoints", newest.ToString("N"), "index");
        byte[] bytes = File.ReadAllBytes(index);
        bytes[^1] ^= 0xFF;
        File.WriteAllBytes(index, bytes);

        var logs = new CollectingLoggerFactory();
        using var recovered = TestStores.Create(StoreOnDevice.Settings(directory) with { LoggerFactory = logs });
        RecoveryResult? result = await recovered.RecoverAsync();
        Assert.NotNull(result);
        Assert.NotEqual(newest, result.Token);
        Assert.Contains(result.Skipped, s => s.Contains(index, StringComparison.Ordinal));
        Assert.Contains(logs.Entries, e => e.Level == LogLevel.Warning && e.Message.Contains(index, StringComparison.Ordinal));
        using var reader = recovered.NewSession();
        Assert.Equal((Status.Ok, 10L), reader.ReadNow(1));
    }

    /// <summary>A store of <see cref="Keys"/> keys, most of them on the device, checkpointed with its index.</summary>
    private async Task<string> WriteStoreAsync()
    {
        string directory = _directory.NewSubdirectory();
        // Nothing copied forward in the background: the tests damage the segment file where the preload left the keys.
        using var store = TestStores.Create(StoreOnDevice.Settings(directory) with { MemoryCompactionMaxLiveFraction = 0 });
        using (var session = store.NewSession())
        {
            session.Preload(Keys, Factor);
        }

        await store.TakeCheckpointAsync(CheckpointKind.Full);
        return directory;
    }

    /// <summary>Reads every key: each is its value or an error naming <paramref name="segment"/>, never anything else.</summary>
    /// <returns>How many keys were errors.</returns>
    private static async Task<int> ReadEveryKeyAsync(
        HybridKV.Sessions.Session<long, long, long, long, CountContext?, CountFunctions> session, string segment)
    {
        int errors = 0;
        for (long key = 0; key < Keys; key++)
        {
            try
            {
                ReadResult<long> result = await session.ReadAsync(key);
                Assert.True(result.Status == Status.Ok && result.Output == key * Factor,
                    $"key {key} read as {result.Status} {result.Output}, expected {key * Factor}");
            }
            catch (CorruptLogException error)
            {
                Assert.Contains(segment, error.Message, StringComparison.Ordinal);
                Assert.Contains($"address {error.Address}", error.Message, StringComparison.Ordinal);
                errors++;
            }
        }

        return errors;
    }

    private static async Task<long> FirstDamagedKeyAsync(
        HybridKV.Sessions.Session<long, long, long, long, CountContext?, CountFunctions> session)
    {
        for (long key = 0; key < Keys; key++)
        {
            try
            {
                await session.ReadAsync(key);
            }
            catch (CorruptLogException)
            {
                return key;
            }
        }

        throw new InvalidOperationException("no key is damaged");
    }
}
