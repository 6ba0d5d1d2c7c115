using HybridKV.Tests.Support;

namespace HybridKV.Tests.Operations;

[Trait("Category", "Operations")]
public sealed class BadInputTests
{
    public static TheoryData<string, StoreSettings> InvalidSettings => new()
    {
        { nameof(StoreSettings.IndexBuckets), new StoreSettings { IndexBuckets = 0 } },
        { nameof(StoreSettings.IndexBuckets), new StoreSettings { IndexBuckets = 3 } },
        { nameof(StoreSettings.IndexBuckets), new StoreSettings { IndexBuckets = StoreSettings.MaxIndexBuckets * 2 } },
        { nameof(StoreSettings.PageSizeBits), new StoreSettings { PageSizeBits = StoreSettings.MinPageSizeBits - 1 } },
        { nameof(StoreSettings.PageSizeBits), new StoreSettings { PageSizeBits = StoreSettings.MaxPageSizeBits + 1 } },
        { nameof(StoreSettings.MemorySizeBytes), new StoreSettings { MemorySizeBytes = 1L << 22 } },
        { nameof(StoreSettings.MemorySizeBytes), new StoreSettings { MemorySizeBytes = (1L << 28) + 4096 } },
        { nameof(StoreSettings.MemorySizeBytes), new StoreSettings { MemorySizeBytes = StoreSettings.MaxMemorySizeBytes * 2 } },
        { nameof(StoreSettings.MutableFraction), new StoreSettings { MutableFraction = 0 } },
        { nameof(StoreSettings.MutableFraction), new StoreSettings { MutableFraction = 1.01 } },
        { nameof(StoreSettings.MutableFraction), new StoreSettings { MutableFraction = double.NaN } },
        { nameof(StoreSettings.MaxSessions), new StoreSettings { MaxSessions = 0 } },
        { nameof(StoreSettings.MaxSessions), new StoreSettings { MaxSessions = StoreSettings.MaxMaxSessions + 1 } },
    };

    [Theory]
    [MemberData(nameof(InvalidSettings))]
    public void Every_invalid_setting_is_rejected_with_its_name_and_allowed_range(string setting, StoreSettings settings)
    {
        var error = Assert.Throws<ArgumentOutOfRangeException>(() => TestStores.Create(settings));
        Assert.Equal(setting, error.ParamName);
        Assert.Contains(setting, error.Message, StringComparison.Ordinal);
        Assert.Matches("must be|from|at most", error.Message);
    }

    [Fact]
    public void The_default_settings_are_valid()
    {
        new StoreSettings().Validate();
        using var store = TestStores.Create(new StoreSettings { MemorySizeBytes = 1L << 23 });
        Assert.Equal(0.9, store.Settings.MutableFraction);
    }

    [Fact]
    public void A_record_larger_than_a_page_is_rejected_naming_the_page_size_setting()
    {
        var settings = new StoreSettings { PageSizeBits = 9, MemorySizeBytes = 1L << 12 };
        var error = Assert.Throws<ArgumentOutOfRangeException>(
            () => new HybridKVStore<long, LargeValue, long, long, Empty, LargeValueFunctions>(settings));
        Assert.Contains(nameof(StoreSettings.PageSizeBits), error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_disposed_store_and_its_sessions_throw_ObjectDisposedException()
    {
        var store = TestStores.Create(TestStores.Small());
        var session = store.NewSession();
        session.Upsert(1, 1);
        store.Dispose();

        Assert.Throws<ObjectDisposedException>(() => store.NewSession());
        Assert.Throws<ObjectDisposedException>(() => session.Upsert(1, 2));
        Assert.Throws<ObjectDisposedException>(() => session.RMW(1, 2));
        Assert.Throws<ObjectDisposedException>(() => session.Delete(1));
        Assert.Throws<ObjectDisposedException>(() => session.ReadValue(1, out _));
        session.Dispose();
        store.Dispose();
    }

    [Fact]
    public void A_disposed_session_throws_ObjectDisposedException_and_frees_its_slot()
    {
        using var store = TestStores.Create(TestStores.Small() with { MaxSessions = 1 });
        var session = store.NewSession();
        var refused = Assert.Throws<InvalidOperationException>(() => store.NewSession());
        Assert.Contains(nameof(StoreSettings.MaxSessions), refused.Message, StringComparison.Ordinal);

        session.Dispose();
        Assert.Throws<ObjectDisposedException>(() => session.Upsert(1, 1));
        Assert.Throws<ObjectDisposedException>(() => session.CompletePending());
        session.Dispose();

        using var next = store.NewSession();
        Assert.Equal(Status.Ok, next.Upsert(1, 1));
        Assert.Equal(1, store.OpenSessionCount);
    }

    [Fact]
    public void A_log_that_outgrows_memory_fails_clearly_without_losing_or_overwriting_data()
    {
        var settings = TestStores.Small(memoryBytes: 1L << 14, pageSizeBits: 10);
        using var store = TestStores.Create(settings);
        using var session = store.NewSession();
        long inserted = 0;
        void FillUntilFull()
        {
            while (true)
            {
                session.Upsert(inserted, inserted * 10);
                inserted++;
            }
        }

        LogFullException error = Assert.Throws<LogFullException>(FillUntilFull);
        Assert.Contains(nameof(StoreSettings.MemorySizeBytes), error.Message, StringComparison.Ordinal);
        Assert.True(inserted > 0);

        // Again and again: a clear error every time, never a hang, and the tail never passes the budget.
        for (int i = 0; i < 3; i++)
        {
            Assert.Throws<LogFullException>(() => session.RMW(inserted + i, 1));
        }

        Assert.True(store.TailAddress <= settings.MemorySizeBytes);
        for (long key = 0; key < inserted; key++)
        {
            Assert.Equal(key * 10, session.ReadValue(key, out Status status));
            Assert.Equal(Status.Ok, status);
        }

        session.ReadValue(inserted, out Status missing);
        Assert.Equal(Status.NotFound, missing);

        // Updates in place still work: they need no new record.
        Assert.Equal(Status.Ok, session.Upsert(inserted - 1, 7));
        Assert.Equal(7, session.ReadValue(inserted - 1, out _));
    }

    [System.Runtime.InteropServices.StructLayout(System.Runtime.InteropServices.LayoutKind.Sequential, Size = 600)]
    public struct LargeValue;

    public readonly struct Empty;

    public struct LargeValueFunctions : IFunctions<long, LargeValue, long, long, Empty>
    {
        public readonly long GetHashCode64(in long key) => KeyHashing.Mix(key);

        public readonly bool KeyEquals(in long first, in long second) => first == second;

        public readonly void SingleReader(in long key, in long input, in LargeValue value, ref long output) { }

        public readonly void ConcurrentReader(in long key, in long input, in LargeValue value, ref long output) { }

        public readonly void SingleWriter(in long key, in LargeValue source, ref LargeValue destination) =>
            destination = source;

        public readonly void ConcurrentWriter(in long key, in LargeValue source, ref LargeValue destination) =>
            destination = source;

        public readonly void InitialUpdater(in long key, in long input, ref LargeValue value) { }

        public readonly void InPlaceUpdater(in long key, in long input, ref LargeValue value) { }

        public readonly void CopyUpdater(in long key, in long input, in LargeValue oldValue, ref LargeValue newValue) =>
            newValue = oldValue;

        public readonly void ReadCompletionCallback(in long key, in long input, in long output, Empty context,
            Status status)
        {
        }

        public readonly void RMWCompletionCallback(in long key, in long input, Empty context, Status status) { }

        public readonly void DeleteCompletionCallback(in long key, Empty context, Status status) { }
    }
}
