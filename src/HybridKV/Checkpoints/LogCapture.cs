namespace HybridKV.Checkpoints;

/// <summary>
/// What a checkpoint mode does in WAIT-FLUSH (CPR §6.2.4, App. D): put every record of the committed version, below
/// the final address, where recovery will find it and no later update can change it (written to the log device, or
/// copied into a part of the checkpoint). The state machine runs the phases, and makes what was written durable once
/// updates may go on in place again; a capture only does its mode's work.
/// </summary>
internal abstract class LogCapture
{
    /// <summary>Captures the log up to <paramref name="finalAddress"/>.</summary>
    /// <returns>Where the snapshot part starts (a page boundary); <paramref name="finalAddress"/> for a fold-over, whose
    /// log device holds everything.</returns>
    public abstract Task<long> CaptureAsync(CheckpointWriter writer, long finalAddress);
}
