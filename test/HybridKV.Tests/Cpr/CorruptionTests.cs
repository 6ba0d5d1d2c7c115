using HybridKV.Checkpoints;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Cpr;

/// <summary>
/// Every file of a checkpoint in turn is damaged (a flipped byte, or cut in half): recovery must skip that checkpoint
/// (naming the file) and fall back to the previous complete one, or fail with an exception naming every bad file;
/// it never recovers data that is not exactly some committed checkpoint's.
/// </summary>
[Trait("Category", "Checkpoint")]
public sealed class CorruptionTests : IDisposable
{
    private const long Keys = 2000;

    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task A_damaged_checkpoint_file_makes_recovery_fall_back_or_fail_clearly_never_return_wrong_data()
    {
        string original = _directory.NewSubdirectory();
        Guid first, second, third;
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(original) with { CheckpointsToKeep = 0 }))
        using (var session = store.NewSession())
        {
            session.Preload(Keys, factor: 1);
            first = await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
            session.Preload(Keys, factor: 2);
            second = await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.Snapshot);
            session.Preload(Keys, factor: 3);
            third = await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.Snapshot);
        }

        // State after each checkpoint: value = key * 1, 2, 3. The third (log-only) checkpoint needs the second's
        // index, so damage to the second falls back past both, to the first.
        var fallbackTo = new Dictionary<Guid, (Guid Token, long Factor, bool Skips)>
        {
            [third] = (second, 2, true),
            [second] = (first, 1, true),
            [first] = (third, 3, false),
        };
        int cases = 0;
        foreach ((Guid damaged, (Guid expectedToken, long factor, bool skips)) in fallbackTo)
        {
            string checkpoint = Path.Combine(original, "checkpoints", damaged.ToString("N"));
            foreach (string file in Directory.GetFiles(checkpoint).Select(Path.GetFileName).OfType<string>())
            {
                foreach (Damage damage in Enum.GetValues<Damage>())
                {
                    string copy = _directory.CopyOf(original);
                    Apply(damage, Path.Combine(copy, "checkpoints", damaged.ToString("N"), file));
                    using var store = StoreOnDevice.Create(StoreOnDevice.Settings(copy));
                    RecoveryResult result = (await store.RecoverAsync())!;
                    Assert.Equal(expectedToken, result.Token);
                    if (skips)
                    {
                        Assert.Contains(result.Skipped, problem => problem.Contains(file, StringComparison.Ordinal));
                    }
                    else
                    {
                        // An older damaged manifest may still be reported (its age is unknown), but nothing else.
                        Assert.All(result.Skipped, problem => Assert.Contains(file, problem, StringComparison.Ordinal));
                    }

                    AssertState(store, factor);
                    cases++;
                }
            }
        }

        Assert.True(cases >= 14, $"only {cases} damaged files were tried");
    }

    [Fact]
    public async Task With_every_checkpoint_damaged_recovery_fails_naming_each_bad_file()
    {
        string directory = _directory.NewSubdirectory();
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(directory)))
        using (var session = store.NewSession())
        {
            session.Preload(100);
            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
            session.Preload(100, factor: 2);
            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.Snapshot);
        }

        string[] indexes = Directory.GetDirectories(Path.Combine(directory, "checkpoints"))
            .Select(d => Path.Combine(d, "index")).ToArray();
        foreach (string index in indexes)
        {
            Apply(Damage.FlipByte, index);
        }

        using var recovered = StoreOnDevice.Create(StoreOnDevice.Settings(directory));
        var error = await Assert.ThrowsAsync<CorruptCheckpointException>(() => recovered.RecoverAsync());
        foreach (string index in indexes)
        {
            Assert.Contains(index, error.Message, StringComparison.Ordinal);
        }
    }

    private static void AssertState(HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store, long factor)
    {
        using var session = store.NewSession();
        for (long k = 0; k < Keys; k++)
        {
            (Status status, long value) = session.ReadNow(k);
            Assert.Equal(Status.Ok, status);
            Assert.Equal(k * factor, value);
        }
    }

    private static void Apply(Damage damage, string file)
    {
        byte[] bytes = File.ReadAllBytes(file);
        if (damage == Damage.FlipByte)
        {
            bytes[bytes.Length / 2] ^= 0x5A;
            File.WriteAllBytes(file, bytes);
        }
        else
        {
            File.WriteAllBytes(file, bytes[..(bytes.Length / 2)]);
        }
    }

    private enum Damage
    {
        FlipByte,
        Truncate,
    }
}
