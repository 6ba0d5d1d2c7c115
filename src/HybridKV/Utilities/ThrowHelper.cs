using System.Diagnostics.CodeAnalysis;

namespace HybridKV.Utilities;

/// <summary>Throw paths kept out of hot methods so that those stay small enough to inline.</summary>
internal static class ThrowHelper
{
    [DoesNotReturn]
    public static void ThrowObjectDisposed(string objectName) => throw new ObjectDisposedException(objectName);

    [DoesNotReturn]
    public static void ThrowLogFull(long memorySizeBytes, int pageSize, long tailAddress) =>
        throw new LogFullException(
            $"The log is full: all {memorySizeBytes} bytes of {nameof(StoreSettings.MemorySizeBytes)} " +
            $"({memorySizeBytes / pageSize} pages of {pageSize} bytes) hold live records up to address {tailAddress}, " +
            "and this store has no storage device to evict pages to. Raise " +
            $"{nameof(StoreSettings)}.{nameof(StoreSettings.MemorySizeBytes)}. The operation was not applied.");

    [DoesNotReturn]
    public static void ThrowAddressSpaceExhausted(long tailAddress, long limit, int pageSizeBits) =>
        throw new LogFullException(
            $"The log's address space is exhausted: the tail is at address {tailAddress}, and no record may lie at or " +
            $"above {limit} (2^{System.Numerics.BitOperations.Log2((ulong)limit)} bytes with " +
            $"{nameof(StoreSettings.PageSizeBits)} = {pageSizeBits}). Compaction cannot move the tail back: copy the " +
            "live records into a new store. The operation was not applied.");

    [DoesNotReturn]
    public static void ThrowRecordTooLarge(int keyLength, int valueLength, long recordSize, int pageSize, int overhead)
    {
        if (valueLength < 0)
        {
            throw new ArgumentOutOfRangeException(
                nameof(valueLength), valueLength, "The functions asked for a value of negative length; lengths start at 0.");
        }

        throw new ArgumentOutOfRangeException(
            nameof(recordSize),
            $"A record with a key of {keyLength} bytes and a value of {valueLength} bytes takes {recordSize} bytes in the " +
            $"log, more than a page of {pageSize} bytes ({nameof(StoreSettings)}.{nameof(StoreSettings.PageSizeBits)}): " +
            $"a record never spans pages. Key and value together may take up to about {pageSize - overhead} bytes; " +
            "raise the page size for larger ones. The operation was not applied.");
    }

    [DoesNotReturn]
    public static void ThrowTooManySessions(int maxSessions) =>
        throw new InvalidOperationException(
            $"All {maxSessions} sessions allowed by {nameof(StoreSettings)}.{nameof(StoreSettings.MaxSessions)} are " +
            "open. Dispose sessions that are no longer used, or raise the setting.");

    [DoesNotReturn]
    public static void ThrowSessionInUse(Guid session, long activeSerialNo) =>
        throw new InvalidOperationException(
            $"Session {session} is used from two threads at once: its operation {activeSerialNo} is still in progress " +
            "while another one begins. A session is one logical thread of operations; give each concurrent caller its " +
            "own session. This operation was not started.");
}
