using System.Text;
using FsCheck;
using FsCheck.Fluent;
using HybridKV.Checkpoints;
using HybridKV.Epochs;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.VarLen;

/// <summary>
/// Random sequences of Upsert / append-RMW / Read / Delete with values from 0 to 4 KiB against a dictionary model
/// (FsCheck), growing and shrinking values in place and beyond their records. Other steps make the log read-only (so
/// that updates copy to the tail) and, on a device with memory for a few values only, push every key out of memory,
/// take a checkpoint, or drop the store as if it crashed and recover the last checkpoint, after which the model goes
/// back to that checkpoint.
/// </summary>
[Trait("Category", "VarLen")]
public sealed class VarLenModelTests
{
    private const int KeySpace = 12;

    [Theory]
    [InlineData("in-memory")]
    [InlineData("on-device")]
    public void Random_operation_sequences_with_values_up_to_4_KiB_match_a_dictionary_model(string configuration)
    {
        var coverage = new Coverage();
        Property property = Prop.ForAll(
            Arb.From(Gen.ArrayOf(StepGen(withRecovery: configuration == "on-device"))),
            (Step[] steps) => Run(configuration, steps, coverage));
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(60 * TestScale.Factor), property);

        Assert.True(coverage.Grown > 0, "no value grew in place");
        Assert.True(coverage.Moved > 0, "no value moved to a new record");
        if (configuration == "on-device")
        {
            Assert.True(coverage.Recoveries > 0, "no recovery ran");
            Assert.True(coverage.ReadFromDevice > 0, "no read went to the device");
        }
    }

    private static Gen<Step> StepGen(bool withRecovery)
    {
        Gen<int> key = Gen.Choose(0, KeySpace - 1);
        Gen<int> length = Gen.Frequency(
            (4, Gen.Choose(0, 16)),
            (3, Gen.Choose(17, 300)),
            (2, Gen.Choose(301, 4096)));
        Gen<int> seed = Gen.Choose(0, 1_000_000);
        var steps = new List<(int, Gen<Step>)>
        {
            (4, key.Zip(length).Zip(seed, (kl, s) => new Step(StepKind.Upsert, kl.Item1, kl.Item2, s))),
            (4, key.Zip(Gen.Choose(0, 64)).Zip(seed, (kl, s) => new Step(StepKind.Append, kl.Item1, kl.Item2, s))),
            (3, key.Select(k => new Step(StepKind.Read, k, 0, 0))),
            (1, key.Select(k => new Step(StepKind.Delete, k, 0, 0))),
            (1, Gen.Constant(new Step(StepKind.ShiftReadOnly, 0, 0, 0))),
        };
        if (withRecovery)
        {
            steps.Add((1, Gen.Elements(CheckpointMode.FoldOver, CheckpointMode.Snapshot)
                .Select(mode => new Step(StepKind.Checkpoint, 0, (int)mode, 0))));
            steps.Add((1, Gen.Constant(new Step(StepKind.CrashAndRecover, 0, 0, 0))));
            steps.Add((1, Gen.Constant(new Step(StepKind.Evict, 0, 0, 0))));
        }

        return Gen.Frequency(steps.ToArray());
    }

    private static bool Run(string configuration, Step[] steps, Coverage coverage)
    {
        using var directory = new TempDirectory();
        StoreSettings settings = configuration == "on-device"
            ? ByteStores.OnDevice(directory.Path)
            : ByteStores.InMemory(mutableFraction: 0.3);
        var store = ByteStores.Create(settings);
        var session = store.NewSession();
        var model = new Dictionary<int, byte[]>();
        Dictionary<int, byte[]>? checkpointed = null;
        try
        {
            foreach (Step step in steps)
            {
                byte[] key = Key(step.Key);
                switch (step.Kind)
                {
                    case StepKind.Upsert:
                    {
                        byte[] value = ByteStores.Bytes(step.Length, step.Seed);
                        long tail = store.TailAddress;
                        Assert.Equal(Status.Ok, session.Upsert(key, value));
                        if (model.TryGetValue(step.Key, out byte[]? old) && value.Length > old.Length
                            && tail == store.TailAddress)
                        {
                            coverage.Grown++;
                        }

                        model[step.Key] = value;
                        break;
                    }

                    case StepKind.Append:
                    {
                        byte[] chunk = ByteStores.Bytes(step.Length, step.Seed);
                        byte[] old = model.GetValueOrDefault(step.Key) ?? [];
                        if (old.Length + chunk.Length > 4096)
                        {
                            break;
                        }

                        long tail = store.TailAddress;
                        session.AppendNow(key, chunk);
                        if (model.ContainsKey(step.Key) && chunk.Length > 0)
                        {
                            if (tail == store.TailAddress)
                            {
                                coverage.Grown++;
                            }
                            else
                            {
                                coverage.Moved++;
                            }
                        }

                        model[step.Key] = [.. old, .. chunk];
                        break;
                    }

                    case StepKind.Read:
                    {
                        var output = default(VarBytesOutput);
                        var keyBytes = key;
                        if (store.HeadAddress > 0)
                        {
                            // Count reads that had to go to the device (a plain read returns Pending for those).
                            Status plain = session.Read(keyBytes, ref output);
                            output.Memory?.Dispose();
                            if (plain == Status.Pending)
                            {
                                coverage.ReadFromDevice++;
                                Assert.True(session.CompletePending(wait: true));
                            }
                        }

                        Assert.Equal(model.GetValueOrDefault(step.Key), session.ReadBytes(keyBytes));
                        break;
                    }

                    case StepKind.Delete:
                    {
                        // A delete is blind (issue 16): NotFound only when memory or the index shows the key absent;
                        // a key whose chain goes on to the device gets a tombstone and Ok, whatever it held there.
                        // The reads that follow check that it is gone either way.
                        bool existed = model.Remove(step.Key);
                        bool reported = session.DeleteNow(key);
                        Assert.True(reported || !existed, $"deleting key {step.Key}, which held a value, reported NotFound");
                        break;
                    }

                    case StepKind.ShiftReadOnly:
                        store.Engine.Log.ShiftReadOnlyAddress(store.TailAddress, LightEpoch.NoEntry);
                        break;

                    case StepKind.Evict:
                        // More than the memory budget of other keys' values: every key of the model leaves memory.
                        for (int filler = 0; filler < 48; filler++)
                        {
                            session.Upsert($"filler {filler}", ByteStores.Bytes(1024, filler));
                        }

                        break;

                    case StepKind.Checkpoint:
                        store.TakeCheckpointAsync(CheckpointKind.Full, (CheckpointMode)step.Length)
                            .GetAwaiter().GetResult();
                        checkpointed = new Dictionary<int, byte[]>(model);
                        break;

                    case StepKind.CrashAndRecover:
                        session.Dispose();
                        store.Dispose();
                        store = ByteStores.Create(settings);
                        RecoveryResult? result = store.RecoverAsync().GetAwaiter().GetResult();
                        Assert.Equal(checkpointed is null, result is null);
                        model = new Dictionary<int, byte[]>(checkpointed ?? []);
                        session = store.NewSession();
                        coverage.Recoveries++;
                        break;
                }
            }

            for (int k = 0; k < KeySpace; k++)
            {
                Assert.Equal(model.GetValueOrDefault(k), session.ReadBytes(Key(k)));
            }
        }
        finally
        {
            session.Dispose();
            store.Dispose();
        }

        return true;
    }

    private static byte[] Key(int key) => Encoding.UTF8.GetBytes(new string((char)('a' + key), key * 3));

    private enum StepKind
    {
        Upsert,
        Append,
        Read,
        Delete,
        ShiftReadOnly,
        Evict,
        Checkpoint,
        CrashAndRecover,
    }

    private sealed record Step(StepKind Kind, int Key, int Length, int Seed);

    private sealed class Coverage
    {
        public int Grown;
        public int Moved;
        public int Recoveries;
        public int ReadFromDevice;
    }
}
