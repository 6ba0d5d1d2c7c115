using HybridKV.Tests.Support;

namespace HybridKV.Tests.Safety;

/// <summary>
/// A session used from two threads at once fails instead of losing serial numbers (item 6), and waiting for a commit
/// that can never come fails at once (item 7).
/// </summary>
[Trait("Category", "Safety")]
public sealed class SessionMisuseTests
{
    private static readonly TimeSpan Guard = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task A_session_used_from_a_second_thread_during_an_operation_throws_and_loses_no_serial_number()
    {
        var gate = new CallbackGate();
        using var store = new HybridKVStore<long, long, long, long, Empty, GatedFunctions>(
            TestStores.Small(), new GatedFunctions(gate));
        using var session = store.NewSession();
        session.Upsert(1, 10);

        // The first caller stops inside its RMW's callback, in the middle of its operation.
        Task first = Task.Factory.StartNew(() => session.RMW(1, GatedFunctions.Stop), CancellationToken.None,
            TaskCreationOptions.LongRunning, TaskScheduler.Default);
        Assert.True(gate.Entered.Wait(Guard), "the first operation never reached its callback");
        long serialNoInProgress = session.LastSerialNo;

        var refused = await Task.Run(() => Assert.Throws<InvalidOperationException>(() => session.Upsert(2, 20)));
        Assert.Contains("two threads at once", refused.Message, StringComparison.Ordinal);
        Assert.Contains(session.Id.ToString(), refused.Message, StringComparison.Ordinal);
        Assert.Equal(serialNoInProgress, session.LastSerialNo);

        gate.Release.Set();
        await first.WaitAsync(Guard);
        Assert.Equal(Status.Ok, session.Upsert(2, 20));
        Assert.Equal(serialNoInProgress + 1, session.LastSerialNo);
        long value = 0;
        Assert.Equal(Status.Ok, session.Read(1, ref value));
        Assert.Equal(10 + GatedFunctions.Stop, value);
    }

    [Fact]
    public async Task WaitForCommitAsync_on_a_store_that_cannot_commit_throws_at_once()
    {
        using var store = TestStores.Create(TestStores.Small());
        using var session = store.NewSession();
        session.Upsert(1, 1);
        Task wait() => session.WaitForCommitAsync(1);
        var refused = await Assert.ThrowsAsync<InvalidOperationException>(wait).WaitAsync(Guard);
        Assert.Contains("never commits", refused.Message, StringComparison.Ordinal);
        Assert.Contains("checkpoint store", refused.Message, StringComparison.Ordinal);
    }

    private sealed class CallbackGate
    {
        public ManualResetEventSlim Entered { get; } = new();

        public ManualResetEventSlim Release { get; } = new();
    }

    /// <summary>Count functions whose in-place RMW of <see cref="Stop"/> waits at the gate.</summary>
    private readonly struct GatedFunctions(CallbackGate gate) : IFunctions<long, long, long, long, Empty>
    {
        public const long Stop = 1000;

        public long GetHashCode64(in long key) => KeyHashing.HashBytes(in key);

        public bool KeyEquals(in long first, in long second) => first == second;

        public void SingleReader(in long key, in long input, in long value, ref long output) => output = value;

        public void ConcurrentReader(in long key, in long input, in long value, ref long output) => output = value;

        public void SingleWriter(in long key, in long source, ref long destination) => destination = source;

        public void ConcurrentWriter(in long key, in long source, ref long destination) => destination = source;

        public void InitialUpdater(in long key, in long input, ref long value) => value = input;

        public void InPlaceUpdater(in long key, in long input, ref long value)
        {
            if (input == Stop)
            {
                gate.Entered.Set();
                gate.Release.Wait();
            }

            value += input;
        }

        public void CopyUpdater(in long key, in long input, in long oldValue, ref long newValue) => newValue = oldValue + input;

        public void ReadCompletionCallback(in long key, in long input, in long output, Empty context, Status status)
        {
        }

        public void RMWCompletionCallback(in long key, in long input, Empty context, Status status)
        {
        }

        public void DeleteCompletionCallback(in long key, Empty context, Status status)
        {
        }
    }
}
