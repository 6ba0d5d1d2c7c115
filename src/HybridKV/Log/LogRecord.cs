using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace HybridKV.Log;

/// <summary>
/// A reference to one record in a page frame (or in a buffer read from the device). It is valid only while the
/// epoch that found it is held (or the buffer is).
/// </summary>
/// <remarks>
/// Two layouts, each in its own type: <see cref="FixedLayout"/> for fixed-size keys and values,
/// <see cref="VariableLayout"/> when either is <see cref="VarBytes"/>. This type chooses between
/// them by the types (every test of <see cref="IsVariable"/> is a constant the JIT folds away) and adds what callbacks
/// see: references to the key and value, and the value lock.
/// <para>The value lock is a sequence number: odd while one thread changes the value in place, so that in-place
/// writers of a variable-length value exclude each other (an append is a read and a write of the length) and readers
/// in the mutable region retry instead of returning a value torn by a writer.</para>
/// </remarks>
internal readonly unsafe partial struct LogRecord<TKey, TValue>
    where TKey : unmanaged
    where TValue : unmanaged
{
    private readonly byte* _start;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public LogRecord(byte* start)
    {
        Debug.Assert(start != null && ((nint)start & 7) == 0, "A record starts on an 8-byte boundary.");
        _start = start;
    }

    /// <summary>Whether keys are <see cref="VarBytes"/>.</summary>
    public static bool HasVariableKey
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => typeof(TKey) == typeof(VarBytes);
    }

    /// <summary>Whether values are <see cref="VarBytes"/>.</summary>
    public static bool HasVariableValue
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => typeof(TValue) == typeof(VarBytes);
    }

    /// <summary>Whether records carry their lengths (the variable layout).</summary>
    public static bool IsVariable
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => HasVariableKey || HasVariableValue;
    }

    /// <summary>The size of every record in the fixed layout.</summary>
    public static int FixedSize
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => FixedLayout.Size;
    }

    /// <summary>The smallest record: the fixed size, or in the variable layout an empty key and value.</summary>
    public static int MinSize => IsVariable ? (int)SizeFor(0, 0) : FixedSize;

    /// <summary>The size recorded in checkpoint metadata: the fixed size, or -1 for the variable layout.</summary>
    public static int LayoutRecordSize => IsVariable ? -1 : FixedSize;

    /// <summary>The key size recorded in checkpoint metadata, -1 for variable-length keys.</summary>
    public static int LayoutKeySize => HasVariableKey ? -1 : sizeof(TKey);

    /// <summary>The value size recorded in checkpoint metadata, -1 for variable-length values.</summary>
    public static int LayoutValueSize => HasVariableValue ? -1 : sizeof(TValue);

    /// <summary>The length of a key as this layout stores it.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int KeyLengthOf(in TKey key) =>
        HasVariableKey ? Unsafe.As<TKey, VarBytes>(ref Unsafe.AsRef(in key)).Length : sizeof(TKey);

    /// <summary>The length of a value as this layout stores it (its size for a fixed-size value).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int ValueLengthOf(in TValue value) =>
        HasVariableValue ? Unsafe.As<TValue, VarBytes>(ref Unsafe.AsRef(in value)).Length : sizeof(TValue);

    /// <summary>
    /// The size of a record with a key and value of these lengths (each ignored for a fixed-size part), and an expiry
    /// word if <paramref name="expiring"/>. A long, so that lengths near <see cref="int.MaxValue"/> cannot overflow
    /// before the caller compares with the page size.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static long SizeFor(int keyLength, int valueLength, bool expiring = false) => (IsVariable
        ? VariableLayout.SizeFor(HasVariableKey ? keyLength : sizeof(TKey), VariableLayout.ValueRoomFor(valueLength))
        : FixedSize) + (expiring ? ExpiryWordSize : 0);

    /// <summary>
    /// The 8 bytes an expiring record ends with: after the record it would be without them, so that neither the key,
    /// the value nor the checksum moves (a record without an expiry pays nothing for the feature).
    /// </summary>
    public const int ExpiryWordSize = sizeof(long);

    /// <summary>The largest fixed-layout record (an expiring one): what a read of one record from the device asks for.</summary>
    public static int MaxFixedSize => FixedSize + ExpiryWordSize;

    /// <summary>This record's size: where the next record starts.</summary>
    public int Size
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => BaseSize + (Header.Expiring ? ExpiryWordSize : 0);
    }

    /// <summary>The record's size without its expiry word: where the expiry word starts.</summary>
    private int BaseSize
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => IsVariable ? VariableLayout.Size(_start) : FixedSize;
    }

    /// <summary>
    /// When an expiring record expires, in milliseconds since the Unix epoch (UTC); written with the record, never
    /// changed in place. Only for a record whose header says <see cref="RecordHeader.Expiring"/>.
    /// </summary>
    public long ExpiresAt
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get
        {
            Debug.Assert(Header.Expiring, "Only an expiring record has an expiry word.");
            return *(long*)(_start + BaseSize);
        }

        set
        {
            Debug.Assert(Header.Expiring, "Only an expiring record has an expiry word.");
            *(long*)(_start + BaseSize) = value;
        }
    }

    /// <summary>Whether the record carries an expiry time at or before <paramref name="nowMs"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool HasExpiredAt(long nowMs) => Header.Expiring && ExpiresAt <= nowMs;

    /// <summary>
    /// Turns <paramref name="size"/> bytes reserved at the tail, of which no record will be made, into an invalid record
    /// of that size, so that walks over the page step over them (a record must be well formed from its first word on).
    /// </summary>
    public void InitializeUnused(int size)
    {
        Debug.Assert(size >= MinSize && (size & 7) == 0, "At least the smallest record, whole words.");
        Debug.Assert(IsVariable || size == FixedSize || size == MaxFixedSize, "A fixed-layout record's size.");
        if (IsVariable)
        {
            VariableLayout.WriteUnusedLengths(_start, size);
        }

        // A fixed-layout reservation of an expiring record's size says so, or a walk would step into its middle.
        Header = RecordHeader.Create(LogAddress.Invalid, 1, tombstone: false, expiring: !IsVariable && size > FixedSize);
        Header.SetInvalid();
    }

    /// <summary>
    /// Copies everything after the header (key, value, their lengths and an expiry word) from
    /// <paramref name="source"/>, a record of <paramref name="size"/> bytes that nobody changes any more; the caller
    /// writes this record's header (with the source's <see cref="RecordHeader.Expiring"/> bit).
    /// </summary>
    public void CopyBodyFrom(LogRecord<TKey, TValue> source, int size)
    {
        Debug.Assert(size >= sizeof(RecordHeader) && size == source.Size, "The whole source record.");
        Buffer.MemoryCopy(source._start + sizeof(RecordHeader), _start + sizeof(RecordHeader),
            size - sizeof(RecordHeader), size - sizeof(RecordHeader));
    }

    public ref RecordHeader Header
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => ref Unsafe.AsRef<RecordHeader>(_start);
    }

    /// <summary>
    /// The key, as callbacks take it: a reference into the record for a fixed-size key; for a variable-length key,
    /// <paramref name="scratch"/> set to describe the stored bytes.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public ref TKey KeyRef(ref VarBytes scratch)
    {
        if (HasVariableKey)
        {
            int length = VariableLayout.KeyLength(_start);
            scratch = new VarBytes(KeyStart, length, length);
            return ref Unsafe.As<VarBytes, TKey>(ref scratch);
        }

        return ref Unsafe.AsRef<TKey>(KeyStart);
    }

    /// <summary>
    /// The value, as callbacks take it: a reference into the record for a fixed-size value; for a variable-length
    /// value, <paramref name="scratch"/> set to describe its bytes and room. After a callback that may change the
    /// length, <see cref="StoreValueLength"/> writes it back.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public ref TValue ValueRef(ref VarBytes scratch)
    {
        if (HasVariableValue)
        {
            int length = Volatile.Read(ref VariableLayout.ValueLength(_start));
            scratch = new VarBytes(ValueStart + VariableLayout.ValuePrefixSize, length, ValueCapacity);
            return ref Unsafe.As<VarBytes, TValue>(ref scratch);
        }

        return ref Unsafe.AsRef<TValue>(ValueStart);
    }

    /// <summary>The room a variable-length value has in place (its capacity); the size of a fixed-size value.</summary>
    public int ValueCapacity
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => HasVariableValue ? VariableLayout.ValueRoom(_start) - VariableLayout.ValuePrefixSize : sizeof(TValue);
    }

    /// <summary>Sets a variable-length value's length before a callback fills it (no-op for fixed-size values).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static void PresetLength(ref TValue value, int length)
    {
        if (HasVariableValue)
        {
            Unsafe.As<TValue, VarBytes>(ref value).Length = length;
        }
    }

    /// <summary>Writes back the length a callback left in the value (no-op for fixed-size values).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void StoreValueLength(ref TValue value)
    {
        if (HasVariableValue)
        {
            int length = Unsafe.As<TValue, VarBytes>(ref value).Length;
            Debug.Assert((uint)length <= (uint)ValueCapacity, "VarBytes.Length checks its capacity.");
            Volatile.Write(ref VariableLayout.ValueLength(_start), length);
        }
    }

    /// <summary>
    /// Writes the key and, in the variable layout, the lengths of a new record at the tail; the header follows and
    /// then the value. <paramref name="valueLength"/> is the length the value starts with (ignored when fixed).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Initialize(in TKey key, int valueLength)
    {
        int keyLength = KeyLengthOf(in key);
        if (IsVariable)
        {
            VariableLayout.WriteLengths(_start, keyLength, valueLength);
        }

        if (HasVariableKey)
        {
            Unsafe.As<TKey, VarBytes>(ref Unsafe.AsRef(in key)).AsReadOnlySpan().CopyTo(new Span<byte>(KeyStart, keyLength));
        }
        else
        {
            Unsafe.AsRef<TKey>(KeyStart) = key;
        }
    }

    /// <summary>
    /// Takes the value lock of a variable-length value for an in-place change, spinning while another thread holds
    /// it; returns the sequence number to pass to <see cref="UnlockValue"/>. The holder runs one callback and never
    /// waits for anything while it holds the lock, so the spin is short.
    /// </summary>
    public int LockValue()
    {
        Debug.Assert(HasVariableValue, "Only variable-length values are locked.");
        ref int word = ref ValueLockWord;
        var spinner = new SpinWait();
        while (true)
        {
            int sequence = Volatile.Read(ref word);
            if ((sequence & 1) == 0 && Interlocked.CompareExchange(ref word, sequence + 1, sequence) == sequence)
            {
                return sequence;
            }

            spinner.SpinOnce(sleep1Threshold: -1);
        }
    }

    /// <summary>Releases the value lock: the next even sequence number tells readers the value changed.</summary>
    public void UnlockValue(int sequence) => Volatile.Write(ref ValueLockWord, sequence + 2);

    /// <summary>Starts an optimistic read of a variable-length value: waits until no writer holds the lock.</summary>
    public int BeginValueRead()
    {
        ref int word = ref ValueLockWord;
        var spinner = new SpinWait();
        int sequence;
        while (((sequence = Volatile.Read(ref word)) & 1) != 0)
        {
            spinner.SpinOnce(sleep1Threshold: -1);
        }

        return sequence;
    }

    /// <summary>Whether a read started with <see cref="BeginValueRead"/> saw no change: otherwise read again.</summary>
    public bool ValueReadStillValid(int sequence)
    {
        // The value's loads must complete before the sequence number is read again.
        Volatile.ReadBarrier();
        return Volatile.Read(ref ValueLockWord) == sequence;
    }

    private ref int ValueLockWord => ref VariableLayout.ValueLock(_start);

    /// <summary>
    /// Whether the variable-layout lengths describe a record that fits in <paramref name="available"/> bytes from its
    /// start (always true for the fixed layout). A record read from the device is trusted only after this.
    /// </summary>
    public bool LengthsFitIn(int available)
    {
        int expiry = Header.Expiring ? ExpiryWordSize : 0;
        return IsVariable ? VariableLayout.LengthsFitIn(_start, available - expiry) : FixedSize + expiry <= available;
    }

    /// <summary>
    /// The record's checksum (the last 4 bytes before an expiry word): written when the record goes to the device,
    /// where nothing changes it any more, and verified on every read from the device and during recovery, so that
    /// damaged or missing bytes are an error and never a value. It covers the whole record (the expiry word included)
    /// except itself and the header's invalid and sealed bits, which may still be set after the record was written out.
    /// </summary>
    public uint StoredChecksum
    {
        get => *(uint*)(_start + BaseSize - sizeof(uint));
        private set => *(uint*)(_start + BaseSize - sizeof(uint)) = value;
    }

    /// <summary>The checksum of the record as it is now.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public uint ComputeChecksum()
    {
        long seed = Header.Word & ~(RecordHeader.InvalidBit | RecordHeader.SealedBit);
        if (Header.Expiring)
        {
            // The expiry word lies past the checksum: it enters through the seed (a golden-ratio multiply spreads it).
            seed ^= (long)((ulong)ExpiresAt * 0x9E3779B97F4A7C15UL);
        }

        // The processor's CRC32 instruction, a word at a time: XxHash3 (a call and two multiplies for the 20 bytes of
        // a record of 8-byte key and value) was an eighth of the compaction's samples, which checks every record it
        // reads.
        uint crc = System.Numerics.BitOperations.Crc32C(uint.MaxValue, (ulong)seed);
        crc = Utilities.Crc32CRegister.Extend(crc, ref *(_start + sizeof(RecordHeader)),
            BaseSize - sizeof(RecordHeader) - sizeof(uint));
        return ~crc;
    }

    /// <summary>Writes the checksum, just before the record goes to the device.</summary>
    public void WriteChecksum() => StoredChecksum = ComputeChecksum();

    /// <summary>Whether the record read back is the one written: a record whose header is zero (nothing was written
    /// there, or the bytes are missing) never is.</summary>
    public bool ChecksumMatches => !Header.IsNull && StoredChecksum == ComputeChecksum();

    /// <summary>How many bytes from its start must be read to know this record's size: the fixed size, or the prefix.</summary>
    public static int SizeKnownAfter => IsVariable ? VariableLayout.PrefixSize : FixedSize;

    private byte* KeyStart
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => IsVariable ? VariableLayout.KeyStart(_start) : FixedLayout.KeyStart(_start);
    }

    private byte* ValueStart
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => IsVariable ? VariableLayout.ValueStart(_start) : FixedLayout.ValueStart(_start);
    }
}
