using System.Runtime.CompilerServices;

namespace HybridKV.Log;

internal readonly unsafe partial struct LogRecord<TKey, TValue>
{
    /// <summary>
    /// Where the parts of a record of fixed-size key and value lie: every record has the same size.
    /// <code>
    /// header (8) | key (sizeof, padded to 8) | value (sizeof, padded to 8) [| trailer (8)]
    /// </code>
    /// The checksum is the record's last 4 bytes: in the value's padding when that has room for it, in an 8-byte trailer
    /// otherwise (a long value, say).
    /// </summary>
    private static class FixedLayout
    {
        /// <summary>The size of every record.</summary>
        public static int Size
        {
            [MethodImpl(MethodImplOptions.AggressiveInlining)]
            get => sizeof(RecordHeader) + RecordLayout.AlignTo8(sizeof(TKey)) + RecordLayout.AlignTo8(sizeof(TValue)) +
                   (RecordLayout.AlignTo8(sizeof(TValue)) - sizeof(TValue) >= sizeof(uint) ? 0 : RecordLayout.TrailerSize);
        }

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static byte* KeyStart(byte* record) => record + sizeof(RecordHeader);

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static byte* ValueStart(byte* record) =>
            record + sizeof(RecordHeader) + RecordLayout.AlignTo8(sizeof(TKey));
    }
}
