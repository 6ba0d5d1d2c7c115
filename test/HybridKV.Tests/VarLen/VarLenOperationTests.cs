using System.Buffers;
using System.Text;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.VarLen;

/// <summary>Byte-sequence keys and values: the operations, in-place growth and shrinking, limits and bad input.</summary>
[Trait("Category", "VarLen")]
public sealed class VarLenOperationTests
{
    [Fact]
    public void Values_of_any_length_including_empty_keys_and_values_read_back()
    {
        using var store = ByteStores.Create(ByteStores.InMemory());
        using var session = store.NewSession();
        int[] lengths = [0, 1, 3, 4, 5, 7, 8, 9, 100, 1000, 4096];
        foreach (int length in lengths)
        {
            Assert.Equal(Status.Ok, session.Upsert($"key {length}", ByteStores.Bytes(length, length)));
        }

        Assert.Equal(Status.Ok, session.Upsert([], "empty key"u8));
        foreach (int length in lengths)
        {
            Assert.Equal(ByteStores.Bytes(length, length), session.ReadBytes(Encoding.UTF8.GetBytes($"key {length}")));
        }

        Assert.Equal("empty key"u8.ToArray(), session.ReadBytes([]));
        Assert.Null(session.ReadBytes("absent"u8));
    }

    [Fact]
    public void String_keys_are_their_UTF8_bytes_whatever_their_length()
    {
        using var store = ByteStores.Create(ByteStores.InMemory());
        using var session = store.NewSession();
        string shortKey = "grain/ünïcødé/42";
        string longKey = new('€', 1000);
        session.Upsert(shortKey, "a"u8);
        session.Upsert(longKey, "b"u8);

        Assert.Equal("a"u8.ToArray(), session.ReadBytes(Encoding.UTF8.GetBytes(shortKey)));
        Assert.Equal(Status.Ok, session.Read(longKey, out IMemoryOwner<byte>? value));
        using (value)
        {
            Assert.Equal("b"u8.ToArray(), value!.Memory.ToArray());
        }

        Assert.Equal(Status.Ok, session.Delete(shortKey));
        Assert.Equal(Status.NotFound, session.Read(shortKey, out _));
    }

    [Fact]
    public void A_read_into_a_buffer_copies_when_the_value_fits_and_reports_the_length_when_it_does_not()
    {
        using var store = ByteStores.Create(ByteStores.InMemory());
        using var session = store.NewSession();
        byte[] value = ByteStores.Bytes(300, 1);
        session.Upsert("k"u8, value);

        byte[] large = new byte[400];
        Assert.Equal(Status.Ok, session.Read("k"u8, large, out int length));
        Assert.Equal(300, length);
        Assert.Equal(value, large[..300]);

        byte[] small = new byte[10];
        Assert.Equal(Status.Ok, session.Read("k"u8, small, out length));
        Assert.Equal(300, length);
        Assert.All(small, b => Assert.Equal(0, b));

        Assert.Equal(Status.NotFound, session.Read("other"u8, large, out length));
        Assert.Equal(0, length);
    }

    [Fact]
    public void A_value_shrinks_and_grows_back_in_place_and_moves_only_when_it_outgrows_its_record()
    {
        using var store = ByteStores.Create(ByteStores.InMemory());
        using var session = store.NewSession();
        session.Upsert("k"u8, ByteStores.Bytes(100, 1));
        long tail = store.TailAddress;

        session.Upsert("k"u8, ByteStores.Bytes(10, 2));
        Assert.Equal(ByteStores.Bytes(10, 2), session.ReadBytes("k"u8));
        session.Upsert("k"u8, ByteStores.Bytes(100, 3));
        Assert.Equal(ByteStores.Bytes(100, 3), session.ReadBytes("k"u8));
        Assert.Equal(tail, store.TailAddress);

        // The record was allocated for 100 bytes (rounded to the layout's 8-byte steps): 101 does not fit.
        session.Upsert("k"u8, ByteStores.Bytes(120, 4));
        Assert.True(store.TailAddress > tail);
        Assert.Equal(ByteStores.Bytes(120, 4), session.ReadBytes("k"u8));
    }

    [Fact]
    public void An_RMW_appends_in_place_while_the_record_has_room_then_seals_it_and_copies_it_to_the_tail()
    {
        using var store = ByteStores.Create(ByteStores.InMemory());
        using var session = store.NewSession();
        session.AppendNow("log"u8, "ab"u8);
        long tail = store.TailAddress;
        session.AppendNow("log"u8, "c"u8);
        Assert.Equal(tail, store.TailAddress);

        // The value part is its length and lock (8 bytes) and the bytes padded to 8: room for 8, so the ninth byte
        // outgrows the record.
        var expected = new List<byte>("abc"u8.ToArray());
        for (int i = 0; i < 200; i++)
        {
            byte[] chunk = ByteStores.Bytes(i % 7, i);
            session.AppendNow("log"u8, chunk);
            expected.AddRange(chunk);
        }

        Assert.True(store.TailAddress > tail);
        Assert.Equal(expected.ToArray(), session.ReadBytes("log"u8));
    }

    [Fact]
    public void A_record_larger_than_a_page_is_refused_with_the_limit_and_the_store_is_unchanged()
    {
        using var store = ByteStores.Create(ByteStores.InMemory());
        using var session = store.NewSession();
        session.Upsert("k"u8, "old"u8);
        long tail = store.TailAddress;

        var error = Assert.Throws<ArgumentOutOfRangeException>(() => session.Upsert("k"u8, new byte[16 * 1024]));
        Assert.Contains("16384 bytes", error.Message, StringComparison.Ordinal);
        Assert.Contains(nameof(StoreSettings.PageSizeBits), error.Message, StringComparison.Ordinal);
        error = Assert.Throws<ArgumentOutOfRangeException>(() => session.RMW("k"u8, new byte[20_000]));
        Assert.Contains("16384 bytes", error.Message, StringComparison.Ordinal);

        Assert.Equal(tail, store.TailAddress);
        Assert.Equal("old"u8.ToArray(), session.ReadBytes("k"u8));

        // The largest record that fits is accepted: the page less the prefix (16), the key padded (8), the value's
        // length and lock (8) and the trailer with the checksum (8).
        int largest = (16 * 1024) - 16 - 8 - 8 - 8;
        Assert.Throws<ArgumentOutOfRangeException>(() => session.Upsert("k"u8, new byte[largest + 1]));
        Assert.Equal(Status.Ok, session.Upsert("k"u8, new byte[largest]));
        Assert.Equal(largest, session.ReadBytes("k"u8)!.Length);
    }

    [Fact]
    public unsafe void A_length_beyond_the_capacity_is_refused_by_the_value_itself()
    {
        byte* bytes = stackalloc byte[4];
        var value = new VarBytes(bytes, 4);
        var error = Assert.Throws<ArgumentOutOfRangeException>(() =>
        {
            VarBytes copy = value;
            copy.Length = 5;
        });
        Assert.Contains("Capacity", error.Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentOutOfRangeException>(() => new VarBytes(bytes, -1));
        Assert.Throws<ArgumentNullException>(() => new VarBytes(null, 1));
        value.Length = 2;
        Assert.Equal(2, value.AsReadOnlySpan().Length);
    }

    [Fact]
    public void Functions_without_value_lengths_get_a_clear_error_on_RMW_and_work_for_everything_else()
    {
        using var store = new HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, NoLengths>(
            ByteStores.InMemory());
        using var session = store.NewSession();
        Assert.Equal(Status.Ok, session.Upsert("k"u8, "v"u8));
        var error = Assert.Throws<NotSupportedException>(() => session.RMW("k"u8, "x"u8));
        Assert.Contains(nameof(IFunctions<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty>.GetUpdatedValueLength),
            error.Message, StringComparison.Ordinal);
        VarBytesOutput output = default;
        Assert.Equal(Status.Ok, session.Read("k"u8, ref output));
        using (output.Memory)
        {
            Assert.Equal("v"u8.ToArray(), output.Memory!.Memory.ToArray());
        }
    }

    [Fact]
    public async Task Asynchronous_operations_pin_memory_until_they_complete()
    {
        using var directory = new TempDirectory();
        using var store = ByteStores.Create(ByteStores.OnDevice(directory.Path));
        using var session = store.NewSession();
        for (int i = 0; i < 300; i++)
        {
            Assert.Equal(Status.Ok, await session.UpsertAsync(Key(i), ByteStores.Bytes(1000 + i, i)));
        }

        Assert.True(store.HeadAddress > 0, "the first records should have left memory");
        for (int i = 0; i < 300; i += 7)
        {
            ReadResult<IMemoryOwner<byte>?> read = await session.ReadAsync(Key(i));
            Assert.Equal(Status.Ok, read.Status);
            using (read.Output)
            {
                Assert.Equal(ByteStores.Bytes(1000 + i, i), read.Output!.Memory.ToArray());
            }
        }

        Assert.Equal(Status.Ok, await session.DeleteAsync(Key(0)));
        Assert.Equal(Status.NotFound, await session.DeleteAsync(Key(0)));
        Assert.Equal(Status.NotFound, (await session.ReadAsync(Key(0))).Status);
    }

    private static byte[] Key(int i) => Encoding.UTF8.GetBytes($"key-{i}");

    /// <summary>Byte functions that leave out the value lengths an RMW needs (everything else as the built-in ones).</summary>
    private readonly struct NoLengths : IFunctions<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty>
    {
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

        public void InitialUpdater(in VarBytes key, in VarBytes input, ref VarBytes value) =>
            Plain.InitialUpdater(in key, in input, ref value);

        public void InPlaceUpdater(in VarBytes key, in VarBytes input, ref VarBytes value) =>
            Plain.InPlaceUpdater(in key, in input, ref value);

        public void CopyUpdater(in VarBytes key, in VarBytes input, in VarBytes oldValue, ref VarBytes newValue) =>
            Plain.CopyUpdater(in key, in input, in oldValue, ref newValue);

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
