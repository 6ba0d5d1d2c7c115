using System.Runtime.CompilerServices;

namespace HybridKV.Log;

internal readonly unsafe partial struct LogRecord<TKey, TValue>
{
    /// <summary>
    /// Where the parts of a record with a <see cref="VarBytes"/> key or value lie: the record carries its lengths.
    /// <code>
    /// header (8) | key length (4) | value room (4) | key (padded to 8) | value part (room bytes) | trailer (8)
    ///            where a VarBytes value part is: value length (4) | value lock (4) | value bytes (padded to 8)
    ///            and the trailer is: reserved (4) | checksum (4)
    /// </code>
    /// A fixed-size part keeps its size in place of a length. The key length and the room never change after the
    /// record is written, so a scan of the log can step from record to record; the value length changes in place,
    /// anywhere up to the room, so that a value can shrink and grow back without moving. The value lock is a sequence
    /// number, odd while one thread changes the value in place.
    /// </summary>
    private static class VariableLayout
    {
        /// <summary>Header, key length and value room: what must be read to know a record's size.</summary>
        public const int PrefixSize = sizeof(long) + sizeof(int) + sizeof(int);

        /// <summary>Value length and value lock, ahead of a variable-length value's bytes.</summary>
        public const int ValuePrefixSize = sizeof(int) + sizeof(int);

        private const int KeyLengthOffset = sizeof(long);
        private const int ValueRoomOffset = sizeof(long) + sizeof(int);

        /// <summary>The smallest room a value part can have.</summary>
        public static int MinValueRoom =>
            HasVariableValue ? ValuePrefixSize : RecordLayout.AlignTo8(sizeof(TValue));

        /// <summary>The size of a record with a key and value part of these lengths.</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static long SizeFor(int storedKeyLength, long valueRoom) =>
            PrefixSize + RecordLayout.AlignTo8((long)storedKeyLength) + valueRoom + RecordLayout.TrailerSize;

        /// <summary>The room a value part of this length takes (a fixed-size value: its size, padded).</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static long ValueRoomFor(int valueLength) => HasVariableValue
            ? RecordLayout.AlignTo8(ValuePrefixSize + (long)valueLength)
            : RecordLayout.AlignTo8(sizeof(TValue));

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static int Size(byte* record) => (int)SizeFor(KeyLength(record), ValueRoom(record));

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static int KeyLength(byte* record) => *(int*)(record + KeyLengthOffset);

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static int ValueRoom(byte* record) => *(int*)(record + ValueRoomOffset);

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static byte* KeyStart(byte* record) => record + PrefixSize;

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static byte* ValueStart(byte* record) => record + PrefixSize + RecordLayout.AlignTo8(KeyLength(record));

        /// <summary>The length word of a variable-length value.</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static ref int ValueLength(byte* record) => ref *(int*)ValueStart(record);

        /// <summary>The lock word of a variable-length value.</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static ref int ValueLock(byte* record) => ref *(int*)(ValueStart(record) + sizeof(int));

        /// <summary>Writes lengths that describe <paramref name="size"/> bytes holding no key and an empty value.</summary>
        public static void WriteUnusedLengths(byte* record, int size)
        {
            *(int*)(record + KeyLengthOffset) = 0;
            *(int*)(record + ValueRoomOffset) = size - PrefixSize - RecordLayout.TrailerSize;
            if (HasVariableValue)
            {
                ValueLength(record) = 0;
                ValueLock(record) = 0;
            }
        }

        /// <summary>Writes the lengths of a new record (and an unlocked, empty-or-preset value length).</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static void WriteLengths(byte* record, int keyLength, int valueLength)
        {
            *(int*)(record + KeyLengthOffset) = keyLength;
            *(int*)(record + ValueRoomOffset) = (int)ValueRoomFor(valueLength);
            if (HasVariableValue)
            {
                ValueLength(record) = valueLength;
                ValueLock(record) = 0;
            }
        }

        /// <summary>
        /// Whether the lengths describe a record that fits in <paramref name="available"/> bytes from its start: a
        /// record read from the device is trusted only after this.
        /// </summary>
        public static bool LengthsFitIn(byte* record, int available)
        {
            if (available < PrefixSize)
            {
                return false;
            }

            long keyLength = KeyLength(record);
            long room = ValueRoom(record);
            return keyLength >= 0 && room >= MinValueRoom && (room & 7) == 0
                   && PrefixSize + RecordLayout.AlignTo8(keyLength) + room + RecordLayout.TrailerSize <= available
                   && (!HasVariableValue ||
                       (uint)Volatile.Read(ref ValueLength(record)) <= (uint)(room - ValuePrefixSize));
        }
    }
}
