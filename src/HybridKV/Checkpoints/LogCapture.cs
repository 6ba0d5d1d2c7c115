namespace HybridKV.Checkpoints;

/// <summary>
/// What a checkpoint mode does in WAIT-FLUSH (CPR §6.2.4, App. D): make every record of the committed version, below
/// the final address, durable somewhere recovery will find it. The state machine runs the phases; a capture only
/// does its mode's work.
/// </summary>
internal abstract class LogCapture
{
    /// <summary>Captures the log up to <paramref name="finalAddress"/>.</summary>
    /// <returns>Where the snapshot part starts (a page boundary); <paramref name="finalAddress"/> for a fold-over, whose
    /// log device holds everything.</returns>
    public abstract Task<long> CaptureAsync(CheckpointWriter writer, long finalAddress);
}
