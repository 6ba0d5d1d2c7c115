using FsCheck;
using FsCheck.Fluent;
using HybridKV.Epochs;
using HybridKV.Sessions;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Operations;

/// <summary>
/// Random sequences of Read / Upsert / RMW / Delete against a dictionary model (FsCheck), with steps that move the
/// read-only offset and that stall a second participant in the middle of an "operation", so that records pass through
/// every region of the HybridLog: in place, copy to tail, and pending in the fuzzy region. Other steps open and close a
/// protected scope on the session, whose held epoch then holds the fuzzy region back as a stalled participant does.
/// </summary>
[Trait("Category", "Operations")]
public sealed class ModelBasedTests
{
    private const int KeySpace = 16;

    public static TheoryData<string> Configurations => new() { "default", "copy-to-tail", "overflow-buckets", "one-chain" };

    [Theory]
    [MemberData(nameof(Configurations))]
    public void Random_operation_sequences_match_a_dictionary_model(string configuration)
    {
        (StoreSettings settings, HashMode mode) = configuration switch
        {
            "copy-to-tail" => (TestStores.Small(memoryBytes: 1L << 17, pageSizeBits: 9, mutableFraction: 0.01), HashMode.Mixed),
            "overflow-buckets" => (TestStores.Small(indexBuckets: 1), HashMode.FewTagsOneBucket),
            "one-chain" => (TestStores.Small(indexBuckets: 2, pageSizeBits: 9, mutableFraction: 0.25), HashMode.Constant),
            _ => (TestStores.Small(), HashMode.Mixed),
        };

        // No automatic index growth: a resize running in the background holds epoch protection at moments of its own,
        // so a read-only shift's region could still be waiting for it when a stall began, and then become safe without
        // the stall (which began after the shift) ending, which the pending-RMW step below rules out.
        settings = settings with { IndexGrowthOverflowPercent = 0 };
        var coverage = new Coverage();
        Property property = Prop.ForAll<Operation[]>(
            Arb.From(Gen.ArrayOf(OperationGen)),
            (Operation[] steps) => Run(settings, mode, steps, coverage));
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(100 * TestScale.Factor), property);

        // The property is only as good as the paths it reached.
        Assert.True(coverage.PendingRmws > 0, "no RMW went pending in the fuzzy region");
        Assert.True(coverage.CopyUpdates > 0, "no RMW copied a read-only record to the tail");
        Assert.True(coverage.InPlaceUpdates > 0, "no RMW updated in place");
    }

    private static Gen<Operation> OperationGen
    {
        get
        {
            Gen<long> key = Gen.Choose(0, KeySpace - 1).Select(k => (long)k);
            Gen<long> value = Gen.Choose(-1000, 1000).Select(v => (long)v);
            return Gen.Frequency(
                (3, key.Zip(value, (k, v) => new Operation(StepKind.Upsert, k, v))),
                (5, key.Zip(value, (k, v) => new Operation(StepKind.RMW, k, v))),
                (3, key.Select(k => new Operation(StepKind.Read, k, 0))),
                (1, key.Select(k => new Operation(StepKind.Delete, k, 0))),
                (1, Gen.Constant(new Operation(StepKind.ShiftReadOnly, 0, 0))),
                (1, Gen.Constant(new Operation(StepKind.ToggleStall, 0, 0))),
                (1, Gen.Choose(1, 4).Select(interval => new Operation(StepKind.ToggleScope, 0, interval))));
        }
    }

    private static bool Run(StoreSettings settings, HashMode mode, Operation[] steps, Coverage coverage)
    {
        using var store = TestStores.Create(settings, mode);
        using var session = store.NewSession();
        LightEpoch epoch = store.Engine.Epoch;
        Assert.True(epoch.TryAcquireEntry(out int stallEntry));
        bool stalled = false;
        ProtectedScope? scope = null;
        var model = new Dictionary<long, long>();

        try
        {
            foreach (Operation step in steps)
            {
                switch (step.Kind)
                {
                    case StepKind.Upsert:
                        Assert.Equal(Status.Ok, session.Upsert(step.Key, step.Value));
                        model[step.Key] = step.Value;
                        break;

                    case StepKind.RMW:
                    {
                        bool existed = model.ContainsKey(step.Key);
                        long tailBefore = store.TailAddress;
                        var context = new CountContext();
                        Status status = session.RMW(step.Key, step.Value, context);
                        if (status == Status.Pending)
                        {
                            coverage.PendingRmws++;
                            Assert.True(stalled || scope is not null,
                                "an RMW can only be held up by a participant that has not refreshed");
                            if (stalled && scope is null)
                            {
                                // Only the stalled participant holds the region back. (With a scope open, the scope
                                // may be what held it, and completing refreshes the scope.)
                                Assert.False(session.CompletePending(wait: false));
                                Assert.Equal(0, context.Completions);
                            }

                            if (stalled)
                            {
                                epoch.Unprotect(stallEntry);
                                stalled = false;
                            }

                            Assert.True(session.CompletePending(wait: true));
                            Assert.Equal(1, context.Completions);
                            Assert.Equal(Status.Ok, context.LastStatus);
                        }
                        else
                        {
                            Assert.Equal(Status.Ok, status);
                            if (existed && store.TailAddress == tailBefore)
                            {
                                coverage.InPlaceUpdates++;
                            }
                            else if (existed)
                            {
                                coverage.CopyUpdates++;
                            }
                        }

                        model[step.Key] = model.GetValueOrDefault(step.Key) + step.Value;
                        break;
                    }

                    case StepKind.Read:
                    {
                        long value = session.ReadValue(step.Key, out Status status);
                        if (model.TryGetValue(step.Key, out long expected))
                        {
                            Assert.Equal(Status.Ok, status);
                            Assert.Equal(expected, value);
                        }
                        else
                        {
                            Assert.Equal(Status.NotFound, status);
                        }

                        break;
                    }

                    case StepKind.Delete:
                        Assert.Equal(model.Remove(step.Key) ? Status.Ok : Status.NotFound, session.Delete(step.Key));
                        break;

                    case StepKind.ShiftReadOnly:
                        store.Engine.Log.ShiftReadOnlyAddress(store.TailAddress, LightEpoch.NoEntry);
                        break;

                    case StepKind.ToggleStall:
                        if (stalled)
                        {
                            epoch.Unprotect(stallEntry);
                        }
                        else
                        {
                            epoch.Protect(stallEntry);
                        }

                        stalled = !stalled;
                        break;

                    case StepKind.ToggleScope:
                        if (scope is { } open)
                        {
                            open.Dispose();
                            scope = null;
                        }
                        else
                        {
                            scope = session.BeginProtectedScope(refreshInterval: (int)step.Value);
                        }

                        break;
                }
            }
        }
        finally
        {
            // A failed step must not leave the stalled row protected: disposal would wait for it forever.
            scope?.Dispose();
            if (stalled)
            {
                epoch.Unprotect(stallEntry);
            }

            epoch.ReleaseEntry(stallEntry);
        }

        for (long key = 0; key < KeySpace; key++)
        {
            long value = session.ReadValue(key, out Status status);
            Assert.Equal(model.ContainsKey(key) ? Status.Ok : Status.NotFound, status);
            if (status == Status.Ok)
            {
                Assert.Equal(model[key], value);
            }
        }

        return true;
    }

    public enum StepKind
    {
        Upsert,
        RMW,
        Read,
        Delete,
        ShiftReadOnly,
        ToggleStall,
        ToggleScope,
    }

    public sealed record Operation(StepKind Kind, long Key, long Value)
    {
        public override string ToString() => Kind switch
        {
            StepKind.Upsert or StepKind.RMW => $"{Kind}({Key}, {Value})",
            StepKind.Read or StepKind.Delete => $"{Kind}({Key})",
            StepKind.ToggleScope => $"{Kind}(refresh every {Value})",
            _ => Kind.ToString(),
        };
    }

    private sealed class Coverage
    {
        public int PendingRmws;
        public int CopyUpdates;
        public int InPlaceUpdates;
    }
}
