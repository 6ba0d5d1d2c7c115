using HybridKV.Devices;
using HybridKV.Epochs;
using HybridKV.Log;

namespace HybridKV.Checkpoints;

/// <summary>
/// Snapshot (CPR App. D): the log device already holds (or is being sent) everything below the safe read-only
/// offset; the pages from there to the final address are copied into the checkpoint's snapshot part, so that in-place
/// updates go on in memory. Pages are copied into a few staging buffers and written from there, and each copied page
/// is handed back to in-place updates at once (<see cref="SnapshotProgress"/>): updates copy a record to the tail only
/// while its page waits for the copy, not while the part is written.
/// </summary>
/// <param name="log">The log to copy from.</param>
/// <param name="device">The log device, for pages evicted while the copy runs.</param>
/// <param name="epoch">The store's epoch framework.</param>
/// <param name="epochEntry">The store's maintenance row, protecting each frame while it is copied.</param>
/// <param name="progress">Where the copy has got to, for updates to go by.</param>
internal sealed class SnapshotCapture(HybridLog log, StorageDevice device, LightEpoch epoch, int epochEntry,
    SnapshotProgress progress) : LogCapture
{
    /// <summary>
    /// The staging buffers' budget, an eighth of the log's memory up to 32 MiB, and at least one page: the copy runs this
    /// far ahead of the part's writes (a memory copy, against a write through the checkpoint store), so pages up to this
    /// much hand their records back to in-place updates at memory speed, and what lies beyond waits for the writes.
    /// </summary>
    private int StagingPages(long pagesToCopy) =>
        (int)Math.Clamp(Math.Min(32L << 20, (long)log.BufferPages * log.PageSize / 8) / log.PageSize, 1,
            Math.Max(1, pagesToCopy));

    public override async Task<long> CaptureAsync(CheckpointWriter writer, long finalAddress)
    {
        int pageSize = log.PageSize;
        long snapshotStart = Math.Min(log.SafeReadOnlyAddress, finalAddress) & ~(long)(pageSize - 1);
        var staging = new AlignedBuffer[StagingPages((finalAddress - snapshotStart + pageSize - 1) / pageSize)];
        try
        {
            await log.WaitForFlushAsync(snapshotStart, CancellationToken.None).ConfigureAwait(false);
            // Only the copy must finish before updates go on in place; the state machine makes the part durable after.
            await writer.WritePartBytesAsync(CheckpointMetadata.SnapshotPart,
                (stream, token) => CopyAsync(stream, staging, snapshotStart, finalAddress, token),
                CancellationToken.None).ConfigureAwait(false);
        }
        finally
        {
            foreach (AlignedBuffer? buffer in staging)
            {
                ((IDisposable?)buffer)?.Dispose();
            }

            // REST, next, lets every session update in place, also after a failed capture: no copy of a record decided
            // before may still be running then.
            await progress.AdvanceAsync(finalAddress).ConfigureAwait(false);
        }

        return snapshotStart;
    }

    /// <summary>
    /// Copies the pages into the staging buffers in address order, hands each back to in-place updates once copied,
    /// and writes each from its buffer after the one before; returns once every write is done, also when one failed.
    /// </summary>
    private async Task CopyAsync(Stream stream, AlignedBuffer?[] staging, long from, long until,
        CancellationToken cancellationToken)
    {
        int pageSize = log.PageSize;
        var written = new Task[staging.Length];
        Array.Fill(written, Task.CompletedTask);
        Task lastWrite = Task.CompletedTask;
        try
        {
            int next = 0;
            for (long page = from; page < until; page += pageSize)
            {
                // The buffer's last write is done (writes go in order, so every one before it is too).
                await written[next].ConfigureAwait(false);
                AlignedBuffer buffer = staging[next] ??= new AlignedBuffer(pageSize, device.SectorSize);
                int length = (int)Math.Min(pageSize, until - page);
                if (!CopyFromMemory(page, buffer.Memory.Span[..length]))
                {
                    // Evicted since: below the head, so on the device, and records of the version do not change any more.
                    await device.ReadAsync(page, buffer.Memory[..pageSize], cancellationToken).ConfigureAwait(false);
                }

                progress.Advance(page + length);
                lastWrite = written[next] = WriteAfterAsync(lastWrite, stream, buffer.Memory[..length], cancellationToken);
                next = (next + 1) % staging.Length;
            }
        }
        finally
        {
            // Neither the stream (disposed by the writer when this fails) nor a buffer may still be in use after this.
            await lastWrite.ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        }

        await lastWrite.ConfigureAwait(false);
    }

    /// <summary>The part's stream takes one write at a time, in address order.</summary>
    private static async Task WriteAfterAsync(Task previous, Stream stream, ReadOnlyMemory<byte> bytes,
        CancellationToken cancellationToken)
    {
        await previous.ConfigureAwait(false);
        await stream.WriteAsync(bytes, cancellationToken).ConfigureAwait(false);
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
