using System.Runtime.CompilerServices;

namespace HybridKV.Log;

internal readonly unsafe partial struct LogRecord<TKey, TValue>
{
    /// <summary>
    /// Where the parts of a record of fixed-size key and value lie: every record has the same size.
    /// <code>
    /// header (8) | key (sizeof, padded to 8) | value (sizeof, padded to 8)
    /// </code>
    /// </summary>
    private static class FixedLayout
    {
        /// <summary>The size of every record.</summary>
        public static int Size
        {
            [MethodImpl(MethodImplOptions.AggressiveInlining)]
            get => sizeof(RecordHeader) + RecordLayout.AlignTo8(sizeof(TKey)) + RecordLayout.AlignTo8(sizeof(TValue));
        }

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static byte* KeyStart(byte* record) => record + sizeof(RecordHeader);

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static byte* ValueStart(byte* record) =>
            record + sizeof(RecordHeader) + RecordLayout.AlignTo8(sizeof(TKey));
    }
}
