namespace HybridKV.Server.Commands;

/// <summary>What the connection does after the dispatcher ran a command.</summary>
internal enum CommandOutcome
{
    /// <summary>The reply is written: go on with the next command.</summary>
    Done,

    /// <summary>The reply is written: flush it and close the connection (QUIT).</summary>
    Close,

    /// <summary>
    /// The command's read waits for the device and was left pending (<see cref="CommandContext.DeferDeviceReads"/>):
    /// the connection completes it outside the batch without holding a thread, then writes the reply
    /// (<see cref="CommandDispatcher.FinishDeferred"/>).
    /// </summary>
    Deferred,
}
