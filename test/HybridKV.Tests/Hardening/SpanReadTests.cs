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
        using (var store = new HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, FailingAppend>(settings))
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

    /// <summary>Appends like <see cref="VarBytesFunctions"/>, but a copy-append of "boom" throws.</summary>
    private readonly struct FailingAppend : IFunctions<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty>
    {
        public static Action? OnFailure { get; set; }

        private static VarBytesFunctions Plain => default;

        public long GetHashCode64(in VarBytes key) => Plain.GetHashCode64(in key);

        public bool KeyEquals(in VarBytes first, in VarBytes second) => Plain.KeyEquals(in first, in second);

        public void SingleReader(in VarBytes key, in VarBytes input, in VarBytes value, ref VarBytesOutput output) =>
            Plain.SingleReader(in key, in input, in value, ref output);

        public void ConcurrentReader(in VarBytes key, in VarBytes input, in VarBytes value, ref VarBytesOutput output) =>
            Plain.ConcurrentReader(in key, in input, in value, ref output);

        public void SingleWriter(in VarBytes key, in VarBytes source, ref VarBytes destination) =>
            Plain.SingleWriter(in key, in source, ref destination);

        public void ConcurrentWriter(in VarBytes key, in VarBytes source, ref VarBytes destination) =>
            Plain.ConcurrentWriter(in key, in source, ref destination);

        public int GetInitialValueLength(in VarBytes key, in VarBytes input) => Plain.GetInitialValueLength(in key, in input);

        public int GetUpdatedValueLength(in VarBytes key, in VarBytes input, in VarBytes value) =>
            Plain.GetUpdatedValueLength(in key, in input, in value);

        public void InitialUpdater(in VarBytes key, in VarBytes input, ref VarBytes value) =>
            Plain.InitialUpdater(in key, in input, ref value);

        public void InPlaceUpdater(in VarBytes key, in VarBytes input, ref VarBytes value) =>
            Plain.InPlaceUpdater(in key, in input, ref value);

        public void CopyUpdater(in VarBytes key, in VarBytes input, in VarBytes oldValue, ref VarBytes newValue)
        {
            if (input.AsReadOnlySpan().SequenceEqual("boom"u8))
            {
                OnFailure?.Invoke();
                throw new InvalidOperationException("The append callback failed.");
            }

            Plain.CopyUpdater(in key, in input, in oldValue, ref newValue);
        }

        public void ReadCompletionCallback(
            in VarBytes key, in VarBytes input, in VarBytesOutput output, Empty context, Status status)
        {
        }

        public void RMWCompletionCallback(in VarBytes key, in VarBytes input, Empty context, Status status)
        {
        }

        public void DeleteCompletionCallback(in VarBytes key, Empty context, Status status)
        {
        }
    }
}
