using HybridKV.Devices;
using HybridKV.Tests.Support;
using HybridKV.Tests.VarLen;

namespace HybridKV.Tests.Hardening;

/// <summary>
/// A read into the caller's span (issue 16, item 5) finishes before the call returns, also when another pending
/// operation of the session throws while it waits: the span is never written after the call.
/// </summary>
[Trait("Category", "Hardening")]
public sealed class SpanReadTests
{
    [Fact]
    public void A_read_into_a_span_finishes_before_a_sibling_failure_is_thrown()
    {
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 20));
        StoreSettings settings = ByteStores.OnDevice("unused") with { LogDirectory = null, LogDevice = device };
        using (device)
        using (var store = new HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, HookedVarBytesFunctions<FailingAppend>>(settings))
        using (var session = store.NewSession())
        {
            byte[] value = ByteStores.Bytes(200, 7);
            session.Upsert("a"u8, ByteStores.Bytes(100, 1));
            session.Upsert("b"u8, value);
            for (int i = 0; i < 400; i++)
            {
                session.Upsert($"filler:{i}", ByteStores.Bytes(300, i));
            }

            // The append to "a" reads the device and then throws; the read of "b" waits until the append has thrown.
            var hold = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            FailingAppend.OnFailure = () => hold.TrySetResult();
            Assert.Equal(Status.Pending, session.RMW("a"u8, "boom"u8));
            device.HoldReads = hold.Task;

            byte[] buffer = GC.AllocateArray<byte>(256, pinned: true);
            Assert.Throws<InvalidOperationException>(() => session.Read("b"u8, buffer, out _));

            // The read finished inside the call: its value is there, and nothing is left to write the buffer later.
            Assert.Equal(0, session.PendingCount);
            Assert.Equal(value, buffer[..value.Length]);
            buffer.AsSpan().Fill(0xEE);
            device.HoldReads = null;
            Assert.True(session.CompletePending(wait: true));
            Assert.All(buffer, b => Assert.Equal(0xEE, b));
        }
    }

    /// <summary>A copy-append of "boom" throws, after telling the test.</summary>
    private readonly struct FailingAppend : IUpdateHooks
    {
        public static Action? OnFailure { get; set; }

        public void BeforeInPlaceUpdate(in VarBytes input)
        {
        }

        public void BeforeCopyUpdate(in VarBytes input)
        {
            if (input.AsReadOnlySpan().SequenceEqual("boom"u8))
            {
                OnFailure?.Invoke();
                throw new InvalidOperationException("The append callback failed.");
            }
        }
    }
}
