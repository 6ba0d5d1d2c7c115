using System.Runtime.InteropServices;

namespace HybridKV.Server.Storage;

/// <summary>
/// What a command passes to the store's callbacks: the operation, its argument bytes and numbers, and where the
/// callbacks put what the reply needs (the read-modify-write API has no output of its own).
/// </summary>
/// <remarks>
/// <see cref="Data"/> points into the connection's receive buffer, which stays in place until the command and any
/// pending part of it have completed (the connection completes pending operations before it moves on).
/// </remarks>
[StructLayout(LayoutKind.Auto)]
internal readonly unsafe struct RespInput
{
    public RespInput(RespOperation operation, CommandResults results, byte* data = null, int dataLength = 0,
        long number = 0, long header = ValueHeader.NoExpiry)
    {
        Operation = operation;
        Results = results;
        Data = data;
        DataLength = dataLength;
        Number = number;
        Header = header;
    }

    /// <summary>What to do.</summary>
    public RespOperation Operation { get; }

    /// <summary>Where the callbacks report.</summary>
    public CommandResults Results { get; }

    /// <summary>The bytes to set or append.</summary>
    public byte* Data { get; }

    /// <summary>The number of bytes at <see cref="Data"/>.</summary>
    public int DataLength { get; }

    /// <summary>The increment.</summary>
    public long Number { get; }

    /// <summary>The header a value that is set gets (its expiry).</summary>
    public long Header { get; }

    /// <summary>The bytes to set or append.</summary>
    public ReadOnlySpan<byte> DataSpan => new(Data, DataLength);
}
