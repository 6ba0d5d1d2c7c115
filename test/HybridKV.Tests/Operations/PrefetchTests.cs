using FsCheck;
using FsCheck.Fluent;
using HybridKV.Index;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Operations;

using CountSession = Session<long, long, long, long, CountContext?, CountFunctions>;
using CountStore = HybridKVStore<long, long, long, long, CountContext?, CountFunctions>;

/// <summary>
/// <see cref="Session{TKey, TValue, TInput, TOutput, TContext, TFunctions}.Prefetch"/> (issue 19) is a hint: the
/// operations after it give exactly what they give without it, it reads nothing from the device, and it is safe
/// wherever an operation is (inside a protected scope, while the index doubles); a disposed session refuses it.
/// </summary>
[Trait("Category", "Operations")]
public sealed class PrefetchTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    private enum Kind
    {
        Read,
        Upsert,
        RMW,
        Delete,
    }

    [Fact]
    public void Operations_after_a_prefetch_of_their_keys_match_a_dictionary_and_the_prefetch_reads_no_device()
    {
        using CountStore store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using CountSession session = store.NewSession();
        // Far more than memory: many keys' records are on the device when prefetched.
        session.Preload(6_000, factor: 5);
        var model = new Dictionary<long, long>();
        for (long k = 0; k < 6_000; k++)
        {
            model[k] = k * 5;
        }

        Gen<(Kind Kind, long Key, long Value)> operation =
            from kind in Gen.Elements(Kind.Read, Kind.Upsert, Kind.RMW, Kind.Delete)
            from key in Gen.Choose(0, 7_000)
            from value in Gen.Choose(1, 1_000)
            select (kind, (long)key, (long)value);
        Gen<(Kind, long, long)[]> groups = operation.ArrayOf().Select(a => a.Take(48).ToArray());
        Prop.ForAll(Arb.From(groups), group =>
        {
            long[] keys = [.. group.Select(o => o.Item2), 9_000, 9_001];
            long readBefore = store.Engine.Log.Device!.BytesRead;
            session.Prefetch(keys);
            Assert.Equal(readBefore, store.Engine.Log.Device.BytesRead);
            foreach ((Kind kind, long key, long value) in group)
            {
                switch (kind)
                {
                    case Kind.Read:
                        (Status status, long read) = session.ReadOrZeroNow(key);
                        Assert.Equal(model.TryGetValue(key, out long expected) ? (Status.Ok, expected) : (Status.NotFound, 0L),
                            (status, read));
                        break;
                    case Kind.Upsert:
                        Assert.Equal(Status.Ok, session.Upsert(key, value));
                        model[key] = value;
                        break;
                    case Kind.RMW:
                        Assert.Equal(Status.Ok, session.RMWNow(key, value));
                        model[key] = model.GetValueOrDefault(key) + value;
                        break;
                    default:
                        session.Delete(key);
                        model.Remove(key);
                        break;
                }
            }

            return true;
        }).QuickCheckThrowOnFailure();

        foreach ((long key, long value) in model)
        {
            Assert.Equal((Status.Ok, value), session.ReadOrZeroNow(key));
        }
    }

    [Fact]
    public async Task A_prefetch_inside_a_protected_scope_and_while_the_index_doubles_changes_nothing()
    {
        const long Keys = 2_048; // whole groups of 32
        using CountStore store = TestStores.Create(StoreOnDevice.GrowableIndexSettings(_directory.NewSubdirectory()));
        using CountSession session = store.NewSession();
        session.Preload(Keys, factor: 1);
        long[] all = [.. Enumerable.Range(0, (int)Keys).Select(k => (long)k)];

        // Held in its resizing phase: buckets are found through both the old and the new index.
        var hold = new ResizeHold(store.Engine.Growth, ResizePhase.Resizing);
        Task<bool> growing = store.GrowIndexAsync();
        await hold.Reached;
        Assert.Equal(ResizePhase.Resizing, store.Engine.Index.ResizeStatus.Phase);
        for (int start = 0; start < Keys; start += 32)
        {
            session.Prefetch(all.AsSpan(start, 32));
            for (int k = start; k < start + 32; k++)
            {
                Assert.Equal(Status.Ok, session.RMWNow(k, k));
            }
        }

        hold.Release();
        Assert.True(await growing);
        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal((Status.Ok, 2 * k), session.ReadOrZeroNow(k));
        }

        using (session.BeginProtectedScope())
        {
            for (int start = 0; start < Keys; start += 32)
            {
                session.Prefetch(all.AsSpan(start, 32));
                for (int k = start; k < start + 32; k++)
                {
                    Assert.Equal(Status.Ok, session.Upsert(k, k * 3));
                }
            }
        }

        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal((Status.Ok, k * 3), session.ReadOrZeroNow(k));
        }
    }

    [Fact]
    public void A_disposed_session_refuses_a_prefetch()
    {
        using CountStore store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        CountSession session = store.NewSession();
        session.Upsert(1, 1);
        session.Dispose();
        Assert.Throws<ObjectDisposedException>(() => session.Prefetch([1L, 2L]));
    }
}
