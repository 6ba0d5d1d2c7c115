using System.Buffers.Binary;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// The YCSB store of variable-length values, generated: each value is a byte sequence (of the run's value size)
/// whose first 8 bytes are a counter; reads return it, RMW adds to it. In-place changes run under the record's value
/// lock, so readers never see a torn value, unlike the fixed-size 100-byte store.
/// </summary>
[GeneratedStore(Key = typeof(long), Value = typeof(VarBytes), Input = typeof(long), Output = typeof(long))]
public static partial class YcsbVarValues
{
    /// <summary>The length of a value an RMW creates (the run's value size); set before the store is used.</summary>
    public static int InitialLength { get; set; } = 8;

    private static void SingleReader(in long key, in long input, in VarBytes value, ref long output) =>
        output = BinaryPrimitives.ReadInt64LittleEndian(value.AsReadOnlySpan());

    private static int GetInitialValueLength(in long key, in long input) => InitialLength;

    private static int GetUpdatedValueLength(in long key, in long input, in VarBytes value) => value.Length;

    private static void InitialUpdater(in long key, in long input, ref VarBytes value)
    {
        value.AsSpan().Clear();
        BinaryPrimitives.WriteInt64LittleEndian(value.AsSpan(), input);
    }

    private static void InPlaceUpdater(in long key, in long input, ref VarBytes value)
    {
        Span<byte> bytes = value.AsSpan();
        BinaryPrimitives.WriteInt64LittleEndian(bytes, BinaryPrimitives.ReadInt64LittleEndian(bytes) + input);
    }

    private static void CopyUpdater(in long key, in long input, in VarBytes oldValue, ref VarBytes newValue)
    {
        oldValue.AsReadOnlySpan().CopyTo(newValue.AsSpan());
        InPlaceUpdater(in key, in input, ref newValue);
    }
}
