using HybridKV.Epochs;
using HybridKV.Log;

namespace HybridKV.Checkpoints;

/// <summary>
/// Fold-over (CPR §6.2.4): the read-only offset moves to the final address, which flushes every record of the
/// committed version to the log device; nothing is copied.
/// </summary>
internal sealed class FoldOverCapture(HybridLog log) : LogCapture
{
    public override async Task<long> CaptureAsync(CheckpointWriter writer, long finalAddress)
    {
        log.ShiftReadOnlyAddress(finalAddress, LightEpoch.NoEntry);
        await log.WaitForFlushAsync(finalAddress, CancellationToken.None).ConfigureAwait(false);
        return finalAddress;
    }
}
