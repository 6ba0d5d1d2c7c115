using System.Buffers;
using HybridKV.Sessions;

namespace HybridKV.Tests.VarLen;

/// <summary>Shorthands for stores of byte-sequence keys and values (<see cref="VarBytesFunctions"/>).</summary>
internal static class ByteStores
{
    public static HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions> Create(
        StoreSettings settings) => new(settings);

    /// <summary>In memory only: 16 KiB pages, so that values of up to 4 KiB fit many to a page.</summary>
    public static StoreSettings InMemory(double mutableFraction = 0.5) => new()
    {
        IndexBuckets = 1L << 10,
        PageSizeBits = 14,
        MemorySizeBytes = 1L << 24,
        MutableFraction = mutableFraction,
        MaxSessions = 16,
    };

    /// <summary>Four 8 KiB pages in memory over a log directory: values of a few KiB leave memory quickly.</summary>
    public static StoreSettings OnDevice(string directory) => new()
    {
        IndexBuckets = 1L << 10,
        PageSizeBits = 13,
        MemorySizeBytes = 1L << 15,
        MutableFraction = 0.5,
        LogDirectory = directory,
        LogSegmentSizeBits = 20,
        MaxSessions = 16,
    };

    /// <summary>The value of a key, or null when it is not found (reads wait for the device).</summary>
    public static byte[]? ReadBytes<TFunctions>(
        this Session<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, TFunctions> session,
        ReadOnlySpan<byte> key)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty>
    {
        Status status = session.Read(key, out IMemoryOwner<byte>? value);
        if (status == Status.NotFound)
        {
            Assert.Null(value);
            return null;
        }

        Assert.Equal(Status.Ok, status);
        using (value)
        {
            return value!.Memory.ToArray();
        }
    }

    /// <summary>An RMW (append) that completes a pending outcome before it returns.</summary>
    public static void AppendNow<TFunctions>(
        this Session<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, TFunctions> session,
        ReadOnlySpan<byte> key, ReadOnlySpan<byte> chunk)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty>
    {
        Status status = session.RMW(key, chunk);
        if (status == Status.Pending)
        {
            Assert.True(session.CompletePending(wait: true));
        }
        else
        {
            Assert.Equal(Status.Ok, status);
        }
    }

    /// <summary>A delete that waits for the device if needed; whether the key existed.</summary>
    public static bool DeleteNow<TFunctions>(
        this Session<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, TFunctions> session,
        ReadOnlySpan<byte> key)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty>
    {
        Status status = session.DeleteAsync(key.ToArray()).AsTask().GetAwaiter().GetResult();
        Assert.NotEqual(Status.Pending, status);
        return status == Status.Ok;
    }

    /// <summary>Deterministic bytes of a given length, different for each seed.</summary>
    public static byte[] Bytes(int length, int seed)
    {
        byte[] bytes = new byte[length];
        new Random(seed).NextBytes(bytes);
        return bytes;
    }
}
