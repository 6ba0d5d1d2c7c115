using HybridKV.Devices;
using HybridKV.Epochs;
using HybridKV.Log;

namespace HybridKV.Checkpoints;

/// <summary>
/// Snapshot (CPR App. D): the log device already holds (or is being sent) everything below the safe read-only
/// offset; the pages from there to the final address are copied into the checkpoint's snapshot part, so that in-place
/// updates go on in memory.
/// </summary>
/// <param name="log">The log to copy from.</param>
/// <param name="device">The log device, for pages evicted while the copy runs.</param>
/// <param name="epoch">The store's epoch framework.</param>
/// <param name="epochEntry">The store's maintenance row, protecting each frame while it is copied.</param>
internal sealed class SnapshotCapture(HybridLog log, StorageDevice device, LightEpoch epoch, int epochEntry) : LogCapture
{
    public override async Task<long> CaptureAsync(CheckpointWriter writer, long finalAddress)
    {
        int pageSize = log.PageSize;
        long snapshotStart = Math.Min(log.SafeReadOnlyAddress, finalAddress) & ~(long)(pageSize - 1);
        await log.WaitForFlushAsync(snapshotStart, CancellationToken.None).ConfigureAwait(false);
        using var buffer = new AlignedBuffer(pageSize, device.SectorSize);
        // Only the copy must finish before updates go on in place; the state machine makes the part durable after.
        await writer.WritePartBytesAsync(CheckpointMetadata.SnapshotPart, async (stream, token) =>
        {
            for (long page = snapshotStart; page < finalAddress; page += pageSize)
            {
                int length = (int)Math.Min(pageSize, finalAddress - page);
                if (!CopyFromMemory(page, buffer.Memory.Span[..length]))
                {
                    // Evicted since: below the head, so on the device, and records of the version do not change any more.
                    await device.ReadAsync(page, buffer.Memory[..pageSize], token).ConfigureAwait(false);
                }

                await stream.WriteAsync(buffer.Memory[..length], token).ConfigureAwait(false);
            }
        }, CancellationToken.None).ConfigureAwait(false);
        return snapshotStart;
    }

    private bool CopyFromMemory(long address, Span<byte> destination)
    {
        epoch.Protect(epochEntry);
        try
        {
            return log.TryCopyFromMemory(address, destination, epochEntry);
        }
        finally
        {
            epoch.Unprotect(epochEntry);
        }
    }
}
